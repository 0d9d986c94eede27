"""Parallel recording: worker processes and Ray tasks give contiguous, clean datasets."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from embodied.data.inspect import check_dataset
from embodied.data.workers import RecordConfig, record

TASK, SIZE = "ShellGame-v0", 32


def _episodes(root: Path) -> list[dict]:
    return pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()


def test_two_worker_processes(tmp_path: Path):
    root = tmp_path / "ds"
    summary = record(RecordConfig([TASK, "RememberColor-v0"], 2, root, workers=2, image_size=SIZE), progress=False)
    assert summary["backend"] == "processes" and summary["episodes_recorded"] == 4
    eps = _episodes(root)
    assert [e["episode_index"] for e in eps] == [0, 1, 2, 3]
    assert sorted((e["task_name"], e["seed"]) for e in eps) == [("RememberColor-v0", 0), ("RememberColor-v0", 1),
                                                                 (TASK, 0), (TASK, 1)]
    assert check_dataset(root, decode=True) == []


def test_small_file_limits_roll_over(tmp_path: Path):
    root = tmp_path / "ds"
    cfg = RecordConfig([TASK], 3, root, image_size=SIZE, data_files_size_in_mb=0.001, video_files_size_in_mb=0.001)
    record(cfg, progress=False)
    assert len(list((root / "data").rglob("*.parquet"))) == 3
    assert len(list((root / "videos/observation.images.scene").rglob("*.mp4"))) == 3
    assert [e["data/file_index"] for e in _episodes(root)] == [0, 1, 2]
    assert check_dataset(root, decode=True) == []


def test_mixed_shapes_are_refused(tmp_path: Path):
    with pytest.raises(ValueError, match="fps|cameras|shape"):
        record(RecordConfig([TASK, "ObjectRevisit-v0"], 1, tmp_path / "ds", image_size=SIZE), progress=False)


def test_ray_tasks_on_a_local_two_cpu_instance(tmp_path: Path):
    ray = pytest.importorskip("ray", reason="Ray is the optional 'ray' extra: pip install -e '.[ray]'")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        root = tmp_path / "ds"
        summary = record(RecordConfig([TASK], 3, root, workers=2, image_size=SIZE, ray=True), progress=False)
    finally:
        ray.shutdown()
    assert summary["backend"] == "ray" and summary["episodes_recorded"] == 3
    assert [e["episode_index"] for e in _episodes(root)] == [0, 1, 2]
    assert sorted(e["seed"] for e in _episodes(root)) == [0, 1, 2]
    assert check_dataset(root, decode=True) == []
