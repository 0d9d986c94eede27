"""Synthetic frames for memory tests: boxes of points seen by a camera looking straight down."""

from __future__ import annotations

import numpy as np

from embodied.memory.config import DetectorProfile, MemoryConfig
from embodied.perception.colour import colour_name
from embodied.perception.types import CameraView, Frame, ObjectObservation

SIZE = 128
K = np.array([[110.0, 0.0, 63.5], [0.0, 110.0, 63.5], [0.0, 0.0, 1.0]])
RGB = {
    "red": (0.8, 0.12, 0.12),
    "blue": (0.15, 0.3, 0.82),
    "yellow": (0.84, 0.8, 0.1),
    "grey": (0.5, 0.5, 0.5),
    "brown": (0.7, 0.6, 0.46),
    "orange": (0.85, 0.5, 0.05),
}


def down_camera(x: float = 0.4, y: float = 0.0, height: float = 1.0) -> np.ndarray:
    """Camera-to-world (4,4), OpenCV axes, looking straight down from (x, y, height)."""
    pose = np.eye(4)
    pose[:3, :3] = np.array([[0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
    pose[:3, 3] = (x, y, height)
    return pose


def box_points(lo, hi, step: float = 0.01) -> np.ndarray:
    """Points on the top and four sides of an axis-aligned box (N,3)."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    axes = [np.linspace(lo[i], hi[i], max(2, round((hi[i] - lo[i]) / step) + 1)) for i in range(3)]
    g = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    on_surface = (g[:, 2] == hi[2]) | np.any((g[:, :2] == lo[:2]) | (g[:, :2] == hi[:2]), axis=1)
    return g[on_surface]


def detection(
    centre,
    label="block",
    colour="red",
    size=(0.04, 0.04, 0.04),
    camera="top",
    t=0,
    key=None,
    bottom: float | None = None,
) -> ObjectObservation:
    c = np.asarray(centre, float)
    s = np.asarray(size, float)
    lo, hi = c - s / 2, c + s / 2
    if bottom is not None:
        lo[2], hi[2] = bottom, bottom + s[2]
    pts = box_points(lo, hi)
    rgb = np.array(RGB[colour], np.float32)
    return ObjectObservation(
        key or f"{camera}#{np.random.randint(1e6)}",
        label,
        rgb,
        colour_name(rgb),
        pts.mean(0),
        pts.min(0),
        pts.max(0),
        pts.astype(np.float32),
        len(pts) * 3,
        camera,
        t,
    )


def view(pose: np.ndarray, occupiers: list[np.ndarray] = (), table_z: float = 0.0, name: str = "top") -> CameraView:
    """Depth image of a table plane plus whatever points ``occupiers`` hold (nearest wins)."""
    depth = np.full((SIZE, SIZE), pose[2, 3] - table_z, dtype=np.float32)
    inv = np.linalg.inv(pose)
    for pts in occupiers:
        cam = pts @ inv[:3, :3].T + inv[:3, 3]
        u = np.rint(K[0, 0] * cam[:, 0] / cam[:, 2] + K[0, 2]).astype(int)
        v = np.rint(K[1, 1] * cam[:, 1] / cam[:, 2] + K[1, 2]).astype(int)
        ok = (u >= 0) & (u < SIZE) & (v >= 0) & (v < SIZE)
        for uu, vv, zz in zip(u[ok], v[ok], cam[ok, 2]):
            # Fill a 3x3 patch so sparse points make a solid surface.
            patch = depth[max(vv - 1, 0) : vv + 2, max(uu - 1, 0) : uu + 2]
            np.minimum(patch, zz, out=patch)
    return CameraView(name, depth, K.copy(), pose, np.linalg.inv(pose))


def frame(t: int, dets: list[ObjectObservation], occupiers=None, pose=None, proprio=None) -> Frame:
    """A frame whose depth shows the detections (and any extra occupiers)."""
    pose = down_camera() if pose is None else pose
    for d in dets:
        d.t = t
    pts = [d.points.astype(float) for d in dets] + list(occupiers or [])
    return Frame(t, dets, [view(pose, pts)], proprio)


def proprio(tcp, width: float) -> np.ndarray:
    p = np.zeros(22, np.float32)
    p[14:17] = tcp
    p[21] = width
    return p


def cabinet_frame(t: int, out: float, noise=None, seed: int = 0) -> Frame:
    """A cabinet with one drawer pulled ``out`` m out of it (along -x), seen from above; with ``noise`` (3,) m
    the views carry that point noise and jitter by a fraction of it."""
    rng = np.random.default_rng(seed)
    cab = detection((0.70, 0.0, 0.045), "cabinet", "grey", (0.24, 0.18, 0.09))
    drawer = detection((0.55 - out / 2, 0.0, 0.04), "drawer", "orange", (0.06 + out, 0.17, 0.07))
    if noise is not None:
        for det in (cab, drawer):
            delta = rng.normal(0.0, 0.3 * float(np.max(noise)), 3)
            det.points = (det.points + delta).astype(np.float32)
            det.box_min, det.box_max, det.centroid = det.box_min + delta, det.box_max + delta, det.centroid + delta
            det.noise = np.asarray(noise, dtype=np.float64)
    return frame(t, [cab, drawer])


def profile(off: tuple[str, ...] = (), **detector) -> MemoryConfig:
    """A memory config with the detector profile's fields ``detector`` (over the renderer's masks) and the
    named rules ``off`` switched off: ``profile(("lit_face",), class_votes=True)``."""
    return MemoryConfig(detector=DetectorProfile(**detector), off=tuple(off))
