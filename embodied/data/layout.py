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


MAX_DIM = 1 << 16  # no feature axis (image side, state width) is longer
MAX_COUNT = 1 << 53  # frames, episodes, tasks: far beyond any dataset, within a float's exact integers


def _count(d: dict, key: str, path: Path, least: int = 0) -> int:
    """``d[key]`` as an integer in least..MAX_COUNT (a whole float such as 30.0 is taken, NaN is not)."""
    value = d[key]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not least <= value <= MAX_COUNT:
        raise DatasetError(path, f"{key} must be an integer >= {least}, got {value!r}")
    return value


def _size(d: dict, key: str, path: Path) -> int | float:
    """``d[key]``: a file size limit in MB, a number > 0 (fractions allowed: tests roll files over at kB)."""
    value = d[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_COUNT:
        raise DatasetError(path, f"{key} must be a number > 0, got {value!r}")
    return value


def read_stats(root: Path) -> dict[str, dict[str, np.ndarray]]:
    """``meta/stats.json`` as {feature: {statistic: float64 array}}; every value a number or a rectangular
    nested list of numbers (NaN and inf pass here: the reader requires finite ones where it normalises)."""
    path = root / STATS_PATH
    doc = read_json(path)
    if not isinstance(doc, dict) or not all(isinstance(d, dict) for d in doc.values()):
        raise DatasetError(path, "expected an object {feature: {statistic: values}}")
    out: dict[str, dict[str, np.ndarray]] = {}
    for key, d in doc.items():
        out[key] = {}
        for stat, value in d.items():
            try:
                out[key][stat] = _numbers(value)
            except (TypeError, ValueError, OverflowError):
                raise DatasetError(path, f"{key}.{stat} is not a number or a rectangular list of numbers") from None
    return out


def _numbers(value: Any) -> np.ndarray:
    """A number or nested list of numbers as a float64 array; anything else (strings, None, booleans,
    objects, ragged lists) raises TypeError or ValueError."""
    def walk(v):
        if isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(type(v).__name__)
    walk(value)
    return np.asarray(value, dtype=np.float64)


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
        missing = [k for k in ("fps", "robot_type", "features", "total_episodes", "total_frames", "total_tasks",
                               "chunks_size", "data_files_size_in_mb", "video_files_size_in_mb") if k not in d]
        if missing:
            raise DatasetError(path, f"missing key {missing[0]!r}")
        known = {
            "fps": _count(d, "fps", path, 1),
            "robot_type": d["robot_type"],
            "features": d["features"],
            "total_episodes": _count(d, "total_episodes", path),
            "total_frames": _count(d, "total_frames", path),
            "total_tasks": _count(d, "total_tasks", path),
            "chunks_size": _count(d, "chunks_size", path, 1),
            "data_files_size_in_mb": _size(d, "data_files_size_in_mb", path),
            "video_files_size_in_mb": _size(d, "video_files_size_in_mb", path),
        }
        if not isinstance(known["robot_type"], str):
            raise DatasetError(path, f"robot_type must be a string, got {known['robot_type']!r}")
        if not isinstance(known["features"], dict):
            raise DatasetError(path, "features must be an object {name: {dtype, shape, ...}}")
        for key, feat in known["features"].items():
            if not isinstance(feat, dict) or "dtype" not in feat or "shape" not in feat:
                raise DatasetError(path, f"feature {key!r} lacks dtype/shape")
            shape = feat["shape"]
            if not isinstance(feat["dtype"], str) or not isinstance(shape, list) or not all(
                    isinstance(n, int) and not isinstance(n, bool) and 0 < n <= MAX_DIM for n in shape):
                raise DatasetError(path, f"feature {key!r}: dtype must be a string and shape a list of sizes "
                                         f"in 1..{MAX_DIM}, got {feat['dtype']!r}, {shape!r}")
            if feat["dtype"] == "video" and len(shape) != 3:
                raise DatasetError(path, f"feature {key!r}: a video's shape is [height, width, channels], got {shape}")
        missing = [k for k in DEFAULT_FEATURES if k not in known["features"] or known["features"][k]["dtype"] == "video"]
        if missing:
            raise DatasetError(path, f"feature {missing[0]!r} missing (every LeRobot dataset has "
                                     f"{', '.join(DEFAULT_FEATURES)})")
        standard = set(known) | {"codebase_version", "splits", "data_path", "video_path"}
        return cls(**known, extra={k: v for k, v in d.items() if k not in standard})

    def save(self, root: Path) -> None:
        atomic_write(root / INFO_PATH, json.dumps(self.to_dict(), indent=4, default=plain))
