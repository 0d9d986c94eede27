"""Every registered task: gymnasium conformance, determinism, cue erasure, bad input."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import embodied
from embodied.experts import make_expert
from embodied.tasks import TASKS
from tests.helpers import assert_same_observation, observation_at_recall

TASK_NAMES = sorted(TASKS)


@pytest.mark.parametrize("name", TASK_NAMES)
def test_check_env(name):
    env = gym.make(TASKS[name].env_id, image_size=64)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


@pytest.mark.parametrize("name", TASK_NAMES)
def test_same_seed_same_expert_trajectory(name):
    env = gym.make(TASKS[name].env_id, images=False)
    trajectories = []
    for _ in range(2):
        obs, _ = env.reset(seed=7)
        expert = make_expert(env)
        proprio = [obs["proprio"]]
        for _ in range(80):
            obs, _, terminated, truncated, _ = env.step(expert.act(obs))
            proprio.append(obs["proprio"])
            if terminated or truncated:
                break
        trajectories.append(np.array(proprio))
    assert trajectories[0].shape == trajectories[1].shape
    assert np.array_equal(trajectories[0], trajectories[1])
    env.close()


@pytest.mark.parametrize("name", TASK_NAMES)
def test_cue_is_gone_at_recall(name):
    """Episodes that differ only in the cue look identical when recall starts."""
    env = gym.make(TASKS[name].env_id, image_size=64)
    env.reset(seed=3)
    cues = env.unwrapped.cue_variants()
    assert len(cues) >= 2
    observations, privileged = [], []
    for cue in cues[:2]:
        observations.append(observation_at_recall(env, 3, cue))
        privileged.append(repr(env.unwrapped.privileged()))
    assert_same_observation(observations[0], observations[1])
    assert privileged[0] != privileged[1], "the two cues should lead to different hidden states"
    env.close()


@pytest.mark.parametrize("name", TASK_NAMES)
def test_recall_starts_at_the_same_step_whatever_the_cue(name):
    """The goal's step must not leak the cue: every cue the task draws starts recall at one step."""
    env = gym.make(TASKS[name].env_id, images=False)
    env.reset(seed=5)
    rng = np.random.default_rng(0)
    cues = [env.unwrapped._sample_cue(rng) for _ in range(6)]
    starts = set()
    for cue in cues:
        observation_at_recall(env, 5, cue)
        starts.add(env.unwrapped.t)
    assert len({repr(c) for c in cues}) >= 2, "the draws should give different cues"
    assert len(starts) == 1, f"recall starts at steps {sorted(starts)} for cues {cues}"
    env.close()


@pytest.mark.parametrize("bad", [np.full(5, np.nan), np.array([0, 0, np.inf, 0, 0]), np.zeros(4), np.zeros((5, 1))])
def test_bad_action_raises_with_expected_shape(bad):
    env = gym.make("embodied/PutBlockBack-v0", images=False)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"\(5,\)"):
        env.step(bad)
    env.close()


def test_unknown_task_lists_available():
    with pytest.raises(ValueError, match="PutBlockBack-v0"):
        embodied.make("NoSuchTask-v0")


def test_bad_option_names_valid_knobs():
    with pytest.raises(ValueError, match="delay"):
        gym.make("embodied/PutBlockBack-v0", not_a_knob=3)


def test_option_strings_are_parsed_by_knob_type():
    from dataclasses import dataclass

    from embodied.envs.base import options_from

    @dataclass
    class Knobs:
        flag: bool = True
        delay: int = 10
        tolerance: float = 0.03

    opts = options_from(Knobs, {"flag": "False", "delay": "25", "tolerance": "0.05"}, "T")
    assert (opts.flag, opts.delay, opts.tolerance) == (False, 25, 0.05)
    assert options_from(Knobs, {"flag": "yes"}, "T").flag is True
    for bad in ({"flag": "maybe"}, {"delay": "2.5"}, {"delay": 2.5}, {"tolerance": "wide"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            options_from(Knobs, bad, "T")


def test_joint_position_action_space():
    env = gym.make("embodied/PutBlockBack-v0", images=False, control_mode="joint_pos")
    obs, _ = env.reset(seed=0)
    assert env.action_space.shape == (8,)
    target = obs["proprio"][:7].copy()
    target[0] += 0.3  # turn the base joint
    for _ in range(30):
        obs, *_ = env.step(np.append(target, 1.0))
    assert abs(obs["proprio"][0] - target[0]) < 0.02
    env.close()


def test_no_faked_grasps():
    """Grasping must come from contact and friction: no welds, no mocap bodies."""
    for name in TASK_NAMES:
        env = gym.make(TASKS[name].env_id, images=False)
        model = env.unwrapped.model
        assert model.nmocap == 0, name
        assert model.neq == 0, name
        env.close()
