"""Shared test utilities."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from embodied.experts import make_expert


def run_expert(env: gym.Env, seed: int, max_steps: int | None = None) -> tuple[dict, int]:
    """Run the task's expert for one episode; returns the last info and the step count."""
    obs, info = env.reset(seed=seed)
    expert = make_expert(env)
    limit = max_steps or env.unwrapped.horizon
    for step in range(1, limit + 1):
        obs, _, terminated, truncated, info = env.step(expert.act(obs))
        if terminated or truncated:
            break
    return info, step


def observation_at_recall(env: gym.Env, seed: int, cue) -> dict:
    """Step zero-ish actions until the recall phase starts; return that observation."""
    obs, info = env.reset(seed=seed, options={"cue": cue})
    action = np.zeros(env.action_space.shape, dtype=np.float32)
    if env.unwrapped.__class__.__dict__.get("idle_action") is not None:
        action = env.unwrapped.idle_action()
    while info["phase"] != "recall":
        obs, _, terminated, truncated, info = env.step(action)
        assert not (terminated or truncated), "episode ended before the recall phase"
    return obs


def assert_same_observation(a: dict, b: dict, path: str = "") -> None:
    assert a.keys() == b.keys(), f"{path}: keys differ"
    for key in a:
        if isinstance(a[key], dict):
            assert_same_observation(a[key], b[key], f"{path}{key}/")
        elif isinstance(a[key], str):
            assert a[key] == b[key], f"{path}{key}: {a[key]!r} != {b[key]!r}"
        else:
            assert np.array_equal(np.asarray(a[key]), np.asarray(b[key])), f"{path}{key} differs"
