"""MoveOrder and ChangedObject: which object moved, and in what order, from memory's trajectories."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from embodied.agent.memory_agent import AgentConfig
from embodied.experts import make_expert
from embodied.planner.grammar import parse
from tests.agent_helpers import run_agent
from tests.helpers import run_expert


@pytest.mark.parametrize("text, moved, when", [
    ("touch the block that was moved first", "first", "now"),
    ("Touch the block that moved last.", "last", "now"),
    ("go to the object that was moved", "any", "now"),
    ("go to the thing that moved", "any", "now"),
    ("go to where the object that was moved was first seen", "any", "first"),
])
def test_moved_clause_paraphrases(text, moved, when):
    goal = parse(text)
    assert goal.ref.moved == moved and goal.when == when


def test_expert_touches_the_first_moved_and_another_mover_fails():
    env = gym.make("embodied/MoveOrder-v0", images=False, n_blocks=5, k=4)
    info, _ = run_expert(env, 2)
    assert info["is_success"] and info["privileged"]["first_touched"] == info["privileged"]["order"][0]
    obs, info = env.reset(seed=3)
    expert = make_expert(env)
    expert.block_override = env.unwrapped.order[1]  # moved, but second
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(expert.act(obs))
        done = terminated or truncated
    assert info["is_failure"]
    env.close()


def test_every_order_ends_in_the_same_scene():
    env = gym.make("embodied/MoveOrder-v0", images=False)
    env.reset(seed=4)
    u = env.unwrapped
    ends = []
    for cue in u.cue_variants():
        env.reset(seed=4, options={"cue": cue})
        for _ in range(sum(u._phase_lengths()) + 1):
            env.step(np.zeros(5))
        ends.append(u.data.xpos[u._block_ids].copy())
    assert np.allclose(ends[0], ends[1], atol=1e-4)
    with pytest.raises(ValueError, match="cue must be an order of the moved blocks"):
        env.reset(seed=4, options={"cue": (0, 0, 0)})
    env.close()


@pytest.mark.parametrize("seed, query", [(21, "last"), (22, "first")])
def test_agent_ranks_the_moves_it_saw(seed, query):
    truth = {}
    agent, info, _ = run_agent("MoveOrder-v0", seed, n_blocks=6, k=5, query=query,
                               on_step=lambda raw, a, i: truth.setdefault("colour", raw.unwrapped.block_colours[
                                   raw.unwrapped.target]))
    assert info["is_success"], agent.plan_text()
    touched = (agent.current_call or agent.done_calls[-1]).target
    assert agent.memory.graph.nodes[touched]["colour"] == truth["colour"]


def test_blank_show_fails():
    agent, info, _ = run_agent("MoveOrder-v0", 21, AgentConfig(blank_observe=True), n_blocks=6, k=5)
    assert not info["is_success"]


def test_changed_object_goal_names_nothing_and_the_agent_finds_the_mover():
    truth = {}
    agent, info, _ = run_agent("ChangedObject-v0", 24, on_step=lambda raw, a, i: truth.setdefault(
        "mover", raw.unwrapped.mover))
    assert info["is_success"], agent.plan_text()
    assert "go to the object that was moved" in agent.plan_text()
    node = (agent.current_call or agent.done_calls[-1]).target
    assert agent.memory.graph.nodes[node]["cls"] == truth["mover"]
