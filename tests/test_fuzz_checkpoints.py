"""Bad files cannot crash the loaders (II): checkpoints, trained and exported heads, segmenter weights,
task options.

Checkpoint and export folders carry a manifest of sha256 hashes, so a file changed behind its back is
caught by its hash; each example here also re-signs the broken file half of the time (its hash written
into the manifest, as a hand edit or a buggy writer would), so that what the loader does with the
content is fuzzed too. See tests/fuzz_helpers.py for the mutations and the property.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from embodied.perception.learned.model import SegmenterConfig, SegNet
from embodied.perception.learned.weights import RUN_KIND, export_weights, load_segmenter
from policies.bench import example_batch
from policies.checkpoint import CheckpointError, latest_checkpoint, load_checkpoint, save_checkpoint
from policies.ema import EMA
from policies.export import export_run, load_exported, load_run
from policies.loop import start_run
from policies.train import TrainConfig, train
from tests.fuzz_helpers import (
    BAD_NUMBERS,
    OTHER_VALUES,
    Broken,
    broken_bytes,
    broken_json_file,
    copy_of,
    fuzz,
    loads_or_names_the_file,
    mutated_json,
    outcome,
    time_limit,
)
from tests.heads_helpers import TINY_ACT, one_torch_thread, tiny_dataset  # noqa: F401 (autouse fixture)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A tiny ACT training run (as tests/test_heads_shipped.py makes one): config, stats, latest, checkpoint."""
    demos = tiny_dataset(tmp_path_factory, cameras=())
    out = tmp_path_factory.mktemp("fuzzruns") / "act"
    train(TrainConfig(head="act", data=str(demos), out=str(out), steps=5, batch_size=8, progress=False,
                      head_options=TINY_ACT))
    return out


@pytest.fixture(scope="module")
def exported(run, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fuzzexport") / "act_tiny"
    export_run(run, out)
    return out


@pytest.fixture(scope="module")
def segmenter(tmp_path_factory) -> Path:
    """A segmenter run folder (config, one checkpoint) and its exported weights file, both of a tiny net."""
    root = tmp_path_factory.mktemp("fuzzseg")
    config = SegmenterConfig(classes=("block", "cup"), widths=(4, 4, 4, 4), decoder=4, skip=4, touching=("block",))
    net = SegNet(config)
    start_run(root / "run", {"head": RUN_KIND, "segmenter": config.to_json()}, {}, 0)
    save_checkpoint(root / "run", 1, {"model": net.state_dict(), "ema": EMA(net).state_dict()})
    export_weights(root / "run", root / "seg.safetensors")
    return root


# --- mutations of signed folders and safetensors files ---------------------------------------------


def _header(data: bytes) -> dict:
    n = int.from_bytes(data[:8], "little")
    return json.loads(data[8 : 8 + n])


@st.composite
def broken_tensors(draw, data: bytes) -> Broken:
    """A safetensors file rewritten with one tensor changed (a bad value, another dtype or shape, gone,
    renamed, one too many) or its metadata's JSON broken; or broken as bytes."""
    if draw(st.integers(0, 2)) == 0:
        return draw(broken_bytes(data))
    tensors = st_load(data)
    metadata = _header(data).get("__metadata__")
    how = draw(st.sampled_from(("value", "dtype", "shape", "drop", "rename", "extra", "metadata")))
    name = draw(st.sampled_from(sorted(tensors)))
    t = tensors[name]
    if how == "metadata" and metadata:
        key = draw(st.sampled_from(sorted(metadata)))
        doc, what = draw(mutated_json(json.loads(metadata[key])))
        metadata = {**metadata, key: json.dumps(doc)}
        how = f"metadata {key}: {what}"
    elif how == "value" and t.numel():
        bad = draw(st.sampled_from(BAD_NUMBERS))
        t = t.clone().reshape(-1)
        at = draw(st.integers(0, t.numel() - 1))
        if t.is_floating_point():
            t[at] = float(bad) if abs(float(bad)) <= torch.finfo(t.dtype).max else math.copysign(math.inf, bad)
        elif t.dtype != torch.bool and isinstance(bad, int) and -(2**31) <= bad < 2**31:
            t[at] = bad
        tensors[name] = t.reshape(tensors[name].shape)
        how = f"{name}[{at}] = {bad!r}"
    elif how == "dtype":
        dtype = draw(st.sampled_from((torch.float64, torch.float16, torch.int64, torch.bool)))
        tensors[name] = t.to(dtype)
        how = f"{name} as {dtype}"
    elif how == "shape":
        tensors[name] = t.reshape(-1)[: max(0, t.numel() - 1)].clone()
        how = f"{name} one value short"
    elif how == "drop" or how == "metadata":
        del tensors[name]
        how = f"{name} dropped"
    elif how == "rename":
        tensors[name + "_x"] = tensors.pop(name)
        how = f"{name} renamed"
    else:
        tensors["junk"] = torch.zeros(3)
        how = "a tensor too many"
    return Broken(st_save(tensors, metadata=metadata), how)


def broken_file(path: Path):
    """The mutation strategy for a file of the kind ``path`` is."""
    data = path.read_bytes()
    if path.suffix == ".safetensors":
        return broken_tensors(data)
    if path.suffix == ".json":
        return broken_json_file(data)
    return broken_bytes(data)


def sign(folder: Path, name: str) -> None:
    """Write file ``name``'s sha256 into ``folder``'s manifest.json (when it lists the file)."""
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["sha256"][Path(name).name] = hashlib.sha256((folder / name).read_bytes()).hexdigest()
    manifest_path.write_text(json.dumps(manifest))


def break_one(data, folder: Path, name: str, signed: bool) -> str:
    """Break ``folder/name`` as drawn; if ``signed``, re-sign it in ``folder``'s manifest half of the time.
    Returns what was done."""
    bad = data.draw(broken_file(folder / name), label=name)
    (folder / name).write_bytes(bad)
    if signed and name != "manifest.json" and data.draw(st.booleans(), label="re-signed"):
        sign(folder, name)
        return f"{name}: {bad.what} (re-signed)"
    return f"{name}: {bad.what}"


# --- checkpoints -----------------------------------------------------------------------------------


def _plain_state(x) -> None:
    """A checkpoint part: nested dicts and lists of tensors and JSON scalars, nothing else."""
    if isinstance(x, dict):
        for k, v in x.items():
            assert isinstance(k, (str, int)) and not isinstance(k, bool), k
            _plain_state(v)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _plain_state(v)
    else:
        assert x is None or isinstance(x, (torch.Tensor, str, int, float, bool)), type(x)


def checkpoint_usable(result) -> None:
    step, parts = result
    assert isinstance(step, int) and isinstance(parts, dict)
    _plain_state(parts)


CHECKPOINT_FILES = ["manifest.json", "model.json", "model.safetensors", "ema.json", "optimizer.json"]


@fuzz()
@given(st.data(), st.sampled_from(CHECKPOINT_FILES))
def test_load_checkpoint(run, data, name):
    with copy_of(latest_checkpoint(run)) as folder:
        what = break_one(data, folder, name, signed=True)
        loads_or_names_the_file(lambda: load_checkpoint(folder), folder, (CheckpointError,), checkpoint_usable, what)


# --- trained and exported heads --------------------------------------------------------------------


def head_usable(model) -> None:
    """A loaded head predicts a finite chunk of actions for an observation."""
    with torch.inference_mode():
        actions = model.predict_action_chunk(example_batch(model))
    assert torch.isfinite(actions).all()


RUN_FILES = ["config.json", "stats.json", "latest.json", "checkpoints/step_0000005/manifest.json",
             "checkpoints/step_0000005/ema.json", "checkpoints/step_0000005/ema.safetensors"]


@fuzz()
@given(st.data(), st.sampled_from(RUN_FILES))
def test_load_run_of_a_training_run(run, data, name):
    with copy_of(run) as folder:
        what = break_one(data, folder, name, signed=False)
        if name.startswith("checkpoints/") and not name.endswith("manifest.json") and data.draw(st.booleans()):
            sign(folder / Path(name).parent, Path(name).name)
            what += " (re-signed)"
        loads_or_names_the_file(lambda: load_run(folder), folder, (CheckpointError,), head_usable, what)


EXPORT_FILES = ["manifest.json", "config.json", "stats.json", "model.safetensors"]


@fuzz()
@given(st.data(), st.sampled_from(EXPORT_FILES))
def test_load_exported(exported, data, name):
    with copy_of(exported) as folder:
        what = break_one(data, folder, name, signed=True)
        loads_or_names_the_file(lambda: load_exported(folder), folder, (CheckpointError,), head_usable, what)


# --- segmenter weights: a weights file, or a run folder --------------------------------------------


def segmenter_usable(net) -> None:
    """A loaded segmenter labels a frame (the run-time path perception takes)."""
    rng = np.random.default_rng(0)
    semantic, centre, offset = net.maps(rng.integers(0, 255, (16, 16, 3), dtype=np.uint8),
                                        rng.uniform(0.3, 2.0, (16, 16)).astype(np.float32))
    assert semantic.shape == (16, 16) and np.isfinite(centre).all() and np.isfinite(offset).all()


SEGMENTER_FILES = ["seg.safetensors", "run/config.json", "run/latest.json",
                   "run/checkpoints/step_0000001/ema.safetensors"]


@fuzz()
@given(st.data(), st.sampled_from(SEGMENTER_FILES))
def test_load_segmenter(segmenter, data, name):
    with copy_of(segmenter) as root:
        what = break_one(data, root, name, signed=False)
        if name.endswith("ema.safetensors") and data.draw(st.booleans()):
            sign(root / Path(name).parent, Path(name).name)
            what += " (re-signed)"
        target = root / ("seg.safetensors" if name == "seg.safetensors" else "run")
        loads_or_names_the_file(lambda: load_segmenter(target), root, (CheckpointError,), segmenter_usable, what)


# --- task options ----------------------------------------------------------------------------------

KNOB_VALUES = st.one_of(
    st.integers(-5, 12), st.sampled_from(BAD_NUMBERS), st.sampled_from(OTHER_VALUES),
    st.sampled_from(["3", " 4 ", "2.0", "1e3", "nan", "inf", "-1", "easy", "hard", "", "true", "9" * 400, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
)
SHELL_KNOBS = ["n_cups", "n_swaps", "delay", "preset", "visual", "n_cupz"]


def knob_named(error: ValueError, knobs: dict) -> None:
    """An options error names a knob it was given (the one at fault) in its message."""
    assert type(error) is ValueError, f"{type(error).__name__} leaked: {error}"
    assert any(k in str(error) for k in knobs), f"the error names none of {sorted(knobs)}: {error}"


@fuzz()
@given(st.dictionaries(st.sampled_from(SHELL_KNOBS), KNOB_VALUES, max_size=3))
def test_task_options(knobs):
    """gym.make with bad knob values: a ValueError naming the knob, or an env that resets and steps."""
    with time_limit():
        try:
            env = gym.make("embodied/ShellGame-v0", images=False, **knobs)
        except ValueError as exc:
            knob_named(exc, knobs)
            outcome("refused")
            return
        outcome("accepted: the env resets and steps")
        try:
            opts = env.unwrapped.options
            for name in ("n_cups", "n_swaps", "delay"):
                assert type(getattr(opts, name)) is int and 0 <= getattr(opts, name) <= 10**9
            env.reset(seed=0)
            env.step(np.zeros(env.action_space.shape, dtype=np.float32))
        finally:
            env.close()


@fuzz()
@given(st.data())
def test_options_of_every_task(data):
    """options_from of every task's knobs: a ValueError naming the knob, or options of the declared types."""
    import dataclasses

    from embodied.envs.base import options_from
    from embodied.tasks import TASKS, get_task

    entry = get_task(data.draw(st.sampled_from(sorted(TASKS)), label="task"))
    module, _, name = entry.entry_point.partition(":")
    cls = getattr(__import__(module, fromlist=[name]), name).Options
    fields = {f.name: f for f in dataclasses.fields(cls)}
    knobs = data.draw(st.dictionaries(st.sampled_from([*fields, "preset"]), KNOB_VALUES, max_size=3), label="knobs")
    try:
        opts = options_from(cls, knobs, entry.name)
    except ValueError as exc:
        knob_named(exc, knobs)
        outcome("refused")
        return
    outcome("accepted")
    for f in fields.values():
        value = getattr(opts, f.name)
        assert type(value) is type(f.default), f"{f.name}={value!r}"
        if isinstance(value, (int, float)):
            assert abs(value) <= 10**9, f"{f.name}={value!r}"  # NaN and inf fail this too
        raw = knobs.get(f.name)
        assert not (isinstance(raw, bool) and not isinstance(f.default, bool)), f"{f.name}={raw!r} taken as a number"
