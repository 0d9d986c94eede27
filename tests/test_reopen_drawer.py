"""ReopenDrawer end to end: the expert reopens the drawer it shut; a wrong drawer fails."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from embodied.experts import make_expert
from tests.helpers import assert_same_observation, observation_at_recall, run_expert


@pytest.fixture(scope="module")
def env():
    env = gym.make("embodied/ReopenDrawer-v0", images=False)
    yield env
    env.close()


def run_to_end(env, expert, obs, info):
    while True:
        obs, _, terminated, truncated, info = env.step(expert.act(obs))
        if terminated or truncated:
            return info


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_expert_reopens_the_cued_drawer(env, seed):
    info, _ = run_expert(env, seed)
    assert info["is_success"] and not info["is_failure"]
    openings, cue = info["privileged"]["openings"], info["privileged"]["cue_drawer"]
    assert openings[cue] >= 0.08
    assert np.all(np.delete(openings, cue) < 0.01)


def test_robot_pushes_the_drawer_shut_during_observe(env):
    """The expert closes the cue drawer itself, before the env's own clean-up."""
    obs, info = env.reset(seed=4)
    cue = info["privileged"]["cue_drawer"]
    assert info["privileged"]["openings"][cue] == pytest.approx(0.12)
    expert = make_expert(env)
    last = None
    while info["phase"] == "observe":
        last = info["privileged"]["openings"]
        obs, _, _, _, info = env.step(expert.act(obs))
    assert last[cue] < 0.01


def test_opening_the_wrong_drawer_fails(env):
    obs, info = env.reset(seed=5)
    cue = info["privileged"]["cue_drawer"]
    expert = make_expert(env)
    expert.drawer_override = (cue + 1) % env.unwrapped.options.n_drawers
    info = run_to_end(env, expert, obs, info)
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
    env = gym.make("embodied/ReopenDrawer-v0", image_size=64)
    env.reset(seed=11)
    cues = env.unwrapped.cue_variants()
    observations, hidden = [], []
    for cue in cues[:2]:
        observations.append(observation_at_recall(env, 11, cue))
        hidden.append(env.unwrapped.privileged()["cue_drawer"])
    assert_same_observation(observations[0], observations[1])
    assert hidden[0] != hidden[1]
    env.close()


def test_knobs():
    env = gym.make("embodied/ReopenDrawer-v0", images=False, n_drawers=5, delay=3, close_steps=50)
    _, info = env.reset(seed=0)
    assert len(info["privileged"]["openings"]) == 5
    assert env.unwrapped.chance_rate(env.unwrapped.options) == pytest.approx(0.2)
    phases = [env.step(np.zeros(5))[4]["phase"] for _ in range(54)]
    assert phases.index("delay") == 49 and phases.index("recall") == 52
    env.close()
    with pytest.raises(ValueError, match="n_drawers"):
        gym.make("embodied/ReopenDrawer-v0", images=False, n_drawers=6)
