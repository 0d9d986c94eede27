"""Your own policy in the benchmark: ``--policy import:MODULE:FACTORY``.

    # mypkg/policy.py
    def make(spec):                      # spec: TaskSpec (below), once per episode
        return MyPolicy(spec.action_space)   # .act(obs) -> action, optional .reset()
        # or a plain callable: lambda obs: spec.action_space.sample()

    embodied benchmark --policy import:mypkg.policy:make --preset easy

The factory gets the spaces, the detector's vocabulary (instance id -> class name, what the
segmentation images index) and the episode's seed; the policy then sees only observations
(camera images, proprio, the goal text): the same sensors as the memory agent, never
``info["privileged"]``. Observations follow :mod:`embodied.envs.base` (``rgb/<cam>`` (S,S,3) uint8,
``depth/<cam>`` (S,S) float32 metres, ...); ``act`` returns an array of ``action_space.shape``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

PREFIX = "import:"


@dataclass(frozen=True)
class TaskSpec:
    task: str  # e.g. "ShellGame-v0"
    observation_space: gym.spaces.Dict
    action_space: gym.spaces.Box
    labels: dict[int, str]  # instance id -> class name
    seed: int


class CallablePolicy:
    """A bare ``obs -> action`` callable as a policy (nothing to reset)."""

    def __init__(self, fn: Callable[[dict], Any]):
        self.fn = fn

    def reset(self) -> None:
        pass

    def act(self, obs: dict) -> np.ndarray:
        return self.fn(obs)


def load_factory(spec: str) -> Callable[[TaskSpec], Any]:
    """``import:module:factory`` to the factory; errors name the part that is wrong."""
    body = spec.removeprefix(PREFIX)
    module_name, sep, attr = body.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"policy {spec!r}: expected import:MODULE:FACTORY, e.g. import:mypkg.policy:make")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"policy {spec!r}: cannot import module {module_name!r} ({exc})") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ValueError(f"policy {spec!r}: module {module_name!r} has no callable {attr!r}")
    return factory


def external_policy(spec: str, env: gym.Env, seed: int | None) -> Any:
    """The policy ``spec``'s factory builds for this episode, with ``reset()`` and ``act(obs)``."""
    factory = load_factory(spec)
    name = env.spec.id.removeprefix("embodied/") if env.spec else type(env.unwrapped).__name__
    task = TaskSpec(task=name, observation_space=env.observation_space, action_space=env.action_space,
                    labels=dict(env.unwrapped.labels), seed=int(seed or 0))
    policy = factory(task)
    if hasattr(policy, "act"):
        return policy if hasattr(policy, "reset") else CallablePolicy(policy.act)
    if callable(policy):
        return CallablePolicy(policy)
    raise ValueError(f"policy {spec!r}: the factory returned {type(policy).__name__}, which has no act(obs) "
                     "and is not callable")
