"""ReopenDrawer's expert and the hook-and-pull waypoints every drawer expert shares.

The drawer helpers (``pull_open``, ``push_shut``, ``drawer_call``) live here,
not with the task, because only experts plan motion: the tasks keep the scene
(``DrawerRow.hook_point`` says where the fingers go), the experts say how to
get there. HiddenObject, StashAndFetch and Rearrange's experts reuse them.
"""

from __future__ import annotations

import numpy as np

from embodied.experts.calls import PULL_YAW, object_call
from embodied.experts.motion import CLOSED, ScriptedExpert, Waypoint, tag
from embodied.planner.calls import SkillCall
from embodied.tasks.reopen_drawer import CUE_OPEN, ReopenDrawer

SAFE_Z = 0.15  # TCP height above a drawer row: clear of drawer fronts and handles


def pull_open(hook: np.ndarray, amount: float, call: SkillCall | None = None) -> list[Waypoint]:
    """Hook the handle from above with closed fingers and pull it ``amount`` toward the robot (``call``: open)."""
    end = hook + np.array([-amount, 0.0, 0.0])
    return tag([
        Waypoint(np.array([hook[0], hook[1], SAFE_Z]), CLOSED, 0.0, tol=0.008),
        Waypoint(hook, CLOSED, 0.0, tol=0.008, hold=1, speed=0.8),
        Waypoint(end, CLOSED, 0.0, tol=0.008, hold=3, speed=0.5, timeout=80),
        Waypoint(np.array([end[0], end[1], SAFE_Z]), CLOSED, 0.0, tol=0.01),
    ], call)


def push_shut(hook: np.ndarray, amount: float, call: SkillCall | None = None) -> list[Waypoint]:
    """From behind the handle of an open drawer, push its front ``amount`` back in (``call``: close)."""
    # The fingers start 1 cm off the front face: travel that far plus the opening.
    end = hook + np.array([amount + 0.01, 0.0, 0.0])
    return tag([
        Waypoint(np.array([hook[0], hook[1], SAFE_Z]), CLOSED, 0.0, tol=0.008),
        Waypoint(hook, CLOSED, 0.0, tol=0.008, hold=1, speed=0.8),
        Waypoint(end, CLOSED, 0.0, tol=0.008, hold=2, speed=0.6, timeout=30),
        # Straight up: backing off toward the robot would catch the bar again.
        Waypoint(np.array([end[0], end[1], SAFE_Z]), CLOSED, 0.0, tol=0.01),
    ], call)


def drawer_call(env, skill: str, k: int, note: str = "") -> SkillCall:
    """open/close call on drawer ``k``: its box centre, the pull direction's heading."""
    return object_call(env, skill, f"drawer{k}", yaw=PULL_YAW, note=note)


class ReopenDrawerExpert(ScriptedExpert):
    """Shuts the open drawer while it is shown, then reopens the same one at recall."""

    drawer_override: int | None = None  # tests send the expert to a wrong drawer

    def plan(self, phase: str) -> list[Waypoint]:
        env: ReopenDrawer = self.env
        cue = env.privileged()["cue_drawer"]
        if phase == "observe":
            return push_shut(env.hook_point(cue), env.opening(cue), drawer_call(env, "close", cue, "the open drawer"))
        if phase == "recall":
            k = cue if self.drawer_override is None else self.drawer_override
            return pull_open(env.hook_point(k), CUE_OPEN, drawer_call(env, "open", k, "the drawer that was open"))
        return []
