"""``embodied data check|info|video``: validate, summarise and look at a dataset.

:func:`check_dataset` reads every file ``meta/`` names and returns the
problems found, each naming the file (and the row); an empty list means the
dataset is consistent: contiguous indices, per-row episode and frame
indices, timestamps, declared shapes, video frame counts equal to data rows,
video spans back to back, statistics present for every feature.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from embodied.data.commit import recover
from embodied.data.layout import (
    IMAGE_PREFIX,
    STATS_PATH,
    VIDEO_PATH,
    DatasetError,
    Info,
    read_stats,
)
from embodied.data.reader import episode_problems, load_frames, row_problems
from embodied.data.stats import STAT_KEYS
from embodied.data.video import decode_range, frame_size, probe
from embodied.data.writer import load_episodes, load_tasks


def _open(root: Path) -> tuple[Info, list[dict], dict[str, int]]:
    if not (root / "meta" / "info.json").exists() and not (root / "meta" / ".commit.json").exists():
        raise DatasetError(root / "meta" / "info.json", "missing: not a dataset folder")
    recover(root)
    return Info.load(root), load_episodes(root), load_tasks(root)


def check_dataset(root: str | Path, decode: bool = False) -> list[str]:
    """Problems found in the dataset at ``root`` (empty: it checks clean). ``decode`` also decodes every frame."""
    root = Path(root)
    problems: list[str] = []
    try:
        info, episodes, tasks = _open(root)
    except DatasetError as exc:
        return [str(exc)]
    problems = [str(p) for p in episode_problems(root, info, episodes, tasks)]
    if problems:
        return problems
    try:
        frames = load_frames(root, info, episodes)
    except DatasetError as exc:
        return problems + [str(exc)]
    problems += [str(p) for p in row_problems(root, info, episodes, frames, len(tasks))]
    problems += _check_videos(root, info, episodes, decode)
    problems += _check_stats(root, info)
    return problems


def _check_videos(root: Path, info: Info, episodes: list[dict], decode: bool) -> list[str]:
    problems = []
    for key in info.video_keys:
        files: dict[tuple[int, int], list[dict]] = {}
        for r in episodes:
            files.setdefault((r[f"videos/{key}/chunk_index"], r[f"videos/{key}/file_index"]), []).append(r)
        for (chunk, file), rows in files.items():
            path = root / VIDEO_PATH.format(video_key=key, chunk_index=chunk, file_index=file)
            try:
                n = probe(path)
                hw = frame_size(path)
            except DatasetError as exc:
                problems.append(str(exc))
                continue
            if list(hw) != list(info.features[key]["shape"][:2]):
                problems.append(f"{path}: frames are {hw[0]}x{hw[1]}, meta/info.json declares {info.features[key]['shape']}")
            at = 0.0
            for r in rows:
                a, b = r[f"videos/{key}/from_timestamp"], r[f"videos/{key}/to_timestamp"]
                if not math.isclose(a, at, abs_tol=1e-6) or not math.isclose(b - a, r["length"] / info.fps, abs_tol=1e-6):
                    problems.append(f"{path}: episode {r['episode_index']} spans {a:.3f}..{b:.3f} s, expected "
                                    f"{at:.3f}..{at + r['length'] / info.fps:.3f} s")
                at = b
            expected = sum(r["length"] for r in rows)
            if n != expected:
                problems.append(f"{path}: {n} frames, but the data rows of its episodes "
                                f"{rows[0]['episode_index']}..{rows[-1]['episode_index']} number {expected}")
            elif decode:
                try:
                    shape = decode_range(path, 0, n, info.fps).shape[1:]
                except DatasetError as exc:
                    problems.append(str(exc))
                    continue
                if list(shape) != list(info.features[key]["shape"]):
                    problems.append(f"{path}: frames are {list(shape)}, meta/info.json declares {info.features[key]['shape']}")
    return problems


def _check_stats(root: Path, info: Info) -> list[str]:
    path = root / STATS_PATH
    try:
        stats = read_stats(root)
    except DatasetError as exc:
        return [str(exc)]
    problems = []
    for key, f in info.features.items():
        s = stats.get(key)
        if not isinstance(s, dict):
            problems.append(f"{path}: no statistics for {key!r}")
            continue
        lacking = [k for k in STAT_KEYS if k not in s]
        if lacking:
            problems.append(f"{path}: statistics of {key!r} lack {lacking}")
            continue
        shape = [3, 1, 1] if f["dtype"] == "video" else [1] if key.startswith("observation.depth.") else list(f["shape"])
        if list(s["mean"].shape) != shape:
            problems.append(f"{path}: mean of {key!r} has shape {list(s['mean'].shape)}, expected {shape}")
        for stat in ("mean", "std"):  # a policy normalises with these: NaN or inf would poison every batch
            if not np.isfinite(s[stat]).all():
                problems.append(f"{path}: {stat} of {key!r} is not all finite numbers")
    return problems


def dataset_info(root: str | Path) -> dict:
    """Episodes, frames, features, tasks, size on disk and success rate."""
    root = Path(root)
    info, episodes, tasks = _open(root)
    problems = episode_problems(root, info, episodes, tasks)  # a malformed episode table is named, not counted
    if problems:
        raise problems[0]
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    per_task: dict[str, dict] = {}
    for r in episodes:
        d = per_task.setdefault(r.get("task_name") or "?", {"episodes": 0, "frames": 0, "successes": 0})
        d["episodes"] += 1
        d["frames"] += int(r["length"])
        d["successes"] += int(bool(r.get("success")))
    n = len(episodes)
    return {
        "root": str(root),
        "codebase_version": "v3.0",
        "robot_type": info.robot_type,
        "fps": info.fps,
        "episodes": n,
        "frames": info.total_frames,
        "duration_s": info.total_frames / info.fps,
        "success_rate": sum(int(bool(r.get("success"))) for r in episodes) / n if n else 0.0,
        "size_mb": size / 1e6,
        "mb_per_100_episodes": size / 1e6 / n * 100 if n else 0.0,
        "cameras": [k[len(IMAGE_PREFIX):] for k in info.video_keys],
        "features": {k: {"dtype": f["dtype"], "shape": f["shape"]} for k, f in info.features.items()},
        "tasks": {t: i for t, i in sorted(tasks.items(), key=lambda kv: kv[1])},
        "per_task": per_task,
    }
