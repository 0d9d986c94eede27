"""Inference speed of the heads: one ``predict_action_chunk`` for one observation (batch 1)."""

from __future__ import annotations

import os
import time

import numpy as np
import torch
from policies.export import load_run

from policies.registry import HEADS, build_head

TARGET_MS = {"diffusion": 15.0, "act": 5.0}  # DDIM-10 chunk; transformer chunk


def synthetic_stats(state_dim: int = 22, action_dim: int = 5) -> dict[str, dict]:
    """Unit statistics, for timing a fresh head (values do not change its cost)."""
    def unit(n: int) -> dict[str, list[float]]:
        return {"mean": [0.0] * n, "std": [1.0] * n, "min": [-1.0] * n, "max": [1.0] * n}
    return {"observation.state": unit(state_dim), "action": unit(action_dim), "skill.params_rel": unit(9)}


def example_batch(model, seed: int = 0) -> dict[str, torch.Tensor]:
    cfg = model.config
    g = torch.Generator().manual_seed(seed)
    batch = {"observation.state": torch.randn(1, cfg.obs_horizon, cfg.state_dim, generator=g) * 0.1,
             "skill.id": torch.tensor([0]), "skill.params": torch.randn(1, 8, generator=g) * 0.1}
    if cfg.state_dim == 22:
        batch["observation.state"][..., 17] = 1.0  # a unit quaternion
    if cfg.guide_dim:
        batch["skill.guide"] = torch.randn(1, cfg.guide_dim, generator=g) * 0.1
    if cfg.needs_elapsed():
        batch["skill.elapsed"] = torch.tensor([20.0])
    for cam in cfg.cameras:
        batch[f"observation.images.{cam}"] = torch.rand(1, cfg.obs_horizon, 3, cfg.image_size, cfg.image_size,
                                                        generator=g)
    return batch


def time_chunk(model, repeats: int = 50, warmup: int = 5) -> list[float]:
    model.eval()
    batch = example_batch(model)
    for _ in range(warmup):
        model.predict_action_chunk(batch)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        model.predict_action_chunk(batch)
        times.append((time.perf_counter() - t) * 1e3)
    return times


def bench_heads(heads: list[str], run: str | None = None, repeats: int = 50, threads: int = 1) -> list[dict]:
    """Median/p90 ms per chunk; batch-1 inference of these small heads is fastest on one thread."""
    torch.set_num_threads(threads)
    rows = []
    models = [load_run(run)] if run else [build_head(h, HEADS[h][0](), synthetic_stats()) for h in heads]
    for model in models:
        load = os.getloadavg()[0]  # timings on a shared machine move with its load: report it beside them
        times = time_chunk(model, repeats)
        cfg = model.config
        row = {"head": model.name, "run": run, "params": sum(p.numel() for p in model.parameters()),
               "horizon": cfg.horizon, "cameras": list(cfg.cameras), "threads": torch.get_num_threads(),
               "chunk_ms_median": round(float(np.median(times)), 3), "chunk_ms_p90": round(float(np.percentile(times, 90)), 3),
               "target_ms": TARGET_MS[model.name], "load_1min": round(load, 2)}
        if model.name == "diffusion":
            row["inference_steps"] = cfg.num_inference_steps
        row["meets_target"] = row["chunk_ms_median"] <= row["target_ms"]
        rows.append(row)
    return rows
