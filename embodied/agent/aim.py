"""Aim correction: a place that missed is aimed off the goal by the miss the memory saw.

A skill, above all a learned one, can miss a place point by the same few
centimetres every time (a head that barely moves for a short carry, a block
that slides as it is let go). Retrying the same call repeats the miss. After a
place fails with the object let go, memory knows where it came to rest; the next
place of the same object towards the same goal is handed a point shifted by the
opposite of the miss, accumulated over misses like the integral term of a
controller. The goal itself does not move: the planner still checks the
object's position against the true goal.

A press that memory did not see click (the cap went down, but not the 6 mm a
click takes) is retried aimed ``press_step`` lower each time, down to
``max_press``: the same push would stop as short again.

    aim = PlaceAim()
    aim.miss(call, landed_xyz)         # after a failed place, the object not held
    aim.miss(call)                     # after a press memory did not see
    skill.start(aim.apply(call), obs)  # the point the skill is given
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from embodied.planner.calls import SkillCall


@dataclass
class AimConfig:
    same_goal: float = 0.02  # m: a later place counts as towards the same goal within this (xy)
    max_miss: float = 0.10  # m: a landing farther than this from the goal (it rolled, fell) teaches nothing
    max_offset: float = 0.06  # m: the shift never exceeds this (xy norm)
    press_step: float = 0.003  # m: each press memory did not see is retried this much lower
    max_press: float = 0.009  # m: at most this much lower


class PlaceAim:
    """Per-target aim offsets (metres, world frame), learned from this episode's missed places (xy) and
    presses (z)."""

    def __init__(self, config: AimConfig | None = None):
        self.config = config or AimConfig()
        self._offsets: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # object node -> (goal xy, offset xy)
        self._deeper: dict[str, float] = {}  # button node -> m lower

    def reset(self) -> None:
        self._offsets.clear()
        self._deeper.clear()

    def offset(self, call: SkillCall) -> np.ndarray:
        """(3,) m: the shift ``apply`` gives ``call`` (zeros unless it retries a missed place or press)."""
        if call.skill == "press":
            return np.array([0.0, 0.0, -self._deeper.get(call.target, 0.0)])
        if call.skill != "place" or call.target not in self._offsets:
            return np.zeros(3)
        goal, offset = self._offsets[call.target]
        if float(np.linalg.norm(np.asarray(call.xyz[:2]) - goal)) > self.config.same_goal:
            return np.zeros(3)
        return np.array([offset[0], offset[1], 0.0])

    def apply(self, call: SkillCall) -> SkillCall:
        """The call a skill should run: ``call`` with its point shifted by :meth:`offset`."""
        shift = self.offset(call)
        if not shift.any():
            return call
        xyz = tuple(float(v) for v in np.asarray(call.xyz) + shift)
        return SkillCall(call.skill, call.target, xyz, call.yaw, call.size, call.note, call.extra)

    def miss(self, call: SkillCall, landed: np.ndarray | None = None) -> np.ndarray | None:
        """Learn from a failed ``call``: a place whose object came to rest at ``landed`` (3,) m, or a
        press. Returns the new offset (3,), or None when the failure teaches nothing (a landing too
        far off, another skill)."""
        if not call.target:
            return None
        if call.skill == "press":
            cfg = self.config
            self._deeper[call.target] = min(self._deeper.get(call.target, 0.0) + cfg.press_step, cfg.max_press)
            return self.offset(call)
        if call.skill != "place" or landed is None:
            return None
        goal = np.asarray(call.xyz[:2], dtype=np.float64)
        error = np.asarray(landed, dtype=np.float64)[:2] - goal
        if not np.isfinite(error).all() or float(np.linalg.norm(error)) > self.config.max_miss:
            return None
        offset = self.offset(call)[:2] - error
        norm = float(np.linalg.norm(offset))
        if norm > self.config.max_offset:
            offset *= self.config.max_offset / norm
        self._offsets[call.target] = (goal, offset)
        return self.offset(call)
