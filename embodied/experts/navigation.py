"""The navigation expert: A* on the privileged occupancy grid, then drive and face the goal.

It reads the current goal from ``env.privileged()["goal"]`` (target xy, the
stand-off point in front of it and a staging point on the planning grid),
plans with the layout's ``GridPlanner`` (networkx A*) and follows the path
with turn-then-drive control in the agent's own action space
``[forward, yaw rate]``. It idles during the tour and the delay, when the
env ignores actions anyway.

``current_call`` is the planner's view of what it is doing: a ``navigate``
call to the goal object (its xy on the floor, the heading that faces it from
the stand-off point, its box size) during the recall phase, else ``None``.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np

from embodied.envs.apartment import MAX_V, MAX_W
from embodied.envs.nav_drive import PathFollower, Progress
from embodied.experts.calls import entity_box
from embodied.planner.calls import SkillCall


class NavigationExpert:
    replan_after = 40  # steps without getting closer before planning again from where the robot is

    def __init__(self, env: gym.Env):
        self.env = env.unwrapped
        self.reset()

    def reset(self) -> None:
        self.follower: PathFollower | None = None
        self.goal_key: tuple | None = None
        self.progress = Progress(self.replan_after)
        self.current_call: SkillCall | None = None

    def act(self, obs=None) -> np.ndarray:
        env = self.env
        if env.phase != "recall":
            self.current_call = None
            return np.zeros(2, dtype=np.float32)
        goal = env.privileged()["goal"]
        key = tuple(np.round(goal["xy"], 3))
        pose = env.robot_pose()
        stalled = self.progress.update(float(np.linalg.norm(goal["approach"] - pose[:2])))
        if key != self.goal_key or self.follower is None or stalled:
            self._plan(goal, pose)
            if key != self.goal_key or self.current_call is None:
                self.current_call = self._call(goal)
            self.goal_key = key
        elif self.follower.done:
            # Done but not yet counted as reached: come in straight again.
            self.follower = PathFollower([goal["approach"]], look_at=goal["xy"], face_tol=0.05)
        v, w = self.follower.act(pose)
        return np.array([v / MAX_V, w / MAX_W], dtype=np.float32)

    def _call(self, goal: dict) -> SkillCall:
        name = self.env._goal_object()
        _, size = entity_box(self.env, name)
        face = goal["xy"] - goal["approach"]
        yaw = math.atan2(float(face[1]), float(face[0]))
        return SkillCall("navigate", name, (*goal["xy"][:2], 0.0), yaw, tuple(size), note=self.env._goal_text())

    def _plan(self, goal: dict, pose: np.ndarray) -> None:
        planner = self.env.apartment.planner
        points = planner.path(pose[:2], goal["stage"]) + [goal["approach"]]
        self.follower = PathFollower(points[1:], look_at=goal["xy"])
        self.progress.restart(float(np.linalg.norm(goal["approach"] - pose[:2])))
