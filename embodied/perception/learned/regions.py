"""Snap predicted instances to the image's colour and depth edges.

    regions, n = colour_depth_regions(rgb, depth)   # regions (H,W) int64 in [0, n)
    ids = snap_to_regions(ids, regions, n)          # each region takes its majority instance

A rendered object is a patch of smoothly varying colour bounded by a colour
or depth edge: neighbouring pixels whose colours differ by at most
``COLOUR_STEP`` per channel and whose depths differ by at most
``DEPTH_STEP + DEPTH_SLOPE x depth`` join one region (connected components).
On held-out frames the regions almost never straddle two instances (taking
each region's true majority gives mean IoU 0.997), so the network only has
to say which instance each region belongs to; its ragged, pixel-wide edges
give way to the image's own.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

COLOUR_STEP = 20  # per channel, of 255
DEPTH_STEP = 0.01  # m
DEPTH_SLOPE = 0.05  # of the depth: a surface seen at a grazing angle steps further between pixels


def _colour_steps_within(a: np.ndarray, b: np.ndarray, step: int) -> np.ndarray:
    """Whether planar colours a, b (3, ...) uint8 differ by at most ``step`` in every channel (unsigned
    arithmetic: the larger minus the smaller never wraps)."""
    return (np.maximum(a, b) - np.minimum(a, b)).max(0) <= step


def _depth_steps_within(a: np.ndarray, b: np.ndarray, step: float, slope: float, noise: float) -> np.ndarray:
    """Whether depths a, b (m) differ by at most ``step + slope z + noise z^2`` (z the nearer depth)."""
    z = np.minimum(a, b)
    limit = step + slope * z
    if noise:
        limit = limit + np.float32(noise) * z * z
    return np.abs(a - b) <= limit


def colour_depth_regions(rgb: np.ndarray, depth: np.ndarray, colour_step: int = COLOUR_STEP,
                         depth_step: float = DEPTH_STEP, depth_slope: float = DEPTH_SLOPE,
                         depth_noise: float = 0.0) -> tuple[np.ndarray, int]:
    """rgb (H,W,3) uint8, depth (H,W) m -> (regions (H,W) int64, number of regions). ``depth_noise`` (m at
    1 m): the depth test also allows this times range^2, what noise puts between two pixels of one surface
    (``denoise.Cleaned.region_steps``; 0 for a noiseless frame)."""
    h, w = depth.shape
    c = np.ascontiguousarray(np.moveaxis(np.asarray(rgb, np.uint8), -1, 0))  # (3,H,W): channel planes
    d = depth.astype(np.float32)
    # joined[y, x] = (to the right, below): whether the pixel joins its neighbour there.
    joined = np.zeros((h, w, 2), bool)
    right, down = joined[:, :-1, 0], joined[:-1, :, 1]
    right[:] = _colour_steps_within(c[:, :, :-1], c[:, :, 1:], colour_step)
    right &= _depth_steps_within(d[:, :-1], d[:, 1:], depth_step, depth_slope, depth_noise)
    down[:] = _colour_steps_within(c[:, :-1], c[:, 1:], colour_step)
    down &= _depth_steps_within(d[:-1], d[1:], depth_step, depth_slope, depth_noise)
    # The joins as a sparse graph, built row by row (pixel order) so no sort is needed.
    flat = joined.reshape(-1, 2)
    pixel = np.arange(h * w, dtype=np.int32)
    neighbour = np.stack([pixel + 1, pixel + w], 1)[flat]
    indptr = np.zeros(h * w + 1, np.int32)
    byte = flat.view(np.uint8)
    np.cumsum(byte[:, 0] + byte[:, 1], out=indptr[1:])  # joins per pixel (a plain sum over the pair is slow)
    graph = csr_matrix((np.ones(len(neighbour), np.int8), neighbour, indptr), shape=(h * w, h * w))
    n, labels = connected_components(graph, directed=False)
    return labels.reshape(h, w), int(n)


def snap_to_regions(ids: np.ndarray, labels: dict[int, str], regions: np.ndarray, n: int,
                    sem: np.ndarray | None = None, classes: tuple[str, ...] = (), stuff: tuple[str, ...] = ()
                    ) -> tuple[np.ndarray, dict[int, str]]:
    """Every pixel of a region takes the instance id (0 = background) most of the region's pixels have;
    instances left with no pixel leave ``labels``.

    With ``sem`` (H,W) (0 = background, k = classes[k-1]) a region also takes the class most of its pixels
    have, and an instance is split by its regions' classes: a block the network grouped with the pad under
    it, or with the fingers holding it, comes apart along the colour edge between them. Regions of a
    ``stuff`` class join that class's one instance, regions of background become background; ids are
    renumbered 1.. and ``labels`` gives each the class of its regions."""
    r = regions.ravel()
    i = ids.ravel().astype(np.int64)
    m = int(i.max(initial=0)) + 1
    counts = np.bincount(r * m + i, minlength=n * m).reshape(n, m)
    winner = counts.argmax(1)
    if sem is None:
        kept = set(np.unique(winner).tolist())
        return winner[regions].astype(np.int32), {k: c for k, c in labels.items() if k in kept}
    nc = len(classes) + 1
    cls = np.bincount(r * nc + sem.ravel().astype(np.int64), minlength=n * nc).reshape(n, nc).argmax(1)
    is_stuff = np.zeros(nc, bool)
    is_stuff[[k + 1 for k, c in enumerate(classes) if c in stuff]] = True
    key = np.where(is_stuff[cls], cls, nc * (winner + 1) + cls)  # stuff: its class alone; things: (instance, class)
    key[cls == 0] = -1
    uniq, new = np.unique(key, return_inverse=True)
    first = 1 if uniq[0] == -1 else 0  # background keeps id 0
    new = new - first + 1
    new[key == -1] = 0
    out = {int(k) + 1 - first: classes[int(u % nc) - 1] for k, u in enumerate(uniq.tolist()) if u != -1}
    return new.astype(np.int32)[regions], out
