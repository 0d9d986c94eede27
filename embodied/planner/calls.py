"""Skill calls: what the planner hands to a skill (scripted or learned).

A plan is a list of :class:`SkillCall`. Every call names one skill from
``SKILLS`` and carries its parameters in the world frame, resolved from memory:

    target  memory node id the call acts on ("" when the call takes only a position)
    xyz     (3,) m, world frame: the object's remembered box centre (pick, open, close,
            lift, press, touch), the place point (place: where the held object's centre
            goes) or the goal point on the floor (navigate, z = 0)
    yaw     rad, world frame: gripper heading for arm skills; for open/close the heading
            of the pull direction (out of the housing); for navigate the heading to face
            at the end (NaN: any)
    size    (3,) m: the target's box size as remembered (zeros when there is none)

``call.params()`` packs these into the fixed vector ``(PARAM_DIM,) float32``
``[x, y, z, yaw, size_x, size_y, size_z, has_yaw]`` that demonstrations store and
learned heads are conditioned on; ``SKILL_IDS`` gives the integer id. The id
``NO_SKILL`` (-1) marks frames with no skill running (observe/delay idling).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

SKILLS: tuple[str, ...] = ("pick", "place", "open", "close", "lift", "press", "touch", "navigate", "wait")
SKILL_IDS: dict[str, int] = {name: k for k, name in enumerate(SKILLS)}
NO_SKILL = -1
PARAM_DIM = 8
# What a high-level policy chooses at a decision point: a skill, or to stop (nothing more to do for this
# goal); and where the call's point comes from: its target node now, where the target was first seen, or
# free (a point no node gives). See embodied.agent.decisions.
DECISIONS: tuple[str, ...] = (*SKILLS, "stop")
STOP = DECISIONS.index("stop")
SOURCES: tuple[str, ...] = ("now", "first", "free")
# ``call.extra[UNIT]``: the calls of a plan that belong together (e.g. open a drawer, pick, place back,
# close it), named by the node they serve. A plan's units may run in any order; calls without one keep
# theirs. Skills ignore it; a learned policy's trainer reads it from the recorded calls.
UNIT = "unit"
RESUMED = "resumed"  # extra flag: the unit was begun before this plan (its drawer open, its object held)


@dataclass(frozen=True)
class SkillCall:
    skill: str
    target: str = ""
    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    yaw: float = math.nan
    size: tuple[float, float, float] = (0.0, 0.0, 0.0)
    note: str = ""  # how the planner named the target ("red block", "drawer that was open")
    extra: dict = field(default_factory=dict, compare=False)  # skill-specific hints, JSON-plain

    def __post_init__(self):
        if self.skill not in SKILL_IDS:
            raise ValueError(f"unknown skill {self.skill!r}; skills: {', '.join(SKILLS)}")
        object.__setattr__(self, "xyz", tuple(float(v) for v in self.xyz))
        object.__setattr__(self, "size", tuple(float(v) for v in self.size))
        object.__setattr__(self, "yaw", float(self.yaw))
        if len(self.xyz) != 3 or len(self.size) != 3:
            raise ValueError(f"xyz and size must have 3 components, got {self.xyz} and {self.size}")
        if not all(math.isfinite(v) for v in self.xyz + self.size):
            raise ValueError(f"{self.skill}: xyz/size must be finite, got {self.xyz} / {self.size}")

    @property
    def skill_id(self) -> int:
        return SKILL_IDS[self.skill]

    @property
    def has_yaw(self) -> bool:
        return math.isfinite(self.yaw)

    def params(self) -> np.ndarray:
        """(PARAM_DIM,) float32: [x, y, z, yaw (0 if none), size_x, size_y, size_z, has_yaw]."""
        yaw = self.yaw if self.has_yaw else 0.0
        return np.array([*self.xyz, yaw, *self.size, float(self.has_yaw)], dtype=np.float32)

    def to_dict(self) -> dict:
        return {
            "skill": self.skill,
            "target": self.target,
            "xyz": list(self.xyz),
            "yaw": self.yaw if self.has_yaw else None,
            "size": list(self.size),
            "note": self.note,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, d: dict) -> SkillCall:
        yaw = d.get("yaw")
        return cls(
            d["skill"],
            d.get("target", ""),
            tuple(d.get("xyz", (0, 0, 0))),
            math.nan if yaw is None else float(yaw),
            tuple(d.get("size", (0, 0, 0))),
            d.get("note", ""),
            dict(d.get("extra", {})),
        )

    def __str__(self) -> str:
        what = self.note or self.target
        where = ", ".join(f"{v:.2f}" for v in (self.xyz[:2] if self.skill == "navigate" else self.xyz))
        yaw = f", yaw {self.yaw:+.2f}" if self.has_yaw else ""
        return f"{self.skill}({what + ' ' if what else ''}@ {where}{yaw})"
