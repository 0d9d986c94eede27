"""SequenceRecall end to end: the expert presses the lit order; a wrong press fails; the cue is erased."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from embodied.experts import make_expert
from tests.helpers import assert_same_observation, observation_at_recall, run_expert


@pytest.fixture(scope="module")
def env():
    env = gym.make("embodied/SequenceRecall-v0", images=False)
    yield env
    env.close()


def _run(env, seed: int, order=None) -> dict:
    obs, info = env.reset(seed=seed)
    expert = make_expert(env)
    if order is not None:
        expert.sequence_override = order(info["privileged"]["sequence"])
    while True:
        obs, _, terminated, truncated, info = env.step(expert.act(obs))
        if terminated or truncated:
            return info


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_expert_presses_the_sequence(env, seed):
    info, _ = run_expert(env, seed)
    assert info["is_success"] and not info["is_failure"]
    assert info["privileged"]["presses"] == info["privileged"]["sequence"]


def test_pressing_out_of_order_fails(env):
    info = _run(env, 3, order=lambda seq: [seq[1], seq[0], *seq[2:]])
    assert info["is_failure"] and not info["is_success"]
    assert info["privileged"]["presses"] == [info["privileged"]["sequence"][1]]


def test_each_push_counts_once(env):
    """Pushing the first button again is a second press, and a wrong one."""
    info = _run(env, 4, order=lambda seq: [seq[0], seq[0]])
    assert info["is_failure"]
    first = info["privileged"]["sequence"][0]
    assert info["privileged"]["presses"] == [first, first]


def test_cue_is_shown_then_gone_at_recall():
    env = gym.make("embodied/SequenceRecall-v0", image_size=64)
    env.reset(seed=6)
    u = env.unwrapped
    observations, privileged = [], []
    for cue in u.cue_variants()[:2]:
        obs, _ = env.reset(seed=6, options={"cue": cue})
        dark = obs["rgb/scene"].astype(int)
        for _ in range(4):  # into the first flash
            obs, *_ = env.step(np.zeros(5))
        cap = obs["segmentation/scene"] == u.entity[f"button{cue[0]}"].instance_id
        assert np.abs(obs["rgb/scene"].astype(int) - dark)[cap].max() > 60, "the first button did not light up"
        observations.append(observation_at_recall(env, 6, cue))
        privileged.append(u.privileged())
    assert_same_observation(observations[0], observations[1])
    assert privileged[0]["sequence"] != privileged[1]["sequence"]
    env.close()


def test_knobs_are_checked():
    with pytest.raises(ValueError, match="length"):
        gym.make("embodied/SequenceRecall-v0", images=False, n_buttons=3, length=4)
    u = gym.make("embodied/SequenceRecall-v0", images=False).unwrapped
    assert u.chance_rate(u.options) == pytest.approx(1 / 24)
