"""The whole agent on learned perception (no renderer masks), end to end: a drawer task of the workcell,
where housings touch and merge in the learned detector's view, and what memory holds afterwards."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import embodied.tasks  # noqa: F401  (registers the tasks)
from embodied.eval.rollout import run_episodes

SEEDS = (11, 12)


def _episodes(policy: str, task: str = "embodied/ReopenDrawer-v0"):
    env = gym.make(task)
    agents = []
    results = run_episodes(env, policy, SEEDS, progress=False, perception="learned", on_policy=agents.append)
    env.close()
    return results, agents


@pytest.fixture(scope="module")
def learned_runs():
    return _episodes("agent")


def test_the_agent_reopens_the_cued_drawer_on_learned_perception(learned_runs):
    results, agents = learned_runs
    assert [r.success for r in results] == [True] * len(SEEDS)
    for agent in agents:
        memory = agent.memory
        drawers = memory.find(cls="drawer")
        opened = [n for n in drawers if memory.when("opened", n)]
        assert opened, "memory saw no drawer open"
        # Every drawer of the row slides out of its front, towards the robot, whatever the housings merged.
        for n in drawers:
            out = memory.slide_direction(n)
            assert out is None or np.allclose(out, (-1.0, 0.0)), (n, out)


def test_without_memory_of_the_cue_the_learned_agent_does_not_find_the_drawer():
    results, _ = _episodes("agent:wiped")
    assert not any(r.success for r in results)
