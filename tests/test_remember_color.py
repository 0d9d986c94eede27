"""RememberColor end to end: the expert touches the cued block; a wrong block fails; the cue is erased."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from embodied.experts import make_expert
from tests.helpers import assert_same_observation, observation_at_recall, run_expert


@pytest.fixture(scope="module")
def env():
    env = gym.make("embodied/RememberColor-v0", images=False)
    yield env
    env.close()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_expert_touches_the_cued_block(env, seed):
    info, _ = run_expert(env, seed)
    assert info["is_success"] and not info["is_failure"]
    assert info["privileged"]["first_touched"] == info["privileged"]["target"]


def test_touching_a_wrong_block_fails(env):
    obs, info = env.reset(seed=4)
    expert = make_expert(env)
    expert.block_override = (info["privileged"]["target"] + 1) % env.unwrapped.options.n_options
    while True:
        obs, _, terminated, truncated, info = env.step(expert.act(obs))
        if terminated or truncated:
            break
    assert info["is_failure"] and not info["is_success"]
    assert info["privileged"]["first_touched"] == expert.block_override


def _panel_colour(obs: dict, panel_id: int) -> np.ndarray:
    mask = obs["segmentation/scene"] == panel_id
    assert mask.sum() > 10, "the cue panel is not in the scene camera's view"
    return obs["rgb/scene"][mask].astype(float).mean(axis=0)


def test_cue_is_shown_then_gone_at_recall():
    env = gym.make("embodied/RememberColor-v0", image_size=64, n_options=5)
    env.reset(seed=8)
    u = env.unwrapped
    panel = u.entity["cue_panel"].instance_id
    observations, privileged = [], []
    for cue in u.cue_variants()[:2]:
        obs, _ = env.reset(seed=8, options={"cue": cue})
        grey = _panel_colour(obs, panel)
        for _ in range(u.options.cue_start):
            obs, *_ = env.step(np.zeros(5))
        # While the cue is on, the screen has left neutral grey.
        assert np.abs(_panel_colour(obs, panel) - grey).max() > 20
        observations.append(observation_at_recall(env, 8, cue))
        privileged.append(u.privileged())
    assert_same_observation(observations[0], observations[1])
    assert privileged[0]["cue_colour"] != privileged[1]["cue_colour"]
    assert privileged[0]["block_colours"] == privileged[1]["block_colours"]
    env.close()


def test_knobs_are_checked():
    with pytest.raises(ValueError, match="n_options"):
        gym.make("embodied/RememberColor-v0", images=False, n_options=4)
    u = gym.make("embodied/RememberColor-v0", images=False, n_options=9).unwrapped
    assert u.chance_rate(u.options) == pytest.approx(1 / 9)
