"""Aim correction: a retried place or grasp is aimed off its target by the miss the agent saw."""

from __future__ import annotations

import numpy as np
import pytest

from embodied.agent.aim import Aim, AimConfig
from embodied.agent.memory_agent import AgentConfig
from embodied.agent.skills.arm import arm_skills
from embodied.planner.calls import SkillCall
from tests.agent_helpers import run_agent


def _place(xy=(0.30, -0.20), target="obj3") -> SkillCall:
    return SkillCall("place", target, (xy[0], xy[1], 0.02), note="red block back")


def test_a_miss_shifts_the_next_place_of_that_object_towards_the_goal_by_the_opposite_of_the_miss():
    aim = Aim()
    call = _place()
    assert aim.apply(call) is call  # nothing learned yet
    offset = aim.miss(call, landed=np.array([0.335, -0.19, 0.02]))
    np.testing.assert_allclose(offset, [-0.035, -0.01, 0.0], atol=1e-9)
    aimed = aim.apply(call)
    np.testing.assert_allclose(aimed.xyz, [0.265, -0.21, 0.02], atol=1e-9)
    assert (aimed.skill, aimed.target, aimed.note) == ("place", "obj3", "red block back")
    # a second miss accumulates (the head still lands 1 cm long from the aimed point)
    np.testing.assert_allclose(aim.miss(call, landed=np.array([0.31, -0.20, 0.02])), [-0.045, -0.01, 0.0], atol=1e-9)


def test_aim_is_kept_per_object_and_goal_and_bounded():
    aim = Aim(AimConfig(max_offset=0.05))
    aim.miss(_place(), landed=np.array([0.34, -0.20, 0.02]))
    assert aim.apply(_place(target="obj4")) == _place(target="obj4")  # another object
    assert aim.apply(_place(xy=(0.46, 0.27))) == _place(xy=(0.46, 0.27))  # another goal
    assert aim.apply(SkillCall("pick", "obj3", (0.30, -0.20, 0.02))).xyz == (0.30, -0.20, 0.02)
    assert aim.miss(_place(), landed=np.array([0.55, -0.20, 0.02])) is None  # rolled away: teaches nothing
    for _ in range(3):
        aim.miss(_place(), landed=np.array([0.34, -0.20, 0.02]))
    assert np.linalg.norm(aim.offset(_place())) == pytest.approx(0.05)
    assert aim.miss(SkillCall("open", "drawer_1", (0.55, 0.1, 0.05)), landed=np.array([0.5, 0.1, 0.05])) is None
    press = SkillCall("press", "button_2", (0.45, 0.15, 0.036))
    assert aim.miss(press) is None and aim.apply(press) is press  # a press is retried as it was
    aim.reset()
    assert not aim.offset(_place()).any()


def test_a_grasp_that_closed_beside_its_target_is_retried_shifted_back():
    aim = Aim()
    lift = SkillCall("lift", "cup_0", (0.46, -0.27, 0.05), size=(0.07, 0.07, 0.09), note="cup")
    assert aim.miss(lift) is None  # the fingers never closed: nothing to learn
    np.testing.assert_allclose(aim.miss(lift, reached=np.array([0.484, -0.259, 0.082])), [-0.024, -0.011, 0])
    assert aim.apply(lift).xyz == pytest.approx((0.436, -0.281, 0.05))
    assert aim.apply(SkillCall("place", "cup_0", (0.46, -0.27, 0.05))).xyz == (0.46, -0.27, 0.05)
    assert aim.miss(lift, reached=np.array([0.56, -0.27, 0.08])) is None  # closed far away: another cause


class LongPlace:
    """The scripted place, landing every object ``dx`` m beyond the point it is given (a biased head)."""

    name = "place"

    def __init__(self, inner, dx: float):
        self.inner, self.dx, self.given = inner, dx, []

    def start(self, call, obs):
        self.given.append(call.xyz)
        x, y, z = call.xyz
        self.inner.start(SkillCall(call.skill, call.target, (x + self.dx, y, z), call.yaw, call.size, call.note,
                                   call.extra), obs)

    def act(self, obs):
        return self.inner.act(obs)

    @property
    def done(self):
        return self.inner.done

    @property
    def failed(self):
        return self.inner.failed


def _biased_skills(dx: float) -> dict:
    scripted = arm_skills()  # pick and place share the hand's grasp state
    return {"pick": scripted["pick"], "place": LongPlace(scripted["place"], dx)}


def test_the_agent_corrects_a_place_that_always_lands_long_and_fails_without_aim():
    seed, dx = 4, 0.04
    skills = _biased_skills(dx)
    agent, info, _ = run_agent("PutBlockBack-v0", seed, skills=skills, image_size=96)
    assert info["is_success"], agent.log
    tags = [e["tag"] for e in agent.log]
    assert "aim" in tags and "skill_failed" in tags  # it missed first, then aimed off the goal
    first, last = np.array(skills["place"].given[0]), np.array(skills["place"].given[-1])
    assert last[0] < first[0] - 0.025  # the later place was aimed short of the goal by about the miss
    # the trace (what demonstrations label frames with) holds the aimed point the skill ran
    placed = [e["call"]["xyz"] for e in agent.trace if e["call"] and e["call"]["skill"] == "place"]
    np.testing.assert_allclose(placed[-1], last, atol=1e-9)

    ablated, info, _ = run_agent("PutBlockBack-v0", seed, AgentConfig(aim=None), skills=_biased_skills(dx),
                                 image_size=96)
    assert not info["is_success"], "without aim the same miss repeats"
    assert "aim" not in [e["tag"] for e in ablated.log]


def test_ablate_names_the_aim_columns_and_refuses_a_head_column_without_a_head():
    from embodied.eval.ablate import ablate

    with pytest.raises(ValueError, match="agent:head:noaim"):
        ablate(["PutBlockBack-v0"], episodes=1, columns=("agent:nothing",), progress=False)
    with pytest.raises(ValueError, match="give --head"):
        ablate(["PutBlockBack-v0"], episodes=1, columns=("agent:head:noaim",), progress=False)
    report = ablate(["PutBlockBack-v0"], episodes=1, seed=4, columns=("agent:noaim",), progress=False,
                    image_size=96)
    assert report["tasks"][0]["agent:noaim"] == 1.0  # the scripted agent needs no aim on this seed
