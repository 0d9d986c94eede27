"""Checkpoints without pickle: safetensors for tensors, JSON for everything else, written atomically.

A run folder::

    RUN/config.json                  head name, head config, train config (written at start)
    RUN/stats.json                   the normaliser's statistics (also inside every weights file)
    RUN/log.jsonl                    one {"step", "loss", ...} per logged step
    RUN/loss.png                     the loss curve
    RUN/latest.json                  {"checkpoint": "checkpoints/step_0000500", "step": 500}
    RUN/checkpoints/step_0000500/    model, ema, optimizer: <part>.safetensors + <part>.json (structure)
                                     manifest.json: step and the sha256 of every file

A checkpoint folder is filled under a temporary name and renamed into place,
then ``latest.json`` is replaced atomically: a killed run leaves either the
previous checkpoint or the new one, never half of one. Loading checks the
manifest's hashes, so a truncated or altered file raises :class:`CheckpointError`
naming it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

MAX_WEIGHT = 1e12  # a weight or buffer beyond this is corrupt (trained ones stay far below)


class CheckpointError(ValueError):
    """A checkpoint file is missing, corrupt or inconsistent; the message names the file."""

    def __init__(self, path: str | os.PathLike, problem: str):
        self.path, self.problem = str(path), problem
        super().__init__(f"{self.path}: {problem}")


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode())


def read_json(path: str | os.PathLike) -> Any:
    path = Path(path)
    if not path.exists():
        raise CheckpointError(path, "missing")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(path, f"not valid JSON ({exc})") from None


def _index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def flatten_state(state: Any, prefix: str = "") -> tuple[Any, dict[str, torch.Tensor]]:
    """Split a nested state (dicts, lists, tensors, JSON scalars) into (JSON structure, {key: tensor})."""
    tensors: dict[str, torch.Tensor] = {}

    def walk(x: Any, key: str) -> Any:
        if isinstance(x, torch.Tensor):
            tensors[key] = x.detach().cpu().contiguous().clone()
            return {"__tensor__": key}
        if isinstance(x, dict):
            return {"__dict__": [[k if isinstance(k, str) else {"__int__": k}, walk(v, f"{key}.{k}")]
                                 for k, v in x.items()]}
        if isinstance(x, (list, tuple)):
            return {"__list__": [walk(v, f"{key}.{i}") for i, v in enumerate(x)], "tuple": isinstance(x, tuple)}
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        raise TypeError(f"cannot store {type(x).__name__} at {key or '<root>'} without pickle")

    return walk(state, prefix), tensors


def unflatten_state(structure: Any, tensors: dict[str, torch.Tensor], where: str = "") -> Any:
    """The nested state :func:`flatten_state` split: a structure of another shape raises CheckpointError."""

    def bad(at: str, problem: str) -> CheckpointError:
        return CheckpointError(where, f"malformed structure at {at or '<root>'}: {problem}")

    def walk(x: Any, at: str) -> Any:
        if isinstance(x, dict):
            if "__tensor__" in x:
                if not isinstance(x["__tensor__"], str) or x["__tensor__"] not in tensors:
                    raise CheckpointError(where, f"tensor {x['__tensor__']!r} is missing")
                return tensors[x["__tensor__"]]
            if "__dict__" in x:
                items = x["__dict__"]
                if not isinstance(items, list) or not all(isinstance(i, list) and len(i) == 2 for i in items):
                    raise bad(at, "__dict__ must be a list of [key, value] pairs")
                out = {}
                for k, v in items:
                    if isinstance(k, dict) and set(k) == {"__int__"}:
                        k = k["__int__"]
                        if not isinstance(k, int) or isinstance(k, bool):
                            raise bad(at, f"__int__ key {k!r} is not an integer")
                    elif not isinstance(k, str):
                        raise bad(at, f"key {k!r} is neither a string nor {{'__int__': n}}")
                    out[k] = walk(v, f"{at}.{k}")
                return out
            if "__list__" in x:
                if not isinstance(x["__list__"], list) or not isinstance(x.get("tuple", False), bool):
                    raise bad(at, "__list__ must be a list (and tuple true or false)")
                items = [walk(v, f"{at}.{i}") for i, v in enumerate(x["__list__"])]
                return tuple(items) if x.get("tuple") else items
            raise bad(at, f"an object that is not a tensor, __dict__ or __list__ (keys {sorted(x)[:3]})")
        if isinstance(x, list):
            raise bad(at, "a bare list (lists are stored as __list__)")
        return x

    return walk(structure, "")


class _Oversized(Exception):
    """Raised from inside a shape probe that registers far more modules or parameters than the weights hold."""


def build_to_fit(build: Callable[[], torch.nn.Module], state: Any, config_path: str | os.PathLike,
                 weights_path: str | os.PathLike) -> torch.nn.Module:
    """``build()`` (a model of the configuration in ``config_path``) with ``state`` (from ``weights_path``)
    loaded, in eval mode; CheckpointError naming the file at fault when they do not fit.

    The model is first built on the meta device, where nothing is allocated, and abandoned as soon as it
    registers far more modules or parameters than the weights have tensors: a configuration of huge sizes
    or layer counts is refused in milliseconds instead of filling the memory. Its names and shapes must
    be the weights' exactly, and the weights finite, before the real model is built.
    """
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              for k, v in state.items()):
        raise CheckpointError(weights_path, "does not hold weights (a flat {name: tensor} state)")
    budget, count = 4 * len(state) + 64, 0

    def hook(*_):
        nonlocal count
        count += 1
        if count > budget:
            raise _Oversized

    from torch.nn.modules import module as nn_module

    handles = [nn_module.register_module_parameter_registration_hook(hook),
               nn_module.register_module_module_registration_hook(hook)]
    try:
        with torch.device("meta"):
            probe = build()
    except _Oversized:
        raise CheckpointError(config_path, f"describes a model far larger than the {len(state)} tensors of "
                                           f"{Path(weights_path).name}") from None
    except (ValueError, RuntimeError, TypeError) as exc:  # the model's own checks, or torch's (a negative size)
        raise CheckpointError(config_path, f"does not make a model: {exc}") from None
    finally:
        for handle in handles:
            handle.remove()
    want = {k: tuple(v.shape) for k, v in probe.state_dict().items()}
    have = {k: tuple(v.shape) for k, v in state.items()}
    if want != have:
        missing, extra = sorted(set(want) - set(have)), sorted(set(have) - set(want))
        shaped = sorted(k for k in set(want) & set(have) if want[k] != have[k])
        problem = (f"lacks {missing[0]!r}" if missing else f"has {extra[0]!r}, which the model has not" if extra
                   else f"{shaped[0]!r} is {list(have[shaped[0]])}, the model's is {list(want[shaped[0]])}")
        raise CheckpointError(weights_path, f"weights do not fit the model of {Path(config_path).name}: {problem}")
    bad = [k for k, v in state.items() if (v.is_floating_point() or v.is_complex()) and not torch.isfinite(v).all()]
    if bad:
        raise CheckpointError(weights_path, f"weight {bad[0]!r} holds NaN or infinite values")
    # Finite but absurd: a layer norm squares its inputs, and a 1e30 bias came out of it as NaN actions.
    bad = [k for k, v in state.items() if v.is_floating_point() and v.numel() and v.abs().max() > MAX_WEIGHT]
    if bad:
        raise CheckpointError(weights_path, f"weight {bad[0]!r} holds a value beyond {MAX_WEIGHT:g} in magnitude, "
                                            "which no trained network has")
    bad = [k for k, v in state.items() if k.endswith("running_var") and (v < 0).any()]
    if bad:  # batch norm divides by its square root
        raise CheckpointError(weights_path, f"{bad[0]!r} holds a negative variance")
    model = build()
    try:
        model.load_state_dict(state)
    except (RuntimeError, KeyError) as exc:
        raise CheckpointError(weights_path, f"weights do not fit the model of {Path(config_path).name} ({exc})") \
            from None
    return model.eval()


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextmanager
def atomic_folder(final: Path) -> Iterator[Path]:
    """A temporary folder beside ``final`` to fill; when the block ends its files are synced and it
    is renamed over ``final`` (readable by all, as a shipped folder must be); on an error it is removed."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp"))
    try:
        yield tmp
        for f in tmp.iterdir():
            os.chmod(f, 0o644)
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o755)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def save_checkpoint(run: str | os.PathLike, step: int, parts: dict[str, Any], keep: int = 2) -> Path:
    """Write ``parts`` ({name: nested state}) as checkpoint ``step``; update latest.json; keep ``keep``."""
    run = Path(run)
    root = run / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step_{step:07d}"
    with atomic_folder(final) as tmp:
        files = {}
        for name, state in parts.items():
            structure, tensors = flatten_state(state)
            (tmp / f"{name}.safetensors").write_bytes(st_save(tensors))
            (tmp / f"{name}.json").write_text(json.dumps(structure))
            files[f"{name}.safetensors"] = sha256_file(tmp / f"{name}.safetensors")
            files[f"{name}.json"] = sha256_file(tmp / f"{name}.json")
        (tmp / "manifest.json").write_text(json.dumps({"step": step, "parts": sorted(parts), "sha256": files}))
    atomic_write_json(run / "latest.json", {"checkpoint": str(final.relative_to(run)), "step": step})
    for old in sorted(root.glob("step_*"))[:-keep] if keep > 0 else []:
        if old != final:
            shutil.rmtree(old, ignore_errors=True)
    for stale in root.glob(".step_*.tmp"):  # left by a killed run
        shutil.rmtree(stale, ignore_errors=True)
    return final


def latest_checkpoint(run: str | os.PathLike) -> Path | None:
    run = Path(run)
    if not (run / "latest.json").exists():
        return None
    latest = read_json(run / "latest.json")
    if not isinstance(latest, dict) or "checkpoint" not in latest:
        raise CheckpointError(run / "latest.json", "does not name a checkpoint")
    name = latest["checkpoint"]
    if not isinstance(name, str) or not name or Path(name).is_absolute() or ".." in Path(name).parts:
        raise CheckpointError(run / "latest.json", f"checkpoint must name a folder inside the run, got {name!r}")
    path = run / name
    if not path.is_dir():
        raise CheckpointError(path, "named by latest.json but missing")
    return path


def load_checkpoint(path: str | os.PathLike, parts: tuple[str, ...] | None = None) -> tuple[int, dict[str, Any]]:
    """(step, {name: nested state}) of checkpoint folder ``path``; only ``parts`` if given."""
    path = Path(path)
    manifest = read_json(path / "manifest.json")
    if not (isinstance(manifest, dict) and _index(manifest.get("step")) and isinstance(manifest.get("parts"), list)
            and all(isinstance(n, str) and n.strip(".") and "/" not in n for n in manifest["parts"])
            and isinstance(manifest.get("sha256"), dict)):
        raise CheckpointError(path / "manifest.json", "lacks step (a number >= 0), parts (file names) or sha256")
    step, names, hashes = manifest["step"], manifest["parts"], manifest["sha256"]
    out = {}
    for name in names if parts is None else parts:
        if name not in names:
            raise CheckpointError(path, f"has no part {name!r}; parts: {', '.join(names)}")
        for suffix in (".safetensors", ".json"):
            f = path / f"{name}{suffix}"
            if not f.exists():
                raise CheckpointError(f, "missing")
            if sha256_file(f) != hashes.get(f.name):
                raise CheckpointError(f, "corrupt: its sha256 does not match manifest.json")
        try:
            tensors = st_load((path / f"{name}.safetensors").read_bytes())
        except (SafetensorError, ValueError, OSError) as exc:
            raise CheckpointError(path / f"{name}.safetensors", f"unreadable ({exc})") from None
        structure = read_json(path / f"{name}.json")
        out[name] = unflatten_state(structure, tensors, str(path / f"{name}.json"))
    return step, out
