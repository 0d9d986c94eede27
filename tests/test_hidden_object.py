"""HiddenObject end to end: the expert opens the right drawer and lifts the block out."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from embodied.experts import make_expert
from tests.helpers import assert_same_observation, observation_at_recall, run_expert


@pytest.fixture(scope="module")
def env():
    env = gym.make("embodied/HiddenObject-v0", images=False)
    yield env
    env.close()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_expert_retrieves_the_block(env, seed):
    info, _ = run_expert(env, seed)
    assert info["is_success"] and not info["is_failure"]
    openings, cue = info["privileged"]["openings"], info["privileged"]["cue_drawer"]
    assert openings[cue] > 0.1
    assert info["privileged"]["target_pos"][2] > 0.08


def test_block_is_hidden_then_lifted_by_the_gripper(env):
    obs, info = env.reset(seed=4)
    start = info["privileged"]["distractor_pos"]
    expert = make_expert(env)
    while info["phase"] == "observe":
        obs, _, _, _, info = env.step(expert.act(obs))
    # Both distractors were carried to new spots on the table in view.
    moved = np.linalg.norm(info["privileged"]["distractor_pos"][:, :2] - start[:, :2], axis=1)
    assert np.all(moved > 0.05)
    assert np.allclose(info["privileged"]["distractor_pos"][:, 2], 0.02, atol=0.003)
    # After the observe phase the target lies in the cued drawer, which is shut.
    unit = info["privileged"]["unit_xy"][info["privileged"]["cue_drawer"]]
    target = info["privileged"]["target_pos"]
    assert target[0] > unit[0] and abs(target[1] - unit[1]) < 0.01
    assert np.all(info["privileged"]["openings"] < 0.005)
    lifted = []
    while not (info["is_success"] or info["is_failure"]):
        obs, _, _, truncated, info = env.step(expert.act(obs))
        assert not truncated
        if info["privileged"]["target_pos"][2] > 0.07:
            lifted.append(obs["proprio"][21])
    assert info["is_success"] and lifted
    # Held between the fingers: the opening equals the block's 4 cm width.
    assert all(0.03 < width < 0.045 for width in lifted)


def test_opening_the_wrong_drawer_fails(env):
    obs, info = env.reset(seed=5)
    expert = make_expert(env)
    expert.drawer_override = (info["privileged"]["cue_drawer"] + 1) % env.unwrapped.options.n_drawers
    while True:
        obs, _, terminated, truncated, info = env.step(expert.act(obs))
        if terminated or truncated:
            break
    assert info["is_failure"] and not info["is_success"]


def test_random_policy_fails(env):
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(env.unwrapped.horizon):
        _, _, terminated, truncated, info = env.step(rng.uniform(-1, 1, 5))
        if terminated or truncated:
            break
    assert not info["is_success"]


def test_cue_is_gone_at_recall():
    """Same layout, block hidden in different drawers: recall starts identical, target unseen."""
    env = gym.make("embodied/HiddenObject-v0", image_size=64)
    env.reset(seed=11)
    cues = env.unwrapped.cue_variants()
    target_id = env.unwrapped.entity["target"].instance_id
    observations, hidden = [], []
    for cue in cues[:2]:
        obs = observation_at_recall(env, 11, cue)
        for cam in env.unwrapped.cameras:
            assert not np.any(obs[f"segmentation/{cam}"] == target_id), cam
        observations.append(obs)
        hidden.append(env.unwrapped.privileged()["cue_drawer"])
    assert_same_observation(observations[0], observations[1])
    assert hidden[0] != hidden[1]
    assert observations[0]["goal"]["text"].startswith("retrieve the ")
    env.close()


def test_knobs():
    env = gym.make("embodied/HiddenObject-v0", images=False, n_drawers=4, distractors=4, distractor_moves=4)
    _, info = env.reset(seed=0)
    assert len(info["privileged"]["openings"]) == 4
    assert env.unwrapped.chance_rate(env.unwrapped.options) == pytest.approx(0.25)
    env.close()
    with pytest.raises(ValueError, match="distractors"):
        gym.make("embodied/HiddenObject-v0", images=False, distractors=9)
