"""Odometry drift correction: each head depth frame registered against the map it builds (planar ICP).

    loc = DepthLocaliser(LocaliserConfig())
    corrected = loc.correct(depth, K, T_odom, t, ignore=None)   # (4,4) camera-to-world, every frame
    loc.trajectory()                                             # the corrected (and odometry) camera track
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
thinned to one point per ``voxel``; normals come from the organised pixel
grid (``registration.grid_cloud``). A noisy camera's grid pixels (the noise
read from the image, ``registration.image_noise``) take their depth from a
plane fitted to the block around each (``registration.smooth_grid_depth``).
With a map in place the cloud is
registered against it by point-to-plane ICP in (x, y, yaw) about the camera
(``registration.planar_icp``; ``solver="open3d"`` runs open3d's 6-DoF ICP
and cuts it to planar instead, an ablation), started from ``C @ T_odom``. A
fit is accepted when at least ``min_fitness`` of the source found a match,
at least ``min_structure`` matches lie on vertical surfaces (floor alone
fixes no x, y or yaw), the point-to-plane RMSE is at most ``max_rmse``, and
the change is at most ``max_step`` m / ``max_turn`` rad plus ``per_motion``
of the odometry's motion since the last accepted fit; otherwise ``C`` is
kept (odometry carries the estimate). An accepted fit whose change is within
``min_significance`` of its standard errors of none (``Fit.significance``)
confirms the pose and leaves ``C`` as it was. The frame's points in voxels
the map does not have yet are added (first come, first kept) when the fit was
accepted with a point-to-plane RMSE of at most ``map_rmse``, or when there
was little to judge it by (the first frame; new ground: too little overlap,
the part that overlaps within ``max_rmse``), so the map grows into new rooms
and keeps what it saw first where it has been. A refused or loose fit adds
nothing: at 10 % wheel noise a frame placed at a wrong pose left ghost
walls that the next fits locked onto.

Re-anchoring: a jump of the odometry larger than the base can move in one
frame (``jump_step`` m / ``jump_turn`` rad), or a call to ``reanchor()``,
means the odometry was re-zeroed against an outside reference (the dock):
``C`` restarts at identity and the next ``reanchor_frames`` frames are
registered at once with a wider gate (``reanchor_corr``, ``reanchor_step``,
``reanchor_turn``).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from embodied.mapping.registration import Fit, VoxelMap, grid_cloud, image_noise, planar_icp, voxel_thin, wrap, yaw_of


@dataclass
class LocaliserConfig:
    """Knobs of :class:`DepthLocaliser` (metres, radians, frames)."""

    every: int = 3  # register every k-th frame (while the camera moves)
    stride: int = 4  # pixel stride of the back-projection
    min_depth: float = 0.2
    max_depth: float = 5.0
    voxel: float = 0.08  # source downsampling and map cell
    crease: float = 0.97  # cosine: grid points whose two one-sided normals differ more are edges, left out
    crop: float = 4.5  # map points within this xy distance of the camera are the ICP target
    max_corr: float = 0.15  # ICP correspondence distance
    kernel: float = 0.05  # Tukey width (m) of the point-to-plane residuals; 0: plain least squares
    iterations: int = 12
    solver: str = "planar"  # "planar": (x, y, yaw) ICP; "open3d": open3d's 6-DoF ICP cut to planar (ablation)
    min_fitness: float = 0.3
    min_structure: int = 40  # inliers whose normal is within 60 degrees of horizontal (walls, furniture sides)
    max_rmse: float = 0.03  # point-to-plane, inliers
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
    # A frame's new points join the map only from a fit at most this tight (or new ground, too little overlap
    # to judge): a frame placed at a wrong pose would leave ghost walls that later fits lock onto.
    map_rmse: float = 0.01
    # A fit whose change lies within this many of its own standard errors of none (``Fit.significance``) is
    # noise, not drift: it confirms the pose (accepted, its frame may join the map) but leaves the correction
    # as it was. Under depth noise the many small noisy changes of a camera turning in place otherwise add up
    # like visual odometry (several degrees over a tour with exact wheel odometry).
    min_significance: float = 4.0

    def validate(self) -> None:
        if self.every < 1 or self.stride < 1 or self.iterations < 1:
            raise ValueError("LocaliserConfig: every, stride and iterations must be >= 1")
        if not 0 < self.min_depth < self.max_depth:
            raise ValueError(f"LocaliserConfig: need 0 < min_depth < max_depth, got {self.min_depth}, {self.max_depth}")
        if min(self.voxel, self.crop, self.max_corr, self.max_rmse, self.map_rmse, self.max_step, self.max_turn) <= 0:
            raise ValueError("LocaliserConfig: voxel, crop, max_corr, max_rmse, map_rmse, max_step, max_turn must be > 0")
        if not self.min_significance >= 0:
            raise ValueError(f"LocaliserConfig: min_significance must be >= 0, got {self.min_significance}")
        if self.solver not in ("planar", "open3d"):
            raise ValueError(f"LocaliserConfig: solver must be 'planar' or 'open3d', got {self.solver!r}")


@dataclass
class Registration:
    """One registration: step ``t``, whether ICP ran / was accepted, fitness, point-to-plane RMSE (m),
    inliers on vertical surfaces, directions left to odometry, the change's significance ``z`` (its
    standard errors, ``Fit.significance``), cost (ms) and why it was refused."""

    t: int
    ran: bool
    accepted: bool
    fitness: float = 0.0
    rmse: float = 0.0
    structure: int = 0
    weak: int = 0
    z: float = 0.0
    ms: float = 0.0
    cpu_ms: float = 0.0
    why: str = ""


class DepthLocaliser:
    """Keeps the planar correction of a drifting camera pose by frame-to-map ICP."""

    def __init__(self, config: LocaliserConfig | None = None):
        self.config = config or LocaliserConfig()
        self.config.validate()
        cfg = self.config
        self.correction = np.eye(4)
        self.map = VoxelMap(cfg.voxel, cfg.crop)
        self.times: list[int] = []
        self.poses: list[np.ndarray] = []  # corrected camera-to-world (4,4) per frame
        self.raw: list[np.ndarray] = []  # odometry camera-to-world (4,4) per frame
        self.log: list[Registration] = []
        self._last_raw: np.ndarray | None = None
        self._last_reg: np.ndarray | None = None  # odometry pose at the last registration
        self._accepted: np.ndarray | None = None  # odometry pose at the last accepted registration
        self._last_delta = np.eye(4)  # the last accepted fit's change
        self._since = 0
        self._wide = 0
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
        """Registrations run / accepted, their median cost (wall and CPU ms), the cost per frame (ms, all
        registrations' wall time over all frames), re-anchors, map size (points)."""
        ran = [r for r in self.log if r.ran]
        frames = max(len(self.times), 1)
        return {"frames": len(self.times), "registrations": len(ran), "accepted": sum(r.accepted for r in ran),
                "median_ms": float(np.median([r.ms for r in self.log])) if self.log else 0.0,
                "median_cpu_ms": float(np.median([r.cpu_ms for r in self.log])) if self.log else 0.0,
                "ms_per_frame": sum(r.ms for r in self.log) / frames,
                "cpu_ms_per_frame": sum(r.cpu_ms for r in self.log) / frames,
                "reanchors": self.reanchors, "map_points": len(self.map)}

    # --- persistence ------------------------------------------------------------------------
    POSES = ("correction", "last_delta", "last_raw", "last_reg", "accepted")

    def state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON-plain: counters, the registration log, the map's parameters; which optional poses are set),
        arrays: ``correction``, ``last_delta`` and (when set) ``last_raw``, ``last_reg``, ``accepted`` (4,4)
        float64; ``times`` (N,) int64, ``poses`` and ``raw`` (N,4,4) float64 per frame; ``map.*``."""
        poses = dict(zip(self.POSES, (self.correction, self._last_delta, self._last_raw, self._last_reg,
                                      self._accepted)))
        map_doc, map_arrays = self.map.state()
        doc = {"since": self._since, "wide": self._wide, "reanchors": self.reanchors, "map": map_doc,
               "set": [k for k, v in poses.items() if v is not None], "log": [dataclasses.asdict(r) for r in self.log]}
        arrays = {k: np.asarray(v, dtype=np.float64) for k, v in poses.items() if v is not None}
        arrays.update(times=np.asarray(self.times, dtype=np.int64),
                      poses=np.asarray(self.poses, dtype=np.float64).reshape(-1, 4, 4),
                      raw=np.asarray(self.raw, dtype=np.float64).reshape(-1, 4, 4),
                      **{f"map.{k}": v for k, v in map_arrays.items()})
        return doc, arrays

    @classmethod
    def from_state(cls, doc: dict, arrays: dict[str, np.ndarray], config: LocaliserConfig | None = None
                   ) -> DepthLocaliser:
        """The localiser ``state`` describes (with ``config``); ValueError naming what is wrong."""
        loc = cls(config)
        try:
            loc.map = VoxelMap.from_state(doc["map"], {k[4:]: v for k, v in arrays.items() if k.startswith("map.")})
        except ValueError as e:
            raise ValueError(str(e).replace("array ", "array map.", 1)) from None
        poses = {}
        for key in doc["set"]:
            if key not in cls.POSES or key not in arrays or arrays[key].shape != (4, 4):
                raise ValueError(f"array {key}: not a localiser pose, missing or not (4,4)")
            poses[key] = arrays[key].astype(np.float64)
        if "correction" not in poses or "last_delta" not in poses:
            raise ValueError("array correction, last_delta: the localiser needs both")
        loc.correction, loc._last_delta = poses["correction"], poses["last_delta"]
        loc._last_raw, loc._last_reg, loc._accepted = (poses.get(k) for k in cls.POSES[2:])
        times, track, raw = arrays.get("times"), arrays.get("poses"), arrays.get("raw")
        if times is None or track is None or raw is None or times.ndim != 1 or \
                track.shape != (len(times), 4, 4) or raw.shape != track.shape:
            raise ValueError("array times, poses, raw: (N,), (N,4,4) and (N,4,4) needed, missing or misshapen")
        loc.times, loc.poses, loc.raw = [int(t) for t in times], list(track.copy()), list(raw.copy())
        loc.log = [_registration(r) for r in doc["log"]]
        loc._since, loc._wide, loc.reanchors = int(doc["since"]), int(doc["wide"]), int(doc["reanchors"])
        return loc

    # --- registration --------------------------------------------------------------------
    def _register(self, depth, K, T_odom, t: int, ignore) -> None:
        cfg = self.config
        start, cpu = time.perf_counter(), time.thread_time()
        sigma = image_noise(depth)  # m: this image's depth std at 1 m (0 for a noiseless camera)
        cam_pts, cam_n = grid_cloud(depth, K, cfg.stride, cfg.min_depth, cfg.max_depth, ignore, cfg.crease, sigma)
        self._last_reg, self._since = T_odom, 0
        if len(cam_pts) == 0:
            self.log.append(Registration(t, False, False, why="no depth"))
            return
        init = self.correction @ T_odom
        pts, normals = voxel_thin(cam_pts @ init[:3, :3].T + init[:3, 3], cam_n @ init[:3, :3].T, cfg.voxel)
        rec = self._icp(pts, normals, T_odom, t, sigma) if len(self.map) else Registration(t, False, False)
        if rec.accepted:
            pts, normals = pts @ self._last_delta[:3, :3].T + self._last_delta[:3, 3], normals @ self._last_delta[:3, :3].T
        placed = rec.accepted and rec.rmse <= cfg.map_rmse
        new_ground = rec.why == "low overlap" and rec.rmse <= cfg.max_rmse  # what does overlap agrees
        if not rec.ran or placed or new_ground:
            self.map.add(pts, normals)
        rec.ms, rec.cpu_ms = (time.perf_counter() - start) * 1e3, (time.thread_time() - cpu) * 1e3
        self.log.append(rec)

    def _icp(self, pts: np.ndarray, normals: np.ndarray, T_odom: np.ndarray, t: int,
             sigma: float = 0.0) -> Registration:
        cfg = self.config
        wide = self._wide > 0
        self._wide = max(0, self._wide - 1)
        pivot = (self.correction @ T_odom)[:3, 3]
        corr = cfg.reanchor_corr if wide else cfg.max_corr
        if cfg.solver == "open3d":
            from embodied.mapping.registration_o3d import open3d_icp

            fit = open3d_icp(pts, self.map, pivot, corr, cfg.iterations, cfg.kernel)
        else:
            fit = planar_icp(pts, normals, self.map, pivot, corr, cfg.iterations, cfg.min_eigen, cfg.kernel)
        rec = Registration(t, True, False, fit.fitness, fit.rmse, fit.structure, fit.weak,
                           min(fit.significance, 1e6))
        step, turn = _size(fit, pivot)
        # A tight, well-constrained fit may move as far as after a re-anchor: a burst of wheel slip (large noise)
        # can turn the odometry further in one interval than the motion-scaled gate allows. A fit with one
        # direction left to odometry (a corridor) counts only if nearly every point found its match.
        sure = fit.rmse <= cfg.max_rmse / 3 and (
            fit.fitness >= 0.8 and fit.weak == 0 or fit.fitness >= 0.95 and fit.weak == 1
        )
        allow_step, allow_turn = self._allowed(wide, T_odom)
        if sure:
            allow_step, allow_turn = max(allow_step, cfg.reanchor_step), max(allow_turn, cfg.reanchor_turn)
        if rec.fitness < cfg.min_fitness:
            rec.why = "low overlap"
        elif rec.structure < cfg.min_structure:
            rec.why = "no vertical structure"
        elif rec.rmse > cfg.max_rmse:
            rec.why = "poor fit"
        elif step > allow_step or turn > allow_turn:
            rec.why = "jump"
        else:
            rec.accepted = True
            # Only a noisy image's small changes are noise; a noiseless camera's fit is applied as it comes.
            delta = fit.delta if sigma == 0 or fit.significance >= cfg.min_significance else np.eye(4)
            self.correction = delta @ self.correction
            self._last_delta = delta
            self._accepted = T_odom
        return rec

    def _allowed(self, wide: bool, T_odom: np.ndarray) -> tuple[float, float]:
        """(m, rad) the correction may change by now: the gate grows with the odometry's motion since the
        last accepted registration."""
        cfg = self.config
        if wide or self._accepted is None:
            return cfg.reanchor_step, cfg.reanchor_turn
        dist = float(np.linalg.norm(T_odom[:2, 3] - self._accepted[:2, 3]))
        turn = abs(wrap(yaw_of(T_odom) - yaw_of(self._accepted)))
        return cfg.max_step + cfg.per_motion * (dist + 0.3 * turn), cfg.max_turn + cfg.per_motion * (turn + dist)


def _registration(d: dict) -> Registration:
    """A :class:`Registration` from its JSON dict; ValueError naming a field of the wrong type."""
    kinds = {"int": int, "bool": bool, "float": (int, float), "str": str}
    for f in dataclasses.fields(Registration):
        value = d.get(f.name, f.default)
        if not isinstance(value, kinds[f.type]) or f.type != "bool" and isinstance(value, bool):
            raise ValueError(f"localiser: log entry field {f.name} must be {f.type}, got {value!r}")
    return Registration(**d)


def _size(fit: Fit, pivot: np.ndarray) -> tuple[float, float]:
    """How far (m) the fit moves the camera at ``pivot`` and how much (rad) it turns it."""
    D = fit.delta
    return float(np.linalg.norm(D[:2, :2] @ pivot[:2] + D[:2, 3] - pivot[:2])), abs(float(np.arctan2(D[1, 0], D[0, 0])))


def _moved(a: np.ndarray, b: np.ndarray, step: float, turn: float) -> bool:
    """Whether camera pose ``b`` is more than ``step`` m or ``turn`` rad (heading) away from ``a``."""
    return bool(np.linalg.norm(b[:2, 3] - a[:2, 3]) > step or abs(wrap(yaw_of(b) - yaw_of(a))) > turn)
