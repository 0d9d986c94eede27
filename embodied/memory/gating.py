"""Pairwise tests between one camera's views (D) and remembered nodes (N), as (D, N) arrays."""

from __future__ import annotations

import numpy as np

from embodied.perception.types import ObjectObservation


def brightness_ratio_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(D,N) how many times brighter or dimmer (>= 1) each row of b (N,3) is than each of a (D,3) (top channel)."""
    na = np.maximum(a.max(axis=1), 1e-3)[:, None]
    nb = np.maximum(b.max(axis=1), 1e-3)[None]
    return np.maximum(na / nb, nb / na)


def colour_distance_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``perception.colour.colour_distance`` between every row of a (D,3) and of b (N,3): (D,N)."""
    na = np.maximum(a.max(axis=1), 1e-3)
    nb = np.maximum(b.max(axis=1), 1e-3)
    d = np.sqrt((((a / na[:, None])[:, None] - (b / nb[:, None])[None]) ** 2).sum(axis=2))
    return d * 0.7 + np.abs(na[:, None] - nb[None]) * 0.3


def looks_as_before(rgb: np.ndarray, seen: np.ndarray, tolerance: float, ratio: float) -> np.ndarray:
    """(D,N) bool: view colours (D,3) match each node's reference look from this camera (N,3; NaN rows:
    none, never a match), in hue within ``tolerance`` and in brightness within ``ratio``."""
    known = ~np.isnan(seen[:, 0])
    seen = np.where(known[:, None], seen, 0.0)
    value = np.log(np.maximum(rgb.max(axis=1), 1e-3))[:, None] - np.log(np.maximum(seen.max(axis=1), 1e-3))[None]
    return known[None] & (colour_distance_matrix(rgb, seen) < tolerance) & (np.abs(value) < np.log(ratio))


def footprint_overlap(det: ObjectObservation, lo: np.ndarray, hi: np.ndarray, grow: float = 0.02) -> float:
    """Share of a big view's box inside a support's accumulated box grown by ``grow`` m: furniture is seen
    in pieces, each lying in or against the union of those seen before (thin sides count as 5 mm)."""
    dlo, dhi = det.box_min - 0.0025, det.box_max + 0.0025
    w = np.clip(np.minimum(dhi, hi + grow) - np.maximum(dlo, lo - grow), 0, None)
    return float(np.prod(w) / np.prod(dhi - dlo))


def centred_over(centres: np.ndarray, lo: np.ndarray, hi: np.ndarray, slack: float = 0.0) -> np.ndarray:
    """(D, N) bool: centre i (D,2+) m lies over box j's footprint (N,2+) m grown by ``slack`` m."""
    return np.all((centres[:, None, :2] >= lo[None, :, :2] - slack) & (centres[:, None, :2] <= hi[None, :, :2] + slack),
                  axis=2)


def as_last_seen(dets: list[ObjectObservation], centres: np.ndarray, last: np.ndarray, size: np.ndarray,
                 colour: np.ndarray, seen_rgb: np.ndarray, as_before: np.ndarray, shift: np.ndarray,
                 share: float) -> np.ndarray:
    """(D, N) bool: view i looks just as this camera last saw node j: its centre within ``shift`` (D,) m,
    its size within ``share`` and its colour the camera's reference (where kept, else the colour name)."""
    n_pts = np.array([d.n_points for d in dets], dtype=np.float64)
    same = np.sqrt(((last[None] - centres[:, None]) ** 2).sum(axis=2)) < shift[:, None]
    same &= np.abs(n_pts[:, None] - size[None]) <= share * size[None]
    same_name = np.array([d.colour for d in dets], dtype=object)[:, None] == colour[None]
    return same & np.where(~np.isnan(seen_rgb[:, 0])[None], as_before, same_name)
