"""Views cut clear of what memory knows stands there: a detector's view that took in a neighbour loses the
points within the neighbour's box before it grows a node.

    view = cut_out(view, [(lo, hi), ...], slack)   # None when nothing of it is left
    dets = housings_clear_of_drawers(dets, drawer_boxes, HOUSING_CLASSES, cover, slack)
    dets = drawers_clear_of_objects(dets, object_boxes, slack)
"""

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


def housings_clear_of_drawers(dets: list, drawers: list[Box], housing_classes, cover: float, slack: float) -> list:
    """``dets`` with each view of a ``housing_classes`` class cut clear of the ``drawers`` it takes in: a
    drawer with a smaller footprint than the view, which the view covers ``cover`` or more of (in xy), loses
    the view its points within the drawer's box grown by ``slack``. A view with nothing left goes."""
    out = []
    for d in dets:
        if d.label in housing_classes and drawers:
            view = float(np.prod(np.maximum(d.box_max[:2] - d.box_min[:2], 1e-3)))
            inside = []
            for lo, hi in drawers:
                foot = float(np.prod(np.maximum(hi[:2] - lo[:2], 1e-3)))
                inner = np.clip(np.minimum(d.box_max[:2], hi[:2]) - np.maximum(d.box_min[:2], lo[:2]), 0, None)
                if foot < view and np.prod(inner) >= cover * foot:
                    inside.append((lo, hi))
            d = cut_out(d, inside, slack) if inside else d
        if d is not None:
            out.append(d)
    return out


def drawers_clear_of_objects(dets: list, objects: list[Box], slack: float) -> list:
    """``dets`` with each drawer view cut clear of the ``objects`` whose boxes its box overlaps (in 3D): their
    points within the object's box grown by ``slack`` left out. A view with nothing left goes."""
    out = []
    for d in dets:
        if d.label == "drawer":
            near = [(lo, hi) for lo, hi in objects if np.all(np.minimum(d.box_max, hi) > np.maximum(d.box_min, lo))]
            d = cut_out(d, near, slack) if near else d
        if d is not None:
            out.append(d)
    return out


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
