"""Train the segmenter on rendered frames (``embodied perception train``).

The loop, checkpoints, resume and log are the action heads' (``policies.loop``):
``RUN/config.json``, ``RUN/log.jsonl``, ``RUN/loss.png``, atomic checkpoints
(model, EMA, AdamW) every ``checkpoint_every`` steps; ``--resume`` goes on
from the last one. Step ``s`` always draws the same frames and the same
augmentation, so a resumed run repeats the uninterrupted one's loss curve.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from embodied.perception.learned.decode import measure_touching
from embodied.perception.learned.frames import load_frames
from embodied.perception.learned.model import SegmenterConfig, SegNet
from embodied.perception.learned.targets import instance_targets
from embodied.perception.learned.weights import RUN_KIND, load_segmenter
from policies.checkpoint import read_json
from policies.ema import EMA
from policies.loop import TrainConfig, check_resume, fit, resolve_device, restore, start_run


@dataclass
class SegTrainConfig:
    data: list[str]  # frames folders
    out: str
    steps: int = 3000
    batch_size: int = 16
    lr: float = 3e-3
    weight_decay: float = 1e-4
    warmup_steps: int = 100
    seed: int = 0
    threads: int = 1
    device: str = "auto"  # auto (CUDA when there is one), cpu or cuda
    checkpoint_every: int = 250
    log_every: int = 10
    resume: bool = False
    progress: bool = True
    flip: bool = True  # mirror frames left-right at random
    jitter: float = 0.15  # brightness and per-channel gain jitter (fraction)
    balance: float = 0.5  # class weights (median frequency / frequency) ** balance, in [0.25, 10]; 0 = none
    init_from: str | None = None  # a segmenter run or weights file whose weights start this run
    stop_at: int | None = None  # end (and checkpoint) at this step, on the schedule of ``steps``
    model: dict[str, Any] = field(default_factory=dict)  # SegmenterConfig fields, e.g. {"widths": [16, 32, 48, 64]}

    def loop_config(self) -> TrainConfig:
        return shared_loop_config(self, RUN_KIND)


def make_batch(frames, idx: np.ndarray, config: SegmenterConfig, rng: np.random.Generator | None,
               jitter: float = 0.0) -> dict[str, torch.Tensor]:
    """Tensors for ``SegNet.forward`` from frames ``idx``; ``rng`` draws flips and colour jitter."""
    rgb = frames.rgb[idx].astype(np.float32)
    depth = frames.depth[idx].astype(np.float32)
    inst = frames.instance[idx].astype(np.int64)
    sem = frames.semantic[idx].astype(np.int64)
    if rng is not None:
        flip = rng.random(len(idx)) < 0.5
        rgb[flip], depth[flip] = rgb[flip, :, ::-1], depth[flip, :, ::-1]
        inst[flip], sem[flip] = inst[flip, :, ::-1], sem[flip, :, ::-1]
        if jitter > 0:
            brightness = rng.uniform(-jitter, jitter, (len(idx), 1, 1, 1))
            tint = rng.uniform(-jitter, jitter, (len(idx), 1, 1, 3)) / 3
            rgb = rgb * (1 + brightness + tint)
    heat, offset, weight = zip(*(instance_targets(i, config.centre_sigma, config.small_pixels, config.small_weight)
                                 for i in inst))
    return {
        "rgb": torch.from_numpy(np.clip(rgb, 0, 255).astype(np.uint8)),
        "depth": torch.from_numpy(np.ascontiguousarray(depth)),
        "instance": torch.from_numpy(np.ascontiguousarray(inst)),
        "semantic": torch.from_numpy(np.ascontiguousarray(sem)),
        "centre": torch.from_numpy(np.stack(heat)),
        "offset": torch.from_numpy(np.stack(offset)),
        "weight": torch.from_numpy(np.stack(weight)),
    }


def class_weights(frames, balance: float) -> list[float]:
    """Cross-entropy weight per semantic index from the frames' pixel counts: rare classes (a bottle, a
    button) weigh more than the floor and the walls."""
    n = len(frames.classes) + 1
    if balance <= 0:
        return []
    counts = np.zeros(n)
    for i in range(0, len(frames), 256):
        counts += np.bincount(frames.semantic[i:i + 256].ravel(), minlength=n)[:n]
    freq = counts / counts.sum()
    seen = freq > 0
    w = np.ones(n)
    w[seen] = np.clip((np.median(freq[seen]) / freq[seen]) ** balance, 0.25, 10.0)
    return [round(float(x), 4) for x in w]


def shared_loop_config(cfg, kind: str) -> TrainConfig:
    """The shared loop's configuration (``policies.loop``) from a perception trainer's config: ``data`` (a
    list of frames folders), ``out``, the schedule, checkpointing, logging and device fields."""
    return TrainConfig(head=kind, data=",".join(cfg.data), out=cfg.out, steps=cfg.steps, batch_size=cfg.batch_size,
                       lr=cfg.lr, weight_decay=cfg.weight_decay, warmup_steps=cfg.warmup_steps, seed=cfg.seed,
                       threads=cfg.threads, checkpoint_every=cfg.checkpoint_every, log_every=cfg.log_every,
                       resume=cfg.resume, progress=cfg.progress, device=cfg.device)


def open_run(cfg) -> tuple[TrainConfig, Path, Path | None]:
    """For a training config with ``threads``, ``out`` and ``loop_config()``: torch's threads set, the
    loop's config checked (``--device cuda`` with no CUDA device fails here), and the checkpoint to resume
    from (None: a fresh run)."""
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    loop = cfg.loop_config()
    loop.validate()
    out = Path(cfg.out)
    return loop, out, check_resume(out, loop)


def optimiser(model: torch.nn.Module, cfg, ckpt: Path | None,
              loop: TrainConfig) -> tuple[torch.optim.Optimizer, EMA, int, torch.device]:
    """``model`` moved to the loop's device; AdamW and an EMA of it, restored from ``ckpt`` if given; the
    step to go on from, and the device."""
    device = resolve_device(loop.device)
    model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    ema = EMA(model, max_decay=0.999)
    return opt, ema, restore(ckpt, model, opt, ema), device


def run_summary(out: Path, start: int, steps: int, fitted: tuple, model: torch.nn.Module) -> dict[str, Any]:
    """What a training call returns, from ``fit``'s result."""
    first, last, saved, seconds, timed = fitted
    return {"run": str(out), "start_step": start, "steps": steps, "first_loss": first, "final_loss": last,
            "step_ms": round(seconds / max(timed, 1) * 1e3, 1), "device": str(next(model.parameters()).device),
            "params": sum(p.numel() for p in model.parameters()), "checkpoint": str(saved) if saved else None}


def train_segmenter(cfg: SegTrainConfig) -> dict[str, Any]:
    """Train (or resume) a segmenter run; returns a summary."""
    loop, out, ckpt = open_run(cfg)
    if ckpt is not None:
        net_cfg = SegmenterConfig.from_json(read_json(out / "config.json")["segmenter"])
        frames = load_frames(cfg.data, net_cfg.classes)
    else:
        source = load_segmenter(cfg.init_from) if cfg.init_from else None
        frames = load_frames(cfg.data, source.config.classes if source else None)
        base = dataclasses.asdict(source.config) if source else {"classes": frames.classes}
        base.update(cfg.model)
        net_cfg = SegmenterConfig.from_json({**base, "class_weights": class_weights(frames, cfg.balance),
                                             "touching": list(measure_touching(frames))})
    torch.manual_seed(cfg.seed)
    model = SegNet(net_cfg)
    if ckpt is None and cfg.init_from:
        model.load_state_dict(source.state_dict())
    opt, ema, start, device = optimiser(model, cfg, ckpt, loop)
    start_run(out, {"head": RUN_KIND, "segmenter": net_cfg.to_json(),
                    "train": json.loads(json.dumps(dataclasses.asdict(cfg)))},
              {"frames": len(frames), "classes": list(net_cfg.classes)}, start)

    def batch_fn(idx: torch.Tensor) -> dict[str, torch.Tensor]:
        # Seeded by the batch's frames and the step's torch seed: a resumed run draws the same augmentation.
        rng = np.random.default_rng([cfg.seed, int(torch.randint(1 << 30, (1,)))])
        return make_batch(frames, idx.numpy(), net_cfg, rng if cfg.flip else None, cfg.jitter)

    fitted = fit(loop, model, opt, ema, batch_fn, len(frames), out, start, device,
                 desc="train segmenter", stop=cfg.stop_at)
    return {**run_summary(out, start, cfg.steps, fitted, model), "frames": len(frames),
            "classes": len(net_cfg.classes)}
