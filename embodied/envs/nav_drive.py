"""Driving a differential-drive base: timed reference trajectories and followers.

A pose is ``(x, y, yaw)`` in metres and radians (world frame). Commands are
``(v, w)``: forward speed in m/s and yaw rate in rad/s. Two drivers live here:

* ``TourBuilder`` + ``track``: the env's scripted tour. The tour is a pose
  per control step, fixed before the episode starts, so its duration is known
  in advance (the observe phase has a fixed length); ``track`` turns the
  reference into commands with feed-forward plus feedback, and the base's
  velocity actuators do the moving.
* ``PathFollower``: turn-then-drive waypoint following for experts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def wrap(angle):
    """Angle(s) wrapped to [-pi, pi)."""
    return (np.asarray(angle) + np.pi) % (2 * np.pi) - np.pi


def heading(a, b) -> float:
    d = np.asarray(b, dtype=np.float64)[:2] - np.asarray(a, dtype=np.float64)[:2]
    return float(np.arctan2(d[1], d[0]))


@dataclass
class TourBuilder:
    """Appends poses, one per control step of ``dt`` seconds.

    ``yaw`` is kept unwrapped along the tour so that consecutive references
    differ by the actual turn, never by a 2*pi jump.
    """

    start: np.ndarray
    dt: float
    speed: float = 0.42  # m/s, below the 0.5 m/s limit to leave room for feedback
    rate: float = 1.2  # rad/s, below the 1.5 rad/s limit for the same reason
    poses: list[np.ndarray] = field(default_factory=list)
    marks: dict[str, int] = field(default_factory=dict)

    def __post_init__(self):
        self.poses = [np.asarray(self.start, dtype=np.float64).copy()]

    @property
    def pose(self) -> np.ndarray:
        return self.poses[-1]

    @property
    def steps(self) -> int:
        return len(self.poses) - 1

    def mark(self, name: str) -> None:
        """Remember the current step index (e.g. when a scripted event starts)."""
        self.marks[name] = self.steps

    def turn(self, delta: float, steps: int | None = None) -> None:
        """Turn in place by ``delta`` radians, at ``rate`` or over exactly ``steps`` steps."""
        n = steps if steps is not None else int(np.ceil(abs(delta) / (self.rate * self.dt) - 1e-9))
        x, y, yaw = self.pose
        for k in range(1, n + 1):
            self.poses.append(np.array([x, y, yaw + delta * k / n]))

    def turn_to(self, yaw: float, steps: int | None = None) -> None:
        self.turn(float(wrap(yaw - self.pose[2])), steps)

    def face(self, point, steps: int | None = None) -> None:
        self.turn_to(heading(self.pose, point), steps)

    def hold(self, steps: int) -> None:
        for _ in range(steps):
            self.poses.append(self.pose.copy())

    def drive(self, points) -> None:
        """Visit each point in turn: face it, then drive straight to it."""
        for p in points:
            p = np.asarray(p, dtype=np.float64)[:2]
            length = float(np.linalg.norm(p - self.pose[:2]))
            if length < 1e-3:
                continue
            self.face(p)
            n = int(np.ceil(length / (self.speed * self.dt) - 1e-9))
            x0, y0, yaw = self.pose
            for k in range(1, n + 1):
                s = k / n
                self.poses.append(np.array([x0 + s * (p[0] - x0), y0 + s * (p[1] - y0), yaw]))

    def array(self) -> np.ndarray:
        """(T+1, 3) reference poses; row k is where the robot should be after k steps."""
        return np.stack(self.poses)


def track(pose, ref_now, ref_next, dt: float, gains=(3.0, 6.0, 3.0)) -> tuple[float, float]:
    """(v, w) that moves ``pose`` from ``ref_now`` toward ``ref_next`` in one step.

    Feed-forward is the reference's own velocity; feedback (Kanayama-style)
    corrects the current error: along-track by speed, cross-track and heading
    by yaw rate. Gains are (k_x 1/s, k_y rad/(s m), k_yaw 1/s).
    """
    kx, ky, kyaw = gains
    yaw = pose[2]
    c, s = np.cos(yaw), np.sin(yaw)
    step = np.asarray(ref_next[:2]) - np.asarray(ref_now[:2])
    v_ff = (c * step[0] + s * step[1]) / dt
    w_ff = float(ref_next[2] - ref_now[2]) / dt
    err = np.asarray(ref_now[:2]) - np.asarray(pose[:2])
    ex, ey = c * err[0] + s * err[1], -s * err[0] + c * err[1]
    eyaw = float(wrap(ref_now[2] - yaw))
    v = v_ff * np.cos(eyaw) + kx * ex
    w = w_ff + kyaw * np.sin(eyaw) + ky * ey * np.sign(v_ff)
    return float(v), float(w)


class PathFollower:
    """Follow waypoints by turning toward each and driving; then face a point.

    ``act(pose)`` returns ``(v, w)``; ``done`` turns true once the last
    waypoint is reached and the robot faces ``look_at`` within ``face_tol``.
    """

    def __init__(self, points, look_at=None, max_v: float = 0.5, max_w: float = 1.5, face_tol: float = 0.08):
        self.points = [np.asarray(p, dtype=np.float64)[:2] for p in points]
        self.look_at = None if look_at is None else np.asarray(look_at, dtype=np.float64)[:2]
        self.max_v, self.max_w, self.face_tol = max_v, max_w, face_tol
        self.index = 0
        self.done = False

    def act(self, pose) -> tuple[float, float]:
        pose = np.asarray(pose, dtype=np.float64)
        while self.index < len(self.points):
            target = self.points[self.index]
            last = self.index == len(self.points) - 1
            dist = float(np.linalg.norm(target - pose[:2]))
            if dist > (0.03 if last else 0.12):
                break
            self.index += 1
        if self.index < len(self.points):
            target = self.points[self.index]
            dist = float(np.linalg.norm(target - pose[:2]))
            err = float(wrap(heading(pose, target) - pose[2]))
            w = float(np.clip(4.0 * err, -self.max_w, self.max_w))
            if abs(err) > 0.35:
                return 0.0, w  # turn in place first: the base cannot move sideways
            last = self.index == len(self.points) - 1
            v = self.max_v if not last else min(self.max_v, 0.1 + 1.5 * dist)
            return float(v * np.cos(err)), w
        if self.look_at is None:
            self.done = True
            return 0.0, 0.0
        err = float(wrap(heading(pose, self.look_at) - pose[2]))
        if abs(err) < self.face_tol:
            self.done = True
            return 0.0, 0.0
        return 0.0, float(np.clip(4.0 * err, -self.max_w, self.max_w))


class Progress:
    """Whether a drive still gets closer: ``update(dist)`` -> True once ``patience`` steps passed without
    coming ``margin`` m closer than the best so far (the caller then plans again and calls ``restart``)."""

    def __init__(self, patience: int = 40, margin: float = 0.02):
        self.patience, self.margin = patience, margin
        self.restart()

    def restart(self, dist: float = np.inf) -> None:
        self.best, self.since_best = dist, 0

    def update(self, dist: float) -> bool:
        if dist < self.best - self.margin:
            self.best, self.since_best = dist, 0
        else:
            self.since_best += 1
        return self.since_best > self.patience
