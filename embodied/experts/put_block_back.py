"""PutBlockBack's expert: pick the block off the centre pad and set it down where it started."""

from __future__ import annotations

import numpy as np

from embodied.envs.workcell import BLOCK_HALF
from embodied.experts.calls import object_call
from embodied.experts.motion import CLOSED, OPEN, ScriptedExpert, Waypoint, tag
from embodied.planner.calls import SkillCall
from embodied.tasks.put_block_back import PutBlockBack


def pick_and_place(
    source: np.ndarray,
    target: np.ndarray,
    high: float,
    yaw: float = 0.0,
    pick: SkillCall | None = None,
    place: SkillCall | None = None,
) -> list[Waypoint]:
    """Top-down pick at ``source`` (TCP at the object's centre) and place at ``target``.

    The first four waypoints execute the ``pick`` call, the last four ``place``.
    """
    waypoints = [
        Waypoint(np.array([source[0], source[1], high]), OPEN, yaw, tol=0.01),
        Waypoint(np.array([source[0], source[1], source[2]]), OPEN, yaw, tol=0.004, hold=2),
        Waypoint(np.array([source[0], source[1], source[2]]), CLOSED, yaw, tol=1.0, hold=6),
        Waypoint(np.array([source[0], source[1], high]), CLOSED, yaw, tol=0.01),
        Waypoint(np.array([target[0], target[1], high]), CLOSED, yaw, tol=0.006),
        Waypoint(np.array(target), CLOSED, yaw, tol=0.004, hold=2, speed=0.5),
        Waypoint(np.array(target), OPEN, yaw, tol=1.0, hold=4),
        Waypoint(np.array([target[0], target[1], high]), OPEN, yaw, tol=0.01),
    ]
    return tag(waypoints[:4], pick) + tag(waypoints[4:], place)


class PutBlockBackExpert(ScriptedExpert):
    """Reads the start pose from the env's privileged state and carries the block back there at recall."""

    goal_override: np.ndarray | None = None  # tests send the block to a wrong spot

    def plan(self, phase: str) -> list[Waypoint]:
        if phase != "recall":
            return []
        env: PutBlockBack = self.env
        block = env.body_pos("block")
        goal = env.privileged()["start_xy"] if self.goal_override is None else self.goal_override
        high, grasp_z = 0.12, BLOCK_HALF
        target = np.array([*goal, grasp_z + 0.003])
        pick = object_call(env, "pick", "block", yaw=0.0, note=f"{env.colour} block")
        place = object_call(env, "place", "block", xyz=target, yaw=0.0, note="where the block started")
        return pick_and_place(block, target, high, pick=pick, place=place)
