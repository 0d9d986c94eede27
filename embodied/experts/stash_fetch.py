"""StashAndFetch's expert: stash the block in the open drawer itself, later fetch it as in HiddenObject."""

from __future__ import annotations

import numpy as np

from embodied.envs.workcell import BLOCK_HALF
from embodied.experts.calls import object_call
from embodied.experts.hidden_object import HiddenObjectExpert
from embodied.experts.motion import CLOSED, OPEN, Waypoint, tag
from embodied.tasks.hidden_object import SHOW_OPEN, TRAY_TOP
from embodied.tasks.stash_fetch import StashAndFetch

CARRY_Z = 0.14  # TCP height while carrying: clear of drawer fronts and handles


class StashAndFetchExpert(HiddenObjectExpert):
    """In the observe phase: pick the block off the table and set it down in the cued drawer's tray."""

    def plan(self, phase: str) -> list[Waypoint]:
        if phase != "observe":
            return super().plan(phase)
        env: StashAndFetch = self.env
        b = np.array([*env.target_start, BLOCK_HALF])
        x, y = env.unit_xy(env.cue)
        # TCP heights: the fingers stop a few mm above a block on the table, and the carried block rests
        # on the tray with the TCP about 1 cm above its centre.
        grasp = np.array([b[0], b[1], BLOCK_HALF + 0.002])
        drop = np.array([x + 0.06 - SHOW_OPEN, y, TRAY_TOP + BLOCK_HALF + 0.01])
        pick = object_call(env, "pick", "target", yaw=0.0, note=f"{env.colour} block")
        place = object_call(env, "place", "target", xyz=tuple(drop), yaw=0.0, note="into the open drawer")
        return tag([
            Waypoint(np.array([b[0], b[1], CARRY_Z]), OPEN, 0.0, tol=0.008),
            Waypoint(grasp, OPEN, 0.0, tol=0.007, hold=2, speed=0.7, timeout=25),
            Waypoint(grasp, CLOSED, 0.0, tol=1.0, hold=6),
            Waypoint(np.array([b[0], b[1], CARRY_Z]), CLOSED, 0.0, tol=0.01),
        ], pick) + tag([
            Waypoint(np.array([drop[0], drop[1], CARRY_Z]), CLOSED, 0.0, tol=0.008),
            Waypoint(drop, CLOSED, 0.0, tol=0.006, hold=2, speed=0.5, timeout=25),
            Waypoint(drop, OPEN, 0.0, tol=1.0, hold=4),
            Waypoint(np.array([drop[0], drop[1], CARRY_Z]), OPEN, 0.0, tol=0.01),
        ], place)
