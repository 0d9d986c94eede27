"""Speed and size benchmarks of perception + memory (the lead wires ``embodied bench memory``).

    bench_memory()  ->  {"update": {...}, "queries": {...}, "snapshot": {...}, "size": {...}}

Target (2 cores): perception + memory update <= 5 ms median per 2-camera
128x128 frame. The long run, queries, snapshots, save/load and size are
measured on the synthetic house of :mod:`embodied.eval.memory_scale`
(targets there, at 100k steps x 500 objects); ``synthetic_run`` below is the
older open floor, all objects in view at once, that ``bench viz`` draws.
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np

from embodied.eval.memory_scale.house import COLOURS
from embodied.experts import make_expert
from embodied.memory.memory import SpatialMemory
from embodied.perception import Perceiver, PerceptionConfig
from embodied.perception.colour import colour_name
from embodied.perception.types import CameraView, Frame, ObjectObservation
from embodied.tasks import get_task


def _stats(ms: list[float]) -> dict:
    a = np.asarray(ms)
    return {
        "median_ms": round(float(np.median(a)), 3),
        "p90_ms": round(float(np.percentile(a, 90)), 3),
        "p99_ms": round(float(np.percentile(a, 99)), 3),
        "n": len(a),
    }


def bench_update(
    task: str = "PutBlockBack-v0", frames: int = 200, image_size: int = 128, seed: int = 0, shuffle_ids: bool = True,
    options: dict | None = None,
) -> dict:
    """Per-frame cost of perception and memory update on an expert episode (rendering excluded);
    ``options``: task knobs (more objects, a preset) to time a fuller scene."""
    env = gym.make(get_task(task).env_id, image_size=image_size, **(options or {}))
    obs, _ = env.reset(seed=seed)
    expert = make_expert(env)
    recorded = []
    for _ in range(frames):
        recorded.append(obs)
        obs, _, terminated, truncated, _ = env.step(expert.act(obs))
        if terminated or truncated:
            obs, _ = env.reset(seed=seed + len(recorded))
            expert = make_expert(env)
    cameras = list(env.unwrapped.cameras)
    perceive = Perceiver(env.unwrapped.labels, PerceptionConfig(shuffle_ids=shuffle_ids, seed=seed))
    env.close()
    memory = SpatialMemory()
    p_ms, u_ms, total = [], [], []
    for t, o in enumerate(recorded):
        t0 = time.perf_counter()
        frame = perceive(o, t)
        t1 = time.perf_counter()
        memory.update(frame)
        t2 = time.perf_counter()
        p_ms.append((t1 - t0) * 1e3)
        u_ms.append((t2 - t1) * 1e3)
        total.append((t2 - t0) * 1e3)
    return {
        "task": task,
        "cameras": cameras,
        "image_size": image_size,
        "perceive": _stats(p_ms),
        "update": _stats(u_ms),
        "total": _stats(total),
        "target_median_ms": 5.0,
    }


# --- the open floor bench viz draws: every object in view, one carried at a time ---------
_COLOURS = COLOURS  # the synthetic house's colour table (embodied/eval/memory_scale/house.py)
_CLASSES = ("block", "ball", "mug", "book", "cone")
_CUBE = np.stack(np.meshgrid(*[np.linspace(-0.02, 0.02, 5)] * 3, indexing="ij"), -1).reshape(-1, 3)
_SHELL = _CUBE[np.any(np.abs(_CUBE) > 0.019, axis=1)].astype(np.float32)


def _detection(cls: str, colour: str, centre: np.ndarray, t: int) -> ObjectObservation:
    pts = _SHELL + centre.astype(np.float32)
    rgb = np.array(_COLOURS[colour], np.float32)
    return ObjectObservation(
        f"top#{t}", cls, rgb, colour_name(rgb), centre.copy(), centre - 0.02, centre + 0.02, pts, 120, "top", t
    )


def synthetic_run(steps: int = 10_000, objects: int = 50, seed: int = 0) -> tuple[SpatialMemory, list[float]]:
    """Memory after ``steps`` frames of ``objects`` objects on a 2.5 x 2.5 m floor seen from above.

    One object at a time is carried (2 cm per step for 25 steps, then put down),
    and every 10th step one object goes unseen for 5 steps: about one logged
    change per step, like a busy scene. Returns the memory and each update's milliseconds.
    """
    rng = np.random.default_rng(seed)
    looks = [(c, k) for k in _COLOURS for c in _CLASSES]
    names = [looks[i % len(looks)] for i in range(objects)]  # past 50, look-alikes (all in view at once)
    grid = int(np.ceil(np.sqrt(objects)))
    pos = np.array([[0.25 + 0.5 * (i % grid), 0.25 + 0.5 * (i // grid), 0.02] for i in range(objects)])
    pose = np.eye(4)
    pose[:3, :3] = np.array([[0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
    pose[:3, 3] = (grid * 0.25, grid * 0.25, 3.0)
    K = np.array([[60.0, 0.0, 63.5], [0.0, 60.0, 63.5], [0.0, 0.0, 1.0]])
    view = CameraView("top", np.full((128, 128), 3.0, np.float32), K, pose, np.linalg.inv(pose))
    memory = SpatialMemory()
    mover, direction, hidden, hidden_until = 0, np.zeros(3), -1, -1
    ms = []
    for t in range(steps):
        if t % 25 == 0:
            mover = int(rng.integers(objects))
            angle = rng.uniform(0, 2 * np.pi)
            direction = 0.02 * np.array([np.cos(angle), np.sin(angle), 0.0])
        pos[mover] = np.clip(pos[mover] + direction, 0.05, grid * 0.5 - 0.05)
        if t % 10 == 0:
            hidden, hidden_until = int(rng.integers(objects)), t + 5
        dets = [_detection(c, k, pos[i], t) for i, (c, k) in enumerate(names) if not (i == hidden and t < hidden_until)]
        frame = Frame(t, dets, [view])
        t0 = time.perf_counter()
        memory.update(frame)
        ms.append((time.perf_counter() - t0) * 1e3)
    return memory, ms


def bench_memory(
    task: str = "PutBlockBack-v0",
    frames: int = 200,
    image_size: int = 128,
    steps: int = 10_000,
    objects: int = 50,
    queries: int = 100,
    seed: int = 0,
    options: dict | None = None,
) -> dict:
    """Every memory benchmark; JSON-ready. ``options``: task knobs of the expert episode's env.

    The long run is the synthetic house of :mod:`embodied.eval.memory_scale` (``objects`` look-alike
    objects on shelves, ``steps`` frames through ``SpatialMemory.update``); its measures are thread
    CPU times (wall times beside them)."""
    from embodied.eval.memory_scale import TARGETS, scale_run

    update = bench_update(task, frames, image_size, seed, options=options)
    point = scale_run(objects, [steps], seed, queries=queries)[0]
    return {
        "update": update,
        "long_run": {
            "steps": steps,
            "objects": objects,
            "objects_seen": point["objects_seen"],
            "nodes": point["nodes"],
            "where_is_right": point["where_is_right"],
            "events": point["events"],
            "noops": point["noops"],
            "update": point["update"],
            "update_wall": point["update_wall"],
            "edge_refresh": point["edge_refresh"],
        },
        "queries": {**point["queries"], "target_p99_ms": TARGETS["query_p99_ms"]},
        "snapshot": {**point["snapshot"], "target_median_ms": TARGETS["snapshot_median_ms"]},
        "save_load": {k: point[k] for k in ("save_s", "load_s", "save_wall_s", "load_wall_s", "disk_mb")},
        "size": {"bytes": point["held_bytes"], "mb": point["held_mb"], "traced_mb": point["held_traced_mb"],
                 "target_mb": TARGETS["held_mb"]},
        "options": dict(options or {}),
    }
