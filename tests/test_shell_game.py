"""ShellGame end to end: the expert lifts the cup hiding the ball; a wrong cup fails; the cue is erased."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from embodied.experts import make_expert
from tests.helpers import assert_same_observation, observation_at_recall, run_expert


@pytest.fixture(scope="module")
def env():
    env = gym.make("embodied/ShellGame-v0", images=False)
    yield env
    env.close()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_expert_lifts_the_right_cup(env, seed):
    info, _ = run_expert(env, seed)
    assert info["is_success"] and not info["is_failure"]
    heights = info["privileged"]["cup_pos"][:, 2]
    assert heights[info["privileged"]["ball_cup"]] >= 0.05
    assert np.delete(heights, info["privileged"]["ball_cup"]).max() < 0.01


def test_cup_is_held_by_its_knob(env):
    """While the cup is off the table the closed fingers are as far apart as the knob is wide."""
    obs, info = env.reset(seed=3)
    expert = make_expert(env)
    widths = []
    while not (info["is_success"] or info["is_failure"]):
        obs, _, _, truncated, info = env.step(expert.act(obs))
        assert not truncated
        cup = info["privileged"]["cup_pos"][info["privileged"]["ball_cup"]]
        if info["phase"] == "recall" and cup[2] > 0.01:
            widths.append(float(obs["proprio"][21]))
    assert info["is_success"]
    assert widths and all(0.02 < w < 0.03 for w in widths)


def test_lifting_a_wrong_cup_fails(env):
    obs, info = env.reset(seed=5)
    expert = make_expert(env)
    expert.cup_override = (info["privileged"]["ball_cup"] + 1) % env.unwrapped.options.n_cups
    while True:
        obs, _, terminated, truncated, info = env.step(expert.act(obs))
        if terminated or truncated:
            break
    assert info["is_failure"] and not info["is_success"]


def test_cue_is_gone_at_recall():
    env = gym.make("embodied/ShellGame-v0", image_size=64, n_swaps=2)
    env.reset(seed=11)
    ball_id = env.unwrapped.entity["ball"].instance_id
    observations, privileged = [], []
    for cue in env.unwrapped.cue_variants()[:2]:
        obs, _ = env.reset(seed=11, options={"cue": cue})
        # The ball is in plain view before the cups come down.
        assert np.any(obs["segmentation/scene"] == ball_id)
        obs = observation_at_recall(env, 11, cue)
        for cam in env.unwrapped.cameras:
            assert not np.any(obs[f"segmentation/{cam}"] == ball_id), f"ball visible in {cam} at recall"
        observations.append(obs)
        privileged.append(env.unwrapped.privileged())
    assert_same_observation(observations[0], observations[1])
    assert privileged[0]["ball_cup"] != privileged[1]["ball_cup"]
    assert not np.allclose(privileged[0]["ball_pos"], privileged[1]["ball_pos"])
    env.close()


def test_knobs_are_checked():
    with pytest.raises(ValueError, match="n_cups"):
        gym.make("embodied/ShellGame-v0", images=False, n_cups=6)
    cls = gym.make("embodied/ShellGame-v0", images=False, n_cups=4).unwrapped
    assert cls.chance_rate(cls.options) == pytest.approx(0.25)
