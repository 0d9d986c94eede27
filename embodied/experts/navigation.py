"""The navigation expert: A* on the privileged occupancy grid, then drive and face the goal.

It reads the current goal from ``env.privileged()["goal"]`` (target xy, the
stand-off point in front of it and a staging point on the planning grid),
plans with the layout's ``GridPlanner`` (networkx A*) and follows the path
with turn-then-drive control in the agent's own action space
``[forward, yaw rate]``. It idles during the tour and the delay, when the
env ignores actions anyway.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from embodied.envs.apartment import MAX_V, MAX_W
from embodied.envs.nav_drive import PathFollower


class NavigationExpert:
    replan_after = 40  # steps without getting closer before planning again from where the robot is

    def __init__(self, env: gym.Env):
        self.env = env.unwrapped
        self.reset()

    def reset(self) -> None:
        self.follower: PathFollower | None = None
        self.goal_key: tuple | None = None
        self.best = np.inf
        self.since_best = 0

    def act(self, obs=None) -> np.ndarray:
        env = self.env
        if env.phase != "recall":
            return np.zeros(2, dtype=np.float32)
        goal = env.privileged()["goal"]
        key = tuple(np.round(goal["xy"], 3))
        pose = env.robot_pose()
        dist = float(np.linalg.norm(goal["approach"] - pose[:2]))
        if dist < self.best - 0.02:
            self.best, self.since_best = dist, 0
        else:
            self.since_best += 1
        if key != self.goal_key or self.follower is None or self.since_best > self.replan_after:
            self._plan(goal, pose)
            self.goal_key = key
        elif self.follower.done:
            # Done but not yet counted as reached: come in straight again.
            self.follower = PathFollower([goal["approach"]], look_at=goal["xy"], face_tol=0.05)
        v, w = self.follower.act(pose)
        return np.array([v / MAX_V, w / MAX_W], dtype=np.float32)

    def _plan(self, goal: dict, pose: np.ndarray) -> None:
        planner = self.env.apartment.planner
        points = planner.path(pose[:2], goal["stage"]) + [goal["approach"]]
        self.follower = PathFollower(points[1:], look_at=goal["xy"])
        self.best, self.since_best = float(np.linalg.norm(goal["approach"] - pose[:2])), 0
