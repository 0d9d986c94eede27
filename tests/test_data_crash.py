"""Crash safety: a recorder killed by SIGKILL or SIGINT leaves a dataset that opens and checks clean."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from embodied.data import commit as journal
from embodied.data.inspect import check_dataset
from embodied.data.layout import DatasetError
from embodied.data.workers import RecordConfig, record

TASK, SIZE = "ShellGame-v0", 32
REPO = Path(__file__).resolve().parents[1]


def sigint_default() -> None:
    # A shell's background job starts with SIGINT ignored, and Python then never raises KeyboardInterrupt:
    # the recorder must see Ctrl-C as a terminal would deliver it, however pytest itself was started.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_recorder(out: Path, episodes: int, workers: int = 1) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO), MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"))
    cmd = [sys.executable, "-m", "embodied.cli.main", "record-demos", "--task", TASK, "--episodes", str(episodes),
           "--out", str(out), "--image-size", str(SIZE), "--workers", str(workers), "--json"]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
                            preexec_fn=sigint_default)


def committed(out: Path) -> int:
    try:
        return json.loads((out / "meta/info.json").read_text())["total_episodes"]
    except (FileNotFoundError, json.JSONDecodeError):
        return 0


def wait_for(out: Path, proc: subprocess.Popen, n: int, timeout: float = 240) -> None:
    end = time.time() + timeout
    while committed(out) < n:
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert time.time() < end, "recorder too slow"
        time.sleep(0.05)


def seeds(out: Path) -> list[int]:
    return sorted(pq.read_table(out / "meta/episodes/chunk-000/file-000.parquet")["seed"].to_pylist())


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("sig, workers", [(signal.SIGKILL, 1), (signal.SIGINT, 1), (signal.SIGKILL, 2)])
def test_killed_recorder_leaves_a_clean_dataset_and_resume_completes_it(tmp_path: Path, sig, workers):
    out = tmp_path / "ds"
    proc = start_recorder(out, episodes=30, workers=workers)
    wait_for(out, proc, 2)
    time.sleep(0.3)  # most likely mid-episode
    kids = children(proc.pid)
    assert len(kids) >= workers if workers > 1 else True
    proc.send_signal(sig)
    proc.wait(timeout=60)
    assert proc.returncode == (-9 if sig == signal.SIGKILL else 130), proc.stderr.read().decode()[-3000:]
    end = time.time() + 60  # generous: a loaded 2-core machine reaps slowly; the loop ends as soon as they die
    while any(alive(k) for k in kids) and time.time() < end:
        time.sleep(0.1)
    assert not any(alive(k) for k in kids), "worker processes outlived the recorder"
    # A kill between the journal and the last rename leaves a commit that opening the dataset finishes,
    # so count episodes only after check_dataset has opened (and so recovered) it.
    assert check_dataset(out) == []
    kept = committed(out)
    assert 2 <= kept < 30
    # --resume records only what is missing and keeps indices contiguous
    summary = record(RecordConfig([TASK], kept + 2, out, image_size=SIZE, resume=True), progress=False)
    assert summary["episodes_recorded"] == 2 and summary["skipped_already_recorded"] == kept
    assert seeds(out) == list(range(kept + 2))
    assert check_dataset(out, decode=True) == []


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("crash") / "ds"
    record(RecordConfig([TASK], 2, root, image_size=SIZE), progress=False)
    return root


def test_interrupted_commit_is_finished_on_open(small: Path, tmp_path: Path, monkeypatch):
    """A kill between the renames of one commit: the journal replays on the next open."""
    from embodied.data import DemoDataset
    from embodied.data.episode import EpisodeJob, record_episode
    from embodied.data.writer import DatasetWriter

    root = tmp_path / "ds"
    shutil.copytree(small, root)
    blob = record_episode(EpisodeJob(TASK, 7, image_size=SIZE))
    writer = DatasetWriter(root, resume=True)
    real_replace, calls = os.replace, []

    def dying_replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the process dies after the data file, before the videos and meta
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", dying_replace)
    with pytest.raises(KeyboardInterrupt):
        writer.commit([blob])
    monkeypatch.setattr(os, "replace", real_replace)
    assert (root / journal.JOURNAL).exists()
    ds = DemoDataset(root, 1, 1)  # replays the journal
    assert not (root / journal.JOURNAL).exists()
    assert len(ds.episodes) == 3 and check_dataset(root, decode=True) == []


def test_garbage_from_a_killed_run_is_removed_on_resume(small: Path, tmp_path: Path):
    from embodied.data.writer import DatasetWriter

    root = tmp_path / "ds"
    shutil.copytree(small, root)
    stray = root / "data/chunk-000/file-001.parquet"
    shutil.copy(root / "data/chunk-000/file-000.parquet", stray)
    partial = root / "videos/observation.images.scene/chunk-000/.file-000.mp4.x.partial"
    partial.write_bytes(b"half")
    DatasetWriter(root, resume=True)
    assert not stray.exists() and not partial.exists()
    assert check_dataset(root) == []


def _corrupt(root: Path, rel: str, keep: int) -> Path:
    path = root / rel
    data = path.read_bytes()
    path.write_bytes(data[:keep])
    return path


@pytest.mark.parametrize(
    "rel, keep",
    [
        ("data/chunk-000/file-000.parquet", 100),
        ("meta/info.json", 40),
        ("meta/episodes/chunk-000/file-000.parquet", 50),
        ("meta/tasks.parquet", 10),
    ],
)
def test_truncated_files_raise_errors_naming_the_file(small: Path, tmp_path: Path, rel: str, keep: int):
    from embodied.data import DemoDataset

    root = tmp_path / "ds"
    shutil.copytree(small, root)
    path = _corrupt(root, rel, keep)
    with pytest.raises(DatasetError, match=str(path).replace(".", r"\.")):
        DemoDataset(root, 1, 1)
    problems = check_dataset(root)
    assert problems and str(path) in problems[0]


def test_truncated_video_is_reported_with_its_file(small: Path, tmp_path: Path):
    from embodied.data import DemoDataset

    root = tmp_path / "ds"
    shutil.copytree(small, root)
    rel = "videos/observation.images.wrist/chunk-000/file-000.mp4"
    path = _corrupt(root, rel, (root / rel).stat().st_size // 2)
    problems = check_dataset(root)
    assert any(str(path) in p for p in problems)
    with pytest.raises(DatasetError, match=str(path).replace(".", r"\.")):
        ds = DemoDataset(root, 1, 1)
        for i in range(len(ds)):
            ds[i]


def test_check_names_the_row_of_a_bad_index(small: Path, tmp_path: Path):
    import pyarrow as pa

    root = tmp_path / "ds"
    shutil.copytree(small, root)
    path = root / "data/chunk-000/file-000.parquet"
    table = pq.read_table(path)
    frame = table["frame_index"].to_pylist()
    frame[5] = 99
    pq.write_table(table.set_column(table.column_names.index("frame_index"), "frame_index", pa.array(frame, pa.int64())), path)
    problems = check_dataset(root)
    assert problems == [f"{path}, row 5: frame_index 99 is wrong for episode 0"]
