"""Difficulty presets: valid knob sets for every family, harder up the ladder, the expert at every preset,
and the cue gone at recall at a hard preset too."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import pytest

from embodied.envs.base import PRESET_NAMES, options_from
from embodied.tasks import TASKS
from tests.helpers import assert_same_observation, observation_at_recall, run_expert

TASK_NAMES = sorted(TASKS)


def _options(name: str, preset: str):
    cls = TASKS[name].env_class()
    return cls, options_from(cls.Options, {"preset": preset}, name)


@pytest.mark.parametrize("name", TASK_NAMES)
def test_every_preset_is_a_valid_knob_set_and_gets_no_easier(name):
    cls = TASKS[name].env_class()
    assert tuple(cls.Options.PRESETS) == PRESET_NAMES
    assert cls.Options.PRESETS["easy"] == {}, "easy is the family at its default knobs"
    fields = {f.name for f in dataclasses.fields(cls.Options)}
    previous = None
    for preset in PRESET_NAMES:
        assert set(cls.Options.PRESETS[preset]) <= fields
        _, options = _options(name, preset)  # validates
        env = gym.make(TASKS[name].env_id, images=False, preset=preset)
        horizon, env_options = env.unwrapped.horizon, env.unwrapped.options
        env.close()
        assert env_options == options
        if previous is not None:
            assert options != previous[0], f"{preset} repeats the preset below it"
            if hasattr(options, "delay"):
                assert options.delay > previous[0].delay, "every step up the ladder waits longer"
            assert horizon >= previous[1]
        previous = (options, horizon)


def test_a_knob_beside_the_preset_overrides_it_and_bad_presets_are_named():
    _, options = _options("ShellGame-v0", "hard")
    assert (options.n_cups, options.n_swaps, options.delay) == (5, 6, 400)
    cls = TASKS["ShellGame-v0"].env_class()
    assert options_from(cls.Options, {"preset": "hard", "delay": "7"}, "ShellGame-v0").delay == 7
    with pytest.raises(ValueError, match=r"unknown preset 'brutal' for ShellGame-v0; presets: easy, medium"):
        options_from(cls.Options, {"preset": "brutal"}, "ShellGame-v0")


def test_horizon_grows_with_what_the_preset_adds():
    """More swaps lengthen the show, a longer sequence the recall, more goals the episode."""
    def horizon(name, **knobs):
        env = gym.make(TASKS[name].env_id, images=False, **knobs)
        value = env.unwrapped.horizon
        env.close()
        return value

    assert horizon("ShellGame-v0", n_swaps=10) - horizon("ShellGame-v0") == 9 * 14
    assert horizon("SequenceRecall-v0", length=4) > horizon("SequenceRecall-v0", n_buttons=5)
    assert horizon("MultiGoal-v0", goals=5) - horizon("MultiGoal-v0") == 2 * 400
    assert horizon("Lifelong-v0", goals=22) - horizon("Lifelong-v0") == 2 * 1050  # a period per goal
    assert horizon("ObjectRevisit-v0", time_limit=500) - horizon("ObjectRevisit-v0") == 100


@pytest.mark.parametrize("name", TASK_NAMES)
def test_expert_succeeds_at_the_extreme_preset(name):
    env = gym.make(TASKS[name].env_id, images=False, preset="extreme")
    for seed in (11, 12):
        info, steps = run_expert(env, seed)
        assert info["is_success"], f"{name} extreme seed {seed}: expert failed after {steps} steps"
        assert steps < env.unwrapped.horizon
    env.close()


@pytest.mark.parametrize("name", TASK_NAMES)
def test_cue_is_gone_at_recall_at_the_hard_preset(name):
    env = gym.make(TASKS[name].env_id, image_size=32, preset="hard")
    env.reset(seed=5)
    cues = env.unwrapped.cue_variants()
    observations = [observation_at_recall(env, 5, cue) for cue in cues[:2]]
    assert_same_observation(observations[0], observations[1])
    env.close()
