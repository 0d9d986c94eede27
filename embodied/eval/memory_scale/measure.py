"""Measuring a SpatialMemory fed by the synthetic house (:mod:`.house`): one run, measured at checkpoints.

    points = scale_run(objects=500, checkpoints=[10_000, 100_000])
    points[-1]["update"]["median_ms"], points[-1]["held_mb"], points[-1]["where_is_right"]

Measures (``measure``): times are the thread's CPU time (``time.thread_time``:
what the code costs, unaffected by other jobs on a shared machine), with the
wall time beside them; bytes held are a deep size of the SpatialMemory (every
object it references once, numpy buffers included) and, as a check, what
``tracemalloc`` sees a fresh ``SpatialMemory.load`` of the saved file
allocate; on disk, the saved JSON. Nodes are counted against the objects the
stream actually showed (``check_truth``).
"""

from __future__ import annotations

import gc
import time
from pathlib import Path

import numpy as np

from embodied.eval.memory_scale.house import HouseStream

# Targets at 100k steps x 500 objects (2 cores, CPython; see docs/results.md "Memory at scale").
TARGETS = {
    "update_median_ms": 2.0,
    "query_p99_ms": 1.0,  # every query kind
    "snapshot_median_ms": 5.0,
    "held_mb": 100.0,
    "save_s": 2.0,
    "load_s": 2.0,
}
PHYSICAL_KINDS = ("object", "container")


def _stats(ms) -> dict:
    a = np.asarray(ms, dtype=np.float64)
    if not len(a):
        return {"median_ms": None, "p99_ms": None, "n": 0}
    return {
        "median_ms": round(float(np.median(a)), 4),
        "p99_ms": round(float(np.percentile(a, 99)), 4),
        "max_ms": round(float(a.max()), 4),
        "n": int(len(a)),
    }


def deep_size(obj, seen: set | None = None) -> int:
    """Bytes held by ``obj`` and everything it references, each object once (numpy arrays by their
    buffers; views of another array count their header only). Iterative: no recursion limit."""
    import sys
    from array import array

    seen = set() if seen is None else seen
    total, stack = 0, [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, np.ndarray):
            total += o.nbytes if o.base is None else 0
        elif isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        elif isinstance(o, (str, bytes, int, float, bool, type(None), array, np.generic)):
            pass
        else:
            if hasattr(o, "__dict__"):
                stack.append(vars(o))
            for klass in type(o).__mro__:
                for slot in getattr(klass, "__slots__", ()):
                    if hasattr(o, slot):
                        stack.append(getattr(o, slot))
    return total


def physical_nodes(memory) -> list[str]:
    return [n for n, a in memory.graph.nodes(data=True) if a["kind"] in PHYSICAL_KINDS]


def check_truth(memory, stream: HouseStream, tol: float = 0.02) -> dict:
    """The memory against the house: nodes vs objects seen, and whether each seen object's last seen
    place holds a node of its look (what ``where_is`` answers for it)."""
    nodes = physical_nodes(memory)
    by_look: dict[tuple[str, str], list[np.ndarray]] = {}
    for n in nodes:
        a = memory.graph.nodes[n]
        by_look.setdefault((a["cls"], a["colour"]), []).append(np.asarray(a["position"]))
    right = 0
    truth: dict[tuple[str, str], list[np.ndarray]] = {}
    for obj in stream.seen:
        where = stream.last_seen_at[obj]
        look = (stream.cls[obj], stream.colour[obj])
        truth.setdefault(look, []).append(where)
        right += any(np.linalg.norm(p - where) < tol for p in by_look.get(look, []))
    # Nodes where no object of their look was last seen: a look-alike's old place whose emptying the
    # camera cannot confirm (a flat plate, a slot another object now covers), or a swapped colour.
    stale = sum(
        not any(np.linalg.norm(p - w) < tol for w in truth.get(look, [])) for look, ps in by_look.items() for p in ps
    )
    looks = len(truth)
    return {
        "objects_seen": len(stream.seen),
        "nodes": len(nodes),
        "looks_seen": looks,
        "objects_present": len(stream.present()),
        "removed": len(stream.removed),
        "moves": stream.moves,
        "moved_unseen": stream.moved_unseen,
        "where_is_right": round(right / max(len(stream.seen), 1), 4),
        "stale_nodes": int(stale),
    }


def _query_kinds(memory, stream: HouseStream, rng: np.random.Generator) -> dict:
    """Each public query with random arguments drawn from the memory (callables of no argument)."""
    nodes = physical_nodes(memory)
    t_max = max(memory.t, 1)
    looks = [(memory.graph.nodes[n]["cls"], memory.graph.nodes[n]["colour"]) for n in nodes]
    containers = [n for n in nodes if memory.graph.nodes[n]["kind"] == "container"] or nodes
    places = memory.places() or [""]
    tags = sorted(memory.log.by_tag)

    def pick(items):
        return items[int(rng.integers(len(items)))]

    def resolve_look():
        cls, colour = pick(looks)
        try:
            return memory.resolve(f"{colour} {cls}")
        except KeyError:  # "white mug" names a dozen: the answer is the list of them
            return None

    def node_tag(node):
        events = memory.log.by_node.get(node)
        return memory.log.events[events[int(rng.integers(len(events)))]].tag if events else "moved"

    def path():
        try:
            return memory.path(pick(places), pick(places))
        except KeyError:
            return None

    return {
        "resolve": resolve_look,
        "find": lambda: memory.find(cls=pick(looks)[0], colour=pick(looks)[1]),
        "where_is": lambda: memory.where_is(pick(nodes)),
        "where_was": lambda: memory.where_was(pick(nodes), int(rng.integers(t_max))),
        "last_seen": lambda: memory.last_seen(pick(nodes)),
        "history": lambda: memory.history(pick(nodes)),
        "trajectory": lambda: memory.trajectory(pick(nodes)),
        "related": lambda: memory.related(pick(nodes), "near"),
        "objects_in": lambda: memory.objects_in(pick(containers)),
        "room_of": lambda: memory.room_of(pick(nodes)),
        "changed_between": lambda: memory.changed_between(t0 := int(rng.integers(t_max)), t0 + 100),
        "when(tag, obj)": lambda: memory.when(node_tag(n := pick(nodes)), n),
        "when(moved)": lambda: memory.when("moved"),
        "when(tag)": lambda: memory.when(pick(tags)),
        "notes": lambda: memory.notes("plan"),
        "places": memory.places,
        "nearest_place": lambda: memory.nearest_place(stream.shelves[int(rng.integers(len(stream.shelves)))]),
        "path": path,
        "rooms": memory.rooms,
        "summary": memory.summary,
    }


def time_queries(memory, stream: HouseStream, n: int = 100, seed: int = 0) -> dict:
    """p50/p99 ms (thread CPU time; wall time beside it) of each public query kind over ``n`` calls with
    random arguments (a settled graph: the edge refresh the first read after an update pays is timed
    apart, see ``scale_run``)."""
    rng = np.random.default_rng(seed)
    memory.graph  # settle the edges first
    out, everything = {}, []
    for name, fn in _query_kinds(memory, stream, rng).items():
        cpu, wall = [], []
        for _ in range(n):
            c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
            fn()
            cpu.append((time.thread_time_ns() - c0) / 1e6)
            wall.append((time.perf_counter_ns() - t0) / 1e6)
        out[name] = {**_stats(cpu), "wall": _stats(wall)}
        everything += cpu
    worst = max(out, key=lambda k: out[k]["p99_ms"])  # over the kinds (before "all" joins)
    out["worst"] = {"query": worst, **out[worst]}
    out["all"] = _stats(everything)
    return out


def time_snapshots(memory, n: int = 50, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    cpu, wall = [], []
    for _ in range(n):
        t = int(rng.integers(max(memory.t, 1)))
        c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
        memory.snapshot(t)
        cpu.append((time.thread_time_ns() - c0) / 1e6)
        wall.append((time.perf_counter_ns() - t0) / 1e6)
    return {**_stats(cpu), "wall": _stats(wall), "keyframe_every": memory.log.keyframe_every,
            "keyframes": len(memory.log.kf_index)}


def time_save_load(memory, folder: Path, traced: bool = True) -> dict:
    """Seconds to save and load (``SpatialMemory.save/load``), bytes on disk, and (``traced``) the
    bytes a freshly loaded copy holds by ``tracemalloc`` (a second load, not the timed one)."""
    import tracemalloc

    from embodied.memory.memory import SpatialMemory

    path = Path(folder) / "memory.json"
    c0, t0 = time.thread_time(), time.perf_counter()
    memory.save(path)
    save_s, save_wall = time.thread_time() - c0, time.perf_counter() - t0
    c0, t0 = time.thread_time(), time.perf_counter()
    loaded = SpatialMemory.load(path)
    load_s, load_wall = time.thread_time() - c0, time.perf_counter() - t0
    same = loaded.graph.number_of_nodes() == memory.graph.number_of_nodes() and len(loaded.log) == len(memory.log)
    del loaded
    out = {"save_s": round(save_s, 3), "load_s": round(load_s, 3), "save_wall_s": round(save_wall, 3),
           "load_wall_s": round(load_wall, 3), "disk_bytes": path.stat().st_size,
           "round_trip": bool(same)}
    if traced:
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        again = SpatialMemory.load(path)
        out["held_traced_bytes"] = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        del again
    path.unlink()
    return out


def measure(memory, stream: HouseStream, folder: Path, update_ms: list[float], refresh_ms: list[float],
            queries: int = 100, snapshots: int = 50, seed: int = 0, update_wall_ms: list[float] | None = None
            ) -> dict:
    """Everything about the memory now; JSON-ready."""
    held = deep_size(memory)
    tail = update_ms[-1000:]
    point = {
        "steps": len(update_ms),
        "objects": stream.n,
        **check_truth(memory, stream),
        "events": len(memory.log),
        "noops": memory.log.noops,
        "graph_nodes": memory.graph.number_of_nodes(),
        "graph_edges": memory.graph.number_of_edges(),
        "update": _stats(update_ms),
        "update_wall": _stats(update_wall_ms or []),
        "update_last_1000": _stats(tail),
        "edge_refresh": _stats(refresh_ms),
        "queries": time_queries(memory, stream, queries, seed),
        "snapshot": time_snapshots(memory, snapshots, seed),
        **time_save_load(memory, folder),
        "held_bytes": held,
    }
    point["held_mb"] = round(held / 2**20, 2)
    point["held_traced_mb"] = round(point["held_traced_bytes"] / 2**20, 2)
    point["disk_mb"] = round(point["disk_bytes"] / 2**20, 2)
    return point


def scale_run(objects: int, checkpoints: list[int], seed: int = 0, folder: Path | None = None, queries: int = 100,
              snapshots: int = 50, refresh_every: int = 50, bar=None, stream_knobs: dict | None = None) -> list[dict]:
    """Feed one house of ``objects`` objects to a fresh SpatialMemory for ``max(checkpoints)`` steps and
    measure it after each checkpoint's step count (the first N steps of a longer run are a run of N
    steps: the house changes at fixed rates). Every ``refresh_every`` steps the first graph read after
    the update (the edge refresh a query then pays) is timed too."""
    import tempfile

    from embodied.memory.memory import SpatialMemory

    stream = HouseStream(objects, seed, **(stream_knobs or {}))
    memory = SpatialMemory()
    marks = sorted(set(int(c) for c in checkpoints))
    update_ms: list[float] = []  # thread CPU time
    update_wall: list[float] = []
    refresh_ms: list[float] = []
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(folder) if folder is not None else Path(tmp)
        for t in range(marks[-1]):
            frame = stream.frame(t)
            c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
            memory.update(frame)
            update_ms.append((time.thread_time_ns() - c0) / 1e6)
            update_wall.append((time.perf_counter_ns() - t0) / 1e6)
            if refresh_every and t % refresh_every == refresh_every - 1:
                c0 = time.thread_time_ns()
                memory.graph
                refresh_ms.append((time.thread_time_ns() - c0) / 1e6)
            if bar is not None:
                bar.update(1)
            if t + 1 in marks:
                if bar is not None:
                    bar.set_postfix_str(f"measuring {t + 1} steps x {objects} objects")
                out.append(measure(memory, stream, scratch, update_ms, refresh_ms, queries, snapshots, seed,
                                   update_wall))
                if bar is not None:
                    p = out[-1]
                    bar.set_postfix_str(f"{t + 1}x{objects}: update {p['update']['median_ms']:.2f} ms, "
                                        f"{p['held_mb']:.0f} MB")
    return out
