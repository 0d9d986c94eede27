"""``DemoDataset``: windows of a recorded dataset as torch tensors.

Item ``i`` is frame ``i`` of the dataset (its global ``index``) with

    observation.state           (obs_horizon, D)        frames i-obs_horizon+1 .. i
    observation.images.<cam>    (obs_horizon, 3, H, W)  float32 in [0, 1], decoded with PyAV by timestamp
    observation.depth.<cam>     (obs_horizon, H, W)     float32 metres (datasets recorded with --depth; depth=True)
    action                      (action_horizon, A)     frames i .. i+action_horizon-1
    observation_is_pad          (obs_horizon,) bool     True where the window ran past the episode's start
    action_is_pad               (action_horizon,) bool  True where it ran past the episode's end
    skill.id, skill.index       ()  int64               the planner's call at frame i (-1: none)
    skill.params                (8,) float32
    phase, task_index, episode_index, index, frame_index   () int64
    next.success                () bool

Out-of-episode frames repeat the nearest frame of the episode (as LeRobot's
``delta_timestamps`` padding does) and are flagged in the pad masks.
``stats`` holds ``meta/stats.json`` as tensors; ``normalize=True`` standardises
state and action with its mean and std.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch
from torch.utils.data import Dataset

from embodied.data.commit import recover
from embodied.data.layout import (
    DATA_PATH,
    DEPTH_PREFIX,
    DEPTH_SCALE,
    EPISODES_PATH,
    IMAGE_PREFIX,
    INFO_PATH,
    STATS_PATH,
    TASKS_PATH,
    VIDEO_PATH,
    DatasetError,
    Info,
    read_stats,
)
from embodied.data.video import decode_range
from embodied.data.writer import load_episodes, load_tasks, read_parquet, read_parquet_schema

SCALAR_KEYS = ("skill.id", "skill.index", "phase", "task_index", "episode_index", "index", "frame_index", "next.success")
REQUIRED_FEATURES = ("observation.state", "action", "skill.params", *SCALAR_KEYS)  # what the reader reads
EPISODE_COLUMNS = ("episode_index", "tasks", "length", "data/chunk_index", "data/file_index",
                   "dataset_from_index", "dataset_to_index")
VIDEO_COLUMNS = ("chunk_index", "file_index", "from_timestamp", "to_timestamp")


def _index(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def episode_problems(root: Path, info: Info, episodes: list[dict], tasks: dict[str, int]) -> list[DatasetError]:
    """The episode table against ``meta/info.json`` and the tasks: columns present and typed, one row per
    episode in order, index ranges back to back covering every frame (what the reader relies on)."""
    ep_path = root / EPISODES_PATH.format(chunk_index=0, file_index=0)
    problems = []
    if info.total_tasks != len(tasks) or sorted(tasks.values()) != list(range(len(tasks))):
        problems.append(DatasetError(root / TASKS_PATH, f"{len(tasks)} tasks with indices {sorted(tasks.values())[:5]}"
                                                        f"..., info.json says total_tasks {info.total_tasks}"))
    if len(episodes) != info.total_episodes:
        problems.append(DatasetError(ep_path, f"{len(episodes)} episodes, meta/info.json says {info.total_episodes}"))
    at = 0
    for k, r in enumerate(episodes):
        columns = [*EPISODE_COLUMNS, *(f"videos/{v}/{s}" for v in info.video_keys for s in VIDEO_COLUMNS)]
        missing = [c for c in columns if c not in r]
        if missing:
            return [*problems, DatasetError(ep_path, f"column {missing[0]!r} missing", k)]
        bad = [c for c in columns if not (
            (isinstance(r[c], list) and all(isinstance(t, str) for t in r[c])) if c == "tasks" else
            isinstance(r[c], float) and np.isfinite(r[c]) and r[c] >= 0 if c.endswith("_timestamp") else
            _index(r[c]))]
        if bad:
            return [*problems, DatasetError(ep_path, f"{bad[0]} is {r[bad[0]]!r}, not " + (
                "a list of task strings" if bad[0] == "tasks" else "a time in seconds" if bad[0].endswith(
                    "_timestamp") else "an index >= 0"), k)]
        if r["episode_index"] != k:
            problems.append(DatasetError(ep_path, f"episode_index {r['episode_index']}, expected {k}", k))
        if r["dataset_from_index"] != at or r["dataset_to_index"] - r["dataset_from_index"] != r["length"]:
            problems.append(DatasetError(ep_path, f"index range {r['dataset_from_index']}..{r['dataset_to_index']} "
                                                  f"(length {r['length']}) does not continue from {at}", k))
        at = r["dataset_to_index"]
        if any(t not in tasks for t in r["tasks"]):
            problems.append(DatasetError(ep_path, f"task {r['tasks']} not in {TASKS_PATH}", k))
    if at != info.total_frames:
        problems.append(DatasetError(root / INFO_PATH, f"total_frames {info.total_frames}, episodes cover {at}"))
    missing = [k for k in REQUIRED_FEATURES if k not in info.features]
    if missing:
        problems.append(DatasetError(root / INFO_PATH, f"feature {missing[0]!r} missing"))
    videos = root / "videos"
    undeclared = sorted(d.name for d in videos.iterdir() if d.is_dir() and d.name not in info.video_keys) \
        if videos.is_dir() else []
    if undeclared:
        problems.append(DatasetError(root / INFO_PATH, f"videos/{undeclared[0]} holds video that no feature declares"))
    return problems


def row_problems(root: Path, info: Info, episodes: list[dict], frames: dict, n_tasks: int) -> list[DatasetError]:
    """Each data row against its episode: episode and frame index, timestamp, task index, finite state and
    action."""
    problems = []
    for r in episodes:
        a, b = r["dataset_from_index"], r["dataset_to_index"]
        if b == a:
            continue
        path = root / DATA_PATH.format(chunk_index=r["data/chunk_index"], file_index=r["data/file_index"])
        checks = {
            "episode_index": frames["episode_index"][a:b] == r["episode_index"],
            "frame_index": frames["frame_index"][a:b] == np.arange(b - a),
            "timestamp": np.abs(frames["timestamp"][a:b] - np.arange(b - a) / info.fps) < 1e-4,
            "task_index": (frames["task_index"][a:b] >= 0) & (frames["task_index"][a:b] < n_tasks),
        }
        for key, ok in checks.items():
            ok = np.asarray(ok).reshape(b - a, -1).all(axis=1)
            if not ok.all():
                row = a + int(np.argmin(ok))
                problems.append(DatasetError(path, f"{key} {frames[key][row]} is wrong for episode "
                                                   f"{r['episode_index']}", row))
        for key in ("observation.state", "action"):
            bad = ~np.isfinite(frames[key][a:b].reshape(b - a, -1)).all(axis=1)
            if bad.any():
                problems.append(DatasetError(path, f"{key} is not finite", a + int(np.argmax(bad))))
    return problems


def _numeric(col: pa.Array, key: str, path: Path) -> None:
    """A data column of numbers (or fixed lists of them) with no empty values."""
    kind, nulls = col.type, col.null_count
    while isinstance(kind, (pa.FixedSizeListType, pa.ListType)):
        col = col.flatten()
        kind, nulls = col.type, nulls + col.null_count
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)):
        raise DatasetError(path, f"column {key!r} holds {kind} values, not numbers")
    if nulls:
        raise DatasetError(path, f"column {key!r} has {nulls} empty value(s)")


def load_frames(root: Path, info: Info, episodes: list[dict], depth: bool = True) -> dict[str, np.ndarray]:
    """Every data column (depth only if ``depth``) as one array in ``index`` order, checked against ``meta/``."""
    files = sorted({(r["data/chunk_index"], r["data/file_index"]) for r in episodes})
    wanted = [k for k, f in info.features.items()
              if f["dtype"] != "video" and (depth or not k.startswith(DEPTH_PREFIX))]
    tables = []
    for chunk, file in files:
        path = root / DATA_PATH.format(chunk_index=chunk, file_index=file)
        present = read_parquet_schema(path).names
        missing = [k for k in wanted if k not in present]
        if missing:
            raise DatasetError(path, f"column {missing[0]!r} declared in meta/info.json is missing")
        tables.append((path, read_parquet(path, wanted)))
    cols: dict[str, np.ndarray] = {}
    for key in wanted:
        f = info.features[key]
        parts = []
        for path, table in tables:
            col = table.column(key).combine_chunks()
            _numeric(col, key, path)
            if isinstance(col.type, (pa.FixedSizeListType, pa.ListType)):
                arr = np.asarray(col.flatten().flatten() if key.startswith(DEPTH_PREFIX) else col.flatten())
                arr = arr.reshape((len(col), *f["shape"])) if arr.size == len(col) * int(np.prod(f["shape"])) else None
                if arr is None:
                    raise DatasetError(path, f"column {key!r} does not have the declared shape {f['shape']}")
            else:
                arr = col.to_numpy(zero_copy_only=False)
            parts.append(arr)
        cols[key] = np.concatenate(parts) if parts else np.zeros((0,))
    index = cols["index"]
    if len(index) != info.total_frames or not np.array_equal(index, np.arange(len(index))):
        bad = int(np.argmax(index != np.arange(len(index)))) if len(index) == info.total_frames else len(index)
        raise DatasetError(root / DATA_PATH.format(chunk_index=files[-1][0], file_index=files[-1][1]) if files else root,
                           f"rows do not hold indices 0..{info.total_frames - 1} in order (first mismatch at index {bad})")
    return cols


class DemoDataset(Dataset):
    def __init__(
        self,
        root: str | Path,
        obs_horizon: int = 2,
        action_horizon: int = 8,
        cameras: list[str] | tuple[str, ...] | None = None,
        depth: bool = False,
        normalize: bool = False,
        cache_episodes: int = 4,
    ):
        if obs_horizon < 1 or action_horizon < 1:
            raise ValueError(f"obs_horizon and action_horizon must be >= 1, got {obs_horizon}, {action_horizon}")
        self.root = Path(root)
        if not (self.root / "meta" / "info.json").exists() and not (self.root / "meta" / ".commit.json").exists():
            raise DatasetError(self.root / "meta" / "info.json", "missing: not a dataset folder")
        recover(self.root)
        self.info = Info.load(self.root)
        self.episodes = load_episodes(self.root)
        tasks = load_tasks(self.root)
        self.tasks = {i: t for t, i in tasks.items()}
        for problem in episode_problems(self.root, self.info, self.episodes, tasks):
            raise problem
        self.frames = load_frames(self.root, self.info, self.episodes, depth=depth)
        for problem in row_problems(self.root, self.info, self.episodes, self.frames, len(tasks)):
            raise problem
        self.obs_horizon, self.action_horizon = int(obs_horizon), int(action_horizon)
        available = [k[len(IMAGE_PREFIX):] for k in self.info.video_keys]
        self.cameras = list(available if cameras is None else cameras)
        unknown = [c for c in self.cameras if c not in available]
        if unknown:
            raise ValueError(f"camera {unknown[0]!r} is not in {self.root}; cameras: {', '.join(available)}")
        self.depth = [k for k in self.info.features if k.startswith(DEPTH_PREFIX)] if depth else []
        if depth and not self.depth:
            raise ValueError(f"{self.root} was recorded without --depth")
        stats = read_stats(self.root)
        for key in ("observation.state", "action"):
            if key not in stats or "mean" not in stats[key] or "std" not in stats[key]:
                raise DatasetError(self.root / STATS_PATH, f"statistics of {key!r} missing")
            shape = tuple(self.info.features[key]["shape"])
            for s in ("mean", "std"):
                if stats[key][s].shape != shape or not np.isfinite(stats[key][s]).all():
                    raise DatasetError(self.root / STATS_PATH, f"{key}.{s} must be {list(shape)} finite numbers, "
                                                               f"got shape {list(stats[key][s].shape)}")
        self.stats = {k: {s: torch.tensor(v, dtype=torch.float32) for s, v in d.items()} for k, d in stats.items()}
        self.normalize = normalize
        ep = self.frames["episode_index"]
        bounds = np.array([[r["dataset_from_index"], r["dataset_to_index"]] for r in self.episodes], dtype=np.int64)
        self._from, self._to = bounds[ep, 0], bounds[ep, 1]
        self._cache: OrderedDict[tuple[str, int], np.ndarray] = OrderedDict()
        self._cache_size = max(1, cache_episodes) * max(1, len(self.cameras))

    def __len__(self) -> int:
        return int(self.info.total_frames)

    @property
    def fps(self) -> int:
        return self.info.fps

    def task_text(self, task_index: int) -> str:
        return self.tasks[int(task_index)]

    def _window(self, i: int, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        idx = i + offsets
        lo, hi = self._from[i], self._to[i] - 1
        return np.clip(idx, lo, hi), (idx < lo) | (idx > hi)

    def episode_frames(self, camera: str, episode: int) -> np.ndarray:
        """All frames of ``episode`` from ``camera``: (T, H, W, 3) uint8 (cached)."""
        key = (camera, episode)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        r = self.episodes[episode]
        vk = f"{IMAGE_PREFIX}{camera}"
        path = self.root / VIDEO_PATH.format(video_key=vk, chunk_index=r[f"videos/{vk}/chunk_index"],
                                             file_index=r[f"videos/{vk}/file_index"])
        start = round(r[f"videos/{vk}/from_timestamp"] * self.fps)
        frames = decode_range(path, start, start + int(r["length"]), self.fps)
        self._cache[key] = frames
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return frames

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"index {i} out of range for {n} frames")
        i = int(i) % n
        obs_idx, obs_pad = self._window(i, np.arange(-self.obs_horizon + 1, 1))
        act_idx, act_pad = self._window(i, np.arange(self.action_horizon))
        state = torch.from_numpy(self.frames["observation.state"][obs_idx].astype(np.float32))
        action = torch.from_numpy(self.frames["action"][act_idx].astype(np.float32))
        if self.normalize:
            state = (state - self.stats["observation.state"]["mean"]) / self.stats["observation.state"]["std"].clamp_min(1e-6)
            action = (action - self.stats["action"]["mean"]) / self.stats["action"]["std"].clamp_min(1e-6)
        item = {
            "observation.state": state,
            "action": action,
            "observation_is_pad": torch.from_numpy(obs_pad),
            "action_is_pad": torch.from_numpy(act_pad),
            "skill.params": torch.from_numpy(self.frames["skill.params"][i].astype(np.float32)),
        }
        for key in SCALAR_KEYS:
            item[key] = torch.tensor(self.frames[key][i])
        ep = int(self.frames["episode_index"][i])
        local = obs_idx - self._from[i]
        for cam in self.cameras:
            frames = self.episode_frames(cam, ep)[local]
            item[f"{IMAGE_PREFIX}{cam}"] = torch.from_numpy(frames).permute(0, 3, 1, 2).float().div_(255.0)
        for key in self.depth:
            item[key] = torch.from_numpy(self.frames[key][obs_idx].astype(np.float32) / DEPTH_SCALE)
        return item
