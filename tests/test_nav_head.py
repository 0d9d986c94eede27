"""The learned navigate head: route features from the agent's map, the head conditioned on them, the shipped
checkpoint driving the whole agent through one apartment episode."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from embodied.agent.skills.navigate import GUIDE_DIM, NavigateSkill
from embodied.mapping.freespace import FreeSpaceMap
from embodied.planner.calls import SkillCall
from policies.act import ACTConfig, ACTHead
from policies.bench import example_batch, synthetic_stats
from policies.conditioning import Normalizer
from policies.nav_skill import LearnedNavigateSkill
from policies.skill_head import LearnedSkill
from tests.heads_helpers import TINY_ACT, one_torch_thread  # noqa: F401 (autouse fixture)

SHIPPED = Path(__file__).resolve().parents[1] / "policies" / "checkpoints" / "act_nav"


def nav_stats() -> dict:
    stats = synthetic_stats(state_dim=5, action_dim=2)
    stats["skill.guide"] = {"mean": [0.0] * GUIDE_DIM, "std": [1.0] * GUIDE_DIM,
                            "min": [-1.0] * GUIDE_DIM, "max": [1.0] * GUIDE_DIM}
    return stats


def nav_head(**options) -> ACTHead:
    torch.manual_seed(0)
    cfg = ACTConfig(**TINY_ACT, state_dim=5, action_dim=2, horizon=4, n_action_steps=1, guide_dim=GUIDE_DIM,
                    ignore_pose=True, skills=("navigate",), **options)
    return ACTHead(cfg, nav_stats()).eval()


def test_route_features_are_the_next_waypoints_in_the_base_frame():
    skill = NavigateSkill(FreeSpaceMap())
    assert np.all(skill.guide_features(np.zeros(3)) == 0)  # no path: nothing to follow
    skill.path = [np.array([1.0, 1.0]), np.array([1.0, 2.0]), np.array([0.0, 2.0])]
    pose = np.array([1.0, 1.0, math.pi / 2])  # facing +y
    skill.index = 1
    f = skill.guide_features(pose)
    assert f.shape == (GUIDE_DIM,) and f.dtype == np.float32
    # (1, 2) is 1 m straight ahead; (0, 2) is 1 m ahead and 1 m to the left.
    assert np.allclose(f[:4], [1.0, 0.0, 1.0, 1.0], atol=1e-6) and f[4] == 0 and f[5] == 0
    skill.index = 2
    f = skill.guide_features(pose)
    assert np.allclose(f[:4], [1.0, 1.0, 1.0, 1.0], atol=1e-6) and f[4] == 1 and f[5] == 0  # the path's end repeats
    skill.index = 3
    assert skill.guide_features(pose)[5] == 1  # past the end: only facing the target is left


def test_the_head_is_conditioned_on_the_route_and_needs_it():
    head = nav_head()
    batch = example_batch(head)
    assert batch["skill.guide"].shape == (1, GUIDE_DIM)
    a = head.predict_action_chunk(batch)
    turned = dict(batch, **{"skill.guide": batch["skill.guide"] + torch.tensor([0.0, 2.0, 0.0, 2.0, 0.0, 0.0])})
    assert not torch.allclose(a, head.predict_action_chunk(turned))  # a waypoint to the left changes the motion
    # With ignore_pose the odometry pose does not matter, only the velocities and what is relative to the robot.
    moved = dict(batch, **{"observation.state": batch["observation.state"] + torch.tensor([5.0, -3.0, 0.0, 0, 0])})
    moved["skill.params"] = batch["skill.params"] + torch.tensor([5.0, -3.0, 0, 0, 0, 0, 0, 0])
    assert torch.allclose(a, head.predict_action_chunk(moved), atol=1e-5)
    with pytest.raises(ValueError, match="skill.guide"):
        head.predict_action_chunk({k: v for k, v in batch.items() if k != "skill.guide"})
    with pytest.raises(ValueError, match="skill.guide"):
        Normalizer({k: v for k, v in nav_stats().items() if k != "skill.guide"}, optional=("skill.guide",))
    skill = LearnedSkill(head, "navigate")
    skill.start(SkillCall("navigate", xyz=(1.0, 0.0, 0.0)), {"proprio": np.zeros(5, np.float32)})
    with pytest.raises(ValueError, match="route features"):
        skill.act({"proprio": np.zeros(5, np.float32)})  # a route-conditioned head run without its route
    assert skill.act({"proprio": np.zeros(5, np.float32)}, guide=np.zeros(GUIDE_DIM)).shape == (2,)


def test_learned_navigate_skill_needs_the_agents_map():
    nav = LearnedNavigateSkill(LearnedSkill(nav_head(), "navigate"))
    with pytest.raises(RuntimeError, match="map"):
        nav.start(SkillCall("navigate", xyz=(1.0, 0.0, 0.0)), {})
    head = LearnedSkill(ACTHead(ACTConfig(**TINY_ACT, state_dim=5, action_dim=2, guide_dim=3,
                                          skills=("navigate",)),
                                {**nav_stats(), "skill.guide": {s: [0.0] * 3 for s in ("mean", "std", "min", "max")}}),
                         "navigate")
    three = LearnedNavigateSkill(head)
    with pytest.raises(ValueError, match="route features"):  # the agent's route gives GUIDE_DIM features
        three.use_route(NavigateSkill(FreeSpaceMap(), **three.route_options))


EPISODE_TASK, EPISODE_SEED = "ObjectRevisit-v0", 7000  # a short episode of the evaluation seeds


@pytest.mark.skipif(not (SHIPPED / "config.json").exists(), reason="no shipped navigation checkpoint")
@pytest.mark.parametrize("route", ["shown", "hidden"])
def test_shipped_nav_head_drives_the_whole_agent_to_the_goal(route, monkeypatch):
    """The agent with the shipped head reaches the goal; with the route's features hidden from the head
    (zeros: only the goal's pose is left) the same episode fails, the walls are in the way."""
    from embodied.eval.rollout import learned_skills, run_episodes
    from embodied.tasks import make

    if route == "hidden":
        monkeypatch.setattr(NavigateSkill, "guide_features", lambda self, pose: np.zeros(GUIDE_DIM, np.float32))

    skills = learned_skills(f"act:{SHIPPED}")
    assert set(skills) == {"navigate"} and isinstance(skills["navigate"], LearnedNavigateSkill)
    agents = []
    env = make(EPISODE_TASK)
    try:
        [result] = run_episodes(env, "agent", [EPISODE_SEED], progress=False, on_policy=agents.append,
                                head=f"act:{SHIPPED}")
    finally:
        env.close()
    agent = agents[0]
    assert agent.skills["navigate"] is skills["navigate"]  # the learned skill ran in place of the scripted one
    assert any(e["call"] and e["call"]["skill"] == "navigate" for e in agent.trace)
    if route == "hidden":
        assert not result.success and any(e["tag"] == "skill_failed" for e in agent.log), agent.log
        return
    assert not [e for e in agent.log if e["tag"] in ("skill_failed", "gave_up")], agent.log
    assert skills["navigate"].route.steps > 20  # it drove (the task ends as soon as the robot is within reach)
    assert result.success, agent.log


def test_room_goals_fall_back_to_the_scripted_driver():
    """The shipped head learned object goals only: a "go to the room" call runs the route's scripted
    driver (labelled as such), and the agent still reaches the room."""
    from embodied.eval.rollout import run_episodes
    from embodied.tasks import make

    agents = []
    env = make("RoomRecall-v0")
    try:
        [result] = run_episodes(env, "agent", [0], progress=False, on_policy=agents.append, head=f"act:{SHIPPED}")
    finally:
        env.close()
    skill = agents[0].skills["navigate"]
    assert isinstance(skill, LearnedNavigateSkill) and skill.scripted
    assert result.success, result
