"""PutBlockBack end to end: the expert solves it by a real grasp; guessing fails."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from embodied.experts import make_expert
from tests.helpers import run_expert


@pytest.fixture(scope="module")
def env():
    env = gym.make("embodied/PutBlockBack-v0", images=False)
    yield env
    env.close()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_expert_puts_block_back(env, seed):
    info, _ = run_expert(env, seed)
    assert info["is_success"]
    block, start = info["privileged"]["block_pos"], info["privileged"]["start_xy"]
    assert np.linalg.norm(block[:2] - start) <= 0.03


def test_block_is_lifted_by_the_gripper(env):
    """During the expert's recall the block rises off the table with the fingers closed on it."""
    obs, info = env.reset(seed=4)
    expert = make_expert(env)
    heights = []
    while not info["is_success"]:
        obs, _, terminated, truncated, info = env.step(expert.act(obs))
        if info["phase"] == "recall":
            width = obs["proprio"][21]
            heights.append((info["privileged"]["block_pos"][2], width))
        assert not truncated
    lifted = [(z, w) for z, w in heights if z > 0.06]
    assert lifted, "the block was never lifted"
    # Held between the fingers: the opening equals the block's 4 cm width.
    assert all(0.03 < w < 0.045 for _, w in lifted)


def test_placing_elsewhere_fails(env):
    """The same motion to a wrong spot does not count as success."""
    obs, info = env.reset(seed=5)
    start = info["privileged"]["start_xy"]
    wrong = np.array([0.58 if start[0] < 0.45 else 0.32, -start[1]])
    expert = make_expert(env)
    expert.goal_override = wrong
    while True:
        obs, _, terminated, truncated, info = env.step(expert.act(obs))
        if terminated or truncated:
            break
    assert not info["is_success"]
    assert np.linalg.norm(info["privileged"]["block_pos"][:2] - wrong) < 0.03


def test_random_policy_fails(env):
    obs, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(env.unwrapped.horizon):
        obs, _, terminated, truncated, info = env.step(rng.uniform(-1, 1, 5))
        if terminated or truncated:
            break
    assert not info["is_success"]


def test_delay_knob_sets_recall_start():
    env = gym.make("embodied/PutBlockBack-v0", images=False, delay=7, show_steps=4)
    _, info = env.reset(seed=0)
    phases = []
    for _ in range(40):
        _, _, _, _, info = env.step(np.zeros(5))
        phases.append(info["phase"])
    # observe = show_steps + 16 carry steps, then 7 delay steps.
    assert phases.index("delay") == 20 - 1
    assert phases.index("recall") == 27 - 1
    env.close()
