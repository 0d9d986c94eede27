"""tools/gpu_implicit.py: the pack gives the implicit policy the batches DecisionData gives (up to the
frames' JPEG coding), and trains with the shared loop where neither the simulator nor the demo reader
can be imported, into a run folder that loads and exports here."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from embodied.cli.main import main
from policies.export import export_run, load_exported, load_run
from policies.memory_policy import MemoryPolicyConfig
from policies.memory_policy.data import DecisionData
from tests.heads_helpers import one_torch_thread, run_without  # noqa: F401 (autouse fixture)

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("gpu_implicit", ROOT / "tools" / "gpu_implicit.py")
gpu_implicit = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_implicit)


@pytest.fixture(scope="module")
def packed(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("pack")
    demos = root / "demos"
    assert main(["record-demos", "--task", "ShellGame-v0", "--episodes", "3", "--out", str(demos), "--policy", "agent",
                 "--image-size", "64", "--json"]) == 0
    summary = gpu_implicit.pack([str(demos)], root / "pack")
    assert summary["decisions"] > 3 and summary["jpeg_mae"] < 3.0
    return demos, root / "pack"


def test_packed_batches_are_the_readers_batches(packed):
    demos, folder = packed
    meta = json.loads((folder / "pack.json").read_text())
    config = gpu_implicit.config_from_dict(MemoryPolicyConfig, meta["config"])
    mine = gpu_implicit.PackedDecisions(folder, torch.device("cpu"), config)
    reader = DecisionData([str(demos)], MemoryPolicyConfig(memory="implicit"), progress=False)
    assert len(mine) == len(reader)
    idx = np.arange(len(reader))
    a, b = mine.batch(idx, train=False), reader.batch(idx, train=False)
    assert set(a) == set(b)
    for key in b:
        if key == "history":
            assert a[key].shape == b[key].shape
            assert float((a[key] - b[key]).abs().mean()) * 255 < 2.0  # JPEG quality 95 on 32 px frames
        else:
            assert torch.equal(a[key].to(b[key].dtype), b[key]), key
    # Training drops past frames but keeps the current one, and the kept ones stay a prefix.
    t = mine.batch(idx, train=True)
    m = t["history_mask"]
    assert (m.sum(1) <= b["history_mask"].sum(1)).all() and (m.sum(1) < b["history_mask"].sum(1)).any()
    assert ((m[:, 1:].int() - m[:, :-1].int()) <= 0).all()
    assert (t["history_age"][torch.arange(len(idx)), m.sum(1) - 1] == 0).all()


def test_training_from_a_pack_needs_neither_simulator_nor_reader_and_exports(packed, tmp_path):
    _, folder = packed
    blocked = "embodied", "mujoco", "av", "diffusers", "policies.data", "policies.registry"
    body = ("import runpy\n"
            f"sys.argv = ['gpu_implicit', 'train', '--pack', {str(folder)!r}, '--out', {str(tmp_path / 'run')!r},"
            " '--steps', '4', '--batch-size', '4', '--checkpoint-every', '2', '--device', 'cpu', '--quiet']\n"
            f"runpy.run_path({str(ROOT / 'tools' / 'gpu_implicit.py')!r}, run_name='__main__')\n")
    done = run_without(blocked, body, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["steps"] == 4 and result["checkpoint"].endswith("step_0000004")
    head = load_run(tmp_path / "run")
    assert head.config.memory == "implicit"
    export_run(tmp_path / "run", tmp_path / "exported")
    policy = load_exported(tmp_path / "exported")
    assert policy.config.vocab == head.config.vocab
