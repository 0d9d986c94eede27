"""Speed and size benchmarks of perception + memory (the lead wires ``embodied bench memory``).

    bench_memory()  ->  {"update": {...}, "queries": {...}, "snapshot": {...}, "size": {...}}

Targets (2 cores): perception + memory update <= 5 ms median per 2-camera
128x128 frame; queries p99 <= 1 ms with 10k events; a snapshot at a past
time <= 2 ms; memory after 10k steps with 50 objects <= 10 MB.
"""

from __future__ import annotations

import sys
import time
from array import array

import gymnasium as gym
import numpy as np

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


# --- a long synthetic run: 50 objects, 10k steps ------------------------------------------
_COLOURS = {
    "red": (0.8, 0.12, 0.12),
    "green": (0.15, 0.7, 0.2),
    "blue": (0.15, 0.3, 0.82),
    "yellow": (0.84, 0.8, 0.1),
    "purple": (0.55, 0.2, 0.75),
    "orange": (0.85, 0.5, 0.05),
    "cyan": (0.1, 0.79, 0.8),
    "pink": (0.85, 0.45, 0.7),
    "white": (0.86, 0.86, 0.86),
    "black": (0.1, 0.1, 0.1),
}
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
    names = [(c, k) for k in _COLOURS for c in _CLASSES][:objects]
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


def deep_size(obj, seen: set | None = None) -> int:
    """Bytes held by ``obj`` and everything it references (numpy arrays by their buffers)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return sys.getsizeof(obj) + (obj.nbytes if obj.base is None else 0)
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        return size + sum(deep_size(k, seen) + deep_size(v, seen) for k, v in obj.items())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return size + sum(deep_size(v, seen) for v in obj)
    if isinstance(obj, (str, bytes, int, float, bool, type(None), array)):
        return size
    if hasattr(obj, "__dict__"):
        size += deep_size(vars(obj), seen)
    for slot in getattr(type(obj), "__slots__", ()):
        if hasattr(obj, slot):
            size += deep_size(getattr(obj, slot), seen)
    return size


def bench_queries(memory: SpatialMemory, n: int = 2000, seed: int = 0) -> dict:
    """Latency of each query kind on a built memory (random arguments)."""
    rng = np.random.default_rng(seed)
    objects = [node for node, a in memory.graph.nodes(data=True) if a["kind"] in ("object", "container")]
    t_max = max(memory.t, 1)
    named = [f"{memory.graph.nodes[o]['colour']} {memory.graph.nodes[o]['cls']}" for o in objects]
    kinds = {
        "where_is": lambda: memory.where_is(objects[rng.integers(len(objects))]),
        "where_was": lambda: memory.where_was(objects[rng.integers(len(objects))], int(rng.integers(t_max))),
        "last_seen": lambda: memory.last_seen(objects[rng.integers(len(objects))]),
        "history": lambda: memory.history(objects[rng.integers(len(objects))]),
        "find": lambda: memory.find(cls="block", colour="red"),
        "resolve": lambda: memory.resolve(named[rng.integers(len(named))]),
        "changed_between": lambda: memory.changed_between(t0 := int(rng.integers(t_max)), t0 + 100),
        "when": lambda: memory.when("moved", objects[rng.integers(len(objects))]),
        "objects_in": lambda: memory.objects_in(objects[rng.integers(len(objects))]),
    }
    out, everything = {}, []
    for name, fn in kinds.items():
        ms = []
        for _ in range(n // len(kinds)):
            t0 = time.perf_counter()
            fn()
            ms.append((time.perf_counter() - t0) * 1e3)
        out[name] = _stats(ms)
        everything += ms
    out["all"] = _stats(everything)
    out["target_p99_ms"] = 1.0
    return out


def bench_snapshot(memory: SpatialMemory, n: int = 200, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    ms = []
    for _ in range(n):
        t = int(rng.integers(max(memory.t, 1)))
        t0 = time.perf_counter()
        memory.snapshot(t)
        ms.append((time.perf_counter() - t0) * 1e3)
    return {**_stats(ms), "keyframe_every": memory.log.keyframe_every, "target_median_ms": 2.0}


def bench_memory(
    task: str = "PutBlockBack-v0",
    frames: int = 200,
    image_size: int = 128,
    steps: int = 10_000,
    objects: int = 50,
    queries: int = 2000,
    seed: int = 0,
    options: dict | None = None,
) -> dict:
    """Every memory benchmark; JSON-ready. ``options``: task knobs of the expert episode's env."""
    update = bench_update(task, frames, image_size, seed, options=options)
    memory, update_ms = synthetic_run(steps, objects, seed)
    size = deep_size(memory)
    return {
        "update": update,
        "long_run": {
            "steps": steps,
            "objects": objects,
            "events": len(memory.log),
            "noops": memory.log.noops,
            "nodes": memory.graph.number_of_nodes(),
            "update": _stats(update_ms),
        },
        "queries": bench_queries(memory, queries, seed),
        "snapshot": bench_snapshot(memory, seed=seed),
        "size": {"bytes": size, "mb": round(size / 2**20, 2), "target_mb": 10.0},
        "options": dict(options or {}),
    }
