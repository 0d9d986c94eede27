"""SequenceRecall's expert and the button press that CountFlashes' expert shares."""

from __future__ import annotations

import numpy as np

from embodied.experts.calls import object_call
from embodied.experts.motion import CLOSED, ScriptedExpert, Waypoint, tag
from embodied.planner.calls import SkillCall
from embodied.tasks.sequence_recall import CAP_TOP, SequenceRecall

# Fingertips reach 12 mm below the TCP; the arm settles ~5 mm above a target
# this low, so aiming 14 mm into the cap presses it ~9 mm.
PRESS_Z = CAP_TOP + 0.012 - 0.014


def press(x: float, y: float, high: float = 0.07, call: SkillCall | None = None) -> list[Waypoint]:
    """Closed fingers over the cap, down past the press point, back up to release (``call``: press)."""
    return tag([
        Waypoint(np.array([x, y, high]), CLOSED, 0.0, tol=0.01),
        Waypoint(np.array([x, y, PRESS_Z]), CLOSED, 0.0, tol=0.007, hold=1, timeout=20, speed=0.5),
        Waypoint(np.array([x, y, high]), CLOSED, 0.0, tol=0.01),
    ], call)


class SequenceRecallExpert(ScriptedExpert):
    """Presses the buttons in the order they lit up (read from the env's privileged state) at recall."""

    sequence_override: tuple[int, ...] | None = None  # tests press a wrong order

    def plan(self, phase: str) -> list[Waypoint]:
        if phase != "recall":
            return []
        env: SequenceRecall = self.env
        info = env.privileged()
        order = info["sequence"] if self.sequence_override is None else self.sequence_override
        plan: list[Waypoint] = []
        for i, button in enumerate(order):
            call = object_call(env, "press", f"button{button}", yaw=0.0, note=f"button {i + 1} of the sequence")
            plan += press(*info["button_xy"][button], call=call)
        return plan
