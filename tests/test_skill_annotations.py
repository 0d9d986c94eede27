"""Experts segment their waypoint plans into the planner's skill calls; recordings store what a policy reports."""

from __future__ import annotations

import math

import numpy as np
import pyarrow.parquet as pq
import pytest

from embodied.experts import make_expert
from embodied.planner.calls import SKILL_IDS, SkillCall
from embodied.tasks import make

EXPECTED = {
    "PutBlockBack-v0": ["pick", "place"],
    "ReopenDrawer-v0": ["close", "open"],
    "HiddenObject-v0": ["open", "pick"],
    "ShellGame-v0": ["lift"],
    "RememberColor-v0": ["touch"],
    "SequenceRecall-v0": ["press", "press", "press"],
    "CountFlashes-v0": ["press"],  # seed 0 flashes the screen once
    "ObjectRevisit-v0": ["navigate"],
    "MovedObject-v0": ["navigate"],
    "MultiGoal-v0": ["navigate", "navigate", "navigate"],
    "Lifelong-v0": ["navigate"] * 20,  # one per goal, 20 goals in a row
    "RoomRecall-v0": ["navigate"],
    "CountPerRoom-v0": ["navigate"],
    "VanishedObject-v0": ["navigate"],
    "StoodOn-v0": ["touch"],
    "StashAndFetch-v0": ["pick", "place", "open", "pick"],
}
ACTS_BEFORE_RECALL = ("ReopenDrawer-v0", "StashAndFetch-v0")  # shuts the drawer; stashes the block


def calls_of(task: str, seed: int = 0):
    env = make(task, images=False)
    obs, info = env.reset(seed=seed)
    expert = make_expert(env)
    calls, per_step, done = [], [], False
    first_privileged = info["privileged"]
    while not done:
        action = expert.act(obs)
        call = expert.current_call
        if call is not None and (not calls or calls[-1] is not call):
            calls.append(call)
        per_step.append((info["phase"], call))
        obs, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    return env, calls, per_step, info, first_privileged


@pytest.mark.parametrize("task", sorted(EXPECTED))
def test_expert_reports_the_planner_calls(task: str):
    _, calls, per_step, info, _ = calls_of(task)
    assert info["is_success"], "the annotation must not change the expert's motion"
    assert [c.skill for c in calls] == EXPECTED[task]
    for c in calls:
        p = c.params()
        assert p.shape == (8,) and p.dtype == np.float32 and np.all(np.isfinite(p))
        assert all(s > 0 for s in c.size), f"{c} has no box size"
        assert c.target
    if task not in ACTS_BEFORE_RECALL:
        assert all(call is None for phase, call in per_step if phase != "recall")


def test_call_parameters_come_from_the_privileged_state():
    env, calls, _, _, _ = calls_of("PutBlockBack-v0", seed=4)
    pick, place = calls
    u = env.unwrapped
    assert pick.target == "block" and place.target == "block"
    np.testing.assert_allclose(place.xyz[:2], u.privileged()["start_xy"], atol=1e-6)  # the place point: its start
    assert pick.yaw == 0.0 and SKILL_IDS[pick.skill] == pick.skill_id
    env, calls, _, _, _ = calls_of("ReopenDrawer-v0", seed=1)
    cue = env.unwrapped.privileged()["cue_drawer"]
    assert [c.target for c in calls] == [f"drawer{cue}"] * 2
    assert calls[1].yaw == pytest.approx(math.pi)  # pull direction: out of the housing, toward the robot
    env, calls, _, _, _ = calls_of("ObjectRevisit-v0", seed=2)
    goal = env.unwrapped.privileged()["goal"]
    np.testing.assert_allclose(calls[0].xyz, [*goal["xy"][:2], 0.0], atol=1e-6)


class _AnnotatingPolicy:
    """A policy that reports its own calls: the recorder must store exactly these."""

    def __init__(self, env, seed):
        self.expert = make_expert(env)
        self.t = 0
        self.current_call = None

    def reset(self):
        self.expert.reset()

    def act(self, obs):
        self.t += 1
        self.current_call = SkillCall("wait", xyz=(self.t, 0, 0)) if self.t % 2 else None
        return self.expert.act(obs)


def test_recording_stores_what_the_policy_reports(tmp_path):
    from embodied.data.policies import register_policy
    from embodied.data.workers import RecordConfig, record

    register_policy("test-annotating", _AnnotatingPolicy)
    root = tmp_path / "ds"
    record(RecordConfig(["RememberColor-v0"], 1, root, policy="test-annotating", image_size=32), progress=False)
    table = pq.read_table(root / "data/chunk-000/file-000.parquet").to_pydict()
    n = len(table["index"])
    assert table["skill.id"] == [SKILL_IDS["wait"] if (k + 1) % 2 else -1 for k in range(n)]
    assert [p[0] for p in table["skill.params"]] == [float(k + 1) if (k + 1) % 2 else 0.0 for k in range(n)]


def test_recording_the_agent_stores_the_planner_calls_it_ran(tmp_path):
    """--policy agent: the skill columns are the calls the memory agent's planner gave at run time."""
    import pyarrow.parquet as pq

    from embodied.data.workers import RecordConfig, record

    root = tmp_path / "ds"
    record(RecordConfig(["RememberColor-v0"], 1, root, policy="agent", image_size=64, seed=4), progress=False)
    table = pq.read_table(next((root / "data").rglob("*.parquet"))).to_pydict()
    phases, ids = table["phase"], table["skill.id"]
    assert all(i == -1 for p, i in zip(phases, ids) if p < 2), "no skill runs before recall"
    recall_ids = {i for p, i in zip(phases, ids) if p == 2}
    assert SKILL_IDS["touch"] in recall_ids
    touched = [row for row, i in zip(table["skill.params"], ids) if i == SKILL_IDS["touch"]]
    assert all(0.3 < row[0] < 0.8 for row in touched)  # a block on the table, from memory
