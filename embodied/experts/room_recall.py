"""The RoomRecall expert: A* on the privileged occupancy grid to the target room's viewpoint, then stop.

It reads the target room from the env (``env.target_room``, privileged) and
drives to that room's tour viewpoint (a free spot near its middle, on the
layout's planning grid) with the layout's ``GridPlanner`` (networkx A*) and
turn-then-drive control in the agent's own action space ``[forward, yaw
rate]``, then stands still, which is what the task counts as stopping in the
room. It idles during the tour and the delay, when the env ignores actions.

``current_call``: a ``navigate`` call to the room's viewpoint (z = 0, no
heading to face; size: the room's extent and wall height) during the recall
phase, else ``None``.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from embodied.envs.apartment import MAX_V, MAX_W
from embodied.envs.nav_drive import PathFollower, Progress
from embodied.envs.nav_layout import ROOMS, WALL_HEIGHT
from embodied.planner.calls import SkillCall


class RoomExpert:
    replan_after = 40  # steps without getting closer before planning again from where the robot is

    def __init__(self, env: gym.Env):
        self.env = env.unwrapped
        self.reset()

    def reset(self) -> None:
        self.follower: PathFollower | None = None
        self.progress = Progress(self.replan_after)
        self.current_call: SkillCall | None = None

    def act(self, obs=None) -> np.ndarray:
        env = self.env
        if env.phase != "recall":
            self.current_call = None
            return np.zeros(2, dtype=np.float32)
        goal = env.apartment.viewpoints[env.target_room]
        pose = env.robot_pose()
        dist = float(np.linalg.norm(goal - pose[:2]))
        stalled = self.progress.update(dist)
        if self.follower is None or (stalled and not self.follower.done):
            points = env.apartment.planner.path(pose[:2], goal) + [goal]
            self.follower = PathFollower(points[1:])
            self.progress.restart(dist)
            x0, y0, x1, y1 = ROOMS[env.target_room]
            self.current_call = SkillCall("navigate", f"room {env.target_room}", (goal[0], goal[1], 0.0),
                                          size=(x1 - x0, y1 - y0, WALL_HEIGHT), note=env._goal_text())
        if self.follower.done:
            return np.zeros(2, dtype=np.float32)
        v, w = self.follower.act(pose)
        return np.array([v / MAX_V, w / MAX_W], dtype=np.float32)
