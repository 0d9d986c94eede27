"""Waypoint following for scripted experts in the ``ee_delta`` action space."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from embodied.planner.calls import SkillCall

OPEN, CLOSED = 1.0, -1.0


@dataclass
class Waypoint:
    """Move the TCP to ``pos`` with ``yaw`` and hold the gripper command ``grip``.

    The waypoint is done once the TCP is within ``tol`` metres (or after
    ``timeout`` steps) and then ``hold`` further steps have passed. ``call`` is
    the skill call this waypoint belongs to (demonstrations record it as the
    planner's annotation); ``None`` for motion outside any skill.
    """

    pos: np.ndarray
    grip: float = OPEN
    yaw: float | None = None
    tol: float = 0.006
    hold: int = 0
    timeout: int = 60
    speed: float = 1.0
    call: SkillCall | None = None


def tag(waypoints: Iterable[Waypoint], call: SkillCall | None) -> list[Waypoint]:
    """``waypoints`` marked as executing ``call`` (unchanged motion)."""
    out = list(waypoints)
    for wp in out:
        wp.call = call
    return out


def nearest_equivalent_yaw(target: float, current: float) -> float:
    """The gripper is symmetric under half turns: pick the closest equivalent."""
    return current + (target - current + np.pi / 2) % np.pi - np.pi / 2


class ScriptedExpert:
    """Base class: subclasses return waypoints for each phase in ``plan``."""

    def __init__(self, env: gym.Env):
        self.env = env.unwrapped
        if self.env.control.mode != "ee_delta":
            raise ValueError("scripted experts act in the 'ee_delta' action space")
        self.queue: deque[Waypoint] = deque()
        self.phase: str | None = None
        self._elapsed = 0
        self._held = 0
        self._grip = OPEN
        self.current_call: SkillCall | None = None  # the skill call behind the last action

    def reset(self) -> None:
        self.queue.clear()
        self.phase = None
        self.current_call = None

    def plan(self, phase: str) -> list[Waypoint]:
        raise NotImplementedError

    def replan(self) -> list[Waypoint]:
        """Called when the queue runs dry within a phase; default: stay put."""
        return []

    def act(self, obs=None) -> np.ndarray:
        env = self.env
        if env.phase != self.phase:
            self.phase = env.phase
            self.queue = deque(self.plan(env.phase))
            self._elapsed = self._held = 0
        if not self.queue:
            self.queue.extend(self.replan())
        arm = env.arm
        action = np.zeros(5, dtype=np.float32)
        if not self.queue:
            action[4] = self._grip
            self.current_call = None
            return action
        wp = self.queue[0]
        self.current_call = wp.call
        pos = arm.tcp_pos()
        error = np.asarray(wp.pos) - pos
        step = env.control.pos_step * wp.speed
        action[:3] = np.clip(error / env.control.pos_step, -wp.speed, wp.speed) if step > 0 else 0.0
        if wp.yaw is not None:
            yaw = arm.tcp_yaw()
            action[3] = np.clip((nearest_equivalent_yaw(wp.yaw, yaw) - yaw) / env.control.yaw_step, -1, 1)
        action[4] = wp.grip
        self._grip = wp.grip
        self._elapsed += 1
        reached = np.linalg.norm(error) < wp.tol or self._elapsed >= wp.timeout
        if reached:
            self._held += 1
            if self._held > wp.hold:
                self.queue.popleft()
                self._elapsed = self._held = 0
        return action
