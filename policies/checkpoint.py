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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save


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
    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            if "__tensor__" in x:
                if x["__tensor__"] not in tensors:
                    raise CheckpointError(where, f"tensor {x['__tensor__']!r} is missing")
                return tensors[x["__tensor__"]]
            if "__dict__" in x:
                return {(k["__int__"] if isinstance(k, dict) else k): walk(v) for k, v in x["__dict__"]}
            if "__list__" in x:
                items = [walk(v) for v in x["__list__"]]
                return tuple(items) if x.get("tuple") else items
        return x

    return walk(structure)


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
    path = run / latest["checkpoint"]
    if not path.is_dir():
        raise CheckpointError(path, "named by latest.json but missing")
    return path


def load_checkpoint(path: str | os.PathLike, parts: tuple[str, ...] | None = None) -> tuple[int, dict[str, Any]]:
    """(step, {name: nested state}) of checkpoint folder ``path``; only ``parts`` if given."""
    path = Path(path)
    manifest = read_json(path / "manifest.json")
    try:
        step, names, hashes = int(manifest["step"]), list(manifest["parts"]), dict(manifest["sha256"])
    except (KeyError, TypeError, ValueError):
        raise CheckpointError(path / "manifest.json", "lacks step, parts or sha256") from None
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
