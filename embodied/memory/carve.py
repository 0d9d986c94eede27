"""Geometry of the view filters (embodied.memory.filters): a view cut clear of remembered boxes, and how
many of a row's parts a view spans."""

from __future__ import annotations

import dataclasses

import numpy as np

Box = tuple[np.ndarray, np.ndarray]  # (lo (3,), hi (3,)) m


def cut_out(view, boxes: list[Box], slack: float):
    """``view`` (an ObjectObservation) without its points within any of ``boxes`` ((lo (3,), hi (3,)) m, in
    xy) grown by ``slack`` m; the same view when none lies there, None when every point does."""
    keep = np.ones(len(view.points), bool)
    for lo, hi in boxes:
        keep &= ~np.all((view.points[:, :2] >= lo[:2] - slack) & (view.points[:, :2] <= hi[:2] + slack), axis=1)
    if keep.all():
        return view
    if not keep.any():
        return None
    pts = view.points[keep]
    return dataclasses.replace(view, points=pts, centroid=pts.mean(0).astype(np.float64),
                               box_min=pts.min(0).astype(np.float64), box_max=pts.max(0).astype(np.float64),
                               n_points=max(1, round(view.n_points * keep.mean())))


def drawers_spanned(lo: np.ndarray, hi: np.ndarray, drawers: list[Box], across: int, share: float) -> int:
    """How many of ``drawers`` a drawer view (box ``lo``, ``hi`` (3,) m) takes in: covers ``share`` or more
    of their width along axis ``across`` (their row's line) while overlapping their height. Drawers that
    overlap one another along the row by half the narrower's width count once (two nodes of one drawer)."""
    counted: list[tuple[float, float]] = []
    for d_lo, d_hi in sorted(drawers, key=lambda box: float(box[0][across])):
        a, b = float(d_lo[across]), float(d_hi[across])
        width = max(b - a, 1e-6)
        if min(hi[across], b) - max(lo[across], a) < share * width or hi[2] < d_lo[2] or lo[2] > d_hi[2]:
            continue
        if all(min(b, y) - max(a, x) < 0.5 * min(width, y - x) for x, y in counted):
            counted.append((a, b))
    return len(counted)
