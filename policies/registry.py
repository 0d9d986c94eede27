"""Head names -> (config class, model class); configs to and from JSON; loading a training run.

A run *or* an exported head folder loads through :func:`policies.export.load_run`.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any

from policies.act import ACTConfig, ACTHead
from policies.checkpoint import CheckpointError, build_to_fit, latest_checkpoint, load_checkpoint, read_json
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
    if not isinstance(cfg, dict) or "head" not in cfg or "head_config" not in cfg:
        raise CheckpointError(run / "config.json", "lacks 'head' or 'head_config'")
    stats = read_json(run / "stats.json")
    path = latest_checkpoint(run)
    if path is None:
        raise CheckpointError(run / "latest.json", "missing: the run has no checkpoint yet")
    _, parts = load_checkpoint(path, ("model",))
    state, has_ema = parts["model"], False
    if weights == "ema":
        try:
            ema = load_checkpoint(path, ("ema",))[1]["ema"]
        except CheckpointError as exc:
            if "has no part" not in exc.problem:
                raise
        else:
            if not isinstance(ema, dict) or "shadow" not in ema:
                raise CheckpointError(path / "ema.json", "holds no 'shadow' weights")
            state, has_ema = ema["shadow"], True
    return head_from_files(cfg, stats, state, run / "config.json", run / "stats.json",
                           path / ("ema.safetensors" if has_ema else "model.safetensors"))


def check_stats(stats: Any, path: Path) -> None:
    """stats.json: {feature: {statistic: a number or a list of numbers}} (the normaliser checks which)."""
    def numbers(v: Any) -> bool:
        return all(numbers(x) for x in v) if isinstance(v, list) else isinstance(v, (int, float)) and \
            not isinstance(v, bool)

    if not isinstance(stats, dict) or not all(
            isinstance(d, dict) and all(numbers(v) for v in d.values()) for d in stats.values()):
        raise CheckpointError(path, "expected {feature: {statistic: numbers}}")


def head_from_files(cfg: Any, stats: Any, state: Any, config_path: Path, stats_path: Path,
                    weights_path: Path) -> HeadBase:
    """The head config.json (``cfg``) and stats.json describe, with ``state`` loaded, in eval mode; every
    problem a CheckpointError naming the file (see :func:`policies.checkpoint.build_to_fit`)."""
    if not (isinstance(cfg, dict) and isinstance(cfg.get("head"), str) and cfg["head"] in HEADS
            and isinstance(cfg.get("head_config"), dict)):
        head = cfg.get("head") if isinstance(cfg, dict) else None
        raise CheckpointError(config_path, f"must name a head ({', '.join(HEADS)}; got {head!r}) and its head_config")
    check_stats(stats, stats_path)
    config_cls = head_classes(cfg["head"])[0]
    try:
        config = config_from_dict(config_cls, cfg["head_config"], str(config_path))
    except ValueError as exc:
        raise CheckpointError(config_path, str(exc).removeprefix(f"{config_path}: ")) from None
    return build_to_fit(lambda: build_head(cfg["head"], config, stats), state, config_path, weights_path)
