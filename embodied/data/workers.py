"""Record many episodes: in this process, in K local worker processes, or as Ray tasks.

Workers run :func:`~embodied.data.episode.record_episode` (rollout, video
encoding, statistics) and hand back bytes; this process is the only writer and
commits whatever episodes have finished since its last commit as one atomic
unit. A killed recorder therefore loses only the episodes still running (and
any finished in the instant before their commit); ``--resume`` records the
missing (task, seed) pairs. Local workers ignore SIGINT (the recorder decides)
and die with the recorder (``PR_SET_PDEATHSIG``), so no orphan keeps running.
Objects cross process boundaries through multiprocessing's or Ray's own
transport; nothing is pickled to disk.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from embodied.data.episode import EpisodeBlob, EpisodeJob, env_for, record_episode
from embodied.data.layout import DATA_FILES_SIZE_MB, VIDEO_FILES_SIZE_MB
from embodied.data.sessions import detach_worker, ray_session
from embodied.data.writer import DatasetWriter


@dataclass
class RecordConfig:
    tasks: list[str]
    episodes: int
    out: Path
    policy: str = "expert"
    workers: int = 1
    image_size: int = 96
    cameras: tuple[str, ...] = ()
    depth: bool = False
    seed: int = 0
    resume: bool = False
    options: dict = field(default_factory=dict)
    ray: bool = False
    ray_address: str | None = None
    perception: str = "masks"  # what an agent policy sees through: masks, learned or geometric
    data_files_size_in_mb: float = DATA_FILES_SIZE_MB
    video_files_size_in_mb: float = VIDEO_FILES_SIZE_MB

    def validate(self) -> None:
        from embodied.data.policies import check_perception, known_policy, policy_names
        from embodied.tasks import get_task

        if not self.tasks:
            raise ValueError("give at least one --task")
        self.tasks = [get_task(t).name for t in self.tasks]
        if self.episodes < 1:
            raise ValueError(f"--episodes must be >= 1, got {self.episodes}")
        if self.workers < 1:
            raise ValueError(f"--workers must be >= 1, got {self.workers}")
        if not 16 <= self.image_size <= 512 or self.image_size % 2:
            raise ValueError(f"--image-size must be an even number of pixels in 16..512, got {self.image_size}")
        if not known_policy(self.policy):
            raise ValueError(f"unknown policy {self.policy!r}; available: {', '.join(policy_names())}, "
                             "relabel:RUN[@MIX]")
        check_perception(self.policy, self.perception)

    def jobs(self, done: set[tuple[str, int]]) -> list[EpisodeJob]:
        return [
            EpisodeJob(task, self.seed + i, self.policy, self.image_size, tuple(self.cameras), self.depth,
                       dict(self.options), self.perception)
            for task in self.tasks
            for i in range(self.episodes)
            if (task, self.seed + i) not in done
        ]


def _worker_init(first: EpisodeJob | None, ready, go, recorder: int) -> None:
    detach_worker(recorder)
    if first is not None:
        env_for(first)  # build the scene before the clock starts
    with ready.get_lock():
        ready.value += 1
    go.wait(timeout=600)


def _local(jobs: list[EpisodeJob], workers: int, on_ready: Callable[[], None]) -> Iterator[list[EpisodeBlob]]:
    if workers == 1:
        if jobs:
            env_for(jobs[0])
        on_ready()
        for job in jobs:
            yield [record_episode(job)]
        return
    ctx = mp.get_context("spawn")
    ready, go = ctx.Value("i", 0), ctx.Event()
    pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_init,
                               initargs=(jobs[0] if jobs else None, ready, go, os.getpid()))
    pending: set[Future] = set()
    queue = list(reversed(jobs))
    try:
        while queue and len(pending) < 2 * workers:
            pending.add(pool.submit(record_episode, queue.pop()))
        # start the clock once every worker has started and built its scene (or one has failed)
        while pending and ready.value < min(workers, len(jobs)) and not any(f.done() for f in pending):
            time.sleep(0.01)
        go.set()
        on_ready()
        while queue or pending:
            while queue and len(pending) < 2 * workers:
                pending.add(pool.submit(record_episode, queue.pop()))
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            yield [f.result() for f in done]
    finally:
        for f in pending:
            f.cancel()
        pool.shutdown(wait=False, cancel_futures=True)


def _ray_record(job: EpisodeJob) -> tuple[bytes, bytes, dict[str, bytes], bytes]:
    blob = record_episode(job)
    return blob.meta, blob.arrays, blob.videos, blob.decisions


def _ray(jobs: list[EpisodeJob], address: str | None, workers: int, on_ready: Callable[[], None]) -> Iterator[list[EpisodeBlob]]:
    ray = ray_session(address, workers)
    remote = ray.remote(num_cpus=1)(_ray_record)
    on_ready()
    queue = list(reversed(jobs))
    pending: list = []
    limit = 2 * max(workers, int(ray.cluster_resources().get("CPU", workers)))
    try:
        while queue or pending:
            while queue and len(pending) < limit:
                pending.append(remote.remote(queue.pop()))
            done, pending = ray.wait(pending, num_returns=1)
            more, pending = ray.wait(pending, num_returns=len(pending), timeout=0) if pending else ([], pending)
            yield [EpisodeBlob(*ray.get(ref)) for ref in done + more]
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)


def record(cfg: RecordConfig, progress: bool = True, on_commit: Callable[[list[int]], None] | None = None) -> dict:
    """Record ``cfg`` into ``cfg.out``; returns a summary."""
    cfg.validate()
    writer = DatasetWriter(cfg.out, cfg.resume, cfg.data_files_size_in_mb, cfg.video_files_size_in_mb)
    jobs = cfg.jobs(writer.recorded())
    before = len(writer.episodes)
    start = begin = time.perf_counter()
    frames = successes = 0

    def ready() -> None:
        nonlocal begin
        begin = time.perf_counter()

    source = _ray(jobs, cfg.ray_address, cfg.workers, ready) if cfg.ray else _local(jobs, cfg.workers, ready)
    bar = tqdm(total=len(jobs), desc=f"record -> {cfg.out}", unit="ep", disable=not progress)
    try:
        for blobs in source:
            indices = writer.commit(blobs)
            metas = [b.meta_dict() for b in blobs]
            frames += sum(m["length"] for m in metas)
            successes += sum(bool(m["success"]) for m in metas)
            bar.update(len(blobs))
            bar.set_postfix(frames=frames, success=f"{successes / max(1, bar.n):.2f}")
            if on_commit is not None:
                on_commit(indices)
    finally:
        bar.close()
        if hasattr(source, "close"):
            source.close()
    end = time.perf_counter()
    seconds = end - begin
    return {
        "dataset": str(cfg.out),
        "episodes_recorded": len(writer.episodes) - before,
        "episodes_total": len(writer.episodes),
        "skipped_already_recorded": cfg.episodes * len(cfg.tasks) - len(jobs),
        "frames_recorded": frames,
        "startup_s": begin - start,
        "seconds": seconds,
        "frames_per_s": frames / seconds if seconds > 0 else 0.0,  # from when every worker was ready
        "success_rate": successes / max(1, len(writer.episodes) - before),
        "workers": cfg.workers,
        "backend": "ray" if cfg.ray else ("processes" if cfg.workers > 1 else "in-process"),
    }
