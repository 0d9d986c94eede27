"""How precisely a view places an object, from its per-axis point noise (``ObjectObservation.noise``).

A view's centre averages the points near its faces (about a quarter of them each). Two views of one camera
share its calibration, so a shift between them is noise alone; two cameras' calibrations disagree by
``SensorPrior.calibration_shift`` and ``calibration_tilt`` at the range.
"""

from __future__ import annotations

import math

import numpy as np

from embodied.memory.config import SensorPrior


def centre_std(noise: np.ndarray, n_points: int, prior: SensorPrior) -> float:
    """Std (m) of a view's box centre from its per-axis point noise (3,) m and its point count."""
    return float(np.linalg.norm(noise)) / math.sqrt(max(1.0, n_points / prior.face_share))


def shift_tolerance(noise: np.ndarray, n_points: int, prior: SensorPrior, floor: float) -> float:
    """m: a shift between two views of one camera under this is noise (``prior.k`` stds of the difference
    of two centres), or under ``floor`` (the renderer's own jitter, partial views)."""
    return max(floor, prior.k * math.sqrt(2.0) * centre_std(noise, n_points, prior))


def shift_tolerances(dets, prior: SensorPrior, floor: float) -> np.ndarray:
    """(D,) m: ``shift_tolerance`` of each of D views (``ObjectObservation``), at once."""
    if not dets:
        return np.zeros(0)
    noise = np.array([d.noise for d in dets], dtype=np.float64).reshape(-1, 3)
    n = np.array([len(d.points) for d in dets], dtype=np.float64)
    std = np.sqrt((noise ** 2).sum(axis=1)) / np.sqrt(np.maximum(1.0, n / prior.face_share))
    return np.maximum(floor, prior.k * math.sqrt(2.0) * std)


def face_std(noise: np.ndarray, n_points, distance, prior: SensorPrior) -> np.ndarray:
    """(3,) m (or (V,3) for V views: ``noise`` (V,3), ``n_points`` and ``distance`` (V,)): std of a view's box
    faces along each axis: its point noise over the points near a face, and the calibration of its camera at
    ``distance`` m (two cameras' disagreement on a point that far)."""
    distance, n_points = np.asarray(distance, dtype=np.float64), np.asarray(n_points, dtype=np.float64)
    calibration = np.hypot(prior.calibration_shift, distance * math.radians(prior.calibration_tilt))
    share = np.sqrt(np.maximum(1.0, n_points / prior.face_share))
    return np.hypot(noise / share[..., None], calibration[..., None])
