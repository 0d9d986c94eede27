"""RememberColor's expert, also the expert of every task that ends in "touch the right block".

MoveOrder, StoodOn and TouchAsTold keep RememberColor's recall (touch block
``target``, read from the env's privileged state), so the registry pairs them
with this expert too.
"""

from __future__ import annotations

import numpy as np

from embodied.envs.workcell import BLOCK_HALF
from embodied.experts.calls import object_call
from embodied.experts.motion import CLOSED, ScriptedExpert, Waypoint, tag
from embodied.planner.calls import SkillCall
from embodied.tasks.remember_color import RememberColor

TOUCH_Z = 2 * BLOCK_HALF + 0.002  # TCP height that puts the fingertips 1 cm into the block's top


def touch_from_above(x: float, y: float, z: float, high: float = 0.12, call: SkillCall | None = None) -> list[Waypoint]:
    """Closed fingers over the point, then straight down onto it (the ``call``: touch)."""
    return tag(
        [
            Waypoint(np.array([x, y, high]), CLOSED, 0.0, tol=0.01),
            Waypoint(np.array([x, y, z]), CLOSED, 0.0, tol=0.004, speed=0.5),
        ],
        call,
    )


class RememberColorExpert(ScriptedExpert):
    """Touches the target block from above at recall."""

    block_override: int | None = None  # tests touch a wrong block

    def plan(self, phase: str) -> list[Waypoint]:
        if phase != "recall":
            return []
        env: RememberColor = self.env
        info = env.privileged()
        block = info["target"] if self.block_override is None else self.block_override
        x, y, _ = info["block_pos"][block]
        call = object_call(env, "touch", f"block{block}", yaw=0.0, note="block of the cue colour")
        return touch_from_above(x, y, TOUCH_Z, call=call)
