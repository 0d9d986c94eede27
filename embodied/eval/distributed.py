"""Evaluation episodes on many cores or a Ray cluster: ``--workers K`` and ``--ray [ADDRESS]``.

``embodied run``, ``ablate`` and ``benchmark`` run every seed of a cell (one task at one set of
knobs, one policy) in one env, one episode after another. Here a cell is a :class:`Batch`: what to
build (``gym.make``'s arguments), which policy, which seeds. :func:`evaluate` splits the batches
into chunks of consecutive seeds and runs each chunk in a worker, a local process (``--workers K``)
or a Ray task (``--ray``): the worker builds its own env (and keeps it for its next chunk of the same
cell), runs the chunk's seeds and hands back only the per-episode
:class:`~embodied.eval.rollout.EpisodeResult` records and its seconds; no env or observation crosses
a process boundary.

The results are the serial run's, in seed order: an episode's result depends on its seed alone (a
fresh policy per episode, ``env.reset(seed=...)``, a learned head's sampling seeded per episode),
and the workers run the episodes with the same :func:`~embodied.eval.rollout.run_episodes` as the
serial commands' :func:`run_batch`.

Chunk size: about four chunks per worker slot over all batches together (at least one seed each):
few enough that the env is built rarely, enough that the last chunks still balance the load.
Chunks never mix batches.

Local workers are forked from this process when it holds no thread but tqdm's monitor (Linux; the parent has
imported the simulator already, so a worker starts in milliseconds; ``LP_NUM_THREADS=0`` from
``embodied/__init__`` keeps a fork after rendering safe), else spawned. Like ``record-demos``'
workers they ignore Ctrl-C and die with the parent (:func:`embodied.data.sessions.detach_worker`).
Ray connects as ``record-demos --ray`` does (:func:`embodied.data.sessions.ray_session`).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace

import gymnasium as gym
from tqdm import tqdm

from embodied.data.sessions import detach_worker, ray_session
from embodied.eval.rollout import EpisodeResult, run_episodes

CHUNKS_PER_SLOT = 4


@dataclass(frozen=True)
class Parallel:
    """``--workers K`` / ``--ray [ADDRESS]``. ``ray``: None, no Ray; "", this process's Ray instance
    or a new local one of ``workers`` CPUs; else the cluster's address (HOST:PORT or auto)."""

    workers: int = 1
    ray: str | None = None

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"--workers must be >= 1, got {self.workers}")

    @classmethod
    def from_args(cls, args) -> Parallel:
        return cls(int(getattr(args, "workers", 1) or 1), getattr(args, "ray", None))

    @property
    def distributed(self) -> bool:
        return self.workers > 1 or self.ray is not None

    @property
    def backend(self) -> str:
        return "ray" if self.ray is not None else ("processes" if self.workers > 1 else "in-process")

    def refuse(self, flags: dict[str, object]) -> None:
        """Raise if any of ``flags`` (name -> value given) is set while episodes run elsewhere."""
        given = [name for name, value in flags.items() if value]
        if self.distributed and given:
            where = "--ray" if self.ray is not None else f"--workers {self.workers}"
            verb = "needs" if len(given) == 1 else "need"
            raise ValueError(f"{' and '.join(given)} {verb} the env in this process (videos and recordings are made "
                             f"from the live env): run without {where}")


@dataclass(frozen=True)
class Batch:
    """One cell's episodes: ``gym.make(env_id, **make)``, then ``policy`` on each of ``seeds``."""

    env_id: str
    make: dict = field(hash=False)
    policy: str
    seeds: tuple[int, ...]
    head: str | None = None
    perception: str | None = None


def run_batch(batch: Batch, progress: bool = False) -> tuple[list[EpisodeResult], float]:
    """Build ``batch``'s env, run its seeds, close it; the results and the seconds the episodes took
    (without the env build). What the serial commands run."""
    env = gym.make(batch.env_id, **batch.make)
    try:
        return _episodes(env, batch, progress)
    finally:
        env.close()


def run_chunk(batch: Batch) -> tuple[list[EpisodeResult], float]:
    """``run_batch`` in a worker, in the env this process kept from its last chunk where that env was made
    the same way (the chunks of one cell mostly follow each other), as the serial run keeps one env for
    a whole cell; else in a new one (the old one closed)."""
    key = json.dumps([batch.env_id, batch.make], sort_keys=True, default=str)
    if key not in _ENV:
        while _ENV:
            _ENV.popitem()[1].close()
        _ENV[key] = gym.make(batch.env_id, **batch.make)
    return _episodes(_ENV[key], batch, False)


_ENV: dict[str, gym.Env] = {}  # a worker's env, kept between its chunks


def _episodes(env: gym.Env, batch: Batch, progress: bool) -> tuple[list[EpisodeResult], float]:
    t0 = time.perf_counter()
    results = run_episodes(env, batch.policy, batch.seeds, progress=progress, head=batch.head,
                           perception=batch.perception)
    return results, time.perf_counter() - t0


def split(batches: list[Batch], slots: int, per_slot: int = CHUNKS_PER_SLOT) -> list[tuple[int, Batch]]:
    """``(batch index, chunk)`` pairs, in batch and seed order: consecutive seeds, even sizes within a
    batch, about ``per_slot`` chunks per slot over all batches."""
    total = sum(len(b.seeds) for b in batches)
    size = max(1, total // max(1, slots * per_slot))
    chunks = []
    for i, batch in enumerate(batches):
        n = len(batch.seeds)
        parts = max(1, -(-n // size))
        edges = [n * k // parts for k in range(parts + 1)]
        chunks += [(i, replace(batch, seeds=tuple(batch.seeds[a:b]))) for a, b in zip(edges, edges[1:]) if b > a]
    return chunks


def evaluate(batches: list[Batch], parallel: Parallel = Parallel(), progress: bool = True,
             on_batch: Callable[[int, list[EpisodeResult], float], None] | None = None
             ) -> list[tuple[list[EpisodeResult], float]]:
    """Run every batch; per batch, its results in seed order and the seconds its episodes took (summed
    over its chunks). ``on_batch(index, results, seconds)`` sees each batch as its last chunk
    finishes. Without workers or Ray the batches run here, one after another (``run_batch``)."""
    if not batches:
        return []
    if not parallel.distributed:
        out = []
        for i, batch in enumerate(batches):
            out.append(run_batch(batch, progress))
            if on_batch is not None:
                on_batch(i, *out[-1])
        return out
    if parallel.ray is not None:
        ray = ray_session(parallel.ray or None, parallel.workers)
        slots = max(parallel.workers, int(ray.cluster_resources().get("CPU", parallel.workers)))
        chunks = split(batches, slots)
        source = _ray_chunks(ray, [c for _, c in chunks])
    else:
        chunks = split(batches, parallel.workers)
        source = _local_chunks([c for _, c in chunks], parallel.workers)
    parts: list[dict[int, tuple[list[EpisodeResult], float]]] = [{} for _ in batches]
    wanted = [sum(1 for i, _ in chunks if i == b) for b in range(len(batches))]
    out: list = [None] * len(batches)
    bar = tqdm(total=sum(len(b.seeds) for b in batches), desc=f"episodes ({parallel.backend})", unit="ep",
               disable=not progress, leave=False)
    try:
        for k, (results, seconds) in source:
            i = chunks[k][0]
            parts[i][k] = (results, seconds)
            bar.update(len(results))
            if len(parts[i]) == wanted[i]:
                done = [parts[i][key] for key in sorted(parts[i])]
                out[i] = ([r for rs, _ in done for r in rs], sum(s for _, s in done))
                if on_batch is not None:
                    on_batch(i, *out[i])
    finally:
        bar.close()
        source.close()
    return out


def _fork_safe() -> bool:
    """Linux, and no thread but the main one and tqdm's monitor (it outlives every bar; a forked worker
    gets a fresh tqdm lock in case the monitor held the old one at the fork)."""
    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    return sys.platform == "linux" and all(t.name == "tqdm_monitor" for t in others)


def _forked_worker_init(parent: int) -> None:
    detach_worker(parent)
    tqdm.set_lock(threading.RLock())


def _local_chunks(chunks: list[Batch], workers: int) -> Iterator[tuple[int, tuple[list[EpisodeResult], float]]]:
    """Start the pool now (forked before this process starts a thread: a progress bar's), then a
    generator of ``(chunk index, result)`` in the order they finish."""
    fork = _fork_safe()
    pool = ProcessPoolExecutor(min(workers, len(chunks)) or 1, mp_context=mp.get_context("fork" if fork else "spawn"),
                               initializer=_forked_worker_init if fork else detach_worker, initargs=(os.getpid(),))
    futures = {pool.submit(run_chunk, chunk): k for k, chunk in enumerate(chunks)}
    return _drain(pool, futures)


def _drain(pool: ProcessPoolExecutor, futures: dict) -> Iterator[tuple[int, tuple[list[EpisodeResult], float]]]:
    pending, finished = set(futures), False
    try:
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in sorted(done, key=futures.get):
                yield futures[f], f.result()
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:  # an error, Ctrl-C or an abandoned generator: stop the chunks still running now
            processes = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                if process.is_alive():
                    process.kill()


def _ray_chunks(ray, chunks: list[Batch]) -> Iterator[tuple[int, tuple[list[EpisodeResult], float]]]:
    remote = ray.remote(num_cpus=1)(run_chunk)
    refs = {remote.remote(chunk): k for k, chunk in enumerate(chunks)}
    return _ray_drain(ray, refs)


def _ray_drain(ray, refs: dict) -> Iterator[tuple[int, tuple[list[EpisodeResult], float]]]:
    pending = list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield refs[ref], ray.get(ref)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
