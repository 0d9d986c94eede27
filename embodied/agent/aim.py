"""Aim correction: a retried place or grasp is aimed off its target by the miss memory and
proprioception saw.

A skill, above all a learned one, can miss by the same few centimetres every
time: a head that barely moves for a short carry, a grasp that closes 2 cm
beside a cup's knob. Retrying the
same call repeats the miss. The agent measures each miss and hands the next
attempt at the same target a point shifted against it, accumulated over misses
like the integral term of a controller. The target itself does not move: the
planner still checks the effect against the true call.

* place: memory's position of the let-go object (where it came to rest) minus
  the goal, in xy;
* pick, lift: the TCP (proprioception) when the fingers were told to close,
  minus the target, in xy.

A miss that is noise rather than bias (a ball rolling off in a new direction
each time) is chased like a bias: there is no test of consistency yet.

    aim = Aim()
    aim.miss(call, landed=xyz)         # a failed place, the object let go
    aim.miss(call, reached=tcp_xyz)    # a failed pick or lift
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


class Aim:
    """Per-target aim offsets (metres, world frame), learned from this episode's misses."""

    def __init__(self, config: AimConfig | None = None):
        self.config = config or AimConfig()
        # (place | grasp, target node) -> (the point aimed at (2,), xy offset (2,))
        self._offsets: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}

    def reset(self) -> None:
        self._offsets.clear()

    def state(self) -> list:
        """JSON-plain: ``[kind, target, point [x, y] m, offset [dx, dy] m]`` per target missed so far."""
        return [[kind, target, [float(v) for v in p], [float(v) for v in o]]
                for (kind, target), (p, o) in self._offsets.items()]

    def load_state(self, rows: list) -> None:
        """Take the offsets ``state`` gave; ValueError naming the row at fault."""
        self._offsets.clear()
        for k, row in enumerate(rows):
            kind, target, point, offset = row
            point, offset = np.asarray(point, dtype=np.float64), np.asarray(offset, dtype=np.float64)
            if kind not in ("place", "grasp") or not isinstance(target, str) or point.shape != (2,) or \
                    offset.shape != (2,) or not np.isfinite([*point, *offset]).all():
                raise ValueError(f"aim row {k}: expected [place|grasp, target, [x, y], [dx, dy]], got {row!r}")
            self._offsets[(kind, target)] = (point, offset)

    @staticmethod
    def _key(call: SkillCall) -> tuple[str, str] | None:
        if call.skill == "place":
            return "place", call.target
        if call.skill in GRASPS:
            return "grasp", call.target
        return None

    def offset(self, call: SkillCall) -> np.ndarray:
        """(3,) m: the shift ``apply`` gives ``call`` (zeros unless it retries a miss at the same point)."""
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
        rest at ``landed`` (3,) m, or a pick or lift whose fingers closed with the TCP at ``reached``
        (3,) m. Returns the new offset (3,), or None when the failure teaches nothing."""
        cfg = self.config
        key = self._key(call)
        seen, limit = (landed, cfg.max_miss) if call.skill == "place" else (reached, cfg.max_reach_miss)
        if key is None or not call.target or seen is None:
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
