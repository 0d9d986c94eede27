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

CROP = 32  # px, the side of a crop
DEPTH_RANGE = 0.3  # m, relief range around the instance's median depth
SCALARS = 4


def _window(rows: np.ndarray, cols: np.ndarray, h: int, w: int) -> tuple[float, float, float]:
    """(centre row, centre col, side) of the square window around an instance's pixels."""
    r0, r1, c0, c1 = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
    side = max(r1 - r0, c1 - c0) * 1.25 + 4
    return (r0 + r1) / 2, (c0 + c1) / 2, float(side)


def instance_crops(rgb: np.ndarray, depth: np.ndarray, ids: np.ndarray, wanted, size: int = CROP
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Crops of the instances ``wanted`` (ids present in ``ids``): x (N,5,size,size), s (N,4) float32."""
    h, w = ids.shape
    wanted = list(wanted)
    x = np.zeros((len(wanted), 5, size, size), np.float32)
    s = np.zeros((len(wanted), SCALARS), np.float32)
    grid = (np.arange(size) + 0.5) / size - 0.5
    flat_ids = ids.ravel()
    order = np.argsort(flat_ids, kind="stable")
    sorted_ids = flat_ids[order]
    for n, i in enumerate(wanted):
        lo, hi = np.searchsorted(sorted_ids, [i, i + 1])
        pix = order[lo:hi]
        if len(pix) == 0:
            continue
        rows, cols = pix // w, pix % w
        cy, cx, side = _window(rows, cols, h, w)
        ry = np.floor(cy + grid * side).astype(np.int64)
        rx = np.floor(cx + grid * side).astype(np.int64)
        inside = ((ry >= 0) & (ry < h))[:, None] & ((rx >= 0) & (rx < w))[None, :]
        yy, xx = np.clip(ry, 0, h - 1)[:, None], np.clip(rx, 0, w - 1)[None, :]
        d = depth[rows, cols]
        d = d[d > 0]
        med = float(np.median(d)) if len(d) else 0.0
        x[n, :3] = np.moveaxis(rgb[yy, xx], -1, 0) / 255.0
        x[n, 3] = ids[yy, xx] == i
        window_depth = depth[yy, xx]
        rel = np.where(window_depth > 0, np.clip(window_depth - med, -DEPTH_RANGE, DEPTH_RANGE), DEPTH_RANGE)
        x[n, 4] = rel / DEPTH_RANGE
        x[n] *= inside
        area = len(pix)
        box = (rows.max() - rows.min() + 1) * (cols.max() - cols.min() + 1)
        s[n] = (np.log(side * max(med, 0.05)), np.log(area), med / 4.0, area / box)
    return x, s
