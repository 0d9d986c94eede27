"""The learned high-level policy: decision points recorded, each memory input overfits, the explicit
inputs name no task, save/load, and a short train-and-run inside the agent with its wiped ablation."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from embodied.agent.decisions import DECISIONS, SOURCES, label
from embodied.cli.main import main
from embodied.data.decisions import load_decisions, read_decisions
from embodied.data.layout import DatasetError
from embodied.eval.rollout import run_episodes
from embodied.agent.tokens import TOKEN_FIELDS, field_slice, node_tokens
from embodied.planner.calls import SkillCall
from embodied.tasks import TASKS
from policies.checkpoint import CheckpointError
from policies.export import export_run, load_exported, load_run
from policies.memory_policy import MemoryPolicyConfig
from policies.memory_policy.data import DecisionData
from policies.memory_policy.inputs import history_indices
from policies.memory_policy.train import train_memory_policy
from policies.train import TrainConfig
from tests.heads_helpers import one_torch_thread  # noqa: F401

SMALL = {"d_model": 32, "n_heads": 2, "n_layers": 1, "history_len": 8, "history_layers": 1, "image_size": 32,
         "dropout": 0.0}


@pytest.fixture(scope="module")
def demos(tmp_path_factory) -> Path:
    """The scripted agent's decision points: 6 ShellGame and 2 SequenceRecall episodes."""
    out = tmp_path_factory.mktemp("decisions") / "demos"
    for task, n in (("ShellGame-v0", 6), ("SequenceRecall-v0", 2)):
        assert main(["record-demos", "--task", task, "--episodes", str(n), "--out", str(out), "--policy", "agent",
                     "--image-size", "64", "--resume", "--json"]) == 0
    return out


def _train(demos: Path, out: Path, memory: str, steps: int = 300) -> dict:
    cfg = TrainConfig(head="memory", data=str(demos), out=str(out), steps=steps, batch_size=16, lr=2e-3,
                      warmup_steps=10, checkpoint_every=steps, log_every=10, progress=False)
    return train_memory_policy(cfg, [str(demos)], memory, dict(SMALL))


def test_record_demos_keeps_every_decision_with_its_label(demos):
    episodes = load_decisions(demos)
    assert len(episodes) == 8 and all(ep.success for ep in episodes)
    for ep in episodes:
        a = ep.arrays
        # The first decision is the observe goal's: nothing to do (stop); the recall goal's follow.
        assert ep.goals[0].startswith("watch") and a["decision.skill"][0] == DECISIONS.index("stop")
        acting = a["decision.skill"][1:]
        want = "lift" if ep.task == "ShellGame-v0" else "press"
        assert set(acting.tolist()) == {DECISIONS.index(want)}
        for k in range(1, len(ep)):  # the target is one of the nodes that memory held then, read "now"
            target = int(a["decision.target"][k])
            assert 0 <= target < int(a["decision.mask"][k].sum())
            assert ep.ids[k][target].startswith("cup_" if want == "lift" else "button_")
            assert a["decision.source"][k] == SOURCES.index("now")
        assert np.all(np.diff(a["decision.t"]) > 0) and a["decision.t"][-1] < ep.length
    # The presses of a sequence are three different buttons.
    seq = next(ep for ep in episodes if ep.task == "SequenceRecall-v0")
    presses = [seq.ids[k][int(seq.arrays["decision.target"][k])] for k in range(1, len(seq))]
    assert len(set(presses)) == len(presses) == 3


def test_a_place_at_the_first_seen_point_is_labelled_first():
    class Tokens:  # the two attributes label() reads
        ids = ["block_0"]
        features = np.zeros((1, sum(n for _, n in TOKEN_FIELDS)), np.float32)
        first_xyz = np.array([[0.5, 0.2, 0.02]], np.float32)

    Tokens.features[0, field_slice("position")] = (0.4, -0.1, 0.02)
    back = label(SkillCall("place", "block_0", (0.5, 0.2, 0.02)), Tokens)
    assert back[0] == DECISIONS.index("place") and back[1] == 0 and SOURCES[back[2]] == "first"
    pick = label(SkillCall("pick", "block_0", (0.4, -0.1, 0.02)), Tokens)
    assert SOURCES[pick[2]] == "now"
    aside = label(SkillCall("place", "block_0", (0.35, 0.3, 0.02)), Tokens)
    assert SOURCES[aside[2]] == "free"
    assert label(None, Tokens)[0] == DECISIONS.index("stop")


@pytest.mark.parametrize("memory", ["explicit", "none", "implicit"])
def test_each_memory_input_overfits_the_demos(demos, tmp_path, memory):
    result = _train(demos, tmp_path / memory, memory)
    assert result["final_loss"] < result["first_loss"] / 5, result
    assert result["train_accuracy"]["skill"] == 1.0, result["train_accuracy"]
    if memory == "explicit":  # the pointer picks the demonstrator's node (the cup with the ball, the lit buttons)
        assert result["train_accuracy"]["target"] >= 0.9, result["train_accuracy"]
    log = [json.loads(line) for line in (tmp_path / memory / "log.jsonl").read_text().splitlines()]
    assert log[-1]["step"] == 299 and (tmp_path / memory / "loss.png").exists()


def test_explicit_inputs_hold_no_task_name(demos, tmp_path):
    """Node tokens are generic attributes: no field and no word of the policy's vocabulary names a task
    or family, and the words a node contributes are its class, colour and room name only."""
    names = {n.lower() for n in TASKS} | {n.split("-")[0].lower() for n in TASKS}
    families = {TASKS[n].env_class().family.lower() for n in TASKS}
    fields = {f.split(".")[0] for f, _ in TOKEN_FIELDS}
    assert not (fields & (names | families))
    data = DecisionData([str(demos)], MemoryPolicyConfig(memory="explicit", **SMALL), progress=False)
    vocab = set(data.config.vocab)
    assert not (vocab & (names | families)), vocab & (names | families)
    env = gym.make("embodied/ShellGame-v0", images=True)
    try:
        from embodied.eval.rollout import make_agent

        agent = make_agent(env, 0)
        obs, _ = env.reset(seed=0)
        agent.reset()
        for _ in range(30):
            obs, *_ = env.step(agent.act(obs))
        tokens = node_tokens(agent.memory)
        classes = {agent.memory.graph.nodes[n]["cls"] for n in tokens.ids}
        assert {w[0] for w in tokens.words} == classes
        assert all(not (set(w) & (names | families)) for w in tokens.words)
    finally:
        env.close()


def test_save_load_round_trip_and_a_corrupt_export_is_named(demos, tmp_path):
    _train(demos, tmp_path / "run", "explicit", steps=40)
    policy = load_run(tmp_path / "run")
    export_run(tmp_path / "run", tmp_path / "shipped", dtype="float32")
    again = load_exported(tmp_path / "shipped")
    data = DecisionData([str(demos)], policy.config, progress=False)
    batch = data.batch(np.arange(len(data)), train=False)
    for k in range(len(data)):
        one = {key: v[k:k + 1] for key, v in batch.items()}
        a, b = policy.decide(one), again.decide(one)
        assert (a.skill, a.target, a.source) == (b.skill, b.target, b.source)
    weights = tmp_path / "shipped" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    with pytest.raises(CheckpointError, match="model.safetensors"):
        load_exported(tmp_path / "shipped")


def test_a_corrupt_decisions_file_is_named(demos, tmp_path):
    path = min((demos / "meta" / "decisions").glob("*.safetensors"))
    bad = tmp_path / path.name
    bad.write_bytes(path.read_bytes()[:200])
    with pytest.raises(DatasetError, match=path.name):
        read_decisions(bad)


def test_history_reaches_back_to_the_start():
    assert history_indices(10, 64, 4) == [0, 2, 6, 10]
    steps = history_indices(3000, 8, 4)
    assert steps[0] == 0 and steps[-1] == 3000 and len(steps) == 8
    assert history_indices(0, 8, 4) == [0]


def test_learned_explicit_policy_runs_the_agent_and_needs_its_memory(demos, tmp_path):
    """Trained on six ShellGame demos, the explicit policy picks the cup that hides the ball on seeds it
    never saw; with its memory wiped at recall it cannot know which cup (chance 1/3)."""
    run = tmp_path / "explicit"
    _train(demos, run, "explicit", steps=400)
    env = gym.make("embodied/ShellGame-v0", images=True)
    try:
        seeds = range(7100, 7106)
        full = run_episodes(env, f"learned:{run}", seeds, progress=False, head="none")
        wiped = run_episodes(env, f"learned:{run}:wiped", seeds, progress=False, head="none")
    finally:
        env.close()
    full_rate = np.mean([r.success for r in full])
    wiped_rate = np.mean([r.success for r in wiped])
    assert full_rate >= 5 / 6, [r.seed for r in full if not r.success]
    assert wiped_rate <= 4 / 6 and wiped_rate < full_rate


def test_train_cli_refuses_a_missing_memory_input(demos, tmp_path, capsys):
    assert main(["train", "--head", "memory", "--data", str(demos), "--out", str(tmp_path / "r")]) == 2
    assert "--memory" in capsys.readouterr().err


def test_the_shipped_policies_are_small_and_explicit_runs_with_no_training():
    """``learned:explicit`` is policies/checkpoints/memory_explicit: with the shipped ACT head executing its
    calls it lifts the cup that hides the ball on seeds no demo used."""
    from policies.export import SHIPPED, resolve_run, shipped_heads

    for m in ("explicit", "none", "implicit"):
        folder = resolve_run("memory", m)
        assert folder == SHIPPED / f"memory_{m}"
        assert sum(f.stat().st_size for f in folder.iterdir()) <= 10 * 2**20
        assert load_exported(folder).config.memory == m
    assert not any(k.startswith("memory:") for k in shipped_heads())  # the demo's skill heads stay skill heads
    env = gym.make("embodied/ShellGame-v0", images=True)
    try:
        results = run_episodes(env, "learned:explicit", range(7200, 7203), progress=False)
    finally:
        env.close()
    assert all(r.success for r in results), [r.seed for r in results if not r.success]


def test_spot_features_read_where_nodes_stand_against_where_they_were_first_seen():
    """A block moved 20 cm, and a cup now standing on the block's first spot: the block is far from its
    first spot and its spot is taken; the cup stands on another's first spot. Padding nodes read nothing."""
    import torch

    from policies.memory_policy.features import SPOT_SCALES, spot_features

    pos, first = field_slice("position").start, field_slice("first_position").start
    tokens = torch.zeros(1, 3, sum(n for _, n in TOKEN_FIELDS))
    tokens[0, 0, pos:pos + 2] = torch.tensor([0.30, 0.10])  # the block now
    tokens[0, 0, first:first + 2] = torch.tensor([0.50, 0.10])  # the block when first seen
    tokens[0, 1, pos:pos + 2] = tokens[0, 1, first:first + 2] = torch.tensor([0.50, 0.11])  # the cup, unmoved
    f = spot_features(tokens, torch.tensor([[True, True, False]]), (pos, first)).reshape(3, 3, len(SPOT_SCALES))
    moved, taken, on_other = f[0, 0, -1], f[0, 1, -1], f[0, 2, -1]
    assert moved < 0.2 and taken > 0.9 and on_other < 0.2  # the block: moved, its spot taken
    assert f[1, 0, -1] > 0.99 and f[1, 2, -1] > 0.9  # the cup: where it was, and on the block's spot
    assert f[2].abs().max() == 0  # padding


def test_anchor_features_relate_each_node_to_the_one_last_acted_on():
    """A cup grasped (its latest action event) and lifted off a ball: the cup is the anchor and the ball
    stands where the cup was first seen; a block released long before is not the anchor. With no action
    event at all, every feature is zero."""
    import torch

    from embodied.agent.tokens import anchor_offsets
    from policies.memory_policy.features import anchor_features

    offsets = anchor_offsets()
    pos, first = offsets[:2]
    grasp, release = field_slice("grasp.last_age").start, field_slice("release.last_age").start
    tokens = torch.zeros(1, 4, sum(n for _, n in TOKEN_FIELDS))
    tokens[0, :, offsets[2:]] = 4.0  # no action events (MAX_AGE)
    tokens[0, 0, first:first + 2] = torch.tensor([0.50, 0.10])  # the cup, first seen over the ball
    tokens[0, 0, pos:pos + 2] = torch.tensor([0.50, 0.30])  # ... now lifted aside
    tokens[0, 0, grasp] = 0.02
    tokens[0, 1, pos:pos + 2] = tokens[0, 1, first:first + 2] = torch.tensor([0.50, 0.10])  # the ball
    tokens[0, 2, pos:pos + 2] = tokens[0, 2, first:first + 2] = torch.tensor([0.35, -0.30])  # a block
    tokens[0, 2, release] = 0.8
    f = anchor_features(tokens, torch.tensor([[True, True, True, False]]), offsets)
    assert f[0, :, 0].tolist() == [1.0, 0.0, 0.0, 0.0]  # the cup is the anchor
    assert f[0, 1, 3] > 0.9 and f[0, 1, 6] < 0.2  # the ball: at the cup's first spot, far from the cup now
    assert f[0, 2, 1:].max() < 0.2 and f[0, 3].abs().max() == 0  # the block is far; padding reads nothing
    tokens[0, :, offsets[2:]] = 4.0
    assert anchor_features(tokens, torch.tensor([[True, True, True, False]]), offsets).abs().max() == 0


def test_an_explicit_policy_refuses_tokens_laid_out_otherwise():
    from embodied.agent.learned import LearnedDecider
    from embodied.eval.rollout import learned_policy

    policy = learned_policy("explicit")
    saved = policy.config.token_dim
    try:
        policy.config.token_dim = saved + 1
        with pytest.raises(ValueError, match="retrain"):
            LearnedDecider(policy)
    finally:
        policy.config.token_dim = saved
