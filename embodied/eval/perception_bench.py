"""Perception speed, mode by mode (``embodied bench perception``).

Frames come from an expert episode of each task; every mode perceives the same
observations on one torch thread. ``ms_per_camera`` is the median time to turn
one camera's RGB-D (and masks, in masks mode) into object observations;
``segment_ms`` the learned segmenter's share, and ``stages_ms`` its median per stage (the network, the
regions, their graph, the grouper, assembling the objects with the crop classifier's opinions); what is
left of ``ms_per_camera`` builds the object observations from the instance map.
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np

from embodied.experts import make_expert
from embodied.perception import Perceiver, PerceptionConfig
from embodied.tasks import get_task

MODES = ("masks", "learned", "geometric")


def _observations(task: str, frames: int, seed: int, every: int,
                  options: dict | None = None) -> tuple[list[dict], dict]:
    env = gym.make(get_task(task).env_id, render_every=every, **(options or {}))
    try:
        obs, _ = env.reset(seed=seed)
        expert = make_expert(env)
        kept, t = [], 0
        while len(kept) < frames:
            if t % every == 0:
                kept.append(obs)
            obs, _, terminated, truncated, _ = env.step(expert.act(obs))
            t += 1
            if terminated or truncated:
                obs, _ = env.reset(seed=seed + t)
                expert = make_expert(env)
        return kept, dict(env.unwrapped.labels)
    finally:
        env.close()


def _stage_medians(segmenter) -> dict[str, float] | None:
    """The learned segmenter's median ms per camera frame in each of its stages (None in other modes)."""
    if segmenter is None or not segmenter.stage_times:
        return None
    times, segmenter.stage_times = segmenter.stage_times, None
    return {stage: round(float(np.median(ms)), 2) for stage, ms in times.items()}


def bench_perception(tasks: tuple[str, ...] = ("ShellGame-v0", "ObjectRevisit-v0"), frames: int = 40,
                     seed: int = 0, every: int = 10, modes: tuple[str, ...] = MODES,
                     options: dict | None = None) -> list[dict]:
    """One row per (task, mode); ``options``: task knobs of the envs the frames come from (a fuller scene
    costs more per frame), recorded in every row."""
    import torch

    torch.set_num_threads(1)
    rows = []
    for task in tasks:
        observations, labels = _observations(task, frames, seed, every, options)
        cams = sum(1 for k in observations[0] if k.startswith("depth/"))
        for mode in modes:
            if mode == "geometric" and get_task(task).suite != "manipulation":
                rows.append({"task": task, "mode": mode, "ms_per_camera": None, "note": "workcell only",
                             "options": dict(options or {})})
                continue
            perceive = Perceiver(labels, PerceptionConfig(mode=mode))
            perceive(observations[0], 0)  # warm up (lazy imports, first allocation)
            if perceive.segmenter is not None:
                perceive.segmenter.stage_times = {}
            total, seg = [], []
            for t, obs in enumerate(observations):
                t0 = time.perf_counter()
                segments = perceive.segment(obs) if mode == "learned" else None
                t1 = time.perf_counter()
                frame = perceive(obs, t, segments)
                total.append((time.perf_counter() - t0) * 1e3 / cams)
                seg.append((t1 - t0) * 1e3 / cams)
            rows.append({"task": task, "mode": mode, "cameras": cams, "frames": len(observations),
                         "ms_per_camera": round(float(np.median(total)), 2),
                         "segment_ms": round(float(np.median(seg)), 2) if mode == "learned" else None,
                         "stages_ms": _stage_medians(perceive.segmenter),
                         "objects_last_frame": len(frame.objects), "options": dict(options or {})})
    return rows
