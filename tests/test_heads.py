"""Learned heads without training data: frames, normaliser, both heads' interface, checkpoint files."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from diffusers import DDIMScheduler

from embodied.planner.calls import SKILL_IDS, SkillCall
from policies.act import ACTConfig, ACTHead
from policies.bench import example_batch, synthetic_stats
from policies.checkpoint import CheckpointError, latest_checkpoint, load_checkpoint, save_checkpoint
from policies.conditioning import Normalizer, relative_params
from policies.diffusion import DiffusionConfig, DiffusionHead
from policies.skill_head import LearnedSkill, load_head
from tests.heads_helpers import TINY_ACT, TINY_DIFFUSION, one_torch_thread  # noqa: F401 (autouse fixture)


def arm_state(tcp=(0.4, 0.0, 0.2), yaw=0.0) -> torch.Tensor:
    s = torch.zeros(22)
    s[14:17] = torch.tensor(tcp)
    s[17:21] = torch.tensor([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])
    s[21] = 0.08
    return s


def test_call_parameters_are_relative_to_the_tcp_and_to_the_odometry_pose():
    params = torch.tensor(SkillCall("touch", xyz=(0.5, 0.1, 0.02), yaw=0.3, size=(0.04, 0.04, 0.04)).params())
    rel = relative_params(arm_state(yaw=0.1).unsqueeze(0), params.unsqueeze(0), "arm")[0]
    assert torch.allclose(rel[:3], torch.tensor([0.1, 0.1, -0.18]), atol=1e-6)
    assert torch.allclose(rel[3:5], torch.tensor([math.sin(0.4), math.cos(0.4)]), atol=1e-5)  # half-turn symmetric
    assert rel[8] == 1.0
    # The base: a goal 1 m ahead of a robot facing +y is 1 m forward, 0 m left, whatever the world frame says.
    base = torch.tensor([[2.0, 3.0, math.pi / 2, 0.0, 0.0]])
    goal = torch.tensor(SkillCall("navigate", xyz=(2.0, 4.0, 0.0)).params()).unsqueeze(0)
    rel = relative_params(base, goal, "base")[0]
    assert torch.allclose(rel[:3], torch.tensor([1.0, 0.0, 0.0]), atol=1e-6)
    assert torch.all(rel[3:5] == 0) and rel[8] == 0  # no yaw given: no heading features


def test_normaliser_round_trips_and_names_missing_statistics():
    stats = synthetic_stats()
    stats["action"] = {"mean": [0.0] * 5, "std": [1.0] * 5, "min": [-2.0] * 5, "max": [2.0] * 5}
    norm = Normalizer(stats, "min_max")
    a = torch.tensor([[-2.0, 0.0, 1.0, 2.0, -1.0]])
    assert torch.allclose(norm.norm("action", a), a / 2)
    assert torch.allclose(norm.unnorm("action", norm.norm("action", a)), a)
    del stats["skill.params_rel"]
    with pytest.raises(ValueError, match="skill.params_rel"):
        Normalizer(stats)


@pytest.mark.parametrize("cls,cfg", [(DiffusionHead, DiffusionConfig(**TINY_DIFFUSION, cameras=("wrist",))),
                                     (DiffusionHead, DiffusionConfig(**TINY_DIFFUSION, done_head="sampled")),
                                     (ACTHead, ACTConfig(**TINY_ACT, use_vae=True, cameras=("wrist",)))])
def test_heads_train_predict_and_queue_actions(cls, cfg):
    torch.manual_seed(0)
    head = cls(cfg, synthetic_stats())
    batch = example_batch(head)
    batch["observation.state"] = batch["observation.state"].repeat(4, 1, 1)
    batch = {k: (v.repeat(4, *([1] * (v.ndim - 1))) if k != "observation.state" else v) for k, v in batch.items()}
    batch["action"] = torch.rand(4, cfg.horizon, cfg.action_dim) * 2 - 1
    batch["action_is_pad"] = torch.zeros(4, cfg.horizon, dtype=torch.bool)
    out = head(batch)
    assert out["loss"].ndim == 0 and torch.isfinite(out["loss"])
    out["loss"].backward()
    assert all(p.grad is not None for n, p in head.named_parameters() if n.startswith(("images", "skill_embed")))
    head.eval()
    chunk = head.predict_chunk({k: v[:1] for k, v in batch.items()})
    assert chunk["action"].shape == (1, cfg.horizon, cfg.action_dim)
    assert ((chunk["done"] >= 0) & (chunk["done"] <= 1)).all()
    calls = []
    original = head.predict_chunk
    head.predict_chunk = lambda b: calls.append(1) or original(b)
    head.reset()
    step = {"observation.state": batch["observation.state"][:1, -1], "skill.id": batch["skill.id"][:1],
            "skill.params": batch["skill.params"][:1]}
    step.update({k: v[:1, -1] for k, v in batch.items() if k.startswith("observation.images.")})
    step.update({k: batch[k][:1] for k in ("skill.elapsed",) if k in batch})
    for _ in range(cfg.n_action_steps + 1):
        assert head.select_action(step).shape == (1, cfg.action_dim)
    assert len(calls) == 2  # one chunk serves n_action_steps steps


def test_act_temporal_ensembling_predicts_every_step():
    head = ACTHead(ACTConfig(**TINY_ACT, temporal_ensemble_coeff=0.01, n_action_steps=1), synthetic_stats()).eval()
    b = example_batch(head)
    step = {"observation.state": b["observation.state"][:, -1], "skill.id": b["skill.id"], "skill.params": b["skill.params"]}
    b["observation.state"] = step["observation.state"].unsqueeze(1).repeat(1, 2, 1)  # history starts filled
    first = head.predict_chunk(b)["action"][:, 0]
    assert torch.allclose(head.select_action(step), first, atol=1e-5)  # one chunk: its first action
    head.select_action(step)
    assert len(head._chunks) == 2
    with pytest.raises(ValueError, match="n_action_steps=1"):
        ACTConfig(temporal_ensemble_coeff=0.01, n_action_steps=8).validate()


def test_bad_inputs_name_what_is_wrong():
    head = DiffusionHead(DiffusionConfig(**TINY_DIFFUSION), synthetic_stats())
    b = example_batch(head)
    b["observation.state"] = b["observation.state"][..., :5]
    with pytest.raises(ValueError, match="observation.state"):
        head.predict_chunk(b)
    with pytest.raises(ValueError, match="horizon 10 must be a multiple of 4"):
        DiffusionConfig(horizon=10).validate()
    with pytest.raises(ValueError, match="state values"):
        DiffusionHead(DiffusionConfig(**TINY_DIFFUSION), synthetic_stats(state_dim=5, action_dim=5))
    with pytest.raises(ValueError, match="done_head"):
        DiffusionConfig(done_head="argmax").validate()
    sampled = DiffusionHead(DiffusionConfig(**TINY_DIFFUSION, done_head="sampled"), synthetic_stats())
    with pytest.raises(ValueError, match="done_head"):  # weights of the old layout: told how to load them
        head.load_state_dict(sampled.state_dict())
    skill = LearnedSkill(head.eval(), "touch")
    skill.start(SkillCall("touch", xyz=(0.5, 0.0, 0.02)), {"proprio": arm_state().numpy()})
    with pytest.raises(ValueError, match="proprio"):
        skill.act({"proprio": np.zeros(5, np.float32)})
    with pytest.raises(ValueError, match="cannot run a 'pick' call"):
        skill.start(SkillCall("pick"), {"proprio": arm_state().numpy()})
    with pytest.raises(ValueError, match="'<head>:<run dir>'"):
        load_head("transformer:/nowhere")


def test_learned_skill_reports_done_from_the_done_channel_and_fails_past_its_budget():
    head = ACTHead(ACTConfig(**TINY_ACT), synthetic_stats()).eval()
    obs = {"proprio": arm_state().numpy()}
    call = SkillCall("touch", xyz=(0.5, 0.0, 0.02))
    with torch.no_grad():
        head.done_out.bias.fill_(10.0)  # every step predicted past the segment's end
    skill = LearnedSkill(head, "touch", min_steps=2, patience=2)
    skill.start(call, obs)
    actions = [skill.act(obs) for _ in range(4)]
    assert skill.done and not skill.failed
    head.config.done_patience = 3  # the head's own setting when the skill names none
    skill = LearnedSkill(head, "touch", min_steps=1)
    skill.start(call, obs)
    assert [(skill.act(obs), skill.done)[1] for _ in range(3)] == [False, False, True]
    head.config.done_patience = 1
    assert np.all(actions[-1][:4] == 0)  # finished: hold still
    with torch.no_grad():
        head.done_out.bias.fill_(-10.0)
    skill = LearnedSkill(head, "touch", budget=5)
    skill.start(call, obs)
    for _ in range(6):
        skill.act(obs)
    assert skill.failed and not skill.done


def test_done_threshold_skills_end_at_their_own_threshold_and_the_rest_at_the_heads():
    """A done probability of 0.5: a place named in done_threshold_skills (threshold 0.35) ends, a press does not."""
    head = ACTHead(ACTConfig(**TINY_ACT, done_threshold_skills=("place",), skill_done_threshold=0.35),
                   synthetic_stats()).eval()
    obs = {"proprio": arm_state().numpy()}
    with torch.no_grad():
        head.done_out.weight.zero_()
        head.done_out.bias.zero_()  # sigmoid(0) = 0.5 at every step
    ended = {}
    for name in ("place", "press"):
        skill = LearnedSkill(head, name, min_steps=1)
        skill.start(SkillCall(name, xyz=(0.5, 0.0, 0.02)), obs)
        for _ in range(3):
            skill.act(obs)
        assert abs(skill.done_prob - 0.5) < 1e-6
        ended[name] = skill.done
    assert ended == {"place": True, "press": False}
    assert LearnedSkill(head, "place", done_threshold=0.8).done_threshold == 0.8  # an argument still wins
    with pytest.raises(ValueError, match="done_threshold_skills: unknown skill 'fly'"):
        ACTConfig(done_threshold_skills=("fly",)).validate()
    with pytest.raises(ValueError, match="skill_done_threshold must be a probability"):
        ACTConfig(skill_done_threshold=1.5).validate()


def test_checkpoint_round_trip_and_corruption_names_the_file(tmp_path):
    head = ACTHead(ACTConfig(**TINY_ACT), synthetic_stats())
    opt = torch.optim.AdamW(head.parameters(), lr=1e-3)
    b = example_batch(head)
    b["action"] = torch.zeros(1, 16, 5)
    head(b)["loss"].backward()
    opt.step()
    save_checkpoint(tmp_path, 7, {"model": head.state_dict(), "optimizer": opt.state_dict()})
    step, parts = load_checkpoint(latest_checkpoint(tmp_path))
    assert step == 7
    opt2 = torch.optim.AdamW(head.parameters(), lr=1e-3)
    opt2.load_state_dict(parts["optimizer"])
    for group in opt2.state_dict()["state"].values():
        assert set(group) == {"step", "exp_avg", "exp_avg_sq"}
    assert all(torch.equal(v, head.state_dict()[k]) for k, v in parts["model"].items())
    target = latest_checkpoint(tmp_path) / "model.safetensors"
    data = bytearray(target.read_bytes())
    data[-10] ^= 0xFF
    target.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="model.safetensors: corrupt"):
        load_checkpoint(latest_checkpoint(tmp_path))
    (latest_checkpoint(tmp_path) / "optimizer.json").unlink()
    with pytest.raises(CheckpointError, match="optimizer.json: missing"):
        load_checkpoint(latest_checkpoint(tmp_path), ("optimizer",))


def test_every_skill_id_has_an_embedding_row():
    head = ACTHead(ACTConfig(**TINY_ACT), synthetic_stats())
    assert head.skill_embed.num_embeddings == len(SKILL_IDS) + 1


def test_bench_head_reports_both_heads_and_eval_head_rejects_a_bad_spec(capsys):
    import json

    from embodied.cli.main import main

    assert main(["bench", "head", "--repeats", "3", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["head"] for r in rows} == {"diffusion", "act"}
    assert all(r["chunk_ms_median"] > 0 and r["target_ms"] in (5.0, 15.0) and r["load_1min"] >= 0 for r in rows)
    assert main(["eval-head", "--head", "bogus", "--task", "RememberColor-v0"]) == 2
    assert "'<head>:<run dir>'" in capsys.readouterr().err


def test_elapsed_feature_counts_steps_into_each_skill_segment_and_conditions_the_head():
    from policies.data import segment_elapsed

    episode = np.array([0, 0, 0, 0, 1, 1, 1])
    segment = np.array([0, 0, 1, 1, 1, 1, 2])  # episode 1 starts a new run even with the same segment index
    assert segment_elapsed(episode, segment).tolist() == [0, 1, 0, 1, 0, 1, 0]
    torch.manual_seed(0)
    head = ACTHead(ACTConfig(**TINY_ACT, use_elapsed=True), synthetic_stats()).eval()
    batch = example_batch(head)
    early = head.predict_chunk({**batch, "skill.elapsed": torch.tensor([0.0])})["action"]
    late = head.predict_chunk({**batch, "skill.elapsed": torch.tensor([60.0])})["action"]
    assert not torch.allclose(early, late)  # time into the skill reaches the decoder
    with pytest.raises(ValueError, match="skill.elapsed"):
        head.predict_chunk({k: v for k, v in batch.items() if k != "skill.elapsed"})
    seen = []
    original = head.predict_chunk
    head.predict_chunk = lambda b: seen.append(float(b["skill.elapsed"][0])) or original(b)
    skill = LearnedSkill(head, "touch")
    obs = {"proprio": arm_state().numpy()}
    skill.start(SkillCall("touch", xyz=(0.5, 0.0, 0.02)), obs)
    for _ in range(TINY_ACT.get("n_action_steps", 8) + 1):
        skill.act(obs)
    assert seen[:2] == [0.0, float(TINY_ACT.get("n_action_steps", 8))]  # a chunk at step 0, the next after it ran


@pytest.mark.parametrize("kind", ["act", "diffusion"])
def test_ensemble_skills_predict_every_step_and_the_other_skills_run_chunks(kind):
    """Both heads share temporal ensembling (the diffusion head's samples average out where a place lands)."""
    torch.manual_seed(0)
    if kind == "act":
        head = ACTHead(ACTConfig(**TINY_ACT, ensemble_skills=("place",)), synthetic_stats()).eval()
    else:
        head = DiffusionHead(DiffusionConfig(**TINY_DIFFUSION, ensemble_skills=("place",)), synthetic_stats()).eval()
    calls = []
    original = head.predict_chunk
    head.predict_chunk = lambda b: calls.append(1) or original(b)
    obs = {"proprio": arm_state().numpy()}
    for name, expected in (("place", 5), ("pick", 1)):  # ensembled: a chunk a step; chunked: one for 5 steps
        calls.clear()
        skill = LearnedSkill(head, name, done_threshold=1.01)  # never done: count the predictions only
        skill.start(SkillCall(name, xyz=(0.5, 0.0, 0.02)), obs)
        for _ in range(5):
            assert skill.act(obs).shape == (5,)
        assert len(calls) == expected, name
    with pytest.raises(ValueError, match="ensemble_skills: unknown skill 'fly'"):
        DiffusionConfig(ensemble_skills=("fly",)).validate()


def test_diffusion_done_classifier_reads_the_time_into_the_skill_and_only_it_does():
    """A press passes its start pose again on the way back: only ``skill.elapsed`` tells start from end. The
    done classifier reads it (``done_elapsed``); the denoiser does not, unless ``use_elapsed`` says so."""
    torch.manual_seed(0)
    head = DiffusionHead(DiffusionConfig(**TINY_DIFFUSION), synthetic_stats()).eval()
    b = example_batch(head)
    early, late = dict(b, **{"skill.elapsed": torch.tensor([0.0])}), dict(b, **{"skill.elapsed": torch.tensor([300.0])})
    cond = head.global_cond(early)
    assert torch.equal(cond, head.global_cond(late))  # the U-Net's condition ignores the clock
    assert not torch.allclose(head.done_logits(early, cond), head.done_logits(late, cond))
    with pytest.raises(ValueError, match="skill.elapsed"):
        head.predict_chunk({k: v for k, v in b.items() if k != "skill.elapsed"})
    blind = DiffusionHead(DiffusionConfig(**TINY_DIFFUSION, done_elapsed=False), synthetic_stats()).eval()
    assert not blind.config.needs_elapsed()
    assert "skill.elapsed" not in example_batch(blind)


def test_diffusion_done_pos_weight_weighs_the_steps_past_the_end():
    """Ends are rare in the windows: ``done_pos_weight`` scales the loss of the steps past a segment's end."""
    losses = []
    for w in (1.0, 10.0):
        torch.manual_seed(0)
        head = DiffusionHead(DiffusionConfig(**TINY_DIFFUSION, done_pos_weight=w), synthetic_stats())
        b = example_batch(head)
        b["action"] = torch.zeros(1, head.config.horizon, head.config.action_dim)
        b["action_done"] = torch.ones(1, head.config.horizon)  # every step past the end
        losses.append(float(head(b)["done_loss"]))
    assert losses[1] == pytest.approx(10 * losses[0], rel=1e-4)


def test_diffusion_starting_noise_scale_sets_how_much_samples_spread():
    """init_noise_scale 0 starts DDIM from zero noise: the same chunk every call; 1 samples afresh."""
    torch.manual_seed(0)
    head = DiffusionHead(DiffusionConfig(**TINY_DIFFUSION), synthetic_stats()).eval()
    batch = example_batch(head)
    spread = {}
    for scale in (0.0, 0.5, 1.0):
        head.config.init_noise_scale = scale
        chunks = torch.stack([head.predict_chunk(batch)["action"] for _ in range(8)])
        spread[scale] = float(chunks.std(0).mean())
    assert spread[0.0] == 0.0 and 0 < spread[0.5] < spread[1.0]
    with pytest.raises(ValueError, match="init_noise_scale"):
        DiffusionConfig(init_noise_scale=1.5).validate()


def test_diffusion_traced_sampler_matches_the_step_by_step_loop():
    """Inference runs the whole DDIM loop as one traced, frozen module on channels-last rows, with the FiLM
    split by its two inputs. It must give the numbers of the plain loop (training layout, the U-Net's
    forward at every step) on inputs it was not traced with, and be traced again after new weights.
    (1e-4: the first DDIM step divides float rounding by the square root of a small alpha product.)"""
    torch.manual_seed(0)
    head = DiffusionHead(DiffusionConfig(**dict(TINY_DIFFUSION, trace_inference=True)), synthetic_stats())
    cond = head.global_cond(example_batch(head)).detach()
    shape = (1, head.config.horizon, head.config.action_dim)

    def plain_loop(x, cond):
        head.unet.train()  # conv1d on (B, C, T); the U-Net's mode alone, so the head keeps its trace
        sched = DDIMScheduler.from_config(head.infer_scheduler.config)
        sched.set_timesteps(head.config.num_inference_steps)
        for t in sched.timesteps:
            x = sched.step(head.unet(x, t.expand(len(x)), cond), t, x).prev_sample
        head.unet.eval()
        return x

    with torch.no_grad():
        head.eval()
        head.sample(torch.randn(shape), cond)  # traced on these inputs
        assert len(head._samplers) == 1
        for _ in range(3):
            x, c = torch.randn(shape), cond + torch.randn_like(cond)
            plain, traced = plain_loop(x, c), head.sample(x, c)
            assert torch.allclose(traced, plain, atol=1e-4) and not torch.allclose(traced, x, atol=0.1)
        assert len(head._samplers) == 1  # one trace served them all
        head.unet.final[1].bias.add_(0.5)
        head.load_state_dict(head.state_dict())  # new weights: the traces (their constants) are dropped
        assert head._samplers == {}
        x = torch.randn(shape)
        assert torch.allclose(head.sample(x, cond), plain_loop(x, cond), atol=1e-4)
        head.train()
        assert head._samplers == {}  # so does a mode change
    assert not any("sampler" in k for k in head.state_dict())


def test_a_finite_but_absurd_weight_is_refused_naming_the_file(tmp_path):
    """A 1e30 bias (found by the checkpoint fuzzer) loaded and gave NaN actions: a layer norm squares it."""
    import re

    from policies.checkpoint import MAX_WEIGHT, build_to_fit

    def build():
        return ACTHead(ACTConfig(**TINY_ACT), synthetic_stats())

    state = build().state_dict()
    assert build_to_fit(build, state, "config.json", tmp_path / "ema.safetensors") is not None
    key = next(k for k in state if k.endswith("linear1.bias"))
    state[key] = state[key].clone()
    state[key][0] = 1e30
    with torch.inference_mode():  # what the check keeps from happening
        broken = build()
        broken.load_state_dict(state)
        assert not torch.isfinite(broken.eval().predict_action_chunk(example_batch(broken))).all()
    with pytest.raises(CheckpointError, match=re.escape(f"ema.safetensors: weight {key!r} holds a value beyond {MAX_WEIGHT:g}")):
        build_to_fit(build, state, "config.json", tmp_path / "ema.safetensors")
