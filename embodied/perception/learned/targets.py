"""Training targets from instance maps: per-pixel class weights, centre heatmaps and centre offsets."""

from __future__ import annotations

import numpy as np


def instance_targets(instance: np.ndarray, sigma: float, small_pixels: int, small_weight: float
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For one frame's instance map (H,W) (0 = background): centre heat (H,W) float32 in [0,1],
    offsets (2,H,W) float32 px (dy, dx) from each pixel to its instance's mass centre (0 off
    instances), and cross-entropy weights (H,W) float32 (``small_weight`` on small instances)."""
    h, w = instance.shape
    inst = instance.astype(np.int64)
    n = int(inst.max(initial=0)) + 1
    ys, xs = np.mgrid[0:h, 0:w]
    count = np.bincount(inst.ravel(), minlength=n).astype(np.float64)
    safe = np.maximum(count, 1.0)
    cy = np.bincount(inst.ravel(), weights=ys.ravel(), minlength=n) / safe
    cx = np.bincount(inst.ravel(), weights=xs.ravel(), minlength=n) / safe
    fg = inst > 0
    offset = np.zeros((2, h, w), np.float32)
    offset[0][fg] = (cy[inst] - ys)[fg]
    offset[1][fg] = (cx[inst] - xs)[fg]
    heat = np.zeros((h, w), np.float32)
    r = int(np.ceil(3 * sigma))
    for k in np.flatnonzero(count[1:]) + 1:
        y0, x0 = int(round(cy[k])), int(round(cx[k]))
        ya, yb, xa, xb = max(y0 - r, 0), min(y0 + r + 1, h), max(x0 - r, 0), min(x0 + r + 1, w)
        g = np.exp(-((ys[ya:yb, xa:xb] - cy[k]) ** 2 + (xs[ya:yb, xa:xb] - cx[k]) ** 2) / (2 * sigma**2))
        np.maximum(heat[ya:yb, xa:xb], g, out=heat[ya:yb, xa:xb])
    weight = np.ones((h, w), np.float32)
    small = (count < small_pixels) & (count > 0)
    small[0] = False
    weight[small[inst]] = small_weight
    return heat, offset, weight
