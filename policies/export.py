"""Shipped heads: one trained run's weights as a small, self-checking folder.

    export_run("runs/a1", "policies/checkpoints/act_manip")    # EMA weights, parameters stored as float16
    head = load_exported("policies/checkpoints/act_manip")       # float32 again, in eval mode

An exported folder holds only what inference needs::

    config.json          {"format", "head", "head_config", "source": {run, step, train config},
                          "agent_skills" (optional): the skills the demo runs by default}
    stats.json           the normaliser's statistics (also buffers inside the weights, kept float32)
    model.safetensors    the weights: parameters in ``dtype`` (float16 halves the size), buffers float32
    manifest.json        {"format", "sha256": {file: hash}}

No optimizer state and no training log: it cannot be resumed, only run. It is
written into a temporary folder and renamed into place. Loading checks every
file against the manifest, so a truncated or altered file raises
:class:`~policies.checkpoint.CheckpointError` naming it; nothing is unpickled.

Short names: ``resolve_run("act", "manip")`` is ``policies/checkpoints/act_manip`` when
that folder exists and no folder ``manip`` does, so ``--head act:manip`` runs the
shipped manipulation head.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from policies.checkpoint import CheckpointError, atomic_folder, read_json, sha256_file
from policies.head import HeadBase
from policies.registry import config_from_dict, head_classes, head_from_files, load_trained

FORMAT = "embodied-head-export/1"
SHIPPED = Path(__file__).resolve().parent / "checkpoints"
FILES = ("config.json", "stats.json", "model.safetensors")
# Head options that change only how the trained weights are run, so an export may set them.
INFERENCE_OPTIONS = ("n_action_steps", "temporal_ensemble_coeff", "ensemble_skills", "skill_ensemble_coeff",
                     "done_threshold", "done_patience", "done_threshold_skills", "skill_done_threshold",
                     "done_confirm", "num_inference_steps", "init_noise_scale", "max_repeats")


def is_exported(path: str | os.PathLike) -> bool:
    path = Path(path)
    return (path / "manifest.json").exists() and (path / "model.safetensors").exists()


def shipped_heads(kinds: tuple[str, ...] = ("act", "diffusion")) -> dict[str, Path]:
    """``{"act:manip": policies/checkpoints/act_manip, ...}``: the exported heads of ``kinds`` that ship in
    the repository (by default the skill heads; "memory" lists the high-level policies)."""
    if not SHIPPED.is_dir():
        return {}
    out = {}
    for d in sorted(SHIPPED.iterdir()):
        kind, sep, name = d.name.partition("_")
        if sep and kind in kinds and is_exported(d):
            out[f"{kind}:{name}"] = d
    return out


def agent_spec(short: str) -> str:
    """The head spec the demo runs for shipped head ``short`` ("act:manip"): restricted to the
    skills its config.json lists under ``agent_skills`` (those measured to work inside the agent),
    when it lists any."""
    path = shipped_heads().get(short)
    if path is None:
        raise ValueError(f"no shipped head {short!r}; shipped: {', '.join(shipped_heads()) or 'none'}")
    skills = read_json(path / "config.json").get("agent_skills") or []
    return f"{short}@{','.join(skills)}" if skills else short


def resolve_run(kind: str, run: str) -> Path:
    """The folder a head spec's ``run`` part names: a path, or the short name of a shipped head."""
    path = Path(run)
    if path.exists() or os.sep in run:
        return path
    shipped = SHIPPED / f"{kind}_{run}"
    return shipped if shipped.is_dir() else path


def export_run(run: str | os.PathLike, out: str | os.PathLike, weights: str = "ema",
               dtype: str = "float16", agent_skills: tuple[str, ...] = (), inference: dict | None = None) -> dict:
    """Write the latest checkpoint of training run ``run`` as an exported head in ``out``.

    ``weights``: "ema" (falls back to the raw weights when the run kept no EMA) or "model";
    ``dtype``: "float16" or "float32" for the parameters; ``agent_skills``: the skills the demo
    runs by default (:func:`agent_spec`; empty: all); ``inference``: settings of
    :data:`INFERENCE_OPTIONS` to ship instead of the run's (e.g. ACT's temporal ensembling:
    ``{"n_action_steps": 1, "temporal_ensemble_coeff": 0.01}``). Returns a summary (files, bytes, params).
    """
    if dtype not in ("float16", "float32"):
        raise ValueError(f"dtype must be float16 or float32, got {dtype!r}")
    run, out = Path(run), Path(out)
    model = load_trained(run, weights=weights)
    cfg = read_json(run / "config.json")
    latest = read_json(run / "latest.json")
    params = {name for name, _ in model.named_parameters()}
    state = {}
    for name, t in model.state_dict().items():
        t = t.detach().cpu().contiguous()
        if name in params and t.is_floating_point() and dtype == "float16":
            t = t.to(torch.float16)
        state[name] = t.clone()
    head_config = dict(cfg["head_config"])
    inference = dict(inference or {})
    fields = {f.name for f in dataclasses.fields(head_classes(cfg["head"])[0])}
    bad = [k for k in inference if k not in INFERENCE_OPTIONS or k not in fields]
    if bad:
        raise ValueError(f"export cannot set {bad[0]!r}: only inference options of this head "
                         f"({', '.join(k for k in INFERENCE_OPTIONS if k in fields)})")
    head_config.update(inference)
    config_from_dict(head_classes(cfg["head"])[0], head_config, "the export's settings").validate()
    config = {"format": FORMAT, "head": cfg["head"], "head_config": head_config,
              "source": {"run": str(run), "checkpoint": latest.get("checkpoint"), "step": latest.get("step"),
                         "weights": weights, "dtype": dtype, "train": cfg.get("train", {}),
                         "inference": inference}}
    unknown = [s for s in agent_skills if s not in cfg["head_config"].get("skills", [])]
    if unknown:
        raise ValueError(f"agent skill {unknown[0]!r} is not one the head learned")
    if agent_skills:
        config["agent_skills"] = list(agent_skills)
    with atomic_folder(out) as tmp:
        (tmp / "model.safetensors").write_bytes(st_save(state))
        (tmp / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        (tmp / "stats.json").write_text(json.dumps(read_json(run / "stats.json"), indent=2, sort_keys=True) + "\n")
        manifest = {"format": FORMAT, "sha256": {f: sha256_file(tmp / f) for f in FILES}}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    sizes = {f: (out / f).stat().st_size for f in (*FILES, "manifest.json")}
    return {"out": str(out), "head": cfg["head"], "skills": list(cfg["head_config"].get("skills", [])),
            "step": latest.get("step"), "weights": weights, "dtype": dtype, "bytes": sum(sizes.values()),
            "files": sizes, "params": sum(p.numel() for p in model.parameters())}


def load_run(run: str | os.PathLike, weights: str = "ema") -> HeadBase:
    """The head of a training run (its latest checkpoint; ``weights`` "ema" or "model") or of an
    exported head folder, in eval mode."""
    run = Path(run)
    if not run.is_dir():
        raise ValueError(f"run folder {run} does not exist")
    if is_exported(run):  # a shipped head: weights only, no training state
        return load_exported(run)
    return load_trained(run, weights)


def load_exported(path: str | os.PathLike) -> HeadBase:
    """The head of an exported folder, float32, in eval mode; a missing or altered file raises
    :class:`CheckpointError` naming it."""
    path = Path(path)
    manifest = read_json(path / "manifest.json")
    if not (isinstance(manifest, dict) and manifest.get("format") == FORMAT
            and isinstance(manifest.get("sha256"), dict)):
        raise CheckpointError(path / "manifest.json", f"not an exported head (expected format {FORMAT})")
    for f in FILES:
        if not (path / f).exists():
            raise CheckpointError(path / f, "missing")
        if sha256_file(path / f) != manifest["sha256"].get(f):
            raise CheckpointError(path / f, "corrupt: its sha256 does not match manifest.json")
    cfg = read_json(path / "config.json")
    if not isinstance(cfg, dict) or "head" not in cfg or "head_config" not in cfg:
        raise CheckpointError(path / "config.json", "lacks 'head' or 'head_config'")
    try:
        tensors = st_load((path / "model.safetensors").read_bytes())
    except (SafetensorError, ValueError, OSError) as exc:
        raise CheckpointError(path / "model.safetensors", f"unreadable ({exc})") from None
    state = {k: (v.float() if v.is_floating_point() else v) for k, v in tensors.items()}
    return head_from_files(cfg, read_json(path / "stats.json"), state, path / "config.json", path / "stats.json",
                           path / "model.safetensors")
