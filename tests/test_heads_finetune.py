"""Fine-tuning a trained head (`--init-from`) and mirrored carries (`--mirror`) on a tiny recorded dataset."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from embodied.cli.main import main
from embodied.planner.calls import SKILL_IDS
from policies.augment import mirror_windows
from policies.conditioning import relative_params
from policies.data import SkillWindows
from tests.heads_helpers import one_torch_thread, tiny_dataset, weights  # noqa: F401 (autouse fixture)


@pytest.fixture(scope="module")
def demos(tmp_path_factory) -> Path:
    return tiny_dataset(tmp_path_factory)


@pytest.fixture(scope="module")
def windows(demos) -> SkillWindows:
    from embodied.data import DemoDataset

    return SkillWindows(DemoDataset(demos, 2, 16), progress=False)


def test_mirrored_windows_reflect_the_target_about_the_gripper_and_negate_that_axis_of_the_actions(windows):
    """A mirrored window is the same window with the call's target reflected about the TCP in x and/or y
    and the matching action axis negated; everything else, and every other skill's window, is untouched."""
    batch = windows.batch(torch.arange(len(windows)))
    sid = batch["skill.id"].reshape(len(windows), -1)[:, 0]
    chosen = SKILL_IDS[windows.skills[0]]  # the RememberColor demos: touch, and the arm's other moves if any
    eligible = sid == chosen
    assert int(eligible.sum()) > 0
    out = mirror_windows(batch, {chosen}, torch.Generator().manual_seed(0))
    rel = relative_params(batch["observation.state"][:, -1], batch["skill.params"], "arm")
    new = relative_params(out["observation.state"][:, -1], out["skill.params"], "arm")
    sign = torch.ones(len(windows), 2)
    moved = rel[:, :2].abs() > 1e-4
    sign[moved] = (new[:, :2][moved] / rel[:, :2][moved])
    assert torch.allclose(sign.abs(), torch.ones_like(sign), atol=1e-3)  # each axis kept or reflected
    sign, known = sign.round(), moved.all(-1)  # where the target sits on the TCP's line a flip cannot be seen
    assert torch.allclose(out["action"][known][..., :2], batch["action"][known][..., :2] * sign[known][:, None, :])
    assert torch.equal(out["action"][..., 2:], batch["action"][..., 2:])
    assert torch.allclose(new[:, 2:], rel[:, 2:], atol=1e-6)  # height, yaw, size: as recorded
    flipped = (sign < 0).any(-1)
    assert not flipped[~eligible].any() and torch.equal(out["action"][~eligible], batch["action"][~eligible])
    assert 0.6 < float(flipped[eligible & moved.all(-1)].float().mean()) < 0.9  # 3 of 4 draws flip something
    assert torch.equal(batch["skill.params"], windows.batch(torch.arange(len(windows)))["skill.params"])
    untouched = mirror_windows(batch, {SKILL_IDS["press"]} - {chosen} or {SKILL_IDS["open"]})
    assert all(torch.equal(untouched[k], batch[k]) for k in batch)
    with pytest.raises(ValueError, match="observation.state has 5"):
        mirror_windows({**batch, "observation.state": batch["observation.state"][..., :5]}, {0})


def test_a_fine_tune_starts_from_the_source_weights_and_keeps_its_config(demos, windows, tmp_path, capsys):
    """`--init-from RUN` starts from RUN's EMA weights with RUN's head config and normaliser; with lr 0
    the fine-tune's weights are exactly those. Bad combinations are named."""
    args = ["train", "--head", "diffusion", "--data", str(demos), "--steps", "3", "--batch-size", "4", "--device",
            "cpu", "--json"]
    tiny = ["--set", "down_dims=16,32,64", "--set", "step_embed_dim=32", "--set", "use_elapsed=true"]
    source = tmp_path / "source"
    assert main([*args, "--out", str(source), *tiny]) == 0
    capsys.readouterr()
    tuned = tmp_path / "tuned"
    assert main([*args, "--out", str(tuned), "--init-from", str(source), "--lr", "0", "--mirror", windows.skills[0]]) == 0
    assert json.loads(capsys.readouterr().out)["start_step"] == 0
    start, end = weights(source, "ema")["shadow"], weights(tuned)
    assert set(start) == set(end) and all(torch.equal(start[k], end[k]) for k in start)
    read = lambda run, name: json.loads((run / name).read_text())  # noqa: E731
    assert read(tuned, "config.json")["head_config"] == read(source, "config.json")["head_config"]
    a, b = read(tuned, "stats.json"), read(source, "stats.json")  # the source's, through its float32 buffers
    assert set(a) == set(b) and all(np.allclose(a[k][s], b[k][s], rtol=1e-6) for k in b for s in b[k])
    assert read(tuned, "config.json")["train"]["mirror_skills"] == [windows.skills[0]]
    for extra, message in ((["--set", "horizon=8"], "takes the head's options from"),
                           (["--mirror", "press"], "--mirror 'press' is not among the data's skills"),
                           (["--head", "act"], "is a 'diffusion' run, not 'act'")):
        assert main([*args, "--out", str(tmp_path / "bad"), "--init-from", str(source), *extra]) != 0
        assert message in capsys.readouterr().err
    assert main(["train", "--head", "memory", "--memory", "none", "--data", str(demos), "--out",
                 str(tmp_path / "mem"), "--mirror", "pick"]) != 0
    assert "--mirror goes with --head diffusion or act" in capsys.readouterr().err


def test_a_sampling_head_gives_each_seed_the_same_episode_whatever_ran_before(demos, tmp_path, capsys):
    """Diffusion samples its starting noise; `run_episodes` seeds it per episode, so seed 1 alone and seed 1
    after seed 0 move the arm the same way (and a 20-step head differs from the demos' moves, so the noise
    matters here)."""
    import gymnasium as gym

    import embodied  # noqa: F401  (registers the tasks)
    from embodied.eval.rollout import run_episodes

    run = tmp_path / "noisy"
    assert main(["train", "--head", "diffusion", "--data", str(demos), "--out", str(run), "--steps", "20",
                 "--batch-size", "8", "--device", "cpu", "--set", "down_dims=16,32,64", "--set",
                 "step_embed_dim=32", "--json"]) == 0
    capsys.readouterr()
    env = gym.make("embodied/RememberColor-v0", max_episode_steps=120)

    def tcp_path(seeds: list[int]) -> list[list[float]]:
        path: list[list[float]] = []
        run_episodes(env, "agent", seeds, progress=False, head=f"diffusion:{run}",
                     on_reset=lambda seed, obs, info: path.clear(),
                     on_step=lambda obs, info: path.append([float(v) for v in obs["proprio"][14:17]]))
        return path

    alone = tcp_path([1])
    assert tcp_path([0, 1]) == alone
    torch.manual_seed(123)
    assert tcp_path([1]) == alone and len(alone) > 50
