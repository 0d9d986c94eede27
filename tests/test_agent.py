"""The memory agent end to end: sensors in, actions out, memory doing the work."""

from __future__ import annotations

import numpy as np
import pytest

from embodied.agent.memory_agent import AgentConfig
from tests.agent_helpers import run_agent

MANIPULATION = ["PutBlockBack-v0", "ReopenDrawer-v0", "HiddenObject-v0", "ShellGame-v0", "RememberColor-v0",
                "SequenceRecall-v0", "Rearrange-v0"]


@pytest.mark.parametrize("task", MANIPULATION)
@pytest.mark.parametrize("seed", [11, 12])
def test_agent_solves_manipulation_from_sensors(task, seed):
    agent, info, steps = run_agent(task, seed, image_size=96)
    assert info["is_success"], f"{task} seed {seed}: {agent.log}"
    assert "privileged" not in info
    assert "plan" in [entry["tag"] for entry in agent.log]
    assert any(e["tag"] == "plan" for e in agent.memory.history("agent")), "plans are logged in memory"


@pytest.mark.parametrize("task", ["ObjectRevisit-v0", "MovedObject-v0", "MultiGoal-v0"])
@pytest.mark.parametrize("seed", [11, 12])
def test_agent_solves_navigation_from_sensors(task, seed):
    """The tour builds the memory and the robot's own free-space map; the goals are driven to from them."""
    agent, info, _ = run_agent(task, seed)
    assert info["is_success"], f"{task} seed {seed}: {agent.log}"
    assert agent.freespace is not None and all(c.skill == "navigate" for c in agent.done_calls + agent.plan)


@pytest.mark.parametrize("task", ["PutBlockBack-v0", "ReopenDrawer-v0"])
def test_blank_cue_fails_where_the_normal_run_succeeds(task):
    seed = 5
    _, normal, _ = run_agent(task, seed, image_size=96)
    _, blank, _ = run_agent(task, seed, AgentConfig(blank_observe=True), image_size=96)
    assert normal["is_success"]
    assert not blank["is_success"]


def test_wiped_memory_fails():
    _, info, _ = run_agent("PutBlockBack-v0", 6, AgentConfig(wipe_at_recall=True), image_size=96)
    assert not info["is_success"]


def test_block_knocked_out_of_the_gripper_is_picked_again():
    knocked = {}

    def knock(raw, agent, info):
        env = raw.unwrapped
        if knocked or agent.current_call is None or agent.current_call.skill != "place":
            return
        block = env.body_pos("block")
        if block[2] > 0.1:  # carried high: drop it back on the table, away from the goal
            env.place("block", (0.40, -0.05 if env.start_xy[1] > 0 else 0.05, 0.02))
            knocked["at"] = env.t

    agent, info, _ = run_agent("PutBlockBack-v0", 8, on_step=knock, image_size=96)
    tags = [entry["tag"] for entry in agent.log]
    assert knocked, "the test never knocked the block out"
    assert "skill_failed" in tags and "replan" in tags, agent.log
    assert sum(1 for c in agent.done_calls if c.skill == "pick") == 2  # before and after the knock
    assert [e for e in agent.log if e["tag"] == "skill_done" and e["text"].startswith("pick")][-1]["t"] > knocked["at"]
    assert info["is_success"], agent.log


def test_a_goal_no_task_uses_needs_no_new_code():
    """'open the drawer that holds the <colour> block' in HiddenObject's scene: the grammar, resolver
    and planner compose it from parts (which drawer holds what) that no task asks for this way."""
    opened = {}

    def rewrite(text):
        if text.startswith("retrieve the "):
            colour = text.split()[2]
            return f"open the drawer that holds the {colour} block"
        return text

    def watch(raw, agent, info):
        opened["openings"] = raw.unwrapped.openings()
        opened["cue"] = raw.unwrapped.cue

    agent, _, _ = run_agent("HiddenObject-v0", 3, goal_text=rewrite, on_step=watch, image_size=96)
    plan = [c for c in agent.done_calls]
    assert [c.skill for c in plan] == ["open"], agent.log
    openings = opened["openings"]
    assert openings[opened["cue"]] >= 0.08 and np.delete(openings, opened["cue"]).max() < 0.02


def test_rearrange_plans_many_skills_and_memory_knows_the_origins():
    agent, info, _ = run_agent("Rearrange-v0", 21, image_size=96)
    assert info["is_success"], agent.log
    skills = [c.skill for c in agent.done_calls]
    assert len(skills) >= 6 and {"pick", "place"} <= set(skills)
