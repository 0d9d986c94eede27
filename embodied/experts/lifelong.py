"""The Lifelong expert: the navigation expert for a place, the room expert for a room, idle between goals.

It reads the current goal from the env (privileged: ``env.stage``, ``env.current``, the goal's
place from ``env.privileged()["goal"]``) and hands each goal to the expert of its kind: a
place (an object, where one was first seen, where one was) to :class:`NavigationExpert` (A* on
the privileged grid to the stand-off point, then face it), a room to :class:`RoomExpert` (to the
room's viewpoint, then stand still). Between goals (the show and the wait, when the env drives
or holds the robot and ignores actions) it idles and forgets the last goal's plan.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from embodied.experts.navigation import NavigationExpert
from embodied.experts.room_recall import RoomExpert
from embodied.planner.calls import SkillCall


class LifelongExpert:
    def __init__(self, env: gym.Env):
        self.env = env.unwrapped
        self.place = NavigationExpert(env)
        self.room = RoomExpert(env)
        self.reset()

    def reset(self) -> None:
        self.place.reset()
        self.room.reset()
        self.current_call: SkillCall | None = None
        self._goal = None

    def act(self, obs=None) -> np.ndarray:
        env = self.env
        if env.phase != "recall" or env.stage != "goal":
            if self._goal is not None:
                self.reset()
            return np.zeros(2, dtype=np.float32)
        if env.current is not self._goal:  # a new goal: plan afresh
            self.reset()
            self._goal = env.current
        expert = self.room if env.current.kind == "room" else self.place
        action = expert.act(obs)
        self.current_call = expert.current_call
        return action
