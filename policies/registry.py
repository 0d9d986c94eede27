"""Head names -> (config class, model class); configs to and from JSON; loading a training run.

A run *or* an exported head folder loads through :func:`policies.export.load_run`.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any

from policies.act import ACTConfig, ACTHead
from policies.checkpoint import CheckpointError, latest_checkpoint, load_checkpoint, read_json
from policies.config_json import config_from_dict, config_to_dict  # noqa: F401  (imported from here too)
from policies.diffusion import DiffusionConfig, DiffusionHead
from policies.head import HeadBase, HeadConfig
from policies.memory_policy.configuration import MemoryPolicyConfig
from policies.memory_policy.modeling import MemoryPolicy

# Skill heads (diffusion, act) and the high-level policy choosing skill calls (memory): one run folder
# and export format for all.
HEADS: dict[str, tuple[type, type]] = {
    "diffusion": (DiffusionConfig, DiffusionHead),
    "act": (ACTConfig, ACTHead),
    "memory": (MemoryPolicyConfig, MemoryPolicy),
}


def head_classes(name: str) -> tuple[type[HeadConfig], type[HeadBase]]:
    if name not in HEADS:
        raise ValueError(f"unknown head {name!r}; heads: {', '.join(HEADS)}")
    return HEADS[name]


def parse_options(cls: type[HeadConfig], pairs: list[str]) -> dict[str, Any]:
    """``key=value`` strings -> typed head options (``down_dims=32,64,128``, ``use_vae=true``)."""
    fields = {f.name for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or key not in fields:
            raise ValueError(f"--set expects key=value with key one of {', '.join(sorted(fields))}; got {pair!r}")
        hint = str(hints[key])
        if "tuple" in hint:
            items = [v.strip() for v in value.split(",") if v.strip()]
            out[key] = tuple(int(v) if "int" in hint else v for v in items)
        elif value.lower() in ("none", "null"):
            out[key] = None
        elif "bool" in hint:
            if value.lower() not in ("true", "false", "1", "0"):
                raise ValueError(f"--set {key}: expected true or false, got {value!r}")
            out[key] = value.lower() in ("true", "1")
        elif "float" in hint:
            out[key] = float(value)
        elif "int" in hint:
            out[key] = int(value)
        else:
            out[key] = value
    return out


def build_head(name: str, config: HeadConfig | dict, stats: dict[str, dict]) -> HeadBase:
    config_cls, model_cls = head_classes(name)
    if isinstance(config, dict):
        config = config_from_dict(config_cls, config)
    return model_cls(config, stats)


def load_trained(run: str | Path, weights: str = "ema") -> HeadBase:
    """The head of a training run (its latest checkpoint; ``weights`` "ema" or "model"), in eval mode."""
    run = Path(run)
    if not run.is_dir():
        raise ValueError(f"run folder {run} does not exist")
    cfg = read_json(run / "config.json")
    if "head" not in cfg or "head_config" not in cfg:
        raise CheckpointError(run / "config.json", "lacks 'head' or 'head_config'")
    stats = read_json(run / "stats.json")
    path = latest_checkpoint(run)
    if path is None:
        raise CheckpointError(run / "latest.json", "missing: the run has no checkpoint yet")
    _, parts = load_checkpoint(path, ("model",))
    state = parts["model"]
    if weights == "ema":
        try:
            state = load_checkpoint(path, ("ema",))[1]["ema"]["shadow"]
        except CheckpointError as exc:
            if "has no part" not in exc.problem:
                raise
    try:
        model = build_head(cfg["head"], config_from_dict(head_classes(cfg["head"])[0], cfg["head_config"],
                                                          str(run / "config.json")), stats)
        model.load_state_dict(state)
    except (RuntimeError, KeyError) as exc:
        raise CheckpointError(path, f"weights do not fit the head in config.json ({exc})") from None
    return model.eval()
