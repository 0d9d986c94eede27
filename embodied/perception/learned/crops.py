"""Fixed-size RGB-D crops of instances, the input of the crop classifier.

    x, s = instance_crops(rgb, depth, ids, [3, 7])   # rgb (H,W,3) uint8, depth (H,W) float32 m, ids (H,W) int
    # x (N,5,S,S) float32: rgb / 255, the instance's mask, depth relative to the instance's median
    #   (clipped to +-DEPTH_RANGE m, / DEPTH_RANGE), on a square window around the instance (padded 25 %)
    # s (N,4) float32: log of the window's side x median depth (~ metric size), log pixel area,
    #   median depth / 4 m, and the mask's fill of its bounding box

A 20-pixel bottle and a 20-pixel ball differ in outline and relief more than
in colour (the apartment draws its objects' colours per episode), which a
per-pixel classifier at 1/2 resolution barely sees; the crop shows it at a
fixed scale.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

CROP = 32  # px, the side of a crop
DEPTH_RANGE = 0.3  # m, relief range around the instance's median depth
SCALARS = 4


def instance_crops(rgb: np.ndarray, depth: np.ndarray, ids: np.ndarray, wanted, size: int = CROP
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Crops of the instances ``wanted`` (ids present in ``ids``): x (N,5,size,size), s (N,4) float32.
    An id absent from ``ids`` gives an all-zero crop. All crops are gathered at once (no per-instance
    Python work but the lookups of their boxes)."""
    h, w = ids.shape
    wanted = np.asarray(list(wanted), np.int64)
    x = np.zeros((len(wanted), 5, size, size), np.float32)
    s = np.zeros((len(wanted), SCALARS), np.float32)
    if len(wanted) == 0:
        return x, s
    boxes = ndimage.find_objects(ids.astype(np.int32, copy=False), max_label=int(wanted.max()))
    present = np.array([k >= 1 and boxes[k - 1] is not None for k in wanted.tolist()])
    if not present.any():
        return x, s
    keep = wanted[present]
    box = np.array([[b[0].start, b[0].stop, b[1].start, b[1].stop] for b in (boxes[k - 1] for k in keep.tolist())])
    area = np.bincount(ids.ravel().astype(np.int64), minlength=int(keep.max()) + 1)[keep]
    med = _median_depths(depth, ids, keep)
    side = np.maximum(box[:, 1] - box[:, 0], box[:, 3] - box[:, 2]) * 1.25 + 4
    grid = (np.arange(size) + 0.5) / size - 0.5
    ry = np.floor((box[:, 0] + box[:, 1])[:, None] / 2 + grid[None] * side[:, None]).astype(np.int64)  # (N,S)
    rx = np.floor((box[:, 2] + box[:, 3])[:, None] / 2 + grid[None] * side[:, None]).astype(np.int64)
    inside = (((ry >= 0) & (ry < h))[:, :, None] & ((rx >= 0) & (rx < w))[:, None, :])  # (N,S,S)
    yy, xx = np.clip(ry, 0, h - 1)[:, :, None], np.clip(rx, 0, w - 1)[:, None, :]
    window_depth = depth[yy, xx]
    rel = np.where(window_depth > 0, np.clip(window_depth - med[:, None, None], -DEPTH_RANGE, DEPTH_RANGE),
                   DEPTH_RANGE)
    out = np.concatenate([np.moveaxis(rgb[yy, xx], -1, 1) / np.float32(255.0),
                          (ids[yy, xx] == keep[:, None, None])[:, None], (rel / DEPTH_RANGE)[:, None]], 1)
    x[present] = out * inside[:, None]
    fill = area / ((box[:, 1] - box[:, 0]) * (box[:, 3] - box[:, 2]))
    s[present] = np.stack([np.log(side * np.maximum(med, 0.05)), np.log(area), med / 4.0, fill], 1)
    return x, s


def _median_depths(depth: np.ndarray, ids: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """(K,) float64 median valid depth (m) of each instance of ``keep`` (0 where none). A mask each for a few
    instances (the grouper's second opinion asks about one or two), scipy's labelled median for many."""
    if len(keep) <= 6:
        out = np.zeros(len(keep))
        for j, k in enumerate(keep.tolist()):
            values = depth[(ids == k) & (depth > 0)]
            if len(values):
                out[j] = float(np.median(values))
        return out
    valid = np.where(depth > 0, ids, 0)
    return np.nan_to_num(np.asarray(ndimage.median(depth, valid, keep), np.float64), nan=0.0)
