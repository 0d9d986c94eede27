"""CountFlashes end to end: the expert presses the count; one press too many or too few fails; the agent
counts the screen's flashes from memory and not the button's; blank or wiped memory fails."""

from __future__ import annotations

import gymnasium as gym
import pytest

from embodied.agent.memory_agent import AgentConfig
from embodied.experts import make_expert
from embodied.planner.grammar import GrammarError, parse
from embodied.planner.resolver import Resolver
from tests.agent_helpers import run_agent
from tests.helpers import run_expert


@pytest.fixture(scope="module")
def env():
    env = gym.make("embodied/CountFlashes-v0", images=False)
    yield env
    env.close()


def _run(env, seed: int, count=None) -> dict:
    obs, info = env.reset(seed=seed)
    expert = make_expert(env)
    if count is not None:
        expert.count_override = count(info["privileged"]["count"])
    while True:
        obs, _, terminated, truncated, info = env.step(expert.act(obs))
        if terminated or truncated:
            return info


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_expert_presses_the_count(env, seed):
    info, _ = run_expert(env, seed)
    assert info["is_success"] and info["privileged"]["presses"] == info["privileged"]["count"]


def test_one_press_too_many_fails_at_once_and_one_too_few_never_succeeds(env):
    info = _run(env, 3, count=lambda n: n + 1)
    assert info["is_failure"] and info["privileged"]["presses"] == info["privileged"]["count"] + 1
    info = _run(env, 4, count=lambda n: n - 1)
    assert not info["is_success"] and info["privileged"]["presses"] == info["privileged"]["count"] - 1


def test_the_show_lasts_as_long_whatever_the_count():
    env = gym.make("embodied/CountFlashes-v0", images=False, max_count=6, distractors=2)
    lengths = set()
    for cue in (1, 6):
        env.reset(seed=5, options={"cue": cue})
        u = env.unwrapped
        lengths.add(u._phase_lengths())
        assert len(u.screen_slots) == cue and len(u.button_slots) == 2 and not u.screen_slots & u.button_slots
    assert len(lengths) == 1
    with pytest.raises(ValueError, match="cue must be a flash count in 1..6"):
        env.reset(seed=5, options={"cue": 7})
    env.close()


@pytest.mark.parametrize("text", ["press the button as many times as the screen flashed",
                                  "Press the button as often as the display blinked.",
                                  "press the button as many times as the screen lit up"])
def test_paraphrases_parse_to_the_same_goal(text):
    goal = parse(text)
    assert (goal.action, goal.ref.noun, goal.times_of.noun) == ("press", "button", "cue_panel")


def test_a_count_without_its_verb_is_named():
    with pytest.raises(GrammarError, match="expected 'flashed', 'lit up' or 'blinked'"):
        parse("press the button as many times as the screen")


@pytest.mark.parametrize("seed", [21, 22])
def test_agent_counts_the_screen_not_the_button(seed):
    """Distractor flashes of the button's own cap are in memory too; the plan counts only the screen's."""
    truth = {}
    agent, info, _ = run_agent("CountFlashes-v0", seed, distractors=3, max_count=5,
                               on_step=lambda raw, agent, info: truth.setdefault("count", raw.unwrapped.count))
    assert info["is_success"], agent.plan_text()
    resolver = Resolver(agent.memory)
    screen, button = agent.memory.find(cls="cue_panel")[0], agent.memory.find(cls="button")[0]
    assert resolver.flash_count(screen) == truth["count"]
    assert resolver.flash_count(button) == 3, "memory saw every distractor flash of the cap"
    presses = [line for line in agent.plan_text().splitlines() if "press(" in line]
    assert len(presses) == len(agent.memory.when("pressed", button)) == truth["count"]


@pytest.mark.parametrize("knob", ["blank_observe", "wipe_at_recall"])
def test_without_the_show_in_memory_the_agent_fails(knob):
    agent, info, _ = run_agent("CountFlashes-v0", 21, AgentConfig(**{knob: True}), distractors=3, max_count=5)
    assert not info["is_success"]
