"""Aim correction: a place that missed is aimed off the goal by the miss the memory saw.

A skill, above all a learned one, can miss a place point by the same few
centimetres every time (a head that barely moves for a short carry, a block
that slides as it is let go). Retrying the same call repeats the miss. After a
place fails with the object let go, memory knows where it came to rest; the next
place of the same object towards the same goal is handed a point shifted by the
opposite of the miss, accumulated over misses like the integral term of a
controller. The goal itself does not move: the planner still checks the
object's position against the true goal.

    aim = PlaceAim()
    aim.miss(call, landed_xyz)         # after a failed place, the object not held
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


class PlaceAim:
    """Per-object aim offsets (xy, metres, world frame), learned from this episode's missed places."""

    def __init__(self, config: AimConfig | None = None):
        self.config = config or AimConfig()
        self._offsets: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # object node -> (goal xy, offset xy)

    def reset(self) -> None:
        self._offsets.clear()

    def offset(self, call: SkillCall) -> np.ndarray:
        """(2,) m: the shift ``apply`` gives ``call`` (zeros unless it places an object that missed this goal)."""
        if call.skill != "place" or call.target not in self._offsets:
            return np.zeros(2)
        goal, offset = self._offsets[call.target]
        if float(np.linalg.norm(np.asarray(call.xyz[:2]) - goal)) > self.config.same_goal:
            return np.zeros(2)
        return offset.copy()

    def apply(self, call: SkillCall) -> SkillCall:
        """The call a skill should run: ``call`` with its place point shifted by :meth:`offset`."""
        shift = self.offset(call)
        if not shift.any():
            return call
        xyz = (call.xyz[0] + shift[0], call.xyz[1] + shift[1], call.xyz[2])
        return SkillCall(call.skill, call.target, xyz, call.yaw, call.size, call.note, call.extra)

    def miss(self, call: SkillCall, landed: np.ndarray) -> np.ndarray | None:
        """Learn from a failed place of ``call`` whose object came to rest at ``landed`` (3,) m.
        Returns the new offset (2,), or None when the landing teaches nothing (too far off)."""
        if call.skill != "place" or not call.target:
            return None
        goal = np.asarray(call.xyz[:2], dtype=np.float64)
        error = np.asarray(landed, dtype=np.float64)[:2] - goal
        if not np.isfinite(error).all() or float(np.linalg.norm(error)) > self.config.max_miss:
            return None
        offset = self.offset(call) - error
        norm = float(np.linalg.norm(offset))
        if norm > self.config.max_offset:
            offset *= self.config.max_offset / norm
        self._offsets[call.target] = (goal, offset)
        return offset.copy()
