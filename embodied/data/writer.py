"""The single writer of a dataset: appends finished episodes, each commit atomic.

Workers hand over :class:`~embodied.data.episode.EpisodeBlob` s; :meth:`DatasetWriter.commit`
appends a batch of them. The current data file and each camera's current mp4
are rewritten under temporary names with the new episodes added (parquet:
rows concatenated; mp4: the episodes' fragments appended to a copy, nothing re-encoded), or a new file is
started once the current one has reached its size limit; then ``meta/`` is
rewritten and everything renamed into place through the journal of
:mod:`embodied.data.commit`. Episode indices are given at commit time, so they
stay contiguous whatever order workers finish in.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from embodied.data import commit as journal
from embodied.data.episode import EpisodeBlob
from embodied.data.layout import (
    CHUNKS_SIZE,
    DATA_FILES_SIZE_MB,
    DATA_PATH,
    DECISIONS_PATH,
    EPISODES_PATH,
    IMAGE_PREFIX,
    STATS_PATH,
    TASKS_PATH,
    VIDEO_FILES_SIZE_MB,
    VIDEO_PATH,
    DatasetError,
    Info,
    next_file,
    plain,
    temp_path,
)
from embodied.data.stats import aggregate
from embodied.data.tables import (
    calls_json,
    check_compatible,
    features_for,
    flatten_stats,
    frame_stats,
    frame_table,
    unflatten_stats,
)
from embodied.data.video import IncompatibleVideo, append, probe

MB = 1024 * 1024
EPISODES_PER_META_FILE = 100  # meta/episodes rolls to its next file every this many episodes (it is rewritten per commit)


def read_parquet(path: Path, columns: list[str] | None = None) -> pa.Table:
    try:
        table = pq.read_table(path, columns=columns)
    except FileNotFoundError:
        raise DatasetError(path, "missing") from None
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(path, f"not a readable parquet file (truncated or corrupt): {exc}") from None
    try:
        # Parquet checks its pages, not the text inside: a corrupt byte in a string column (invalid UTF-8)
        # would only fail later, where a row is read. Text columns are small (task names, episode tables).
        for name, column in zip(table.column_names, table.columns):
            if _has_text(column.type):
                column.validate(full=True)
    except pa.ArrowException as exc:
        raise DatasetError(path, f"column {name!r} holds invalid data (corrupt text?): {exc}") from None
    return table


def _has_text(kind: pa.DataType) -> bool:
    """Whether a column type holds strings, itself or inside lists and structs."""
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return True
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return _has_text(kind.value_type)
    if pa.types.is_struct(kind):
        return any(_has_text(kind.field(i).type) for i in range(kind.num_fields))
    return False


def read_parquet_schema(path: Path) -> pa.Schema:
    try:
        return pq.read_schema(path)
    except FileNotFoundError:
        raise DatasetError(path, "missing") from None
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(path, f"not a readable parquet file (truncated or corrupt): {exc}") from None


def load_episodes(root: Path) -> list[dict]:
    """Every row of ``meta/episodes/*/*.parquet``, in episode order."""
    rows: list[dict] = []
    for path in sorted((root / "meta" / "episodes").glob("*/*.parquet")):
        table = read_parquet(path).to_pylist()
        for k, r in enumerate(table):
            index = r.get("episode_index")
            if not isinstance(index, int) or isinstance(index, bool) or index < 0:
                raise DatasetError(path, f"episode_index is {index!r}, not an index >= 0", k)
        rows += table
    rows.sort(key=lambda r: r["episode_index"])
    return rows


def load_tasks(root: Path) -> dict[str, int]:
    path = root / TASKS_PATH
    if not path.exists():
        raise DatasetError(path, "missing")
    table = read_parquet(path)  # checks the text columns too (the task strings)
    try:
        df = table.to_pandas()
    except (ValueError, pa.ArrowException) as exc:
        raise DatasetError(path, f"not a readable parquet file (truncated or corrupt): {exc}") from None
    if "task_index" not in df.columns or not pd.api.types.is_integer_dtype(df["task_index"]):
        raise DatasetError(path, "no integer column 'task_index'")
    if not all(isinstance(task, str) for task in df.index):
        raise DatasetError(path, "the index (the task strings) holds something other than strings")
    return {task: int(i) for task, i in zip(df.index, df["task_index"])}


class DatasetWriter:
    """Open (or create) the dataset at ``root`` for appending."""

    def __init__(
        self,
        root: str | Path,
        resume: bool = False,
        data_files_size_in_mb: float = DATA_FILES_SIZE_MB,
        video_files_size_in_mb: float = VIDEO_FILES_SIZE_MB,
        chunks_size: int = CHUNKS_SIZE,
    ):
        self.root = Path(root)
        journal.recover(self.root) if self.root.is_dir() else None
        self.info: Info | None = None
        self.episodes: list[dict] = []
        self.tasks: dict[str, int] = {}
        self._stats: dict = {}  # dataset statistics of the committed episodes
        self.limits = (data_files_size_in_mb, video_files_size_in_mb, chunks_size)
        self._data: tuple[Path, pa.Table] | None = None  # the current data file's rows, as last committed
        self._videos: dict[str, tuple[Path, int]] = {}  # per camera: current mp4 and its frame count
        if journal.is_dataset(self.root):
            if not resume:
                raise ValueError(f"{self.root} already holds a dataset; pass --resume to append to it, or choose a new folder")
            self.info = Info.load(self.root)
            self.episodes = load_episodes(self.root)
            self.tasks = load_tasks(self.root)
            self._stats = aggregate([unflatten_stats(r) for r in self.episodes]) if self.episodes else {}
            if len(self.episodes) != self.info.total_episodes:
                raise DatasetError(self.root / "meta/info.json", f"total_episodes {self.info.total_episodes} "
                                   f"but meta/episodes lists {len(self.episodes)}")
            journal.collect_garbage(self.root, self.referenced())
        else:
            journal.ensure_clean_target(self.root)

    # --- what is there -------------------------------------------------------
    def recorded(self) -> set[tuple[str, int]]:
        """(task, seed) of every committed episode."""
        return {(r["task_name"], int(r["seed"])) for r in self.episodes if r.get("task_name") is not None}

    def referenced(self) -> set[Path]:
        refs: set[Path] = set()
        assert self.info is not None
        for r in self.episodes:
            refs.add(Path(DATA_PATH.format(chunk_index=r["data/chunk_index"], file_index=r["data/file_index"])))
            refs.add(Path(EPISODES_PATH.format(chunk_index=r["meta/episodes/chunk_index"],
                                               file_index=r["meta/episodes/file_index"])))
            for key in self.info.video_keys:
                refs.add(Path(VIDEO_PATH.format(video_key=key, chunk_index=r[f"videos/{key}/chunk_index"],
                                                file_index=r[f"videos/{key}/file_index"])))
        return refs

    # --- appending -----------------------------------------------------------
    def _start(self, blob: EpisodeBlob) -> None:
        meta, arrays = blob.meta_dict(), blob.array_dict()
        size = int(meta["job"]["image_size"])
        data_mb, video_mb, chunks = self.limits
        self.info = Info(
            fps=int(meta["fps"]),
            robot_type=meta["robot_type"],
            features=features_for(meta, arrays, size),
            chunks_size=int(chunks),
            data_files_size_in_mb=data_mb,
            video_files_size_in_mb=video_mb,
            extra={"embodied": {"image_size": size, "policy": meta["job"]["policy"],
                                "perception": meta["job"].get("perception", "masks"),
                                "task_text": "the recall-phase instruction (the goal)"}},
        )

    def commit(self, blobs: list[EpisodeBlob]) -> list[int]:
        """Append ``blobs`` as one atomic unit; returns their episode indices."""
        if not blobs:
            return []
        with journal.sigint_held():
            return self._commit(blobs)

    def _commit(self, blobs: list[EpisodeBlob]) -> list[int]:
        if self.info is None:
            self._start(blobs[0])
        info = self.info
        assert info is not None
        metas, arrays = [b.meta_dict() for b in blobs], [b.array_dict() for b in blobs]
        for m, a in zip(metas, arrays):
            check_compatible(info.features, m, a, info.fps)
        renames: list[tuple[Path, Path]] = []
        last = self.episodes[-1] if self.episodes else None
        first_ep, first_index = len(self.episodes), info.total_frames
        tasks_before = len(self.tasks) if self.episodes else -1
        # --- data rows
        tables, rows, stats = [], [], []
        index = first_index
        for k, (m, a) in enumerate(zip(metas, arrays)):
            task_ids = [self.tasks.setdefault(t, len(self.tasks)) for t in m["tasks"]]
            table = frame_table(info.features, a, first_ep + k, index, task_ids, info.fps)
            tables.append(table)
            stats.append(frame_stats(info.features, table))
            rows.append({"episode_index": first_ep + k, "tasks": list(m["tasks"]), "length": int(m["length"]),
                         "dataset_from_index": index, "dataset_to_index": index + int(m["length"])})
            index += int(m["length"])
        chunk, file, old = self._current("data", last)
        path = self.root / DATA_PATH.format(chunk_index=chunk, file_index=file)
        if old and path.stat().st_size >= info.data_files_size_in_mb * MB:
            (chunk, file), old = next_file(chunk, file, info.chunks_size), False
            path = self.root / DATA_PATH.format(chunk_index=chunk, file_index=file)
        cached = self._data if self._data is not None and self._data[0] == path else None
        new = pa.concat_tables(([cached[1] if cached else read_parquet(path)] if old else []) + tables)
        tmp = temp_path(path)
        pq.write_table(new, tmp)
        pending_data = (path, new)
        renames.append((tmp, path))
        for r in rows:
            r["data/chunk_index"], r["data/file_index"] = chunk, file
        # --- videos
        pending_videos: dict[str, tuple[Path, int]] = {}
        for key in info.video_keys:
            cam = key[len(IMAGE_PREFIX):]
            chunk, file, old = self._current(f"videos/{key}", last)
            path = self.root / VIDEO_PATH.format(video_key=key, chunk_index=chunk, file_index=file)
            parts = [(f"{m['job']['task']} seed {m['job']['seed']} {cam}", b.videos[cam], int(m["length"]))
                     for m, b in zip(metas, blobs)]
            frames_before, roll = 0, False
            if old:
                cached = self._videos.get(key)
                frames_before = cached[1] if cached and cached[0] == path else probe(path)
                roll = path.stat().st_size >= info.video_files_size_in_mb * MB
                if not roll:
                    tmp = temp_path(path)
                    try:
                        append(path, frames_before, parts, tmp, info.fps)
                    except IncompatibleVideo:  # other codec parameters than the current file's
                        tmp.unlink(missing_ok=True)
                        roll = True
            if roll:
                (chunk, file), frames_before = next_file(chunk, file, info.chunks_size), 0
                path = self.root / VIDEO_PATH.format(video_key=key, chunk_index=chunk, file_index=file)
            if not old or roll:
                tmp = temp_path(path)
                append(None, 0, parts, tmp, info.fps)
            renames.append((tmp, path))
            pending_videos[key] = (path, frames_before + sum(r["length"] for r in rows))
            at = frames_before
            for r in rows:
                r[f"videos/{key}/chunk_index"], r[f"videos/{key}/file_index"] = chunk, file
                r[f"videos/{key}/from_timestamp"] = at / info.fps
                r[f"videos/{key}/to_timestamp"] = (at + r["length"]) / info.fps
                at += r["length"]
        # --- meta
        mchunk, mfile = (0, 0) if last is None else (last["meta/episodes/chunk_index"], last["meta/episodes/file_index"])
        in_file = [r for r in self.episodes if (r["meta/episodes/chunk_index"], r["meta/episodes/file_index"]) == (mchunk, mfile)]
        if len(in_file) >= EPISODES_PER_META_FILE:
            (mchunk, mfile), in_file = next_file(mchunk, mfile, info.chunks_size), []
        for r, m, s in zip(rows, metas, stats):
            s.update(m["image_stats"])
            r.update({"meta/episodes/chunk_index": mchunk, "meta/episodes/file_index": mfile, "task_name": m["job"]["task"],
                      "seed": int(m["job"]["seed"]), "policy": m["job"]["policy"], "success": bool(m["success"]),
                      "skill_calls": calls_json(m["calls"])})
            r.update(flatten_stats(s))
        agg = aggregate(([self._stats] if self._stats else []) + stats)  # pooling is associative
        info.total_episodes, info.total_frames, info.total_tasks = len(self.episodes) + len(rows), index, len(self.tasks)
        for r, b in zip(rows, blobs):
            if b.decisions:  # the policy's decision points (embodied.agent.decisions), beside the episode
                path = self.root / DECISIONS_PATH.format(episode_index=r["episode_index"])
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = temp_path(path)
                tmp.write_bytes(b.decisions)
                renames.append((tmp, path))
        renames += self._meta_files(in_file + rows, (mchunk, mfile), agg, new_tasks=len(self.tasks) != tasks_before)
        journal.apply(self.root, renames)
        self.episodes, self._stats = self.episodes + rows, agg
        self._data, self._videos = pending_data, pending_videos  # what the current files now hold
        return [r["episode_index"] for r in rows]

    def _current(self, series: str, last: dict | None) -> tuple[int, int, bool]:
        """(chunk, file, exists) of the file the next episode of ``series`` would go to."""
        if last is None:
            return 0, 0, False
        return int(last[f"{series}/chunk_index"]), int(last[f"{series}/file_index"]), True

    def _meta_files(self, rows: list[dict], where: tuple[int, int], stats: dict, new_tasks: bool) -> list[tuple[Path, Path]]:
        """Temporaries for the current meta/episodes file (``rows``), tasks (if new), stats and info."""
        assert self.info is not None
        out = []
        path = self.root / EPISODES_PATH.format(chunk_index=where[0], file_index=where[1])
        tmp = temp_path(path)
        pq.write_table(pa.Table.from_pylist(_uniform(rows)), tmp)
        out.append((tmp, path))
        if new_tasks:
            path = self.root / TASKS_PATH
            tmp = temp_path(path)
            tasks = sorted(self.tasks, key=self.tasks.get)
            pd.DataFrame({"task_index": np.array([self.tasks[t] for t in tasks], np.int64)}, index=pd.Index(tasks, name="task")) \
                .to_parquet(tmp)
            out.append((tmp, path))
        path = self.root / STATS_PATH
        tmp = temp_path(path)
        tmp.write_text(json.dumps(stats, indent=2, default=plain))
        out.append((tmp, path))
        path = self.root / "meta/info.json"
        tmp = temp_path(path)
        tmp.write_text(json.dumps(self.info.to_dict(), indent=4, default=plain))
        out.append((tmp, path))
        return out


def _uniform(rows: list[dict]) -> list[dict]:
    """Every row with every column (a column a later episode added is None before it)."""
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(r))
    return [{k: r.get(k) for k in keys} for r in rows]
