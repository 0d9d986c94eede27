"""Training the heads on a tiny recorded dataset: overfitting, resume, corrupt checkpoints, DDP, a skill run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from embodied.cli.main import main
from embodied.planner.calls import SKILL_IDS
from policies.checkpoint import CheckpointError, latest_checkpoint
from policies.data import SkillWindows
from policies.export import load_run
from policies.train import TrainConfig, train
from tests.heads_helpers import (  # noqa: F401 (one_torch_thread: autouse fixture)
    TINY_ACT, TINY_DIFFUSION, one_torch_thread, run_without, tiny_dataset, weights)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def demos(tmp_path_factory) -> Path:
    return tiny_dataset(tmp_path_factory)


def log_rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]


def test_act_overfits_a_demo_and_reproduces_its_actions(demos, tmp_path):
    run = tmp_path / "act"
    result = train(TrainConfig(head="act", data=str(demos), out=str(run), steps=300, batch_size=32, lr=2e-3,
                               warmup_steps=20, log_every=5, checkpoint_every=300, progress=False,
                               head_options=TINY_ACT))
    rows = log_rows(run)
    first, last = rows[0]["loss"], float(np.mean([r["loss"] for r in rows[-5:]]))
    assert first / last >= 10, f"loss fell only {first / last:.1f}x ({first:.3f} -> {last:.3f})"
    head = load_run(run)
    from embodied.data import DemoDataset

    windows = SkillWindows(DemoDataset(demos, 2, 16), progress=False)
    batch = windows.batch(torch.arange(len(windows)))
    chunk = head.predict_chunk(batch)
    valid = ~batch["action_is_pad"]
    err = (chunk["action"] - batch["action"]).abs().mean(-1)[valid]
    # Actions live in [-1, 1] (one unit = 2 cm per step): the head matches the demo within 0.1 on average.
    assert float(err.mean()) < 0.1, f"mean |action error| {float(err.mean()):.3f}"
    done_acc = ((chunk["done"] > 0.5) == batch["action_done"].bool()).float().mean()
    assert done_acc > 0.9, f"done channel right on {float(done_acc):.0%} of the steps"
    assert result["skills"] == ["touch"]


def test_diffusion_loss_falls_tenfold_and_samples_near_the_demo(demos, tmp_path):
    run = tmp_path / "diff"
    # The default widths (32, 64, 128): narrower U-Nets fit far slower (16/32/64: 1.7x in 400 steps).
    train(TrainConfig(head="diffusion", data=str(demos), out=str(run), steps=500, batch_size=16, lr=2e-3,
                      warmup_steps=20, log_every=5, checkpoint_every=500, progress=False,
                      head_options={"step_embed_dim": 32}))
    rows = log_rows(run)
    first, last = rows[0]["loss"], float(np.mean([r["loss"] for r in rows[-10:]]))
    assert first / last >= 10, f"loss fell only {first / last:.1f}x ({first:.3f} -> {last:.3f})"
    head = load_run(run)
    from embodied.data import DemoDataset

    windows = SkillWindows(DemoDataset(demos, 2, 16), progress=False)
    batch = windows.batch(torch.arange(0, len(windows), 4))
    torch.manual_seed(0)
    chunk = head.predict_chunk(batch)
    valid = ~batch["action_is_pad"]
    err = (chunk["action"] - batch["action"]).abs().mean(-1)[valid]
    assert float(err.mean()) < 0.2, f"mean |action error| {float(err.mean()):.3f}"
    # The done classifier (not a sampled channel) says where the skill ends, as ACT's does.
    done_acc = ((chunk["done"] > 0.5) == batch["action_done"].bool()).float().mean()
    assert done_acc > 0.9, f"done classifier right on {float(done_acc):.0%} of the steps"


def test_checkpoint_round_trip_gives_the_same_outputs(demos, tmp_path):
    run = tmp_path / "rt"
    train(TrainConfig(head="diffusion", data=str(demos), out=str(run), steps=3, batch_size=8, progress=False,
                      cameras=("wrist",), head_options=TINY_DIFFUSION))
    a, b = load_run(run), load_run(run)
    assert a.config.cameras == ("wrist",) and a.config.image_size == 32
    from embodied.data import DemoDataset

    windows = SkillWindows(DemoDataset(demos, 2, 16, cameras=["wrist"]), cameras=("wrist",), progress=False)
    batch = windows.batch(torch.arange(4))
    torch.manual_seed(5)
    out_a = a.predict_action_chunk(batch)
    torch.manual_seed(5)
    out_b = b.predict_action_chunk(batch)
    assert torch.equal(out_a, out_b)
    ema = weights(run, "ema")["shadow"]
    assert all(torch.equal(a.state_dict()[k], v) for k, v in ema.items())  # inference runs on the EMA


def _train_cmd(demos: Path, run: Path, steps: int, *extra: str) -> list[str]:
    return ["train", "--head", "diffusion", "--data", str(demos), "--out", str(run), "--steps", str(steps),
            "--batch-size", "8", "--log-every", "1", "--set", "down_dims=16,32,64", "--set", "step_embed_dim=32",
            *extra]


def test_a_killed_run_resumes_on_the_same_curve(demos, tmp_path):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    assert main(_train_cmd(demos, straight, 30, "--checkpoint-every", "10")) == 0
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "embodied.cli.main",
                             *_train_cmd(demos, killed, 30, "--checkpoint-every", "10")],
                            env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not (killed / "latest.json").exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    step = json.loads((killed / "latest.json").read_text())["step"]
    assert step < 30, "the run finished before it could be killed"
    assert main(_train_cmd(demos, killed, 30)) == 2  # the same --out without --resume is refused
    assert main(_train_cmd(demos, killed, 30, "--checkpoint-every", "10", "--resume")) == 0
    a, b = log_rows(straight), log_rows(killed)
    assert [r["step"] for r in b] == list(range(30))
    assert [r["loss"] for r in a] == pytest.approx([r["loss"] for r in b], rel=1e-5)
    wa, wb = weights(straight), weights(killed)
    assert all(torch.allclose(wa[k], wb[k], atol=1e-6) for k in wa)
    assert (straight / "loss.png").stat().st_size > 1000


def test_training_into_a_dataset_folder_is_refused_and_leaves_it_alone(demos, capsys):
    before = sorted(p.relative_to(demos) for p in demos.rglob("*"))
    assert main(_train_cmd(demos, demos, 2)) == 2  # --out given the --data folder by mistake
    assert "not a run" in capsys.readouterr().err
    assert sorted(p.relative_to(demos) for p in demos.rglob("*")) == before


def test_a_corrupt_checkpoint_is_named(demos, tmp_path, capsys):
    run = tmp_path / "c"
    assert main(_train_cmd(demos, run, 2)) == 0
    target = latest_checkpoint(run) / "optimizer.safetensors"
    target.write_bytes(target.read_bytes()[:-100])
    assert main(_train_cmd(demos, run, 4, "--resume")) == 2
    assert f"{target}: corrupt" in capsys.readouterr().err
    with pytest.raises(CheckpointError, match="config.json"):
        (run / "config.json").write_text("{not json")
        load_run(run)


@pytest.mark.skipif(shutil.which("torchrun") is None, reason="torchrun not on PATH")
def test_ddp_two_processes_keep_identical_weights(demos, tmp_path):
    run = tmp_path / "ddp"
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    cmd = ["torchrun", "--nproc-per-node", "2", "-m", "embodied.cli.main", "train", "--head", "act",
           "--data", str(demos), "--out", str(run), "--steps", "4", "--batch-size", "8", "--json",
           "--set", "dim_model=64", "--set", "dim_feedforward=128", "--set", "dropout=0.1"]
    done = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((run / "ddp.json").read_text())
    assert report["world_size"] == 2 and report["max_weight_diff"] == 0.0
    assert json.loads((run / "latest.json").read_text())["step"] == 4


def test_a_trained_touch_head_runs_the_skill_in_the_task(demos, tmp_path):
    from embodied.eval.skill_rollout import handover_episode
    from policies.skill_head import load_head

    run = tmp_path / "touch"
    train(TrainConfig(head="act", data=str(demos), out=str(run), steps=300, batch_size=32, lr=2e-3, warmup_steps=20,
                      checkpoint_every=300, progress=False, skills=("touch",), head_options=TINY_ACT))
    skills = load_head(f"act:{run}")
    assert set(skills) == {"touch"}
    result = handover_episode("RememberColor-v0", seed=0, skills=skills, image_size=32)
    assert result.handed_over and result.skill == "touch"
    # RememberColor ends the episode at the touch, so success comes before the skill's own done.
    assert result.success and not result.skill_failed, result
    assert 10 < result.skill_steps < 100, result


def test_a_pack_of_windows_trains_without_simulator_or_video_reader_on_the_same_curve(demos, tmp_path, capsys):
    """`embodied pack-windows` holds the windows DemoDataset gives; `embodied train --data PACK` runs where
    mujoco, gymnasium's envs, PyAV and pyarrow cannot be imported, and follows the demo folder's loss curve."""
    pack = tmp_path / "pack"
    assert main(["pack-windows", "--data", str(demos), "--out", str(pack), "--cameras", "wrist", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    from embodied.data import DemoDataset

    direct = SkillWindows(DemoDataset(demos, 2, 16, cameras=["wrist"]), cameras=("wrist",), progress=False)
    packed, stats = SkillWindows.load(pack)
    assert summary["frames"] == len(direct) == len(packed) and packed.skills == direct.skills
    assert set(packed.data) == set(direct.data)
    assert all(torch.equal(packed.data[k], direct.data[k]) for k in direct.data)
    args = ["--head", "diffusion", "--steps", "6", "--batch-size", "8", "--checkpoint-every", "3", "--cameras", "wrist",
            "--device", "cpu", "--set", "down_dims=16,32,64", "--set", "step_embed_dim=32", "--json"]
    assert main(["train", "--data", str(demos), "--out", str(tmp_path / "direct"), *args]) == 0
    capsys.readouterr()
    blocked = "mujoco", "av", "pyarrow", "imageio", "embodied.data", "embodied.envs", "embodied.cli.main"
    body = ("from embodied.cli.train_cmds import main\n"
            f"sys.exit(main(['train', '--data', {str(pack)!r}, '--out', {str(tmp_path / 'packed')!r}, *{args!r}]))\n")
    done = run_without(blocked, body, REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    a, b = log_rows(tmp_path / "direct"), log_rows(tmp_path / "packed")
    assert [r["step"] for r in a] == [r["step"] for r in b]
    assert np.allclose([r["loss"] for r in a], [r["loss"] for r in b], rtol=1e-5)
    assert json.loads((tmp_path / "packed" / "stats.json").read_text()) == \
        json.loads((tmp_path / "direct" / "stats.json").read_text())
    with pytest.raises(ValueError, match="pack .* holds the skills"):
        train(TrainConfig(head="diffusion", data=str(pack), out=str(tmp_path / "bad"), steps=1, skills=("press",),
                          cameras=("wrist",), progress=False))


def test_oversample_far_draws_far_windows_k_times_and_the_cli_names_bad_input(demos, tmp_path, capsys):
    """`--oversample-far METRES:K` repeats exactly the windows whose call target lies farther than METRES
    (xy, robot frame) from the gripper; every window is still drawn."""
    from embodied.data import DemoDataset
    from policies.conditioning import relative_params
    from policies.train import draw_order

    windows = SkillWindows(DemoDataset(demos, 2, 16), progress=False)
    rel = relative_params(windows.data["observation.state"][:, -1], windows.data["skill.params"], windows.robot)
    dist = rel[:, :2].norm(dim=-1)
    metres = float(dist.median())  # half the windows are "far" at this line
    order = draw_order(windows, (metres, 3))
    counts = torch.bincount(order, minlength=len(windows))
    assert torch.equal(counts, torch.where(dist > metres, 3, 1))
    assert 0 < int((dist > metres).sum()) < len(windows)
    assert torch.equal(draw_order(windows, None), torch.arange(len(windows)))
    # one axis, one skill: the carries toward or away from the robot (x) of that skill only
    skill = windows.skills[0]
    along_x = rel[:, 0].abs()
    line = float(along_x.median())
    of_skill = windows.data["skill.id"].reshape(len(windows), -1)[:, 0] == SKILL_IDS[skill]
    counts = torch.bincount(draw_order(windows, (line, 4, "x", (skill,))), minlength=len(windows))
    assert torch.equal(counts, torch.where((along_x > line) & of_skill, 4, 1)) and int(counts.sum()) > len(windows)
    with pytest.raises(ValueError, match="names the skill 'press'"):
        draw_order(windows, (line, 4, "x", ("press",)))
    args = ["train", "--head", "diffusion", "--data", str(demos), "--steps", "2", "--batch-size", "4", "--device",
            "cpu", "--set", "down_dims=16,32,64", "--set", "step_embed_dim=32", "--json"]
    assert main([*args, "--out", str(tmp_path / "far"), "--oversample-far", f"{metres}:3"]) == 0
    assert json.loads(capsys.readouterr().out)["draws"] == len(order)
    assert main([*args, "--out", str(tmp_path / "x"), "--oversample-far", f"{line}:4:x:{skill}"]) == 0
    assert json.loads(capsys.readouterr().out)["draws"] == int(counts.sum())
    for bad, message in (("far", "--oversample-far takes METRES:K"), ("0.3:0", "oversample_far takes"),
                         ("0.3:2:z", "axis xy|x|y"), ("0.3:2:x:a:b", "METRES:K[:AXIS[:SKILLS]]")):
        assert main([*args, "--out", str(tmp_path / "bad"), "--oversample-far", bad]) != 0
        assert message in capsys.readouterr().err
