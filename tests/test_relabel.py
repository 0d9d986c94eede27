"""Relabelling (DAgger): a learned policy acts, the planner labels each decision from the same memory."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from embodied.agent.relabel import RelabellingDecider
from embodied.cli.main import main
from embodied.data.decisions import load_decisions
from embodied.planner.calls import DECISIONS, RESUMED, UNIT, SkillCall
from embodied.planner.grammar import parse
from embodied.planner.planner import Planner
from tests.memory_helpers import detection, frame, proprio

GOAL = "put everything back where it was"


def _two_blocks_moved():
    from embodied.memory import SpatialMemory

    memory = SpatialMemory()
    hand = proprio((0.3, 0.0, 0.4), 0.08)
    for t, (red, blue) in enumerate([((0.40, 0.0), (0.50, -0.20))] * 2 + [((0.40, 0.25), (0.55, 0.20))] * 2):
        memory.update(frame(t, [detection((*red, 0.02), "block", "red"), detection((*blue, 0.02), "block", "blue")],
                            proprio=hand))
    return memory


class _Fixed:
    """A stand-in learned decider that always answers the same call (what it answers is not the point)."""

    def __init__(self, call):
        self.call, self.resets = call, 0

    def reset(self):
        self.resets += 1

    def observe(self, obs, t):
        pass

    def decide(self, goal, memory, obs, t):
        return self.call


def test_the_learned_call_runs_and_the_planners_is_the_label():
    memory = _two_blocks_moved()
    obs = {"goal": {"text": GOAL}, "proprio": np.zeros(22, np.float32)}
    wrong = SkillCall("press", "nothing")
    plan = Planner().plan(parse(GOAL), memory)
    for mix, runs in ((0.0, wrong), (1.0, plan[0])):
        decider = RelabellingDecider(_Fixed(wrong), mix=mix)
        assert decider.decide(GOAL, memory, obs, 3) == runs
        labelled, label, alternatives = decider.take_label()
        assert labelled and label == plan[0]
        # the other block's unit could have come first: its pick is the one alternative
        assert [(c.skill, c.target) for c in alternatives] == [("pick", plan[2].target)]
        assert plan[2].target != plan[0].target
        assert decider.take_label() == (False, None, [])  # a label is taken once
    # a goal the planner cannot parse keeps no label; the learned call still runs
    decider = RelabellingDecider(_Fixed(wrong))
    assert decider.decide("sing a song", memory, obs, 3) == wrong and decider.take_label()[0] is False
    with pytest.raises(ValueError, match="mix"):
        RelabellingDecider(_Fixed(wrong), mix=1.5)


def test_a_unit_begun_has_no_alternatives():
    from embodied.agent.relabel import _other_units

    fresh = [SkillCall("pick", "a", extra={UNIT: "a"}), SkillCall("place", "a", extra={UNIT: "a"}),
             SkillCall("open", "d", extra={UNIT: "b"}), SkillCall("pick", "b", extra={UNIT: "b"})]
    assert [c.target for c in _other_units(fresh)] == ["d"]
    begun = [dataclasses.replace(c, extra={**c.extra, RESUMED: True}) for c in fresh[1:2]] + fresh[2:]
    assert _other_units(begun) == []
    assert _other_units([SkillCall("close", "d")] + fresh) == []  # an untagged first call starts no unit


def test_relabelled_episodes_are_recorded_and_learned_from_whatever_their_outcome(tmp_path, monkeypatch):
    out = tmp_path / "relabelled"
    assert main(["record-demos", "--task", "Rearrange-v0", "--episodes", "1", "--out", str(out),
                 "--policy", "relabel:explicit@1.0", "--image-size", "64", "--json"]) == 0
    ep = load_decisions(out)[0]
    assert ep.labeller == "planner" and len(ep) >= 4 and ep.alternatives is not None
    acting = [k for k, c in enumerate(ep.calls) if c is not None]
    assert {ep.calls[k]["skill"] for k in acting} >= {"pick", "place"}
    for k in acting:  # labels index the memory's nodes then; a place of the block in hand has no alternative
        call = ep.calls[k]
        assert DECISIONS[int(ep.arrays["decision.skill"][k])] == call["skill"]
        assert ep.ids[k][int(ep.arrays["decision.target"][k])] == call["target"]
        if call["extra"].get(RESUMED):
            assert ep.alternatives[k] == []
        # at mix 1.0 the planner's call is what ran (kept apart from the label: the last-call input reads it)
        assert (ep.ran[k]["skill"], ep.ran[k]["target"]) == (call["skill"], call["target"])
    # a failed relabelled episode is still learned from (its labels are the planner's); a failed demo is not
    import policies.memory_policy.data as data_module
    from policies.memory_policy import MemoryPolicyConfig
    from policies.memory_policy.data import DecisionData

    failed = [dataclasses.replace(ep, success=False), dataclasses.replace(ep, success=False, labeller="agent")]
    monkeypatch.setattr(data_module, "load_decisions", lambda root: failed)
    data = DecisionData([out], MemoryPolicyConfig(memory="explicit", any_order=True), progress=False)
    assert len(data.episodes) == 1 and data.episodes[0][1].labeller == "planner" and len(data) == len(ep)
