"""The LeRobotDataset v3.0 layout: paths, ``meta/info.json``, errors and atomic file writes.

A dataset folder::

    meta/info.json                                      codebase_version "v3.0", fps, features, totals, templates
    meta/stats.json                                     per-feature statistics over every frame
    meta/tasks.parquet                                  task strings (the pandas index) -> task_index
    meta/episodes/chunk-000/file-000.parquet            one row per episode: index ranges, files, video spans, stats
    data/chunk-000/file-000.parquet                     one row per frame
    videos/observation.images.<cam>/chunk-000/file-000.mp4   several episodes per file, back to back

``meta/`` is the index: it is rewritten (atomically, file by file, info.json
last) after the data and video files it names are in place, so whatever a
killed recorder leaves behind that ``meta/info.json`` does not count is
garbage, removed by the next writer that opens the folder.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

CODEBASE_VERSION = "v3.0"
CHUNKS_SIZE = 1000
DATA_FILES_SIZE_MB = 100
VIDEO_FILES_SIZE_MB = 200
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
# Recordings of a policy that keeps decisions (the memory agent): one safetensors file per episode,
# beside LeRobot's files (its reader ignores it). See embodied.data.decisions.
DECISIONS_PATH = "meta/decisions/episode_{episode_index:06d}.safetensors"
INFO_PATH = "meta/info.json"
STATS_PATH = "meta/stats.json"
TASKS_PATH = "meta/tasks.parquet"
IMAGE_PREFIX = "observation.images."
DEPTH_PREFIX = "observation.depth."
DEPTH_SCALE = 1000.0  # depth is stored as uint16 millimetres (0 = no return / beyond 65.535 m)
VIDEO_CODEC = "h264"
PIX_FMT = "yuv420p"
DEFAULT_FEATURES = ("timestamp", "frame_index", "episode_index", "index", "task_index")


class DatasetError(ValueError):
    """A dataset file is missing, corrupt or inconsistent; the message names the file (and row)."""

    def __init__(self, path: str | os.PathLike, problem: str, row: int | None = None):
        self.path, self.problem, self.row = str(path), problem, row
        where = f"{self.path}, row {row}" if row is not None else self.path
        super().__init__(f"{where}: {problem}")


def chunk_file(n: int, chunks_size: int = CHUNKS_SIZE) -> tuple[int, int]:
    """The n-th file of a series (0-based) as (chunk_index, file_index)."""
    return n // chunks_size, n % chunks_size


def next_file(chunk: int, file: int, chunks_size: int = CHUNKS_SIZE) -> tuple[int, int]:
    file += 1
    return (chunk + 1, 0) if file >= chunks_size else (chunk, file)


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def temp_path(path: Path) -> Path:
    """A fresh temporary name beside ``path`` (same folder, so ``os.replace`` is atomic)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    os.close(fd)
    os.chmod(tmp, 0o666 & ~umask())
    return Path(tmp)


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def commit_file(tmp: Path, path: Path) -> None:
    """fsync ``tmp`` and rename it to ``path``."""
    fsync_path(tmp)
    os.replace(tmp, path)


def atomic_write(path: Path, data: bytes | str) -> None:
    tmp = temp_path(path)
    try:
        with open(tmp, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        commit_file(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def plain(value: Any) -> Any:
    """JSON default for numpy values."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(path, "missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(path, f"cannot be read: {exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(path, f"not valid JSON (truncated or corrupt): {exc}") from None


@dataclass
class Feature:
    """One entry of ``info["features"]``."""

    dtype: str
    shape: tuple[int, ...]
    names: list[str] | dict | None = None
    info: dict | None = None
    description: str = ""

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"dtype": self.dtype, "shape": list(self.shape), "names": self.names}
        if self.info is not None:
            d["info"] = self.info
        if self.description:
            d["description"] = self.description
        return d


def video_feature(size: int, fps: int, codec: str = VIDEO_CODEC) -> Feature:
    return Feature(
        "video",
        (size, size, 3),
        ["height", "width", "channels"],
        {
            "video.height": size,
            "video.width": size,
            "video.codec": codec,
            "video.pix_fmt": PIX_FMT,
            "video.is_depth_map": False,
            "video.fps": fps,
            "video.channels": 3,
            "has_audio": False,
        },
    )


@dataclass
class Info:
    """``meta/info.json``."""

    fps: int
    robot_type: str
    features: dict[str, dict]
    total_episodes: int = 0
    total_frames: int = 0
    total_tasks: int = 0
    chunks_size: int = CHUNKS_SIZE
    data_files_size_in_mb: int = DATA_FILES_SIZE_MB
    video_files_size_in_mb: int = VIDEO_FILES_SIZE_MB
    extra: dict = field(default_factory=dict)  # our own keys ("embodied": recording settings)

    @property
    def video_keys(self) -> list[str]:
        return [k for k, f in self.features.items() if f["dtype"] == "video"]

    def to_dict(self) -> dict:
        d = {
            "codebase_version": CODEBASE_VERSION,
            "robot_type": self.robot_type,
            "total_episodes": self.total_episodes,
            "total_frames": self.total_frames,
            "total_tasks": self.total_tasks,
            "chunks_size": self.chunks_size,
            "data_files_size_in_mb": self.data_files_size_in_mb,
            "video_files_size_in_mb": self.video_files_size_in_mb,
            "fps": self.fps,
            "splits": {"train": f"0:{self.total_episodes}"},
            "data_path": DATA_PATH,
            "video_path": VIDEO_PATH if self.video_keys else None,
            "features": self.features,
        }
        d.update(self.extra)
        return d

    @classmethod
    def load(cls, root: Path) -> Info:
        path = root / INFO_PATH
        d = read_json(path)
        if not isinstance(d, dict):
            raise DatasetError(path, "expected a JSON object")
        if d.get("codebase_version") != CODEBASE_VERSION:
            raise DatasetError(path, f"codebase_version is {d.get('codebase_version')!r}, expected {CODEBASE_VERSION!r}")
        try:
            known = {
                "fps": int(d["fps"]),
                "robot_type": d["robot_type"],
                "features": dict(d["features"]),
                "total_episodes": int(d["total_episodes"]),
                "total_frames": int(d["total_frames"]),
                "total_tasks": int(d["total_tasks"]),
                "chunks_size": int(d["chunks_size"]),
                "data_files_size_in_mb": int(d["data_files_size_in_mb"]),
                "video_files_size_in_mb": int(d["video_files_size_in_mb"]),
            }
        except (KeyError, TypeError, ValueError) as exc:
            raise DatasetError(path, f"missing or malformed key: {exc}") from None
        for key, feat in known["features"].items():
            if not isinstance(feat, dict) or "dtype" not in feat or "shape" not in feat:
                raise DatasetError(path, f"feature {key!r} lacks dtype/shape")
        standard = set(known) | {"codebase_version", "splits", "data_path", "video_path"}
        return cls(**known, extra={k: v for k, v in d.items() if k not in standard})

    def save(self, root: Path) -> None:
        atomic_write(root / INFO_PATH, json.dumps(self.to_dict(), indent=4, default=plain))
