"""Exported heads (policies/export.py) and the manipulation head that ships in policies/checkpoints."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import gymnasium as gym
import pytest
import torch

from embodied.cli.main import main
from embodied.tasks import get_task
from policies.checkpoint import CheckpointError
from policies.data import SkillWindows
from policies.export import SHIPPED, export_run, load_exported, load_run, resolve_run, shipped_heads
from policies.skill_head import load_head
from policies.train import TrainConfig, train
from tests.heads_helpers import TINY_ACT, one_torch_thread, tiny_dataset  # noqa: F401

MANIP = SHIPPED / "act_manip"
ARM_SKILLS = {"pick", "place", "open", "close", "lift", "press", "touch"}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> tuple[Path, Path]:
    demos = tiny_dataset(tmp_path_factory, cameras=())
    run = tmp_path_factory.mktemp("runs") / "act"
    train(TrainConfig(head="act", data=str(demos), out=str(run), steps=5, batch_size=8, progress=False,
                      head_options=TINY_ACT))
    return demos, run


def _batch(demos: Path) -> dict[str, torch.Tensor]:
    from embodied.data import DemoDataset

    return SkillWindows(DemoDataset(demos, 2, 16), progress=False).batch(torch.arange(6))


def test_export_halves_the_weights_and_keeps_the_outputs(tiny_run, tmp_path):
    demos, run = tiny_run
    out16, out32 = tmp_path / "act_h16", tmp_path / "act_h32"
    small = export_run(run, out16)
    full = export_run(run, out32, dtype="float32")
    assert sorted(p.name for p in out16.iterdir()) == ["config.json", "manifest.json", "model.safetensors",
                                                       "stats.json"]
    assert small["files"]["model.safetensors"] < 0.6 * full["files"]["model.safetensors"]
    batch = _batch(demos)
    ref = load_run(run).predict_action_chunk(batch)  # the run's EMA weights, float32
    assert torch.equal(load_exported(out32).predict_action_chunk(batch), ref)
    half = load_exported(out16)
    assert all(p.dtype == torch.float32 for p in half.parameters())
    err = (half.predict_action_chunk(batch) - ref).abs().max()
    assert float(err) < 1e-2, f"float16 storage moved an action by {float(err):.4f}"
    # the same spec syntax runs a run folder or an exported one
    assert set(load_head(f"act:{out16}")) == set(load_head(f"act:{run}")) == {"touch"}


@pytest.mark.parametrize("victim", ["model.safetensors", "stats.json", "config.json"])
def test_a_corrupt_exported_file_is_named(tiny_run, tmp_path, victim, capsys):
    _, run = tiny_run
    out = tmp_path / "act_x"
    export_run(run, out)
    target = out / victim
    target.write_bytes(target.read_bytes()[:-20])
    with pytest.raises(CheckpointError, match=f"{victim}: corrupt"):
        load_exported(out)
    assert main(["run", "--task", "RememberColor", "--policy", "agent", "--head", f"act:{out}",
                 "--episodes", "1"]) == 2
    assert f"{target}: corrupt" in capsys.readouterr().err
    (out / "manifest.json").write_text("{}")
    with pytest.raises(CheckpointError, match="manifest.json: not an exported head"):
        load_exported(out)


def test_the_shipped_manipulation_head_is_small_and_covers_the_arm_skills():
    assert "act:manip" in shipped_heads() and resolve_run("act", "manip") == MANIP
    total = sum(f.stat().st_size for f in SHIPPED.rglob("*") if f.is_file())
    assert total <= 20 * 2**20, f"shipped heads take {total / 2**20:.1f} MB (budget 20 MB)"
    cfg = json.loads((MANIP / "config.json").read_text())
    assert set(cfg["head_config"]["skills"]) == ARM_SKILLS and cfg["source"]["weights"] == "ema"
    skills = load_head("act:manip")
    assert set(skills) == ARM_SKILLS and next(iter(skills.values())).policy.robot == "arm"


def test_a_spec_can_keep_some_of_a_heads_skills_and_the_demo_keeps_the_measured_ones(tiny_run, tmp_path):
    from policies.export import agent_spec

    assert set(load_head("act:manip@open,close")) == {"open", "close"}
    with pytest.raises(ValueError, match="navigate"):
        load_head("act:manip@open,navigate")
    # the shipped manipulation head lists no agent_skills: the demo runs every arm skill with it
    assert "agent_skills" not in json.loads((MANIP / "config.json").read_text())
    assert agent_spec("act:manip") == "act:manip"
    _, run = tiny_run
    with pytest.raises(ValueError, match="'pick' is not one the head learned"):
        export_run(run, tmp_path / "act_t", agent_skills=("pick",))
    export_run(run, tmp_path / "act_t", agent_skills=("touch",))
    assert json.loads((tmp_path / "act_t" / "config.json").read_text())["agent_skills"] == ["touch"]


def test_an_export_may_change_how_the_head_runs_but_not_what_it_is(tiny_run, tmp_path):
    _, run = tiny_run
    out = tmp_path / "act_te"
    export_run(run, out, inference={"n_action_steps": 1, "temporal_ensemble_coeff": 0.01})
    head = load_exported(out)
    assert head.config.n_action_steps == 1 and head.config.temporal_ensemble_coeff == 0.01
    assert json.loads((out / "config.json").read_text())["source"]["inference"]["n_action_steps"] == 1
    with pytest.raises(ValueError, match="cannot set 'dim_model'"):
        export_run(run, tmp_path / "act_bad", inference={"dim_model": 64})
    with pytest.raises(ValueError, match="n_action_steps=1"):  # ensembling predicts every step
        export_run(run, tmp_path / "act_bad", inference={"temporal_ensemble_coeff": 0.01})
    assert not (tmp_path / "act_bad").exists()


def test_the_shipped_head_rejects_a_corrupt_copy(tmp_path):
    copy = tmp_path / "act_manip"
    shutil.copytree(MANIP, copy)
    weights = copy / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="model.safetensors: corrupt"):
        load_head(f"act:{copy}")


@pytest.mark.parametrize("task,seed", [("ShellGame-v0", 7000), ("SequenceRecall-v0", 7000), ("HiddenObject-v0", 7000)])
def test_the_agent_with_the_shipped_head_solves_a_manipulation_episode(task, seed):
    """The whole agent (perception, memory, planner) with every arm skill run by the shipped head:
    ShellGame lifts the cup that memory says hides the ball (the learned lift); SequenceRecall presses
    the remembered buttons in order (each learned press must end once, on its way back up);
    HiddenObject opens the remembered drawer and picks the block from it (learned open and pick)."""
    from embodied.eval.rollout import head_for, learned_skills, run_episodes

    env = gym.make(get_task(task).env_id, images=True)
    try:
        assert head_for(env, ["act:manip"]) == "act:manip"
        used = []
        [result] = run_episodes(env, "agent", [seed], progress=False, head="act:manip",
                                on_policy=lambda p: used.append(p))
    finally:
        env.close()
    agent = used[0]
    learned = learned_skills("act:manip")
    assert all(agent.skills[name] is learned[name] for name in ARM_SKILLS)  # no scripted arm skill ran
    assert result.success, result


def test_each_shipped_head_runs_only_on_its_own_robot():
    from embodied.eval.rollout import head_for

    env = gym.make(get_task("ObjectRevisit").env_id)
    try:
        assert head_for(env, ["act:manip"]) is None
        assert head_for(env, ["act:manip", "act:nav"]) == "act:nav"
    finally:
        env.close()
    env = gym.make(get_task("ShellGame").env_id)
    try:
        assert head_for(env, ["act:nav", "act:manip"]) == "act:manip"
    finally:
        env.close()


def test_the_shipped_diffusion_head_carries_a_block_back_toward_the_robot_inside_the_agent():
    """`diffusion:manip` runs every arm skill for the agent. PutBlockBack seed 4: the block started 12 cm
    nearer the robot than the centre it was moved to (x 0.33 against 0.45), the carry the head used to miss.
    The agent with the head puts it back; with its memory wiped at recall it cannot know where, and fails."""
    from embodied.eval.rollout import run_episodes

    assert resolve_run("diffusion", "manip") == SHIPPED / "diffusion_manip"
    cfg = json.loads((SHIPPED / "diffusion_manip" / "config.json").read_text())
    assert set(cfg["head_config"]["skills"]) == ARM_SKILLS and not cfg["head_config"]["ensemble_skills"]
    env = gym.make("embodied/PutBlockBack-v0")
    _, info = env.reset(seed=4)
    assert info["privileged"]["start_xy"][0] < info["privileged"]["centre_xy"][0] - 0.1
    agents = []
    [done] = run_episodes(env, "agent", [4], progress=False, head="diffusion:manip", on_policy=agents.append)
    assert done.success, done
    assert type(agents[0].skills["place"]).__name__ == "LearnedSkill"
    ran = [e["call"]["skill"] for e in agents[0].plan_record()["trace"] if e["call"]]
    assert ran[:2] == ["pick", "place"]
    [wiped] = run_episodes(env, "agent:wiped", [4], progress=False, head="diffusion:manip")
    assert not wiped.success, wiped
