"""Per-episode and dataset statistics, as LeRobot keeps them.

Each feature gets ``min``, ``max``, ``mean``, ``std``, ``count`` and the
quantiles ``q01``, ``q10``, ``q50``, ``q90``, ``q99``. Numeric features are
reduced over frames (shape = the feature's shape); camera images per channel,
scaled to [0, 1], with shape (3, 1, 1). Dataset statistics pool the episodes:
exact min, max, mean and std (parallel variance), count-weighted quantiles.
"""

from __future__ import annotations

import numpy as np

QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
QKEYS = tuple(f"q{int(round(q * 100)):02d}" for q in QUANTILES)
STAT_KEYS = ("min", "max", "mean", "std", "count", *QKEYS)


def array_stats(x: np.ndarray) -> dict[str, list]:
    """Statistics over axis 0 of ``x`` (frames)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    out = {
        "min": x.min(axis=0),
        "max": x.max(axis=0),
        "mean": x.mean(axis=0),
        "std": x.std(axis=0),
        "count": np.array([len(x)]),
    }
    for key, q in zip(QKEYS, np.quantile(x, QUANTILES, axis=0)):
        out[key] = q
    return {k: np.asarray(v).tolist() for k, v in out.items()}


def image_stats(frames: np.ndarray) -> dict[str, list]:
    """Per-channel statistics of (N, H, W, 3) uint8 frames in [0, 1], each shaped (3, 1, 1)."""
    x = frames.reshape(-1, 3).astype(np.float64) / 255.0
    s = array_stats(x)
    s["count"] = [int(len(frames))]
    return {k: (v if k == "count" else [[[c]] for c in v]) for k, v in s.items()}


def aggregate(stats: list[dict[str, dict]]) -> dict[str, dict]:
    """Pool per-episode statistics {feature: {stat: nested list}} into dataset statistics."""
    out: dict[str, dict] = {}
    keys = sorted({k for s in stats for k in s})
    for key in keys:
        parts = [s[key] for s in stats if key in s]
        counts = np.array([float(np.asarray(p["count"]).reshape(-1)[0]) for p in parts])
        w = counts / counts.sum()
        means = np.stack([np.asarray(p["mean"], np.float64) for p in parts])
        stds = np.stack([np.asarray(p["std"], np.float64) for p in parts])
        wb = w.reshape((-1,) + (1,) * (means.ndim - 1))
        mean = (wb * means).sum(axis=0)
        var = (wb * (stds**2 + (means - mean) ** 2)).sum(axis=0)
        agg = {
            "min": np.min(np.stack([np.asarray(p["min"]) for p in parts]), axis=0),
            "max": np.max(np.stack([np.asarray(p["max"]) for p in parts]), axis=0),
            "mean": mean,
            "std": np.sqrt(np.maximum(var, 0.0)),
            "count": np.array([int(counts.sum())]),
        }
        for q in QKEYS:
            if all(q in p for p in parts):
                agg[q] = (wb * np.stack([np.asarray(p[q], np.float64) for p in parts])).sum(axis=0)
        out[key] = {k: np.asarray(v).tolist() for k, v in agg.items()}
    return out
