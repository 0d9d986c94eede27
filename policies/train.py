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

from embodied.planner.calls import SKILL_IDS
from policies.augment import mirror_windows
from policies.checkpoint import atomic_write_json, read_json
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
from policies.export import load_run
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


def draw_order(windows: SkillWindows, oversample_far: tuple | None) -> torch.Tensor:
    """(M,) window indices an epoch draws from: every window once, and those whose call target lies farther
    than ``metres`` from the robot ``k`` times (``oversample_far=(metres, k[, axis[, skills]])``: robot frame,
    the xy distance or its ``"x"`` or ``"y"`` part, windows of ``skills`` only if named)."""
    n = len(windows)
    order = torch.arange(n)
    if oversample_far is None or oversample_far[1] == 1:
        return order
    metres, k, axis, skills = (tuple(oversample_far) + ("xy", ()))[:4]
    rel = relative_params(windows.data["observation.state"][:, -1], windows.data["skill.params"], windows.robot)
    offset = {"xy": rel[:, :2].norm(dim=-1), "x": rel[:, 0].abs(), "y": rel[:, 1].abs()}[axis]
    chosen = offset > metres
    if skills:
        unknown = [s for s in skills if s not in windows.skills]
        if unknown:
            raise ValueError(f"oversample_far names the skill {unknown[0]!r}; the data has {list(windows.skills)}")
        sid = windows.data["skill.id"].reshape(n, -1)[:, 0]
        chosen &= torch.isin(sid, torch.tensor([SKILL_IDS[s] for s in skills]))
    far = torch.nonzero(chosen).flatten()
    return torch.cat([order, far.repeat(int(k) - 1)])


def _head_config(cfg: TrainConfig, config_cls: type, defaults: Any, windows: SkillWindows) -> Any:
    """A fresh head's configuration: the options given, and the widths the data fixes."""
    options = dict(cfg.head_options)
    if options.get("guide_dim") not in (None, windows.guide_dim):
        raise ValueError(f"guide_dim={options['guide_dim']} but the data's skill.guide has {windows.guide_dim} values")
    options["guide_dim"] = windows.guide_dim
    options.update(state_dim=int(windows.data["observation.state"].shape[-1]),
                   action_dim=int(windows.data["action"].shape[-1]), cameras=tuple(cfg.cameras),
                   skills=windows.skills,
                   image_size=int(windows.data[f"observation.images.{cfg.cameras[0]}"].shape[-1]) if cfg.cameras
                   else defaults.image_size)
    return config_cls(**options)


def _init_source(cfg: TrainConfig):
    """The head whose configuration and normaliser a fine-tune (``init_from``) keeps, and whose weights start it
    (a resumed fine-tune then loads its own checkpoint over them), or None."""
    if cfg.init_from is None:
        return None
    saved = read_json(Path(cfg.init_from) / "config.json") if (Path(cfg.init_from) / "config.json").is_file() else {}
    if saved.get("head", cfg.head) != cfg.head:
        raise ValueError(f"--init-from {cfg.init_from} is a {saved.get('head')!r} run, not {cfg.head!r}")
    if cfg.head_options:
        raise ValueError(f"--init-from takes the head's options from {cfg.init_from}; drop --set "
                         f"{', '.join(sorted(cfg.head_options))}")
    return load_run(cfg.init_from).train()


def _fit_source(cfg: TrainConfig, source: Any, windows: SkillWindows) -> tuple[Any, dict]:
    """The configuration and normaliser statistics of a fine-tune: the source head's, checked against the data."""
    head_cfg = source.config
    have = (int(windows.data["observation.state"].shape[-1]), int(windows.data["action"].shape[-1]), windows.skills)
    want = (head_cfg.state_dim, head_cfg.action_dim, tuple(head_cfg.skills))
    if have != want or tuple(head_cfg.cameras) != tuple(cfg.cameras):
        raise ValueError(f"--init-from {cfg.init_from} was trained on (state, action, skills) = {want} and cameras "
                         f"{list(head_cfg.cameras)}; the data gives {have} and cameras {list(cfg.cameras)}")
    return head_cfg, source.normalizer.to_json()


def _mirrored_ids(cfg: TrainConfig, windows: SkillWindows) -> frozenset[int]:
    """Skill ids whose windows are mirrored (``mirror_skills``), checked against the data."""
    missing = [s for s in cfg.mirror_skills if s not in windows.skills]
    if missing:
        raise ValueError(f"--mirror {missing[0]!r} is not among the data's skills {list(windows.skills)}")
    if cfg.mirror_skills and windows.robot != "arm":
        raise ValueError("--mirror goes with the arm's skills (the workcell demos)")
    return frozenset(SKILL_IDS[s] for s in cfg.mirror_skills)


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
    source = _init_source(cfg)
    defaults = source.config if source is not None else \
        config_cls(**{k: v for k, v in cfg.head_options.items() if k in ("obs_horizon", "horizon")})
    windows, dataset_stats = _open_windows(cfg, defaults, progress=cfg.progress and main)
    if source is not None:
        head_cfg, stats = _fit_source(cfg, source, windows)
        model = source.to(device)
    else:
        stats = windows.stats(dataset_stats)
        head_cfg = _head_config(cfg, config_cls, defaults, windows)
        torch.manual_seed(cfg.seed)
        model = build_head(cfg.head, head_cfg, stats).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    ema = EMA(model) if cfg.ema else None
    start = restore(ckpt, model, opt, ema)
    if main:
        start_run(out, {"head": cfg.head, "head_config": config_to_dict(head_cfg),
                        "train": json.loads(json.dumps(dataclasses.asdict(cfg)))}, stats, start)
    order = draw_order(windows, cfg.oversample_far)
    mirrored = _mirrored_ids(cfg, windows)

    def batch_fn(idx: torch.Tensor) -> dict[str, torch.Tensor]:
        batch = windows.batch(order[idx])
        return mirror_windows(batch, mirrored) if mirrored else batch

    first_loss, last_loss, saved, elapsed, timed = fit(cfg, model, opt, ema, batch_fn, len(order), out, start,
                                                       device, world, rank, local_rank, desc=f"train {cfg.head}")
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
