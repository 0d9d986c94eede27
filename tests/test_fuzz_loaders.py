"""Bad files cannot crash the loaders (I): memories, recordings, datasets.

Every example breaks one file of a valid folder (see tests/fuzz_helpers.py for the mutations and the
property). CI runs a few dozen examples per loader; ``bash tools/fuzz_loaders.sh`` runs 1,000.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from embodied.data.layout import DatasetError
from embodied.data.recording import load_recording
from embodied.memory import SpatialMemory
from embodied.memory.persistence import to_json
from tests.fuzz_helpers import (
    BAD_NUMBERS,
    Broken,
    broken_bytes,
    broken_json_file,
    copy_of,
    fuzz,
    loads_or_names_the_file,
)
from tests.heads_helpers import tiny_dataset
from tests.memory_helpers import detection, frame, proprio


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    """One short RememberColor episode of the memory agent, recorded: meta, memory, events, plan, keyframes."""
    from embodied.cli.main import main

    root = tmp_path_factory.mktemp("fuzzrec") / "run"
    assert main(["run", "--task", "RememberColor", "--policy", "agent", "--option", "delay=2", "--image-size", "48",
                 "--episodes", "1", "--record", str(root), "--keyframe-every", "40", "--json"]) == 0
    return root / "episode_000"


# --- SpatialMemory.load ----------------------------------------------------------------------------


def memory_usable(memory: SpatialMemory) -> None:
    """A loaded memory saves again, answers queries, rebuilds the past and takes the next frame."""
    json.dumps(to_json(memory), allow_nan=False)
    memory.summary()
    memory.snapshot(memory.t)
    for node in list(memory.graph.nodes):
        memory.where_is(node)
        memory.history(node)
        memory.trajectory(node)
    t = memory.t + 1
    memory.update(frame(t, [detection((0.4, 0.0, 0.02)), detection((0.2, 0.3, 0.02), colour="blue")],
                        proprio=proprio((0.3, 0.0, 0.3), 0.08)))
    memory.summary()


@fuzz()
@given(st.data())
def test_memory_load(recording, data):
    source = recording / "memory.json"
    bad = data.draw(broken_json_file(source.read_bytes()), label="memory.json")
    with copy_of(recording) as folder:
        path = folder / "memory.json"
        path.write_bytes(bad)
        loads_or_names_the_file(lambda: SpatialMemory.load(path), folder, (ValueError,), memory_usable, bad.what)


# --- load_recording: meta.json, events.jsonl, plan.json --------------------------------------------


def open_recording(folder: Path):
    """What the viewer does with a recording: load it and build its timeline (keyframes decoded)."""
    from embodied.viz.build import build_timeline

    rec = load_recording(folder)
    build_timeline(rec)
    return rec


def recording_usable(rec) -> None:
    assert all(k["path"].is_file() for k in rec.keyframes)
    memory_usable(rec.memory)


@st.composite
def broken_events(draw, data: bytes) -> Broken:
    """events.jsonl broken as bytes, or one line of it broken as a JSON document."""
    lines = data.decode().splitlines()
    if draw(st.integers(0, 2)) == 0 or not lines:
        return draw(broken_bytes(data))
    k = draw(st.integers(0, len(lines) - 1))
    line = draw(broken_json_file(lines[k].encode()))
    lines[k] = line.decode("utf-8", "replace").replace("\n", " ")
    return Broken(("\n".join(lines) + "\n").encode(), f"line {k + 1}: {line.what}")


RECORDING_FILES = ["meta.json", "events.jsonl", "plan.json", "keyframes/000040_scene.jpg"]


@fuzz()
@given(st.data(), st.sampled_from(RECORDING_FILES))
def test_load_recording(recording, data, name):
    source = recording / name
    if name.endswith(".json"):
        strategy = broken_json_file(source.read_bytes())
    else:
        strategy = (broken_events if name == "events.jsonl" else broken_bytes)(source.read_bytes())
    bad = data.draw(strategy, label=name)
    with copy_of(recording) as folder:
        (folder / name).write_bytes(bad)
        loads_or_names_the_file(lambda: open_recording(folder), folder, (ValueError,), recording_usable,
                                f"{name}: {bad.what}")


# --- datasets: meta/info.json, meta/stats.json, the parquet files, the mp4s -------------------------


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return tiny_dataset(tmp_path_factory, episodes=2, cameras=("wrist",))


DATASET_JSON = ["meta/info.json", "meta/stats.json"]
DATASET_PARQUET = ["meta/episodes/chunk-000/file-000.parquet", "data/chunk-000/file-000.parquet",
                   "meta/tasks.parquet"]
DATASET_VIDEO = ["videos/observation.images.wrist/chunk-000/file-000.mp4"]


@st.composite
def broken_table(draw, path: Path) -> Broken:
    """A parquet file broken as bytes, or rewritten with a column dropped, retyped or holding a bad value."""
    if draw(st.integers(0, 2)) == 0:
        return draw(broken_bytes(path.read_bytes()))
    table = pq.read_table(path)
    name = draw(st.sampled_from(table.column_names))
    k = table.column_names.index(name)
    how = draw(st.sampled_from(("drop", "strings", "value", "rows")))
    if how == "drop":
        table = table.remove_column(k)
    elif how == "strings":
        table = table.set_column(k, name, pa.array([str(v) for v in table.column(k).to_pylist()]))
    elif how == "rows":
        keep = draw(st.integers(0, max(0, table.num_rows - 1)))
        table = table.slice(0, keep)
    else:
        values = table.column(k).to_pylist()
        row = draw(st.integers(0, len(values) - 1))
        scalar = isinstance(values[row], (int, float)) and not isinstance(values[row], bool)
        bad = draw(st.sampled_from(BAD_NUMBERS if scalar else (None, 0, "x", [])))
        if isinstance(values[row], int) and isinstance(bad, float) and math.isfinite(bad):
            bad = int(bad)
        values[row] = bad
        try:
            column = pa.array(values, type=table.column(k).type)
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            column = pa.array([None if v is bad else v for v in values], type=table.column(k).type)
        table = table.set_column(k, name, column)
        how = f"row {row} = {bad!r}"
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return Broken(sink.getvalue().to_pybytes(), f"column {name!r}: {how}")


def open_dataset(root: Path):
    """What a user of a dataset does: check it, summarise it, read frames from it. A dataset that checks
    clean must read; one that does not may still (the check is stricter than the reader)."""
    from embodied.data import DemoDataset
    from embodied.data.inspect import check_dataset, dataset_info

    problems = check_dataset(root, decode=True)  # never raises: every problem is a line naming its file
    assert all(isinstance(p, str) and str(root) in p for p in problems), problems
    try:
        info = dataset_info(root)
        assert info["frames"] >= 0 and info["episodes"] >= 0
        ds = DemoDataset(root, cameras=["wrist"], normalize=True)
        for i in sorted({0, len(ds) - 1} if len(ds) else ()):
            item = ds[i]
            assert all(np.isfinite(item[k].numpy()).all() for k in ("observation.state", "action"))
    except DatasetError:
        assert problems, "check_dataset found nothing wrong, yet the dataset does not read"
        raise
    return ds


@fuzz()
@given(st.data(), st.sampled_from(DATASET_JSON + DATASET_PARQUET + DATASET_VIDEO))
def test_dataset_loaders(dataset, data, name):
    source = dataset / name
    if name in DATASET_JSON:
        strategy = broken_json_file(source.read_bytes())
    elif name in DATASET_PARQUET:
        strategy = broken_table(source)
    else:
        strategy = broken_bytes(source.read_bytes())
    bad = data.draw(strategy, label=name)
    with copy_of(dataset) as root:
        (root / name).write_bytes(bad)
        loads_or_names_the_file(lambda: open_dataset(root), root, (DatasetError,), None, f"{name}: {bad.what}")
