"""Load a trained segmenter, crop classifier and region grouper, and export them as one safetensors file.

A weights file holds the segmenter's EMA weights as float32 tensors and its
configuration as JSON in the safetensors metadata (``"segmenter"``); the crop
classifier and the region grouper, when exported with it, sit in the same
file under the tensor prefixes ``classifier.`` / ``grouper.`` and the
metadata keys ``"classifier"`` / ``"grouper"``. A run folder's latest
checkpoint loads the same way.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from embodied.perception.learned.classifier import CropConfig, CropNet
from embodied.perception.learned.grouper import GrouperConfig, RegionGrouper
from embodied.perception.learned.model import SegmenterConfig, SegNet
from policies.checkpoint import CheckpointError, build_to_fit, latest_checkpoint, load_checkpoint, read_json
from policies.config_json import config_from_dict

RUN_KIND = "segmenter"  # config.json "head" of a segmenter run
CLASSIFIER_KIND = "crop-classifier"  # config.json "head" of a crop-classifier run
GROUPER_KIND = "region-grouper"  # config.json "head" of a region-grouper run
PREFIX = "classifier."  # tensor-name prefix of the classifier inside an exported file
PREFIXES = (PREFIX, "grouper.")  # every part's prefix: what is left is the segmenter


def _config(d: Any, where: Path) -> SegmenterConfig:
    """A SegmenterConfig from its JSON, every option of its declared type (CheckpointError naming ``where``)."""
    if not isinstance(d, dict):
        raise CheckpointError(where, f"the segmenter configuration must be an object, got {type(d).__name__}")
    try:
        return config_from_dict(SegmenterConfig, d, "segmenter")
    except (ValueError, TypeError) as exc:  # TypeError: a required option missing
        raise CheckpointError(where, str(exc)) from None


def run_config(run: str | Path) -> SegmenterConfig:
    """The network configuration of segmenter run folder ``run``."""
    path = Path(run) / "config.json"
    saved = read_json(path)
    head = saved.get("head") if isinstance(saved, dict) else None
    if head != RUN_KIND or "segmenter" not in saved:
        raise CheckpointError(path, f"is not a segmenter run (head {head!r})")
    return _config(saved["segmenter"], path)


def _ema_weights(run: Path) -> tuple[Any, Path]:
    ckpt = latest_checkpoint(run)
    if ckpt is None:
        raise CheckpointError(run, "has no checkpoint yet")
    _, parts = load_checkpoint(ckpt, ("ema",))
    if not isinstance(parts["ema"], dict) or "shadow" not in parts["ema"]:
        raise CheckpointError(ckpt / "ema.json", "holds no 'shadow' weights")
    return parts["ema"]["shadow"], ckpt / "ema.safetensors"


def _from_run(run: Path) -> tuple[SegmenterConfig, Any, Path, Path]:
    config = run_config(run)
    weights, path = _ema_weights(run)
    return config, weights, run / "config.json", path


def _read_file(path: Path) -> tuple[dict, dict]:
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(path, f"is not a readable safetensors file ({exc})") from None
    return meta, tensors


def _from_file(path: Path) -> tuple[SegmenterConfig, Any, Path, Path]:
    meta, tensors = _read_file(path)
    tensors = {k: v for k, v in tensors.items() if not k.startswith(PREFIXES)}
    if "segmenter" not in meta:
        raise CheckpointError(path, "has no 'segmenter' configuration in its metadata: not segmenter weights")
    try:
        doc = json.loads(meta["segmenter"])
    except ValueError as exc:
        raise CheckpointError(path, f"its 'segmenter' metadata is not valid JSON ({exc})") from None
    return _config(doc, path), tensors, path, path


def load_segmenter(source: str | Path) -> SegNet:
    """A SegNet in eval mode from a run folder (its latest EMA weights) or an exported weights file; a
    missing, corrupt or inconsistent file raises CheckpointError naming it."""
    path = Path(source)
    if not path.exists():
        raise CheckpointError(path, "does not exist (a segmenter run folder or a .safetensors weights file)")
    config, state, config_path, weights_path = _from_run(path) if path.is_dir() else _from_file(path)
    return build_to_fit(lambda: SegNet(config), state, config_path, weights_path)


def _part_config(config_type, key: str, d: Any, where: Path):
    """A part's configuration from its JSON (CheckpointError naming ``where``)."""
    if not isinstance(d, dict):
        raise CheckpointError(where, f"the {key} configuration must be an object, got {type(d).__name__}")
    try:
        return config_from_dict(config_type, d, key)
    except (ValueError, TypeError) as exc:  # TypeError: a required option missing
        raise CheckpointError(where, str(exc)) from None


def classifier_config(d: Any, where: Path) -> CropConfig:
    """A CropConfig from its JSON (CheckpointError naming ``where``)."""
    return _part_config(CropConfig, "classifier", d, where)


def grouper_config(d: Any, where: Path) -> GrouperConfig:
    """A GrouperConfig from its JSON (CheckpointError naming ``where``)."""
    return _part_config(GrouperConfig, "grouper", d, where)


# A part that travels beside the segmenter: (run kind, metadata key and tensor prefix, its config reader).
PARTS = {"classifier": (CLASSIFIER_KIND, classifier_config), "grouper": (GROUPER_KIND, grouper_config)}


def _parts(source: Path, key: str) -> tuple[Any, Any, Path, Path] | None:
    """(config, weights, config path, weights path) of part ``key`` in a run folder of its kind or a weights
    file; None when ``source`` holds none."""
    kind, read_config = PARTS[key]
    if source.is_dir():
        path = source / "config.json"
        saved = read_json(path)
        if not isinstance(saved, dict) or saved.get("head") != kind:
            return None
        weights, weights_path = _ema_weights(source)
        return read_config(saved.get(key), path), weights, path, weights_path
    meta, tensors = _read_file(source)
    if key not in meta:
        return None
    try:
        doc = json.loads(meta[key])
    except ValueError as exc:
        raise CheckpointError(source, f"its '{key}' metadata is not valid JSON ({exc})") from None
    prefix = f"{key}."
    weights = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
    return read_config(doc, source), weights, source, source


def _load_part(source: str | Path, key: str, build):
    path = Path(source)
    if not path.exists():
        raise CheckpointError(path, f"does not exist (a {key} run folder or a .safetensors weights file)")
    parts = _parts(path, key)
    if parts is None:
        return None
    config, state, config_path, weights_path = parts
    return build_to_fit(lambda: build(config), state, config_path, weights_path)


def load_classifier(source: str | Path) -> CropNet | None:
    """The crop classifier of a classifier run folder or a weights file (in eval mode); None when
    ``source`` holds none (a segmenter run, or a file exported without one)."""
    return _load_part(source, "classifier", CropNet)


def load_grouper(source: str | Path) -> RegionGrouper | None:
    """The region grouper of a grouper run folder or a weights file (in eval mode); None when ``source``
    holds none."""
    return _load_part(source, "grouper", RegionGrouper)


def export_weights(run: str | Path, path: str | Path, classifier: str | Path | None = None,
                   grouper: str | Path | None = None) -> dict:
    """Write ``run``'s latest EMA weights (or the segmenter of weights file ``run``), and those of the
    ``classifier`` and ``grouper`` runs (or files) if given, as one safetensors file (atomically); returns
    its size."""
    config, state, _, _ = _from_run(Path(run)) if Path(run).is_dir() else _from_file(Path(run))
    if config.touching is None and Path(run).is_dir():  # an older run: take the measure from its frames now
        from embodied.perception.learned.decode import measure_touching
        from embodied.perception.learned.frames import load_frames

        data = read_json(Path(run) / "config.json")["train"]["data"]
        config = dataclasses.replace(config, touching=measure_touching(load_frames(data, config.classes)))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    metadata = {"segmenter": json.dumps(config.to_json())}
    for key, source in (("classifier", classifier), ("grouper", grouper)):
        if source is None:
            continue
        parts = _parts(Path(source), key)
        if parts is None:
            raise CheckpointError(Path(source), f"holds no {key} (a {PARTS[key][0]} run or a weights file with one)")
        part_config, part_state, _, _ = parts
        if part_config.classes != config.classes:
            raise CheckpointError(Path(source), f"names other classes than the segmenter {run}")
        state = {**state, **{f"{key}.{k}": v for k, v in part_state.items()}}
        metadata[key] = json.dumps(part_config.to_json())
    tensors = {k: v.float().contiguous() if v.dtype.is_floating_point else v.contiguous() for k, v in state.items()}
    save_file(tensors, str(tmp), metadata=metadata)
    tmp.replace(path)
    return {"path": str(path), "bytes": path.stat().st_size}
