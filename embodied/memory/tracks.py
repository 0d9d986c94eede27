"""Per-object geometry the tracker keeps between frames (not logged, saved with the memory).

A track holds the latest downsampled cloud of the object from each camera
that sees it where it is now; a detected move drops the other cameras'
clouds, so a moved object never smears over its old place. The fused cloud,
its voxel keys (for overlap) and a few sample points (for visibility) are
recomputed only when a view changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from embodied.memory.spatial import voxel_keys
from embodied.perception.geometry import stride_subsample


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
    rgb: np.ndarray | None = None  # (3,) mean colour in [0, 1] as this camera saw it; None if unknown

    def to_json(self) -> dict:
        return {
            "points": self.points.astype(np.float64).tolist(),
            "center": self.center.tolist(),
            "box_min": self.box_min.tolist(),
            "box_max": self.box_max.tolist(),
            "n_points": self.n_points,
            "t": self.t,
            "eye_z": None if not np.isfinite(self.eye_z) else float(self.eye_z),
            "rgb": None if self.rgb is None else [float(c) for c in self.rgb],
        }

    @classmethod
    def from_json(cls, d: dict) -> View:
        pts = np.asarray(d["points"], dtype=np.float32).reshape(-1, 3)
        return cls(
            pts,
            np.asarray(d["center"]),
            np.asarray(d["box_min"]),
            np.asarray(d["box_max"]),
            int(d["n_points"]),
            int(d["t"]),
            np.inf if d.get("eye_z") is None else float(d["eye_z"]),
            None if d.get("rgb") is None else np.asarray(d["rgb"], dtype=np.float64),
        )


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
    rest: dict[str, float] = field(default_factory=dict)  # articulation references (button top, drawer extent)
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))  # m per step, smoothed
    t_obs: int = 0  # step of the last observation
    rigid: bool = False  # keeps its shape (not a support, not a moving part): its height is learnt
    height: float = 0.0  # m, tallest view of a rigid object seen at rest
    votes: dict[str, int] = field(default_factory=dict)  # class -> detections that gave it (MemoryConfig.class_votes)
    left: str = ""  # the container it was hidden in when last seen again ...
    left_t: int = -1  # ... at this step (a glimpse through a shutting drawer's gap: see Permanence)

    def __setattr__(self, name: str, value) -> None:
        object.__setattr__(self, name, value)
        if name in _WATCHED:
            sink = self.__dict__.get("_sink")
            if sink is not None:  # a NodeRows keeps this track's box and velocity as arrays: it must re-read
                sink.append(id(self))

    def vote(self, label: str, current: str) -> str | None:
        """Count one detection of ``label``; the class that now has at least 3 votes and twice those of
        ``current``, if one does (None: ``current`` stands)."""
        self.votes[label] = self.votes.get(label, 0) + 1
        best = max(self.votes, key=lambda c: (self.votes[c], c == current))
        if best != current and self.votes[best] >= 3 and self.votes[best] >= 2 * self.votes.get(current, 0):
            return best
        return None

    def watch(self, sink: list | None) -> None:
        """Report (append ``id(self)`` to ``sink``) every later replacement of the box, the last frame's
        box or the velocity;
        None: stop. See :class:`embodied.memory.node_rows.NodeRows`."""
        object.__setattr__(self, "_sink", sink)

    @property
    def center(self) -> np.ndarray:
        return (self.box_min + self.box_max) / 2

    def refresh(self, voxel: float, cap: int, n_samples: int = 32, at_rest: bool = True) -> None:
        """Recompute fused points, keys, samples and box from the views (or the accumulated surface);
        ``at_rest``: the views show the object still, so a rigid one may learn its height from them."""
        if not self.surface:
            views = list(self.views.values())
            pts = views[0].points if len(views) == 1 else np.concatenate([v.points for v in views])
            self.box_min = np.min([v.box_min for v in views], axis=0)
            self.box_max = np.max([v.box_max for v in views], axis=0)
            self.points = stride_subsample(pts, cap) if len(pts) > cap else pts
            if self.rigid:
                self._complete_height(views, at_rest)
        self.keys = voxel_keys(self.points, voxel)
        self.samples = _visibility_samples(self.points, self.box_min[2], self.box_max[2], n_samples)

    def learn_height(self, view: View) -> None:
        """A rigid object is at least as tall as ``view``, taken at rest, shows it."""
        self.height = max(self.height, float(view.box_max[2] - view.box_min[2]))

    def _complete_height(self, views: list[View], at_rest: bool) -> None:
        """Seen only from above (a camera looking down shows a block's top face, a table edge hides
        a toy's feet), a rigid object keeps the height it showed before: its bottom is below
        what the cameras see, never above. Sideways cuts are left alone: which side is hidden
        is not known there. The height is learnt at rest only: a view of a block in flight, joined
        with what it passed over (10.8 cm tall), had sunk its box 5 cm under the tray it was then put
        in, and the grasp went under it (HiddenObject 930015 on the learned segmenter)."""
        if at_rest:
            for v in views:
                self.learn_height(v)
        top = float(self.box_max[2])
        if top - self.box_min[2] < self.height - 0.003 and all(v.eye_z > top for v in views):
            self.box_min = self.box_min.copy()
            self.box_min[2] = top - self.height

    def grow_surface(
        self, det_points: np.ndarray, box_min: np.ndarray, box_max: np.ndarray, cap: int, voxel: float
    ) -> bool:
        """Union a support's new observation into its accumulated extent and cloud; False if nothing new."""
        if len(self.points):
            if np.all(box_min >= self.box_min - 0.01) and np.all(box_max <= self.box_max + 0.01):
                return False  # nothing outside what is already known
            self.box_min = np.minimum(self.box_min, box_min)
            self.box_max = np.maximum(self.box_max, box_max)
            pts = np.concatenate([self.points, det_points])
        else:
            self.box_min, self.box_max = box_min.copy(), box_max.copy()
            pts = det_points
        # Coarse dedupe keeps a spread of points over the whole surface.
        _, first = np.unique(voxel_keys(pts, 4 * voxel, unique=False), return_index=True)
        pts = pts[np.sort(first)]
        self.points = stride_subsample(pts, cap) if len(pts) > cap else pts
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
        return {
            "surface": bool(self.surface),
            "views": {cam: v.to_json() for cam, v in self.views.items()},
            "points": self.points.astype(np.float64).tolist(),
            "box_min": self.box_min.tolist(),
            "box_max": self.box_max.tolist(),
            "prev_box": None if self.prev_box is None else [self.prev_box[0].tolist(), self.prev_box[1].tolist()],
            "rest": dict(self.rest),
            "velocity": self.velocity.tolist(),
            "t_obs": self.t_obs,
            "rigid": bool(self.rigid),
            "height": float(self.height),
            "votes": dict(self.votes),
            "left": self.left,
            "left_t": int(self.left_t),
        }

    @classmethod
    def from_json(cls, d: dict, voxel: float, cap: int) -> Track:
        track = cls(surface=bool(d["surface"]))
        track.views = {cam: View.from_json(v) for cam, v in d["views"].items()}
        track.points = np.asarray(d["points"], dtype=np.float32).reshape(-1, 3)
        track.box_min, track.box_max = np.asarray(d["box_min"]), np.asarray(d["box_max"])
        if d["prev_box"] is not None:
            track.prev_box = (np.asarray(d["prev_box"][0]), np.asarray(d["prev_box"][1]))
        track.rest = {k: float(v) for k, v in d["rest"].items()}
        track.velocity = np.asarray(d["velocity"], dtype=np.float64)
        track.t_obs = int(d["t_obs"])
        track.rigid, track.height = bool(d.get("rigid", False)), float(d.get("height", 0.0))
        votes = d.get("votes", {})  # absent from files written before class votes
        if not isinstance(votes, dict) or not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                                                  for k, v in votes.items()):
            raise ValueError("track votes: expected an object of class -> count")
        track.votes = dict(votes)
        track.left, track.left_t = str(d.get("left", "")), int(d.get("left_t", -1))  # absent from older files
        track.keys = voxel_keys(track.points, voxel)
        track.samples = _visibility_samples(track.points, track.box_min[2], track.box_max[2], 32)
        return track


def _visibility_samples(points: np.ndarray, bottom: float, top: float, n: int) -> np.ndarray:
    """Points to test visibility with: not the bottom 1.5 cm, which depth cannot tell from the support."""
    upper = points[points[:, 2] >= bottom + min(0.015, 0.4 * (top - bottom))]
    return stride_subsample(upper if len(upper) >= 3 else points, n)
