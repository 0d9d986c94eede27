"""StoodOn (a past relation) and StashAndFetch (the robot's own action)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from embodied.agent.memory_agent import AgentConfig
from embodied.experts import make_expert
from embodied.experts.stash_fetch import StashAndFetchExpert
from embodied.planner.grammar import parse
from tests.agent_helpers import run_agent
from tests.helpers import run_expert


@pytest.mark.parametrize("text", ["touch the block that stood on the green pad", "Touch the block that was on the green pad.",
                                  "touch the block that sat on the green pad"])
def test_stood_on_paraphrases(text):
    ref = parse(text).ref
    assert ref.noun == "block" and ref.was_on is not None and ref.was_on.noun == "pad" and ref.was_on.colour == "green"


@pytest.mark.parametrize("text", ["put the red block in the open drawer", "Put the red block into the open drawer."])
def test_put_in_paraphrases(text):
    goal = parse(text)
    assert goal.action == "put_in" and goal.ref.colour == "red" and goal.into.noun == "drawer"
    assert goal.into.state == "open"


def test_every_cue_ends_in_the_same_scene_and_a_wrong_touch_fails():
    env = gym.make("embodied/StoodOn-v0", images=False, n_blocks=4, distractors=1)
    env.reset(seed=4)
    u = env.unwrapped
    ends = []
    for cue in u.cue_variants():
        env.reset(seed=4, options={"cue": cue})
        assert np.allclose(u.data.xpos[u._block_ids[cue], :2], u.pad_xy[0], atol=1e-3), "the cue block starts on the pad"
        for _ in range(sum(u._phase_lengths()) + 1):
            env.step(np.zeros(5))
        ends.append(u.data.xpos[u._block_ids].copy())
    assert np.allclose(ends[0], ends[1], atol=1e-4)
    with pytest.raises(ValueError, match="one that stands on a pad"):
        env.reset(seed=4, options={"cue": 4})  # the distractor never stood on a pad
    info, _ = run_expert(env, 2)
    assert info["is_success"]
    obs, info = env.reset(seed=3)
    expert = make_expert(env)
    expert.block_override = (u.target + 1) % u.options.n_blocks
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(expert.act(obs))
        done = terminated or truncated
    assert info["is_failure"]
    env.close()


@pytest.mark.parametrize("seed", [21, 22])
def test_agent_touches_the_block_that_stood_on_the_pad(seed):
    truth = {}
    agent, info, _ = run_agent("StoodOn-v0", seed, n_blocks=5, distractors=2, on_step=lambda raw, a, i: truth.setdefault(
        "colour", raw.unwrapped.block_colours[raw.unwrapped.target]))
    assert info["is_success"], agent.plan_text()
    touched = (agent.current_call or agent.done_calls[-1]).target
    assert agent.memory.graph.nodes[touched]["colour"] == truth["colour"]


def test_agent_follows_look_alike_blocks_through_their_moves():
    agent, info, _ = run_agent("StoodOn-v0", 24, preset="extreme", delay=50)
    assert info["is_success"], agent.plan_text()
    blocks = agent.memory.find(cls="block")
    assert len({agent.memory.graph.nodes[b]["colour"] for b in blocks}) == 1, "every block looks the same"


def test_blank_show_cannot_tell_which_stood_on_the_pad():
    agent, info, _ = run_agent("StoodOn-v0", 21, AgentConfig(blank_observe=True), n_blocks=5, distractors=2)
    assert not info["is_success"]


class _SkipsTheStash(StashAndFetchExpert):
    def plan(self, phase):
        return [] if phase == "observe" else super().plan(phase)


def test_stash_expert_and_a_fetch_without_the_stash_fails():
    env = gym.make("embodied/StashAndFetch-v0", images=False)
    info, _ = run_expert(env, 3)
    assert info["is_success"] and info["privileged"]["stashed"]
    obs, info = env.reset(seed=3)
    expert, done = _SkipsTheStash(env), False
    while not done:
        obs, _, terminated, truncated, info = env.step(expert.act(obs))
        done = terminated or truncated
    assert not info["is_success"] and not info["privileged"]["stashed"]
    u = env.unwrapped
    assert u.body_pos("target")[2] > 0.1, "it fetched the block: only the missing stash failed it"
    env.close()


def test_agent_stashes_then_fetches_from_memory():
    truth = {}
    agent, info, _ = run_agent("StashAndFetch-v0", 23, on_step=lambda raw, a, i: truth.update(
        stashed=raw.unwrapped.stashed))
    assert info["is_success"] and truth["stashed"], agent.plan_text()
    said = [e["text"] for e in agent.log if e["tag"] == "plan"]
    assert any("into the open drawer" in text for text in said), said
    agent, info, _ = run_agent("StashAndFetch-v0", 23, AgentConfig(wipe_at_recall=True), n_drawers=5)
    assert not info["is_success"]
