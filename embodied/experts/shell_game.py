"""ShellGame's expert and the knob grasp every cup-lifting expert shares (Rearrange's too)."""

from __future__ import annotations

import numpy as np

from embodied.experts.calls import object_call
from embodied.experts.motion import CLOSED, OPEN, ScriptedExpert, Waypoint, tag
from embodied.planner.calls import SkillCall
from embodied.tasks.shell_game import ShellGame

KNOB_GRASP_Z = 0.085  # the arm settles ~4 mm short of a low target; the fingertips stay above the cup top


def lift_knob(x: float, y: float, high: float = 0.2, call: SkillCall | None = None) -> list[Waypoint]:
    """Grasp a cup's knob from above (fingers closing along the row, over the cup tops) and lift (``call``)."""
    return tag([
        Waypoint(np.array([x, y, high]), OPEN, 0.0, tol=0.01),
        Waypoint(np.array([x, y, KNOB_GRASP_Z]), OPEN, 0.0, tol=0.006, hold=2, speed=0.6),
        Waypoint(np.array([x, y, KNOB_GRASP_Z]), CLOSED, 0.0, tol=1.0, hold=6),
        Waypoint(np.array([x, y, high]), CLOSED, 0.0, tol=0.01, speed=0.6),
    ], call)


class ShellGameExpert(ScriptedExpert):
    """Lifts the cup that hides the ball (read from the env's privileged state) at recall."""

    cup_override: int | None = None  # tests lift a wrong cup

    def plan(self, phase: str) -> list[Waypoint]:
        if phase != "recall":
            return []
        env: ShellGame = self.env
        info = env.privileged()
        cup = info["ball_cup"] if self.cup_override is None else self.cup_override
        x, y, _ = info["cup_pos"][cup]
        call = object_call(env, "lift", f"cup{cup}", yaw=0.0, note=f"{env.colour} cup hiding the ball")
        return lift_knob(x, y, call=call)
