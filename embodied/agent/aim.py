"""Aim correction: a retried skill is aimed off its target by what memory and proprioception saw go wrong.

A skill, above all a learned one, can miss by the same few centimetres every
time: a head that barely moves for a short carry, a grasp that closes 2 cm
beside a cup's rim, a push that stops short of a button's click. Retrying the
same call repeats the miss. The agent measures each miss and hands the next
attempt at the same target a point shifted against it, accumulated over misses
like the integral term of a controller. The target itself does not move: the
planner still checks the effect against the true call.

* place: memory's position of the let-go object (where it came to rest) minus
  the goal, in xy;
* pick, lift: the TCP (proprioception) when the fingers were told to close,
  minus the target, in xy;
* press: memory saw no click; the next push is aimed ``press_step`` lower, down
  to ``max_press``.

    aim = Aim()
    aim.miss(call, landed=xyz)         # a failed place, the object let go
    aim.miss(call, reached=tcp_xyz)    # a failed pick or lift
    aim.miss(call)                     # a press memory did not see
    skill.start(aim.apply(call), obs)  # the point the skill is given
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from embodied.planner.calls import SkillCall

GRASPS = ("pick", "lift")


@dataclass
class AimConfig:
    same_goal: float = 0.02  # m: a later call counts as aimed at the same point within this (xy)
    max_miss: float = 0.10  # m: a landing farther than this from the goal (it rolled, fell) teaches nothing
    max_reach_miss: float = 0.05  # m: nor does a grasp that closed farther than this from its target
    max_offset: float = 0.06  # m: the shift never exceeds this (xy norm)
    press_step: float = 0.003  # m: each press memory did not see is retried this much lower
    max_press: float = 0.009  # m: at most this much lower


class Aim:
    """Per-target aim offsets (metres, world frame), learned from this episode's misses."""

    def __init__(self, config: AimConfig | None = None):
        self.config = config or AimConfig()
        # (place | grasp, target node) -> (the point aimed at (2,), xy offset (2,))
        self._offsets: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        self._deeper: dict[str, float] = {}  # button node -> m lower

    def reset(self) -> None:
        self._offsets.clear()
        self._deeper.clear()

    @staticmethod
    def _key(call: SkillCall) -> tuple[str, str] | None:
        if call.skill == "place":
            return "place", call.target
        if call.skill in GRASPS:
            return "grasp", call.target
        return None

    def offset(self, call: SkillCall) -> np.ndarray:
        """(3,) m: the shift ``apply`` gives ``call`` (zeros unless it retries a miss at the same point)."""
        if call.skill == "press":
            return np.array([0.0, 0.0, -self._deeper.get(call.target, 0.0)])
        key = self._key(call)
        if key not in self._offsets:
            return np.zeros(3)
        point, offset = self._offsets[key]
        if float(np.linalg.norm(np.asarray(call.xyz[:2]) - point)) > self.config.same_goal:
            return np.zeros(3)
        return np.array([offset[0], offset[1], 0.0])

    def apply(self, call: SkillCall) -> SkillCall:
        """The call a skill should run: ``call`` with its point shifted by :meth:`offset`."""
        shift = self.offset(call)
        if not shift.any():
            return call
        xyz = tuple(float(v) for v in np.asarray(call.xyz) + shift)
        return SkillCall(call.skill, call.target, xyz, call.yaw, call.size, call.note, call.extra)

    def miss(self, call: SkillCall, landed: np.ndarray | None = None,
             reached: np.ndarray | None = None) -> np.ndarray | None:
        """Learn from a failed ``call`` (the true one, not the aimed one): a place whose object came to
        rest at ``landed`` (3,) m, a pick or lift whose fingers closed with the TCP at ``reached``
        (3,) m, or a press. Returns the new offset (3,), or None when the failure teaches nothing."""
        cfg = self.config
        if not call.target:
            return None
        if call.skill == "press":
            self._deeper[call.target] = min(self._deeper.get(call.target, 0.0) + cfg.press_step, cfg.max_press)
            return self.offset(call)
        key = self._key(call)
        seen, limit = (landed, cfg.max_miss) if call.skill == "place" else (reached, cfg.max_reach_miss)
        if key is None or seen is None:
            return None
        point = np.asarray(call.xyz[:2], dtype=np.float64)
        error = np.asarray(seen, dtype=np.float64)[:2] - point
        if not np.isfinite(error).all() or float(np.linalg.norm(error)) > limit:
            return None
        offset = self.offset(call)[:2] - error
        norm = float(np.linalg.norm(offset))
        if norm > cfg.max_offset:
            offset *= cfg.max_offset / norm
        self._offsets[key] = (point, offset)
        return self.offset(call)
