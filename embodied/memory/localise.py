"""Odometry drift correction: each head depth frame registered against the map it builds (open3d ICP).

    loc = DepthLocaliser(LocaliserConfig())
    corrected = loc.correct(depth, K, T_odom, t, ignore=None)   # (4,4) camera-to-world, every frame
    loc.trajectory()                                             # the corrected (and raw) camera poses
    loc.reanchor()                                               # odometry re-zeroed by an outside reference

Frames, units: world frame, metres, z up; camera poses are (4,4)
camera-to-world in OpenCV axes, depth ``(H,W) float32`` metres (z-depth),
intrinsics ``K (3,3)`` pixels.

The odometry pose of the camera drifts in the plane only (the base rolls on a
flat floor and the camera is fixed on it), so the estimate is
``T = C @ T_odom`` with ``C`` a planar rigid correction: a rotation about
world z and an (x, y) translation.

Every ``every``-th frame while the camera moves (and the first frame), the
depth image is back-projected on a pixel stride with ``C @ T_odom`` and
voxel-downsampled; normals come from the organised pixel grid. With a map
in place, the cloud is registered against the map's points near the camera
on surfaces that face it (point-to-plane ICP, open3d), started from
``C @ T_odom``. The 6-DoF result
is cut to planar (its yaw, and the translation that moves the camera's
position where the full result moves it). A fit is accepted when it has
``min_fitness`` of the source within ``max_corr`` of the map, at least
``min_structure`` inliers on vertical surfaces (floor alone fixes no x, y,
yaw), an inlier RMSE of at most ``max_rmse``, and a step of at most
``max_step`` m / ``max_turn`` rad; otherwise ``C`` is kept (odometry
carries the estimate). Either way the frame's points in voxels the map does
not have yet are added (first come, first kept), so the map grows into new
rooms and keeps what it saw first where it has seen before.

Re-anchoring: a jump of the odometry larger than the base can move in one
frame (``jump_step`` m / ``jump_turn`` rad), or a call to ``reanchor()``,
means the odometry was re-zeroed against an outside reference (the dock):
``C`` restarts at identity and the next frame is registered at once with a
wider gate (``reanchor_corr``, ``reanchor_step``) for ``reanchor_frames``
registrations.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import open3d as o3d


@dataclass
class LocaliserConfig:
    """Knobs of :class:`DepthLocaliser` (metres, radians, frames)."""

    every: int = 3  # register every k-th frame (while the camera moves)
    stride: int = 4  # pixel stride of the back-projection
    min_depth: float = 0.2
    max_depth: float = 5.0
    voxel: float = 0.08  # source downsampling and map cell
    crease: float = 0.97  # cosine: grid points whose two one-sided normals differ more are edges, left out
    kernel: float = 0.0  # Tukey robust kernel width (m) of the ICP; 0: plain least squares
    crop: float = 4.5  # map points within this xy distance of the camera are the ICP target
    max_corr: float = 0.15  # ICP correspondence distance
    iterations: int = 12
    min_fitness: float = 0.3
    min_structure: int = 40  # inliers whose normal is within 60 degrees of horizontal (walls, furniture sides)
    max_rmse: float = 0.06
    min_eigen: float = 0.02  # planar information per inlier below which a direction is left to odometry
    # Largest accepted change of the correction: a base plus a fraction of the odometry's motion since the
    # last accepted registration (odometry cannot err by more than a fraction of what it measured).
    max_step: float = 0.03
    max_turn: float = 0.02
    per_motion: float = 0.25
    moved: float = 0.01  # camera motion (m, or rad) since the last registration that makes a frame worth it
    jump_step: float = 0.3  # odometry moving more than this in one frame is a re-zeroing
    jump_turn: float = 0.5
    reanchor_corr: float = 0.4
    reanchor_step: float = 0.5
    reanchor_turn: float = 0.3
    reanchor_frames: int = 3

    def validate(self) -> None:
        if self.every < 1 or self.stride < 1 or self.iterations < 1:
            raise ValueError("LocaliserConfig: every, stride and iterations must be >= 1")
        if not 0 < self.min_depth < self.max_depth:
            raise ValueError(f"LocaliserConfig: need 0 < min_depth < max_depth, got {self.min_depth}, {self.max_depth}")
        if min(self.voxel, self.crop, self.max_corr, self.max_rmse, self.max_step, self.max_turn) <= 0:
            raise ValueError("LocaliserConfig: voxel, crop, max_corr, max_rmse, max_step, max_turn must be > 0")


def planar(yaw: float, xy) -> np.ndarray:
    """(4,4) rotation by ``yaw`` (rad) about world z, then translation ``(x, y, 0)`` (m)."""
    c, s = np.cos(yaw), np.sin(yaw)
    out = np.eye(4)
    out[:2, :2] = [[c, -s], [s, c]]
    out[:2, 3] = xy
    return out


def yaw_of(T: np.ndarray) -> float:
    """Heading (rad) of a camera pose: its optical axis (OpenCV z) projected on the floor."""
    return float(np.arctan2(T[1, 2], T[0, 2]))


def grid_cloud(depth: np.ndarray, K: np.ndarray, stride: int, lo: float, hi: float, ignore=None,
               crease: float = 0.97):
    """Camera-frame points (N,3) and unit normals (N,3) of the pixel grid every ``stride`` px.

    Normals: cross products of the grid neighbours' differences; pixels with a
    missing neighbour, a depth step over 10 %, or whose two one-sided normals
    differ by more than ``acos(crease)`` (an edge or a corner) are dropped.
    """
    h, w = depth.shape
    v, u = np.mgrid[stride // 2 : h : stride, stride // 2 : w : stride]
    z = depth[v, u].astype(np.float64)
    ok = np.isfinite(z) & (z > lo) & (z < hi)
    if ignore is not None:
        ok &= ~np.asarray(ignore, dtype=bool)[v, u]
    z = np.where(ok, z, 0.0)
    pts = np.stack([(u - K[0, 2]) / K[0, 0] * z, (v - K[1, 2]) / K[1, 1] * z, z], axis=-1)
    c = pts[1:-1, 1:-1]
    # Two one-sided normals (right/down and left/up): on a plane they agree, across a crease they do not.
    n = np.cross(pts[1:-1, 2:] - c, pts[2:, 1:-1] - c)
    n2 = np.cross(c - pts[1:-1, :-2], c - pts[:-2, 1:-1])
    zc = z[1:-1, 1:-1]
    near = [z[1:-1, 2:], z[1:-1, :-2], z[2:, 1:-1], z[:-2, 1:-1]]
    keep = ok[1:-1, 1:-1] & np.all([np.abs(q - zc) < 0.1 * zc for q in near], axis=0)
    n1n = np.linalg.norm(n, axis=-1) * np.linalg.norm(n2, axis=-1)
    keep &= np.einsum("ijk,ijk->ij", n, n2) > crease * np.maximum(n1n, 1e-24)
    n = n + n2
    norm = np.linalg.norm(n, axis=-1)
    keep &= norm > 1e-12
    n = n[keep] / norm[keep][:, None]
    n *= -np.sign(np.einsum("ij,ij->i", n, c[keep]))[:, None]  # face the camera
    return c[keep], n


@dataclass
class Registration:
    """One frame's outcome: ``t``, whether ICP ran / was accepted, its fitness and inlier RMSE (m)."""

    t: int
    ran: bool
    accepted: bool
    fitness: float = 0.0
    rmse: float = 0.0
    structure: int = 0
    ms: float = 0.0
    why: str = ""


class DepthLocaliser:
    """Keeps the planar correction of a drifting camera pose by frame-to-map ICP."""

    def __init__(self, config: LocaliserConfig | None = None):
        self.config = config or LocaliserConfig()
        self.config.validate()
        self.correction = np.eye(4)
        self.map_points = np.zeros((0, 3))
        self.map_normals = np.zeros((0, 3))
        self._keys = np.zeros(0, dtype=np.int64)  # sorted voxel keys of the map points
        self.times: list[int] = []
        self.poses: list[np.ndarray] = []  # corrected camera-to-world (4,4) per frame
        self.raw: list[np.ndarray] = []  # odometry camera-to-world (4,4) per frame
        self.log: list[Registration] = []
        self._last_raw: np.ndarray | None = None
        self._last_reg: np.ndarray | None = None  # odometry pose at the last registration
        self._since = 0
        self._wide = 0
        self._accepted: np.ndarray | None = None  # odometry pose at the last accepted registration
        self.reanchors = 0

    # --- public ------------------------------------------------------------------------
    def correct(self, depth: np.ndarray, K: np.ndarray, T_odom: np.ndarray, t: int, ignore=None) -> np.ndarray:
        """The corrected (4,4) float32 camera-to-world pose for this frame's odometry pose ``T_odom``.

        ``depth (H,W)`` metres, ``K (3,3)``, ``ignore (H,W) bool`` pixels to leave out (movable things).
        """
        T_odom = np.asarray(T_odom, dtype=np.float64)
        if T_odom.shape != (4, 4) or not np.all(np.isfinite(T_odom)):
            raise ValueError(f"DepthLocaliser: the odometry camera pose must be a finite (4,4), got {T_odom.shape}")
        depth = np.asarray(depth)
        if depth.ndim != 2:
            raise ValueError(f"DepthLocaliser: depth must be (H,W), got shape {depth.shape}")
        cfg = self.config
        if self._last_raw is not None and _moved(self._last_raw, T_odom, cfg.jump_step, cfg.jump_turn):
            self.reanchor()
        self._last_raw = T_odom
        self._since += 1
        due = self._last_reg is None or self._wide > 0 or (
            self._since >= cfg.every and _moved(self._last_reg, T_odom, cfg.moved, cfg.moved))
        if due:
            self._register(depth, np.asarray(K, dtype=np.float64), T_odom, int(t), ignore)
        pose = self.correction @ T_odom
        self.times.append(int(t))
        self.poses.append(pose)
        self.raw.append(T_odom)
        return pose.astype(np.float32)

    def reanchor(self) -> None:
        """The odometry was re-zeroed against an outside reference: restart the correction at identity and
        register the next frames with the wider gate."""
        self.correction = np.eye(4)
        self._wide = self.config.reanchor_frames
        self._last_reg = self._last_raw = self._accepted = None
        self.reanchors += 1

    def trajectory(self) -> dict[str, np.ndarray]:
        """``t (N,)`` steps, ``corrected`` and ``odometry`` (N,3) camera ``[x m, y m, heading rad]``."""
        def xyh(poses):
            return np.array([[p[0, 3], p[1, 3], yaw_of(p)] for p in poses]).reshape(-1, 3)

        return {"t": np.asarray(self.times, dtype=np.int64), "corrected": xyh(self.poses), "odometry": xyh(self.raw)}

    def stats(self) -> dict:
        """Registrations run / accepted, their median cost (ms), re-anchors, map size (points)."""
        ran = [r for r in self.log if r.ran]
        return {"frames": len(self.times), "registrations": len(ran), "accepted": sum(r.accepted for r in ran),
                "median_ms": float(np.median([r.ms for r in ran])) if ran else 0.0,
                "reanchors": self.reanchors, "map_points": int(len(self.map_points))}

    # --- registration --------------------------------------------------------------------
    def _register(self, depth, K, T_odom, t: int, ignore) -> None:
        cfg = self.config
        start = time.perf_counter()
        cam_pts, cam_n = grid_cloud(depth, K, cfg.stride, cfg.min_depth, cfg.max_depth, ignore, cfg.crease)
        if len(cam_pts) == 0:
            self.log.append(Registration(t, False, False, why="no depth"))
            return
        cam_pts, cam_n = _voxel_thin(cam_pts, cam_n, T_odom, cfg.voxel)
        self._last_reg, self._since = T_odom, 0
        rec = Registration(t, False, False)
        if len(self.map_points):
            rec = self._icp(cam_pts, T_odom, t)
        T = self.correction @ T_odom
        self._add(cam_pts @ T[:3, :3].T + T[:3, 3], cam_n @ T[:3, :3].T)
        rec.ms = (time.perf_counter() - start) * 1e3
        self.log.append(rec)

    def _icp(self, cam_pts: np.ndarray, T_odom: np.ndarray, t: int) -> Registration:
        cfg = self.config
        wide = self._wide > 0
        self._wide = max(0, self._wide - 1)
        corr = cfg.reanchor_corr if wide else cfg.max_corr
        init = self.correction @ T_odom
        # The target: map points near the camera on surfaces facing it (back-face culling: the far face of
        # a 10 cm wall, seen from the next room, must not attract the near face).
        rel = init[:3, 3] - self.map_points
        near = (np.linalg.norm(rel[:, :2], axis=1) < cfg.crop) & (np.einsum("ij,ij->i", rel, self.map_normals) > 0)
        if near.sum() < 50:
            return Registration(t, False, False, why="no map near")
        target = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(self.map_points[near]))
        target.normals = o3d.utility.Vector3dVector(self.map_normals[near])
        source = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(cam_pts @ init[:3, :3].T + init[:3, 3]))
        reg = o3d.pipelines.registration
        estimation = reg.TransformationEstimationPointToPlane(reg.TukeyLoss(cfg.kernel)) if cfg.kernel > 0 else \
            reg.TransformationEstimationPointToPlane()
        result = reg.registration_icp(source, target, corr, np.eye(4), estimation,
                                      reg.ICPConvergenceCriteria(max_iteration=cfg.iterations))
        T = np.asarray(result.transformation)
        corres = np.asarray(result.correspondence_set)
        if not np.all(np.isfinite(T)) or len(corres) == 0:
            return Registration(t, True, False, why="no fit")
        pivot = init[:3, 3]
        delta = _to_planar(T, pivot)
        moved_src = np.asarray(source.points)[corres[:, 0]] @ T[:3, :3].T + T[:3, 3]
        normals = self.map_normals[near][corres[:, 1]]
        delta, weak = _constrained(delta, moved_src, normals, pivot, cfg.min_eigen)
        rec = Registration(t, True, False, float(result.fitness), float(result.inlier_rmse),
                           int((np.abs(normals[:, 2]) < 0.5).sum()))
        step = float(np.linalg.norm(delta[:2, :2] @ pivot[:2] + delta[:2, 3] - pivot[:2]))
        turn = abs(float(np.arctan2(delta[1, 0], delta[0, 0])))
        if rec.fitness < cfg.min_fitness:
            rec.why = "low overlap"
        elif rec.structure < cfg.min_structure:
            rec.why = "no vertical structure"
        elif rec.rmse > cfg.max_rmse:
            rec.why = "poor fit"
        elif step > self._allowed(wide, T_odom)[0] or turn > self._allowed(wide, T_odom)[1]:
            rec.why = "jump"
        else:
            rec.accepted = True
            rec.why = f"{weak} weak directions kept" if weak else ""
            self.correction = delta @ self.correction
            self._accepted = T_odom
        return rec

    def _allowed(self, wide: bool, T_odom: np.ndarray) -> tuple[float, float]:
        """(m, rad) the correction may change by now: the gate grows with the odometry's motion since the
        last accepted registration."""
        cfg = self.config
        if wide or self._accepted is None:
            return cfg.reanchor_step, cfg.reanchor_turn
        dist = float(np.linalg.norm(T_odom[:2, 3] - self._accepted[:2, 3]))
        turn = abs((yaw_of(T_odom) - yaw_of(self._accepted) + np.pi) % (2 * np.pi) - np.pi)
        return cfg.max_step + cfg.per_motion * (dist + 0.3 * turn), cfg.max_turn + cfg.per_motion * (turn + dist)

    def _add(self, pts: np.ndarray, normals: np.ndarray) -> None:
        """Add the points whose voxel the map lacks (one per voxel)."""
        keys = _voxel_keys(pts, self.config.voxel)
        keys, first = np.unique(keys, return_index=True)
        known = np.zeros(len(keys), dtype=bool)
        if len(self._keys):
            pos = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
            known = self._keys[pos] == keys
        new = first[~known]
        if not len(new):
            return
        self.map_points = np.concatenate([self.map_points, pts[new]])
        self.map_normals = np.concatenate([self.map_normals, normals[new]])
        self._keys = np.sort(np.concatenate([self._keys, keys[~known]]))


def _voxel_keys(pts: np.ndarray, voxel: float) -> np.ndarray:
    """One int64 per point naming its voxel (21 bits per axis, offset so negatives fit)."""
    idx = np.floor(pts / voxel).astype(np.int64) + (1 << 20)
    return (idx[:, 0] << 42) | (idx[:, 1] << 21) | idx[:, 2]


def _voxel_thin(cam_pts: np.ndarray, cam_n: np.ndarray, T: np.ndarray, voxel: float):
    """Keep one point per world voxel (under pose ``T``): the first on the pixel grid."""
    world = cam_pts @ T[:3, :3].T + T[:3, 3]
    _, first = np.unique(_voxel_keys(world, voxel), return_index=True)
    first.sort()
    return cam_pts[first], cam_n[first]


def _to_planar(T: np.ndarray, pivot: np.ndarray) -> np.ndarray:
    """The planar transform nearest a 6-DoF one: its yaw, and the xy it moves ``pivot`` (3,) to."""
    yaw = float(np.arctan2(T[1, 0] - T[0, 1], T[0, 0] + T[1, 1]))
    moved = T[:3, :3] @ pivot + T[:3, 3]
    rot = planar(yaw, (0.0, 0.0))
    return planar(yaw, moved[:2] - (rot[:3, :3] @ pivot)[:2])


def _constrained(delta: np.ndarray, points: np.ndarray, normals: np.ndarray, pivot: np.ndarray,
                 min_eigen: float) -> tuple[np.ndarray, int]:
    """``delta`` (4,4 planar) kept only along the directions the correspondences constrain.

    Point-to-plane residuals ``n . (p - q)`` depend on the planar pose
    ``(x, y, yaw * 1 m)`` about ``pivot`` through rows ``[n_x, n_y, n . (z x (p - pivot))]``;
    eigen-directions of their mean outer product below ``min_eigen`` (a blank wall
    fixes neither the slide along it) keep the prior (no change). Returns the kept
    delta and how many directions were dropped.
    """
    rel = points[:, :2] - pivot[:2]
    rows = np.stack([normals[:, 0], normals[:, 1], normals[:, 1] * rel[:, 0] - normals[:, 0] * rel[:, 1]], axis=1)
    vals, vecs = np.linalg.eigh(rows.T @ rows / len(rows))
    yaw = float(np.arctan2(delta[1, 0], delta[0, 0]))
    move = delta[:2, :2] @ pivot[:2] + delta[:2, 3] - pivot[:2]
    step = np.array([move[0], move[1], yaw])
    keep = vals >= min_eigen
    if keep.all():
        return delta, 0
    step = vecs[:, keep] @ (vecs[:, keep].T @ step)
    rot = planar(step[2], (0.0, 0.0))[:2, :2]
    return planar(step[2], pivot[:2] + step[:2] - rot @ pivot[:2]), int((~keep).sum())


def _moved(a: np.ndarray, b: np.ndarray, step: float, turn: float) -> bool:
    """Whether camera pose ``b`` is more than ``step`` m or ``turn`` rad (heading) away from ``a``."""
    d_yaw = abs((yaw_of(b) - yaw_of(a) + np.pi) % (2 * np.pi) - np.pi)
    return bool(np.linalg.norm(b[:2, 3] - a[:2, 3]) > step or d_yaw > turn)
