"""``embodied bench data``: recording throughput per worker count, overhead over the bare rollout, size.

Throughput is timed from when every worker has started and built its scene
(``record``'s ``frames_per_s``) to the last commit, so the one-off start of
worker processes (spawn, imports) is left out; the bare rollout likewise
leaves out its first episode.
The bare rollout renders the same cameras at the same size (what recording
needs) and does nothing with them.

The overhead compares CPU time per frame (``time.process_time``, all threads
of this process) of the bare rollout and of in-process recording (rollout,
encoding, statistics and the commits): on a shared machine other processes
change wall-clock rates from one second to the next, CPU time much less.
Wall-clock rates are reported too.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class BenchConfig:
    task: str = "PutBlockBack-v0"
    episodes: int = 8
    workers: list[int] = field(default_factory=lambda: [1, 2])
    image_size: int = 96
    keep: str | None = None
    options: dict = field(default_factory=dict)  # task knobs of every env (bare rollout and recording alike)


def bare_rollout(task: str, episodes: int, image_size: int, options: dict | None = None) -> tuple[float, float]:
    """(frames per wall second, frames per CPU second) of the expert without recording (first episode left out)."""
    from embodied.experts import make_expert
    from embodied.tasks import make

    env = make(task, image_size=image_size, **(options or {}))
    frames = 0
    elapsed = cpu = 0.0
    for seed in range(episodes):
        start, start_cpu = time.perf_counter(), time.process_time()
        obs, _ = env.reset(seed=seed)
        expert = make_expert(env)
        done, n = False, 0
        while not done:
            obs, _, terminated, truncated, _ = env.step(expert.act(obs))
            done, n = terminated or truncated, n + 1
        if seed > 0:
            elapsed += time.perf_counter() - start
            cpu += time.process_time() - start_cpu
            frames += n
    env.close()
    return frames / elapsed, frames / cpu


def timed_record(cfg: BenchConfig, workers: int, out: Path) -> dict:
    from embodied.data.workers import RecordConfig, record
    from embodied.data.writer import load_episodes

    stamps: list[tuple[float, float, list[int]]] = []
    summary = record(
        RecordConfig([cfg.task], cfg.episodes, out, workers=workers, image_size=cfg.image_size,
                     options=dict(cfg.options)),
        progress=False,
        on_commit=lambda idx: stamps.append((time.perf_counter(), time.process_time(), idx)),
    )
    lengths = {r["episode_index"]: r["length"] for r in load_episodes(out)}
    out_ = {"frames_per_s": summary["frames_per_s"], "startup_s": summary["startup_s"], "commits": len(stamps)}
    if workers == 1:  # everything ran in this process: its CPU time is the whole cost (first episode left out)
        frames = sum(lengths[i] for _, _, idx in stamps[1:] for i in idx)
        cpu = stamps[-1][1] - stamps[0][1]
        out_["frames_per_cpu_s"] = frames / cpu if cpu > 0 else float("nan")
    return out_


def run_bench(cfg: BenchConfig) -> dict:
    if cfg.episodes < 3:
        raise ValueError(f"--episodes must be >= 3 to time steady state, got {cfg.episodes}")
    base = Path(cfg.keep) if cfg.keep else Path(tempfile.mkdtemp(prefix="embodied-bench-data-"))
    try:
        bare, bare_cpu = bare_rollout(cfg.task, cfg.episodes, cfg.image_size, cfg.options)
        results: dict[str, dict] = {}
        size_mb = episodes = 0.0
        for w in cfg.workers:
            out = base / f"workers-{w}"
            if out.exists():
                shutil.rmtree(out)
            results[str(w)] = timed_record(cfg, w, out)
            if not size_mb:
                size_mb = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 1e6
                episodes = cfg.episodes
        one = results.get("1", next(iter(results.values())))["frames_per_s"]
        for r in results.values():
            r["speedup"] = r["frames_per_s"] / one
        return {
            "task": cfg.task,
            "episodes": cfg.episodes,
            "image_size": cfg.image_size,
            "options": dict(cfg.options),
            "bare_frames_per_s": bare,
            "bare_frames_per_cpu_s": bare_cpu,
            "record": results,
            "overhead_pct": float(100 * (bare_cpu / results["1"]["frames_per_cpu_s"] - 1)) if "1" in results else float(np.nan),
            "overhead_wall_pct": float(100 * (bare / one - 1)) if "1" in results else float(np.nan),
            "mb_per_100_episodes": size_mb / episodes * 100,
        }
    finally:
        if not cfg.keep:
            shutil.rmtree(base, ignore_errors=True)
