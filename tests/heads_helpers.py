"""Shared pieces of the learned-head tests: one tiny recorded dataset per session, small head options."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

_DATASETS: dict[str, Path] = {}

# Tiny diffusion heads sample eagerly: tracing the DDIM loop costs seconds a head, and the traced sampler
# has its own test against the plain loop (test_heads.py); the shipped heads run traced in their tests.
TINY_DIFFUSION = {"down_dims": (16, 32, 64), "step_embed_dim": 32, "trace_inference": False}
TINY_ACT = {"dim_model": 64, "dim_feedforward": 128, "n_encoder_layers": 1, "n_decoder_layers": 1, "dropout": 0.0}


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Small models at small batches run fastest on one thread; two thrash when the cores are shared."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny_dataset(tmp_path_factory, episodes: int = 2, cameras: tuple[str, ...] = ("wrist",)) -> Path:
    """RememberColor expert demos (seeds 0..episodes-1), 32 px, recorded once per session."""
    key = f"{episodes}-{','.join(cameras)}"
    if key not in _DATASETS:
        from embodied.data.workers import RecordConfig, record

        out = tmp_path_factory.mktemp("demos") / "rc"
        record(RecordConfig(tasks=["RememberColor-v0"], episodes=episodes, out=out, image_size=32, cameras=cameras),
               progress=False)
        _DATASETS[key] = out
    return _DATASETS[key]


def weights(run: Path, part: str = "model") -> dict[str, torch.Tensor]:
    from policies.checkpoint import latest_checkpoint, load_checkpoint

    return load_checkpoint(latest_checkpoint(run), (part,))[1][part]


def run_without(blocked: tuple[str, ...], body: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run Python ``body`` in a fresh interpreter (one torch thread) where the ``blocked`` modules cannot be
    imported: what a machine without them (a lent GPU: no simulator, no video reader) would run."""
    code = f"import sys\nfor m in {tuple(blocked)!r}: sys.modules[m] = None\n{body}"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd)
