"""Train the high-level policy on recorded decision points: the heads' run folder, loop and resume.

    result = train_memory_policy(TrainConfig(head="memory", data="demos/manip", out="runs/explicit"),
                                 ["demos/manip", "demos/nav"], memory="explicit")

The run folder is the action heads' (:mod:`policies.train`): config.json
(``head`` "memory", ``head_config`` the :class:`MemoryPolicyConfig` with the
vocabulary and statistics taken from the data), stats.json, log.jsonl,
loss.png and atomic checkpoints; ``resume`` goes on from the latest one with
the run's own vocabulary. ``result["train_accuracy"]`` scores the final
weights on the training decisions (skill, and target where one is pointed at;
with ``any_order``, ``choice``: skill and target both among the equally good).
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from policies.checkpoint import read_json
from policies.config_json import config_from_dict, config_to_dict
from policies.ema import EMA
from policies.loop import TrainConfig, check_resume, fit, resolve_device, restore, start_run
from policies.memory_policy.configuration import MemoryPolicyConfig
from policies.memory_policy.modeling import MemoryPolicy


def train_memory_policy(cfg: TrainConfig, roots: list[str], memory: str,
                        options: dict[str, Any] | None = None,
                        data_factory: Callable[[MemoryPolicyConfig], Any] | None = None) -> dict[str, Any]:
    """``data_factory(config)``: the decision points (``len``, ``batch(idx, train)``, ``fill_config``,
    ``config``) in place of reading ``roots`` with :class:`DecisionData` (tools/gpu_implicit.py's pack)."""
    cfg.validate()
    if cfg.head != "memory":
        raise ValueError(f"train_memory_policy trains the 'memory' head, not {cfg.head!r}")
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    device = resolve_device(cfg.device)
    out = Path(cfg.out)
    ckpt = check_resume(out, cfg)
    stats = None
    if ckpt is not None:  # the run's own vocabulary and statistics
        saved = read_json(out / "config.json")
        config = config_from_dict(MemoryPolicyConfig, saved["head_config"], str(out / "config.json"))
        if config.memory != memory:
            raise ValueError(f"{out} trains the {config.memory!r} memory input, not {memory!r}")
        stats = read_json(out / "stats.json")
    else:
        config = MemoryPolicyConfig(memory=memory, **(options or {}))
    config.validate()
    t0 = time.perf_counter()
    if data_factory is None:
        from policies.memory_policy.data import DecisionData  # reads the demos: the simulator's data side

        data = DecisionData(roots, config, progress=cfg.progress, seed=cfg.seed)
    else:
        data = data_factory(config)
    fresh_stats = data.fill_config(config)
    stats = stats or fresh_stats
    load_s = time.perf_counter() - t0
    torch.manual_seed(cfg.seed)
    model = MemoryPolicy(config, stats).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    ema = EMA(model) if cfg.ema else None
    start = restore(ckpt, model, opt, ema)
    train_cfg = json.loads(json.dumps(dataclasses.asdict(cfg)))
    train_cfg["data_roots"] = [str(r) for r in roots]
    start_run(out, {"head": "memory", "head_config": config_to_dict(config), "train": train_cfg}, stats, start)
    first, last, saved, elapsed, timed = fit(cfg, model, opt, ema, data.batch, len(data), out, start, device,
                                             desc=f"train memory:{memory}")
    if ema is not None:  # score the weights that ship (load_run takes the EMA)
        model.load_state_dict(ema.shadow)
    return {"run": str(out), "head": "memory", "memory": memory, "decisions": len(data),
            "episodes": len(data.episodes), "start_step": start, "steps": cfg.steps, "first_loss": first,
            "final_loss": last, "step_ms": round(elapsed / max(timed, 1) * 1e3, 2), "train_s": round(elapsed, 1),
            "load_s": round(load_s, 1), "params": sum(p.numel() for p in model.parameters()),
            "checkpoint": str(saved) if saved else None, "train_accuracy": accuracy(model, data)}


@torch.no_grad()
def accuracy(model: MemoryPolicy, data, batch: int = 64) -> dict[str, float]:
    """Skill and (explicit) target accuracy of ``model`` over ``data``'s decisions, in eval mode."""
    was = model.training
    model.eval()
    skill_ok, target_ok, pointed, choice_ok = 0, 0, 0, 0
    for lo in range(0, len(data), batch):
        idx = np.arange(lo, min(lo + batch, len(data)))
        b = data.batch(idx, train=False)
        hc, hm, valid = model._encode(b)
        skill = model.skill_head(hc).argmax(-1)
        skill_ok += int((skill == b["skill"]).sum())
        if model.config.memory == "explicit":
            want = (b["target"] >= 0) & (b["skill"] != model.stop)
            got = model._pointer(hc, hm, valid, b["skill"]).argmax(-1)
            target_ok += int(((got == b["target"]) & want).sum())
            pointed += int(want.sum())
        if "alt_skill" in b:  # the model's own choice among the equally good ones
            node = model._pointer(hc, hm, valid, skill).argmax(-1)
            alt = b["alt_target"]  # -1: a choice that points at nothing (only its skill counts)
            hit = (b["alt_skill"] == skill[:, None]) & ((alt < 0) | (alt == node[:, None])) & (b["alt_skill"] >= 0)
            choice_ok += int(hit.any(-1).sum())
    model.train(was)
    out = {"skill": skill_ok / max(len(data), 1)}
    if pointed:
        out["target"] = target_ok / pointed
    if data.config.any_order:
        out["choice"] = choice_ok / max(len(data), 1)
    return out
