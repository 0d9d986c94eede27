"""What the tracker keeps of each physical node between frames (saved with the memory, not logged).

A track holds each camera's latest view of the object where it is now (a detected move drops the other
cameras' views, so a moved object never smears over its old place), the fused cloud, box, voxel keys
and visibility samples made from them, and the beliefs: absence (``gone``), each camera's colour
reference, and the articulation plugins' state (``parts``). Shapes: points (N,3) float32 m; boxes (3,) m.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from embodied.memory.beliefs import Belief
from embodied.memory.noise import face_std
from embodied.memory.spatial import voxel_keys
from embodied.perception.geometry import stride_subsample


def _floats(a) -> list[float]:
    return [float(x) for x in np.asarray(a, dtype=np.float64).ravel()]


@dataclass
class View:
    """One camera's latest look at an object."""

    points: np.ndarray  # (N,3) float32 m
    center: np.ndarray  # (3,) m, box centre
    box_min: np.ndarray  # (3,) m
    box_max: np.ndarray  # (3,) m
    n_points: int  # valid pixels of the detection
    t: int
    eye_z: float = np.inf  # m, height of the camera that took it
    rgb: np.ndarray | None = None  # (3,) this camera's colour reference for the object, [0, 1]; None: unknown
    noise: np.ndarray = field(default_factory=lambda: np.zeros(3))  # (3,) m, std of one point per axis
    pending: float = 0.0  # log-odds that the colour this camera sees changed from ``rgb`` (looks.judge_colour)
    range: float = 0.0  # m from the camera when taken

    def to_json(self) -> dict:
        return {"points": self.points.astype(np.float64).tolist(), "center": _floats(self.center),
                "box_min": _floats(self.box_min), "box_max": _floats(self.box_max), "n_points": int(self.n_points),
                "t": int(self.t), "eye_z": None if not np.isfinite(self.eye_z) else float(self.eye_z),
                "rgb": None if self.rgb is None else _floats(self.rgb), "noise": _floats(self.noise),
                "pending": float(self.pending), "range": float(self.range)}

    @classmethod
    def from_json(cls, d: dict) -> View:
        return cls(np.asarray(d["points"], dtype=np.float32).reshape(-1, 3), np.asarray(d["center"], np.float64),
                   np.asarray(d["box_min"], np.float64), np.asarray(d["box_max"], np.float64), int(d["n_points"]),
                   int(d["t"]), np.inf if d.get("eye_z") is None else float(d["eye_z"]),
                   None if d.get("rgb") is None else np.asarray(d["rgb"], dtype=np.float64),
                   np.asarray(d["noise"], dtype=np.float64), float(d["pending"]), float(d["range"]))


_WATCHED = frozenset(("box_min", "box_max", "velocity", "prev_box"))  # what NodeRows keeps as arrays


@dataclass
class Track:
    """Tracker state of one physical node."""

    surface: bool = False  # big supports accumulate their extent instead of being replaced
    views: dict[str, View] = field(default_factory=dict)
    points: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.float32))
    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    samples: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.float32))
    box_min: np.ndarray = field(default_factory=lambda: np.zeros(3))
    box_max: np.ndarray = field(default_factory=lambda: np.zeros(3))
    prev_box: tuple[np.ndarray, np.ndarray] | None = None  # last frame's box (containers)
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))  # m per step, smoothed
    t_obs: int = 0  # step of the last observation
    rigid: bool = False  # keeps its shape (not a support, not a moving part): its height is learnt
    height: float = 0.0  # m, tallest view of a rigid object seen at rest
    votes: dict[str, int] = field(default_factory=dict)  # class -> views that gave it (class votes)
    left: str = ""  # the container it was hidden in when last seen again ...
    left_t: int = -1  # ... at this step (a glimpse through a shutting drawer's gap)
    gone: Belief = field(default_factory=Belief)  # absence from its remembered place
    parts: dict[str, float] = field(default_factory=dict)  # articulation state (the plugins' own keys)
    press: Belief = field(default_factory=Belief)  # a pressable part's cap pressed
    opened: Belief = field(default_factory=Belief)  # a prismatic part pulled open

    def __setattr__(self, name: str, value) -> None:
        object.__setattr__(self, name, value)
        if name in _WATCHED:
            sink = self.__dict__.get("_sink")
            if sink is not None:  # a NodeRows keeps this track's box and velocity as arrays: it must re-read
                sink.append(id(self))

    def watch(self, sink: list | None) -> None:
        """Report (append ``id(self)`` to ``sink``) every later replacement of a watched array; None: stop."""
        object.__setattr__(self, "_sink", sink)

    @property
    def center(self) -> np.ndarray:
        return (self.box_min + self.box_max) / 2

    def vote(self, label: str, current: str) -> str | None:
        """Count one view of ``label``; the class with at least 3 votes and twice ``current``'s, if any."""
        self.votes[label] = self.votes.get(label, 0) + 1
        best = max(self.votes, key=lambda c: (self.votes[c], c == current))
        won = best != current and self.votes[best] >= 3 and self.votes[best] >= 2 * self.votes.get(current, 0)
        return best if won else None

    def refresh(self, config, at_rest: bool = True) -> None:
        """Points, keys, samples and box from the views (or the surface); ``at_rest``: they show it still."""
        if not self.surface:
            views = list(self.views.values())
            pts = views[0].points if len(views) == 1 else np.concatenate([v.points for v in views])
            self.box_min, self.box_max = fused_box(views, config.sensor)
            self.points = stride_subsample(pts, config.track.max_points)
            if self.rigid:
                self._complete_height(views, at_rest, config.track.height_slack)
        self.keys = voxel_keys(self.points, config.association.voxel)
        self.samples = visibility_samples(self.points, self.box_min[2], self.box_max[2], config.lifecycle)

    def learn_height(self, view: View) -> None:
        """A rigid object is at least as tall as ``view``, taken at rest, shows it."""
        self.height = max(self.height, float(view.box_max[2] - view.box_min[2]))

    def _complete_height(self, views: list[View], at_rest: bool, slack: float) -> None:
        """Seen only from above, a rigid object keeps the height it showed at rest (learnt at rest only: a view
        in flight joined with what it passed over is taller than the thing)."""
        if at_rest:
            for v in views:
                self.learn_height(v)
        top = float(self.box_max[2])
        if top - self.box_min[2] < self.height - slack and all(v.eye_z > top for v in views):
            self.box_min = self.box_min.copy()
            self.box_min[2] = top - self.height

    def grow_surface(self, det_points: np.ndarray, box_min: np.ndarray, box_max: np.ndarray, cap: int,
                     voxel: float, slack: float = 0.01) -> bool:
        """Union a support's new piece into its extent and cloud; False if it adds nothing beyond ``slack`` m."""
        if len(self.points):
            if np.all(box_min >= self.box_min - slack) and np.all(box_max <= self.box_max + slack):
                return False
            self.box_min = np.minimum(self.box_min, box_min)
            self.box_max = np.maximum(self.box_max, box_max)
            pts = np.concatenate([self.points, det_points])
        else:
            self.box_min, self.box_max = box_min.copy(), box_max.copy()
            pts = det_points
        _, first = np.unique(voxel_keys(pts, 4 * voxel, unique=False), return_index=True)  # a spread, coarsely
        self.points = stride_subsample(pts[np.sort(first)], cap)
        return True

    def shift(self, delta: np.ndarray) -> None:
        """Move the remembered geometry rigidly (an object carried inside a container or a gripper)."""
        d32 = delta.astype(np.float32)
        for v in self.views.values():
            v.points = v.points + d32
            v.center, v.box_min, v.box_max = v.center + delta, v.box_min + delta, v.box_max + delta
        self.points = self.points + d32
        self.samples = self.samples + d32
        self.box_min, self.box_max = self.box_min + delta, self.box_max + delta

    def to_json(self) -> dict:
        return {"surface": bool(self.surface), "views": {cam: v.to_json() for cam, v in self.views.items()},
                "points": self.points.astype(np.float64).tolist(), "box_min": _floats(self.box_min),
                "box_max": _floats(self.box_max),
                "prev_box": None if self.prev_box is None else [_floats(self.prev_box[0]), _floats(self.prev_box[1])],
                "velocity": _floats(self.velocity), "t_obs": int(self.t_obs), "rigid": bool(self.rigid),
                "height": float(self.height), "votes": dict(self.votes), "left": self.left,
                "left_t": int(self.left_t), "gone": self.gone.to_json(), "parts": dict(self.parts),
                "press": self.press.to_json(), "opened": self.opened.to_json()}

    @classmethod
    def from_json(cls, d: dict, config) -> Track:
        track = cls(surface=bool(d["surface"]))
        track.views = {cam: View.from_json(v) for cam, v in d["views"].items()}
        track.points = np.asarray(d["points"], dtype=np.float32).reshape(-1, 3)
        track.box_min, track.box_max = np.asarray(d["box_min"]), np.asarray(d["box_max"])
        track.prev_box = None if d["prev_box"] is None else (np.asarray(d["prev_box"][0]), np.asarray(d["prev_box"][1]))
        track.velocity = np.asarray(d["velocity"], dtype=np.float64)
        track.t_obs, track.rigid, track.height = int(d["t_obs"]), bool(d["rigid"]), float(d["height"])
        votes = d["votes"]
        if not isinstance(votes, dict) or not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                                                  for k, v in votes.items()):
            raise ValueError("track votes: expected an object of class -> count")
        track.votes = dict(votes)
        track.left, track.left_t = str(d["left"]), int(d["left_t"])
        track.gone, track.press, track.opened = (Belief.from_json(d[k]) for k in ("gone", "press", "opened"))
        parts = d["parts"]
        if not isinstance(parts, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                  for v in parts.values()):
            raise ValueError("track parts: expected an object of name -> number")
        track.parts = {str(k): float(v) for k, v in parts.items()}
        track.keys = voxel_keys(track.points, config.association.voxel)
        track.samples = visibility_samples(track.points, track.box_min[2], track.box_max[2], config.lifecycle)
        return track


def fused_box(views: list[View], prior) -> tuple[np.ndarray, np.ndarray]:
    """The box (3,), (3,) m of an object from its cameras' views: each face where the views reach farthest,
    save that views whose face agrees with the farthest within ``prior.k`` stds of both are averaged (one face
    seen twice, which no camera's calibration error should push out), the nearer camera weighing more. Views
    that disagree, or are half as long along an axis as another, show different parts: their union."""
    lo = np.array([v.box_min for v in views], dtype=np.float64)
    hi = np.array([v.box_max for v in views], dtype=np.float64)
    if len(views) == 1:
        return lo[0], hi[0]
    std = face_std(np.array([v.noise for v in views]), [len(v.points) for v in views], [v.range for v in views],
                   prior)  # (V,3) m
    measured = np.array([v.noise.any() for v in views])
    extent = hi - lo
    whole = extent >= 0.5 * extent.max(axis=0)  # (V,3) a view half as long as another shows part of it only
    out = []
    for faces, sign in ((lo, -1.0), (hi, 1.0)):
        far = np.argmax(sign * faces, axis=0)  # (3,) the view reaching farthest on each axis
        extreme = faces[far, np.arange(3)]
        gap = sign * (extreme[None] - faces)  # >= 0
        agree = (gap <= prior.k * np.hypot(std, std[far, np.arange(3)][None])) & measured[:, None] & whole
        agree[far, np.arange(3)] = True
        w = agree / np.maximum(std, 1e-6) ** 2
        out.append((w * faces).sum(axis=0) / w.sum(axis=0))
    return out[0], out[1]


def visibility_samples(points: np.ndarray, bottom: float, top: float, cfg) -> np.ndarray:
    """``cfg.samples`` points to test visibility with, above the ``ground_band`` depth cannot tell from a support."""
    upper = points[points[:, 2] >= bottom + min(cfg.ground_band, 0.4 * (top - bottom))]
    return stride_subsample(upper if len(upper) >= 3 else points, cfg.samples)
