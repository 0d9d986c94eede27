"""A real RGB-D camera's noise, taken out of a frame before the learned detector reads it.

    clean = clean_frame(rgb, depth)      # Cleaned: rgb, depth, and the noise left in them
    regions, n = colour_depth_regions(clean.rgb, clean.depth, **clean.region_steps())

The network, the crop classifier and the region grouper were trained on clean renders. Under the env's
``sensor=realistic`` (``embodied/envs/sensor.py``: depth noise of 4 mm x range^2, no-return pixels at
random, on depth edges and on dark surfaces, colour noise of about 4/255) the detector's mean mask IoU
on held-out frames fell from 0.95 to 0.55, and the network was not what broke (fed the clean frame's
features instead of the noisy one's, the pipeline scored the same); the regions were:

* **no-return pixels** (depth 0: 5 % of a realistic frame) each made a region of their own, joined to
  no neighbour by the depth test: 500 regions a frame instead of 36, which the grouper, which never saw
  such specks, named at random. Each is filled from the neighbour whose colour is nearest (the surface
  it lies on, also at an edge, where half the pixels drop out), a few pixels deep: a dropped-out pixel
  has a valid neighbour within a pixel or two, a large area without returns (beyond the camera's range)
  keeps most of it. The filled depth is the neighbour's own, so a filled pixel joins exactly one side.
* **colour noise** leaked regions into each other: two pixels join when no channel differs by more than
  ``COLOUR_STEP`` (20/255), and where two surfaces differ by 20-40 (a beige floor and its pale wall)
  some of the hundreds of pixel pairs along their boundary pass by chance, and one such pair makes the
  two surfaces one region. The colour is smoothed over each pixel's 3 x 3 neighbours of like colour
  (within ``BAND`` stds of a difference of two noisy pixels), which divides its noise by about three and
  keeps edges; the join test is then ``LEAK_STDS`` stds of what noise is left stricter.
* **depth noise** (2-3 mm at the table, 6 cm at 4 m in the apartment) the same way: depth is smoothed over
  neighbours of like colour and depth, and the depth join allows ``BAND`` stds of the noise left on a
  difference of two pixels on top of its steps.

Every figure is measured from the image itself (``geometry.depth_noise``, ``colour_noise``), so nothing
needs to know the sensor; a frame that shows no noise (a renderer's) passes untouched, and its regions
are the ones the detector was trained on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from embodied.perception.geometry import MAD_TO_STD, depth_noise
from embodied.perception.learned.regions import COLOUR_STEP

# A renderer's colour and depth carry rounding alone: the colour's second differences are 0 at the median
# (rounding to 1/255 is 0.3/255 of noise), its depth's under 2e-6 m at 1 m in float32 (a frames file's
# float16 reads up to 1.7e-3 on a wrist frame of a table 0.2 m away). Noise under these floors is left alone.
COLOUR_FLOOR = 1.0  # of 255, std per channel (the realistic sensor's is about 4)
DEPTH_FLOOR = 2e-3  # m, std at 1 m (the realistic sensor's is 4e-3)
EDGE_STEP = 40.0  # of 255: larger second differences of colour are edges, not noise
BAND = 3.0  # stds of the difference of two noisy pixels within which neighbours are one surface
# Stds of the colour noise left after smoothing by which the region join test is made stricter: a boundary
# of a few hundred pixel pairs whose colours differ by just over COLOUR_STEP has no pair that noise brings
# under the step (one pair in 4,000 falls 3.5 stds out).
LEAK_STDS = 4.5
# A 3 x 3 mean over like neighbours divides the noise by sqrt(9) inside a surface, and by about two at its
# edge, where five or six of them are like the pixel (measured on realistic frames: 4.4/255 -> 1.6 inside,
# 1.9-2.5 on the pixels along a boundary, where leaks happen).
SMOOTHED = 2.0
COLOUR_LEFT = 2.5  # of 255: colour noise left above this (harsh: 4/255) is smoothed once more
FILL_ROUNDS = 3  # px: no-return pixels this far from a return are filled
MIN_COLOUR_STEP = 6  # of 255: the join test is never stricter than this (harsh noise)

_AROUND = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))


@dataclass
class Cleaned:
    """A frame with its noise taken out: rgb (H,W,3) uint8, depth (H,W) float32 m (0 = no return), and the
    noise left in them, which the region test allows for."""

    rgb: np.ndarray
    depth: np.ndarray
    depth_sigma: float = 0.0  # m, std of depth at 1 m left after smoothing (0: a noiseless frame)
    colour_sigma: float = 0.0  # of 255, std per channel left after smoothing (0: a noiseless frame)

    def region_steps(self) -> dict:
        """Keyword arguments of ``regions.colour_depth_regions`` for this frame's noise."""
        step = COLOUR_STEP - LEAK_STDS * np.sqrt(2.0) * self.colour_sigma
        return {"colour_step": int(max(MIN_COLOUR_STEP, np.floor(step))) if self.colour_sigma else COLOUR_STEP,
                "depth_noise": BAND * np.sqrt(2.0) * self.depth_sigma}


def colour_noise(rgb: np.ndarray) -> float:
    """The colour noise of one image (H,W,3) as its std per channel, of 255, read from the image itself: as
    ``geometry.depth_noise`` does for depth, the median absolute second difference along rows and columns
    (every fourth one: as good an estimate at a quarter of the cost), away from edges, which is sqrt(6)
    stds of noise on a smoothly shaded surface. 0 for a renderer's image."""
    x = np.asarray(rgb, dtype=np.int16)
    parts = [x[::4, :-2] - 2 * x[::4, 1:-1] + x[::4, 2:], x[:-2, ::4] - 2 * x[1:-1, ::4] + x[2:, ::4]]
    d2 = np.abs(np.concatenate([p.ravel() for p in parts]))
    d2 = d2[d2 < EDGE_STEP]
    if len(d2) < 64:
        return 0.0
    return float(MAD_TO_STD * np.median(d2) / np.sqrt(6.0))


def _shifted(padded: np.ndarray, dy: int, dx: int, h: int, w: int) -> np.ndarray:
    """The (..., H, W) window of a 1-px padded (..., H+2, W+2) array whose pixel (y, x) is (y+dy, x+dx)."""
    return padded[..., 1 + dy:1 + dy + h, 1 + dx:1 + dx + w]


def fill_holes(rgb: np.ndarray, depth: np.ndarray, rounds: int = FILL_ROUNDS) -> np.ndarray:
    """depth (H,W) m with its no-return (0) pixels up to ``rounds`` px from a return given the depth of the
    8-neighbour with a return whose colour (rgb (H,W,3) uint8) is nearest: the surface the pixel lies on."""
    h, w = depth.shape
    d = np.pad(np.asarray(depth, np.float32), 1)
    flat = d.ravel()
    holes = np.flatnonzero(flat <= 0)
    y, x = np.divmod(holes, w + 2)
    holes = holes[(y > 0) & (y <= h) & (x > 0) & (x <= w)]  # not the padding
    if not len(holes):
        return np.asarray(depth, np.float32)
    c = np.pad(np.asarray(rgb, np.int16), ((1, 1), (1, 1), (0, 0))).reshape(-1, 3)
    steps = np.array([dy * (w + 2) + dx for dy, dx in _AROUND])
    none = np.iinfo(np.int32).max
    for _ in range(rounds):
        near = holes[:, None] + steps  # (N, 8)
        z = flat[near]
        cost = np.abs(c[near] - c[holes][:, None]).sum(2, dtype=np.int32)
        cost[z <= 0] = none
        pick = cost.argmin(1)
        found = cost[np.arange(len(holes)), pick] < none
        flat[holes[found]] = z[found, pick[found]]  # after the round: a pixel filled now fills others next
        holes = holes[~found]
        if not len(holes) or not found.any():
            break
    return d[1:-1, 1:-1].copy()


def smooth(rgb: np.ndarray, depth: np.ndarray, colour_sigma: float, depth_sigma: float
           ) -> tuple[np.ndarray, np.ndarray]:
    """rgb (H,W,3) uint8 and depth (H,W) m, each pixel the mean of itself and its 3 x 3 neighbours on the same
    surface: for colour (where ``colour_sigma`` > 0, of 255), those whose every channel lies within ``BAND``
    stds of a difference of two noisy pixels of its own; for depth (where ``depth_sigma`` > 0, m at 1 m),
    returns within ``BAND`` stds of a two-pixel difference (``depth_sigma`` x range^2) whose colour lies
    within ``COLOUR_STEP``. Noise falls by about three on a surface, and an edge keeps both its sides."""
    h, w = depth.shape
    c = np.ascontiguousarray(np.moveaxis(np.asarray(rgb, np.uint8), -1, 0))  # (3,H,W) planes
    pc = np.pad(c, ((0, 0), (1, 1), (1, 1)), mode="edge")
    tol_c = int(np.floor(BAND * np.sqrt(2.0) * colour_sigma))
    total_c, count_c = c.astype(np.uint16), np.ones((h, w), np.uint8)  # 9 x 255 fits 16 bits
    d = np.asarray(depth, np.float32)
    if depth_sigma > 0:
        pd = np.pad(d, 1)
        tol_d = np.float32(BAND * np.sqrt(2.0) * depth_sigma) * d * d
        total_d, count_d = d.copy(), np.ones((h, w), np.float32)
    for dy, dx in _AROUND:
        q = _shifted(pc, dy, dx, h, w)
        step = (np.maximum(q, c) - np.minimum(q, c)).max(0)  # unsigned: the larger minus the smaller
        if colour_sigma > 0:
            like = step <= tol_c
            total_c += q * like
            count_c += like
        if depth_sigma > 0:
            z = _shifted(pd, dy, dx, h, w)
            like = (step <= COLOUR_STEP) & (z > 0) & (np.abs(z - d) <= tol_d)
            total_d += z * like
            count_d += like
    if colour_sigma > 0:
        mean = (total_c + (count_c >> 1)) // count_c  # rounded
        rgb = np.ascontiguousarray(np.moveaxis(mean.astype(np.uint8), 0, -1))
    if depth_sigma > 0:
        d = np.where(d > 0, total_d / count_d, np.float32(0)).astype(np.float32)
    return rgb, d


def clean_frame(rgb: np.ndarray, depth: np.ndarray) -> Cleaned:
    """rgb (H,W,3) uint8 and depth (H,W) float32 m with the noise each shows taken out: colour smoothed where
    it is noisy; no-return pixels filled and depth smoothed where the depth is noisy. A frame without
    noise comes back as it is (the same arrays)."""
    rgb, depth = np.asarray(rgb), np.asarray(depth, np.float32)
    colour = colour_noise(rgb)
    colour = colour if colour > COLOUR_FLOOR else 0.0
    sigma = depth_noise(depth)
    sigma = sigma if sigma > DEPTH_FLOOR else 0.0
    if not colour and not sigma:
        return Cleaned(rgb, depth)
    if sigma:
        depth = fill_holes(rgb, depth)
    rgb, depth = smooth(rgb, depth, colour, sigma)
    colour, sigma = colour / SMOOTHED, sigma / SMOOTHED
    if colour > COLOUR_LEFT:
        rgb, depth = smooth(rgb, depth, colour, sigma)
        colour, sigma = colour / SMOOTHED, sigma / SMOOTHED
    return Cleaned(rgb, depth, sigma, colour)
