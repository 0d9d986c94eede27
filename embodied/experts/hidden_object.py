"""HiddenObject's expert: open the drawer the block was hidden in, then lift the block out.

It reads the cued drawer from the env's privileged state; the block's grasp
pose is planned only once the drawer is open (``replan``), since a closed
drawer hides where the block came to rest.
"""

from __future__ import annotations

import numpy as np

from embodied.experts.calls import object_call
from embodied.experts.motion import CLOSED, OPEN, ScriptedExpert, Waypoint, tag
from embodied.experts.reopen_drawer import SAFE_Z, drawer_call, pull_open
from embodied.tasks.hidden_object import HiddenObject

PULL = 0.15  # how far the expert pulls (fingers start ~1 cm off the bar)


class HiddenObjectExpert(ScriptedExpert):
    """Pull the cued drawer open at recall, then pick the block from its tray and lift it."""

    drawer_override: int | None = None  # tests send the expert to a wrong drawer

    def plan(self, phase: str) -> list[Waypoint]:
        env: HiddenObject = self.env
        self._pick_planned = False
        if phase != "recall":
            return []
        k = env.privileged()["cue_drawer"] if self.drawer_override is None else self.drawer_override
        return pull_open(env.hook_point(k), PULL, drawer_call(env, "open", k, f"drawer hiding the {env.colour} block"))

    def replan(self) -> list[Waypoint]:
        # The block's place is known only once the drawer is open.
        if self.phase != "recall" or self._pick_planned:
            return []
        self._pick_planned = True
        b = self.env.privileged()["target_pos"]
        # Aim a little low: the arm settles a few mm above low targets.
        grasp = np.array([b[0], b[1], b[2] - 0.004])
        call = object_call(self.env, "pick", "target", yaw=0.0, note=f"{self.env.colour} block")
        return tag([
            Waypoint(np.array([b[0], b[1], SAFE_Z]), OPEN, 0.0, tol=0.008),
            Waypoint(grasp, OPEN, 0.0, tol=0.007, hold=2, speed=0.7),
            Waypoint(grasp, CLOSED, 0.0, tol=1.0, hold=6),
            Waypoint(np.array([b[0], b[1], 0.2]), CLOSED, 0.0, tol=0.01),
        ], call)
