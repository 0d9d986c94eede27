"""Per-pair tests the tracker gates detections with: colour, brightness, footprint overlap, settled looks, lit caps."""

from __future__ import annotations

import numpy as np

from embodied.memory.config import SIZE_CLASSES
from embodied.perception.colour import same_colour
from embodied.perception.types import ObjectObservation

PATCH = 0.005  # m: a size class's view with no more height than this is a patch of a surface (surface_patch)
PIECE_GAP = 0.04  # m: a patch this near a view of its colour that continued a node is a piece of that thing


def brightness_step(rgb: np.ndarray, before: np.ndarray | None, ratio: float) -> int:
    """+1 if one camera now sees the object ``ratio`` times brighter than before, -1 if dimmer, else 0."""
    if before is None:
        return 0
    now, then = max(float(rgb.max()), 1e-3), max(float(before.max()), 1e-3)
    return 1 if now > ratio * then else -1 if then > ratio * now else 0


def brightness_ratio(rgb: np.ndarray, others: np.ndarray) -> np.ndarray:
    """(N,) how many times brighter or dimmer (>= 1) each row of ``others`` (N,3) is than ``rgb`` (3,), by
    the brightest channel."""
    a = max(float(np.max(rgb)), 1e-3)
    b = np.maximum(np.asarray(others, dtype=np.float64).reshape(-1, 3).max(axis=1), 1e-3)
    return np.maximum(a / b, b / a)


def colour_distance_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``colour_distance`` between every row of a (D,3) and of b (N,3): (D,N)."""
    na = np.maximum(a.max(axis=1), 1e-3)
    nb = np.maximum(b.max(axis=1), 1e-3)
    d = np.sqrt((((a / na[:, None])[:, None] - (b / nb[:, None])[None]) ** 2).sum(axis=2))
    return d * 0.7 + np.abs(na[:, None] - nb[None]) * 0.3


def looks_as_before(rgb: np.ndarray, seen: np.ndarray, tolerance: float, ratio: float) -> np.ndarray:
    """(D,N) bool: detection colour (D,3) matches each node's last look from this camera (N,3; NaN
    rows: no look yet, never a match), in hue within ``tolerance`` and in brightness within ``ratio``."""
    known = ~np.isnan(seen[:, 0])
    seen = np.nan_to_num(seen)
    value = np.log(np.maximum(rgb.max(axis=1), 1e-3))[:, None] - np.log(np.maximum(seen.max(axis=1), 1e-3))[None]
    return known[None] & (colour_distance_matrix(rgb, seen) < tolerance) & (np.abs(value) < np.log(ratio))


def footprint_overlap(det: ObjectObservation, lo: np.ndarray, hi: np.ndarray) -> float:
    """Fraction of a big detection's box inside a support's accumulated box (grown 2 cm).

    Supports and furniture are seen in pieces (a table's near half, a wall
    segment, the lower part of a fridge); the node's box is the union of the
    pieces seen so far, so a new piece of the same thing lies in or against it.
    Thin sides get a 5 mm minimum so slivers (a pad mostly hidden under a
    block) still count.
    """
    dlo, dhi = det.box_min - 0.0025, det.box_max + 0.0025
    w = np.clip(np.minimum(dhi, hi + 0.02) - np.maximum(dlo, lo - 0.02), 0, None)
    return float(np.prod(w) / np.prod(dhi - dlo))


def centred_over(centres: np.ndarray, lo: np.ndarray, hi: np.ndarray, slack: float = 0.0) -> np.ndarray:
    """(D, N) bool: centre i (D,2+ m) lies over box j's footprint (lo, hi: (N,2+ m)) grown by ``slack`` m."""
    return np.all((centres[:, None, :2] >= lo[None, :, :2] - slack) & (centres[:, None, :2] <= hi[None, :, :2] + slack),
                  axis=2)


def lit_caps(thing: np.ndarray, lit: np.ndarray, same_cls: np.ndarray, centres: np.ndarray, lo: np.ndarray,
             hi: np.ndarray) -> np.ndarray:
    """(D, N) bool: detection i, of a thing's class (D,) other than node j's, is centred (D,3 m) over lit node j's
    box (N,3 m), lit (N,): a lit cap read as another thing."""
    return thing[:, None] & lit[None] & ~same_cls & centred_over(centres, lo, hi)


def as_last_seen(dets: list[ObjectObservation], centres: np.ndarray, last: np.ndarray, size: np.ndarray,
                 colour: np.ndarray, seen_rgb: np.ndarray, as_before: np.ndarray) -> np.ndarray:
    """(D, N) bool: detection i looks just as this camera last saw node j: the same centre (4 mm), size
    (20 %) and colour (the camera's last look where kept, else the colour name)."""
    n_pts = np.array([d.n_points for d in dets], dtype=np.float64)
    same = np.sqrt(((last[None] - centres[:, None]) ** 2).sum(axis=2)) < 0.004
    same &= np.abs(n_pts[:, None] - size[None]) <= 0.2 * size[None]
    same_name = np.array([d.colour for d in dets], dtype=object)[:, None] == colour[None]
    return same & np.where(~np.isnan(seen_rgb[:, 0])[None], as_before, same_name)


def surface_patch(dets: list[ObjectObservation]) -> np.ndarray:
    """(N,) bool: which detections are a size class's view with no height (under PATCH): a patch of some
    surface. Neither such a patch nor a view of another size class takes a thing hidden in a container (a
    ball under a cup), by a move or by re-identification: that thing comes back into view as a solid of its
    own size where its container leaves it (a block's top face seen from above is given a block's height by
    geometric perception). Glare on the cups under the wrist camera, read as a flat yellow patch, a 2 cm
    yellow speck or a 25 cm "large" yellow thing over two cups, had taken the yellow ball hidden in another
    cup, and the agent lifted the wrong one (ShellGame 930010, 930059 and 930080, geometric). Only geometric
    perception names size classes, so the masks and a learned segmenter are untouched."""
    return np.array([d.label in SIZE_CLASSES and float(d.box_max[2] - d.box_min[2]) < PATCH for d in dets],
                    dtype=bool)


def piece_of_view(det: ObjectObservation, views: list[ObjectObservation], tolerance: float) -> bool:
    """Whether a patch (see surface_patch) that continued no node lies within PIECE_GAP (box gap, m) of one
    of its camera's views this frame, of its colour, that did: a piece of that thing, not a new one. The
    wrist camera over a carried block saw its top face and, 3 cm lower, a 5-point sliver of its side; the
    sliver became a "flat" node, which then took the block's views as the nearer centre, and the plan
    fetched the "small" node left in mid-air (PutBlockBack 930016, geometric)."""
    if not surface_patch([det])[0]:
        return False
    for view in views:
        gap = np.maximum(view.box_min - det.box_max, det.box_min - view.box_max).max()
        if gap < PIECE_GAP and same_colour(det.colour, det.rgb, view.colour, view.rgb, tolerance):
            return True
    return False
