"""Train a head on recorded demonstrations: resumable, deterministic, DDP-ready.

    result = train(TrainConfig(head="diffusion", data="demos/", out="runs/d1", steps=2000))

The loop, seeding and checkpoints are :mod:`policies.loop`'s (shared with the
high-level policy). Under ``torchrun --nproc-per-node N`` (``WORLD_SIZE`` > 1) the
model is wrapped in DistributedDataParallel (gloo on CPU, NCCL on CUDA); each rank
takes its share of the global batch, and at the end the ranks' weights are compared
(``ddp_max_weight_diff``).
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from policies.checkpoint import atomic_write_json
from policies.conditioning import relative_params
from policies.data import SkillWindows
from policies.ema import EMA
from policies.loop import (  # noqa: F401  (TrainConfig and the loop's names are imported from here too)
    RUN_ENTRIES,
    TrainConfig,
    batch_indices,
    check_resume,
    fit,
    lr_factor,
    plot_losses,
    resolve_device,
    restore,
    start_run,
)
from policies.registry import build_head, config_to_dict, head_classes


def _open_dataset(cfg: TrainConfig, obs_horizon: int, horizon: int):
    from embodied.data import DemoDataset

    return DemoDataset(cfg.data, obs_horizon=obs_horizon, action_horizon=horizon, cameras=list(cfg.cameras))


def _open_windows(cfg: TrainConfig, defaults: Any, progress: bool) -> tuple[SkillWindows, dict]:
    """The training windows and the dataset's statistics: from the recorded demos, or from a pack
    (``SkillWindows.save``: a machine with torch alone, no simulator or video reader, trains on it)."""
    if not SkillWindows.is_pack(cfg.data):
        dataset = _open_dataset(cfg, defaults.obs_horizon, defaults.horizon)
        # Route features (skill.guide) condition the head wherever the data has them, unless guide_dim=0 is set.
        use_guide = cfg.head_options.get("guide_dim", None) != 0
        return SkillWindows(dataset, cfg.skills, cfg.cameras, progress=progress, guide=use_guide), dataset.stats
    windows, dataset_stats = SkillWindows.load(cfg.data)
    packed = (windows.obs_horizon, windows.horizon, windows.cameras)
    if packed != (defaults.obs_horizon, defaults.horizon, tuple(cfg.cameras)):
        raise ValueError(f"pack {cfg.data} holds obs_horizon, horizon, cameras = {packed}; this run asks for "
                         f"{(defaults.obs_horizon, defaults.horizon, tuple(cfg.cameras))}: pack it again with those")
    if cfg.skills and tuple(cfg.skills) != windows.skills:
        raise ValueError(f"pack {cfg.data} holds the skills {list(windows.skills)}; this run asks for "
                         f"{list(cfg.skills)}: pack it again with those")
    if cfg.head_options.get("guide_dim", None) == 0 and windows.guide_dim:
        windows.data.pop("skill.guide")
    return windows, dataset_stats


def draw_order(windows: SkillWindows, oversample_far: tuple[float, int] | None) -> torch.Tensor:
    """(M,) window indices an epoch draws from: every window once, and those whose call target lies farther
    than ``metres`` (xy, robot frame) from the robot ``k`` times (``oversample_far=(metres, k)``)."""
    n = len(windows)
    order = torch.arange(n)
    if oversample_far is None or oversample_far[1] == 1:
        return order
    metres, k = oversample_far
    rel = relative_params(windows.data["observation.state"][:, -1], windows.data["skill.params"], windows.robot)
    far = torch.nonzero(rel[:, :2].norm(dim=-1) > metres).flatten()
    return torch.cat([order, far.repeat(int(k) - 1)])


def train(cfg: TrainConfig) -> dict[str, Any]:
    cfg.validate()
    head_classes(cfg.head)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = resolve_device(cfg.device, local_rank)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    if cfg.batch_size % world:
        raise ValueError(f"batch size {cfg.batch_size} must divide evenly over {world} ranks")
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    main = rank == 0
    out = Path(cfg.out)
    ckpt = check_resume(out, cfg)

    config_cls, _ = head_classes(cfg.head)
    defaults = config_cls(**{k: v for k, v in cfg.head_options.items() if k in ("obs_horizon", "horizon")})
    windows, dataset_stats = _open_windows(cfg, defaults, progress=cfg.progress and main)
    stats = windows.stats(dataset_stats)
    options = dict(cfg.head_options)
    if options.get("guide_dim") not in (None, windows.guide_dim):
        raise ValueError(f"guide_dim={options['guide_dim']} but the data's skill.guide has {windows.guide_dim} values")
    options["guide_dim"] = windows.guide_dim
    options.update(state_dim=int(windows.data["observation.state"].shape[-1]),
                   action_dim=int(windows.data["action"].shape[-1]), cameras=tuple(cfg.cameras),
                   skills=windows.skills,
                   image_size=int(windows.data[f"observation.images.{cfg.cameras[0]}"].shape[-1]) if cfg.cameras
                   else defaults.image_size)
    head_cfg = config_cls(**options)
    torch.manual_seed(cfg.seed)
    model = build_head(cfg.head, head_cfg, stats).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    ema = EMA(model) if cfg.ema else None
    start = restore(ckpt, model, opt, ema)
    if main:
        start_run(out, {"head": cfg.head, "head_config": config_to_dict(head_cfg),
                        "train": json.loads(json.dumps(dataclasses.asdict(cfg)))}, stats, start)
    order = draw_order(windows, cfg.oversample_far)
    first_loss, last_loss, saved, elapsed, timed = fit(cfg, model, opt, ema, lambda idx: windows.batch(order[idx]),
                                                       len(order), out, start, device, world, rank, local_rank,
                                                       desc=f"train {cfg.head}")
    result = {"run": str(out), "head": cfg.head, "skills": list(windows.skills), "frames": len(windows),
              "draws": len(order), "start_step": start, "steps": cfg.steps, "first_loss": first_loss,
              "final_loss": last_loss,
              "step_ms": round(elapsed / max(timed, 1) * 1e3, 2), "world_size": world, "device": str(device),
              "params": sum(p.numel() for p in model.parameters()),
              "checkpoint": str(saved) if saved else None}
    if world > 1:
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        gathered = [torch.zeros_like(flat) for _ in range(world)]
        dist.all_gather(gathered, flat)
        result["ddp_max_weight_diff"] = max(float((g - gathered[0]).abs().max()) for g in gathered)
        if main:
            atomic_write_json(out / "ddp.json", {"world_size": world, "max_weight_diff": result["ddp_max_weight_diff"]})
        dist.barrier()
        dist.destroy_process_group()
    return result
