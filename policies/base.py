"""The policy protocol and the memoryless random baseline."""

from __future__ import annotations

from typing import Any, Protocol

import gymnasium as gym
import numpy as np


class Policy(Protocol):
    def reset(self) -> None: ...

    def act(self, obs: dict[str, Any]) -> np.ndarray: ...


class RandomPolicy:
    """Uniform random actions from the env's action space (seeded)."""

    def __init__(self, env: gym.Env, seed: int | None = None):
        self.space = env.action_space
        self.space.seed(seed)

    def reset(self) -> None:
        pass

    def act(self, obs: dict[str, Any]) -> np.ndarray:
        return self.space.sample()
