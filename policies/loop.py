"""The training loop every learned policy shares: configuration, seeded batches, checkpoints, resume.

    first, last, saved, seconds, steps = fit(cfg, model, opt, ema, batch_fn, n_items, out, start, device)

It needs only torch (no simulator, no dataset reader), so a policy whose batches
come from elsewhere (a packed copy of the data on another machine,
``tools/gpu_implicit.py``) trains with exactly the loop that ``embodied train`` runs.

* Batches are drawn from a per-epoch permutation seeded by ``(seed, epoch)``; step
  ``s`` always sees the same global batch, and every step reseeds torch's RNG from
  ``(seed, rank, s)``: the same seed gives the same loss curve, with or without a
  ``resume`` in between.
* Every ``checkpoint_every`` steps (and at the end) rank 0 writes an atomic checkpoint
  (weights, EMA, AdamW state) and redraws ``loss.png``; ``log.jsonl`` gets a line
  every ``log_every`` steps. A kill loses at most one checkpoint interval.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from tqdm import tqdm

from policies.checkpoint import (
    CheckpointError,
    atomic_write_bytes,
    atomic_write_json,
    latest_checkpoint,
    load_checkpoint,
    read_json,
    save_checkpoint,
)
from policies.ema import EMA


@dataclass
class TrainConfig:
    head: str
    data: str
    out: str
    steps: int = 2000
    batch_size: int = 64  # global: split across DDP ranks
    lr: float = 5e-4
    weight_decay: float = 1e-6
    warmup_steps: int = 50
    grad_clip: float = 10.0
    seed: int = 0
    device: str = "auto"
    threads: int = 1  # torch CPU threads per process (0: torch's default); 1 avoids thrashing on shared cores
    checkpoint_every: int = 500
    log_every: int = 10
    keep_checkpoints: int = 2
    skills: tuple[str, ...] = ()  # only these skills' frames (default: every skill in the data)
    cameras: tuple[str, ...] = ()  # image inputs, e.g. ("wrist",)
    ema: bool = True
    resume: bool = False
    progress: bool = True
    # (metres, k[, axis[, skills]]): windows whose call target lies farther than metres from the robot (robot
    # frame; axis "xy" (default), "x" or "y"), of the given skills only if named, are drawn k times as often
    # (the skill heads only): long carries, and carries toward the robot, are a few percent of the windows
    oversample_far: tuple | None = None
    # the arm's skill heads: windows of these skills (e.g. ("pick", "place")) mirrored in x and y about the
    # gripper at random (policies.augment: the demonstrator's per-axis controller makes them demonstrations too)
    mirror_skills: tuple[str, ...] = ()
    # a run whose latest weights (its EMA where kept) start this one: a fine-tune with a schedule of its own;
    # the head's config and normaliser come from that run, so the data must be the same kind
    init_from: str | None = None
    head_options: dict[str, Any] = field(default_factory=dict)  # HeadConfig fields, e.g. {"down_dims": [32, 64, 128]}

    def validate(self) -> None:
        if self.steps < 1 or self.batch_size < 1 or self.checkpoint_every < 1 or self.log_every < 1:
            raise ValueError("steps, batch_size, checkpoint_every and log_every must be >= 1")
        if self.oversample_far is not None:
            far = tuple(self.oversample_far)
            metres, k = (far + (0, 0))[:2]
            if not 2 <= len(far) <= 4 or metres <= 0 or int(k) != k or k < 1 or \
                    (len(far) > 2 and far[2] not in ("xy", "x", "y")):
                raise ValueError(f"oversample_far takes (metres > 0, k >= 1 whole[, axis xy|x|y[, skills]]), "
                                 f"got {self.oversample_far}")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be auto, cpu or cuda, got {self.device!r}")
        if self.device == "cuda" and not torch.cuda.is_available():
            raise ValueError("--device cuda: no CUDA device is available")


def resolve_device(name: str, local_rank: int = 0) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(f"cuda:{local_rank}") if name == "cuda" else torch.device("cpu")


def batch_indices(step: int, batch_size: int, n: int, seed: int, rank: int = 0, world: int = 1) -> torch.Tensor:
    """The ``rank``-th share of global batch ``step`` from an endless stream of seeded permutations."""
    start, stop = step * batch_size, (step + 1) * batch_size
    out, epoch = [], start // n
    while epoch * n < stop:
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 1_000_003 + epoch))
        lo, hi = max(start - epoch * n, 0), min(stop - epoch * n, n)
        out.append(perm[lo:hi])
        epoch += 1
    return torch.cat(out)[rank::world]


def lr_factor(step: int, warmup: int, total: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warmup) / max(1, total - warmup))))


def plot_losses(log_path: Path, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    ax.plot([r["step"] for r in rows], [r["loss"] for r in rows], lw=1)
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(log_path.parent.name)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    tmp = png.with_name(f".{png.name}.tmp.png")
    fig.savefig(tmp)
    plt.close(fig)
    os.replace(tmp, png)


RUN_ENTRIES = {"config.json", "stats.json", "log.jsonl", "loss.png", "latest.json", "checkpoints"}


def check_resume(out: Path, cfg: TrainConfig) -> Path | None:
    """The checkpoint to resume from (None: fresh run); refuses to mix runs, and to write into a folder
    that holds something else (a dataset given as --out by mistake)."""
    ckpt = latest_checkpoint(out) if out.exists() else None
    if ckpt is None:
        foreign = sorted(p.name for p in out.iterdir() if p.name not in RUN_ENTRIES) if out.is_dir() else []
        if foreign:
            raise ValueError(f"--out {out} holds {', '.join(foreign[:4])}, not a run: pick an empty or new folder")
        return None
    if not cfg.resume:
        raise ValueError(f"{out} already holds a run (checkpoint {ckpt.name}); pass --resume or pick another --out")
    saved = read_json(out / "config.json")
    if saved.get("head") != cfg.head:
        raise CheckpointError(out / "config.json", f"is a {saved.get('head')!r} run, not {cfg.head!r}")
    return ckpt


def fit(cfg: TrainConfig, model: torch.nn.Module, opt: torch.optim.Optimizer, ema: EMA | None, batch_fn,
        n_items: int, out: Path, start: int, device: torch.device, world: int = 1, rank: int = 0,
        local_rank: int = 0, desc: str = "train", stop: int | None = None
        ) -> tuple[float | None, float | None, Path | None, float, int]:
    """The training loop shared by every learned policy: steps ``start..cfg.steps`` (``..stop`` if given: a
    run cut short on its schedule, checkpointed there) of
    ``model(batch_fn(indices))["loss"]``, logged to ``out/log.jsonl`` (with the model's other outputs)
    and checkpointed atomically; returns (first loss, last loss, last checkpoint, seconds, steps run)."""
    main = rank == 0
    net = model
    if world > 1:
        net = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if device.type == "cuda" else None)
    model.train()
    log = open(out / "log.jsonl", "a") if main else None
    end = min(cfg.steps, stop) if stop else cfg.steps
    bar = tqdm(range(start, end), initial=start, total=cfg.steps, desc=desc,
               disable=not (cfg.progress and main), unit="step")
    first_loss = last_loss = None
    saved, t0, timed = None, time.perf_counter(), 0
    for step in bar:
        torch.manual_seed(cfg.seed * 1_000_003 + rank * 7919 + step)
        for group in opt.param_groups:
            group["lr"] = cfg.lr * lr_factor(step, cfg.warmup_steps, cfg.steps)
        idx = batch_indices(step, cfg.batch_size, n_items, cfg.seed, rank, world)
        batch = {k: v.to(device) for k, v in batch_fn(idx).items()}
        outputs = net(batch)
        loss = outputs["loss"]
        if not torch.isfinite(loss):
            raise FloatingPointError(f"loss became {float(loss)} at step {step}")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        if ema is not None:
            ema.update(model)
        last_loss = float(loss.detach())
        first_loss = last_loss if first_loss is None else first_loss
        timed += 1
        if main and (step % cfg.log_every == 0 or step + 1 == end):
            row = {"step": step, "loss": last_loss, "lr": opt.param_groups[0]["lr"],
                   **{k: float(v.detach()) for k, v in outputs.items() if k != "loss"}}
            log.write(json.dumps(row) + "\n")
            log.flush()
            bar.set_postfix(loss=f"{last_loss:.4f}")
        if (step + 1) % cfg.checkpoint_every == 0 or step + 1 == end:
            if main:
                parts: dict[str, Any] = {"model": model.state_dict(), "optimizer": opt.state_dict()}
                if ema is not None:
                    parts["ema"] = ema.state_dict()
                saved = save_checkpoint(out, step + 1, parts, cfg.keep_checkpoints)
                plot_losses(out / "log.jsonl", out / "loss.png")
            if world > 1:
                dist.barrier()
    elapsed = time.perf_counter() - t0
    if log is not None:
        log.close()
    return first_loss, last_loss, saved, elapsed, timed


def restore(ckpt: Path | None, model: torch.nn.Module, opt: torch.optim.Optimizer, ema: EMA | None) -> int:
    """Load a checkpoint into the run's model, optimizer and EMA; the step to go on from (0: none)."""
    if ckpt is None:
        return 0
    start, parts = load_checkpoint(ckpt)
    try:
        model.load_state_dict(parts["model"])
        opt.load_state_dict(parts["optimizer"])
        if ema is not None:
            ema.load_state_dict(parts["ema"])
    except (RuntimeError, KeyError, ValueError) as exc:
        raise CheckpointError(ckpt, f"does not fit this run's model ({exc})") from None
    return start


def start_run(out: Path, config: dict, stats: dict, start: int) -> None:
    """Write the run's config.json and stats.json; keep the log lines of steps before ``start``."""
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "config.json", config)
    atomic_write_json(out / "stats.json", stats)
    log_path = out / "log.jsonl"
    kept = [ln for ln in (log_path.read_text().splitlines() if log_path.exists() else [])
            if ln.strip() and json.loads(ln)["step"] < start]
    atomic_write_bytes(log_path, "".join(ln + "\n" for ln in kept).encode())
