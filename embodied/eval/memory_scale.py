"""A synthetic house for memory scale benchmarks: many look-alike objects on many shelves.

    stream = HouseStream(objects=500, seed=0)
    memory = SpatialMemory()
    for t in range(10_000):
        memory.update(stream.frame(t))
    stream.seen            # objects detected at least once (what the memory should hold)
    stream.last_seen_at    # object -> where it was last detected (what where_is should answer)

The house is a grid of shelves 1.2 m apart, each with 10 slots (2 rows of 5,
9 cm apart), about 70% full at the start. Objects come in 8 classes x 10
colours, so with 1,000 objects about 12 share each look (many white mugs):
only their place tells them apart. The robot patrols the shelves along a
serpentine route, looking down at one shelf at a time from 0.7 m with a
128 x 128 depth camera (a 60 degree view: its neighbours are out of view),
dwelling a few steps at each.

The world changes while the robot looks or looks away, at fixed rates (so a
run of N steps is the first N steps of any longer run): every ``move_every``
steps an object moves, in turn to another slot of the shelf the robot is
looking at (it sees the jump) and to a free slot of another shelf it has
looked at before (mostly while it looks elsewhere); every ``remove_every``
steps an object leaves the house for good (up to 10%); with ``late`` > 0,
that fraction of the objects arrives later, one every ``arrive_every`` steps.
Arrivals are off by default, and nothing is carried to a shelf the robot has
never looked at: a look-alike arriving while another is missing, or a thing
found on new ground, cannot be told from the missing one moved there, so the
count of objects would be a guess, not a measure (the memory takes the first
for the moved one and the second for a new one).

Detections are what the perceiver (``embodied.perception.clouds``) hands the
memory: an :class:`ObjectObservation` per object in view, with the class, a
mean RGB and its colour name, a downsampled cloud (1 cm grid over the
object's box surface, at most 96 points), its box, the pixel count at that
range, and a sub-millimetre jitter of the whole cloud from frame to frame.
The depth image shows each object's top where it stands and the shelf
elsewhere, so a remembered object that is gone is seen through (missing).

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
import math
import time
from pathlib import Path

import numpy as np

from embodied.perception.colour import colour_name
from embodied.perception.types import CameraView, Frame, ObjectObservation

# Class -> box size (x, y, z) m. cup and bowl are containers in memory (see embodied.memory.config).
CLASSES = {
    "mug": (0.05, 0.05, 0.06),
    "book": (0.06, 0.04, 0.025),
    "bottle": (0.04, 0.04, 0.08),
    "can": (0.035, 0.035, 0.05),
    "toy": (0.05, 0.04, 0.04),
    "plate": (0.07, 0.07, 0.015),
    "cup": (0.05, 0.05, 0.05),
    "bowl": (0.07, 0.07, 0.04),
}
COLOURS = {
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
LOOKS = len(CLASSES) * len(COLOURS)
SHELF_PITCH = 1.2  # m between shelf centres
SLOTS = [(dx, dy) for dy in (-0.05, 0.05) for dx in (-0.18, -0.09, 0.0, 0.09, 0.18)]
EYE = 0.7  # m, camera above the shelf top
IMAGE = 128
FOCAL = 110.0  # px: a 60 degree view, 0.8 m across at the shelf


def _cloud(size: tuple[float, float, float], cap: int = 96) -> np.ndarray:
    """(N,3) float32 points on a 1 cm grid over a box's surface, centred on the origin."""
    axes = [np.linspace(-s / 2, s / 2, max(2, int(round(s / 0.01)) + 1)) for s in size]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    half = np.asarray(size) / 2
    shell = grid[np.any(np.abs(np.abs(grid) - half) < 1e-6, axis=1)]
    if len(shell) > cap:
        shell = shell[:: -(-len(shell) // cap)]
    return shell.astype(np.float32)


class HouseStream:
    """Frames of a robot patrolling a house of ``objects`` look-alike objects; see the module doc."""

    def __init__(
        self,
        objects: int = 500,
        seed: int = 0,
        *,
        dwell: int = 8,
        move_every: int = 40,
        arrive_every: int = 100,
        remove_every: int = 250,
        late: float = 0.0,
        removed: float = 0.1,
        jitter: float = 0.0005,
        fill: float = 0.7,
    ):
        if objects < 1:
            raise ValueError(f"objects must be >= 1, got {objects}")
        self.rng = np.random.default_rng(seed)
        self.n = int(objects)
        self.dwell, self.move_every, self.jitter = int(dwell), int(move_every), float(jitter)
        self.arrive_every, self.remove_every = int(arrive_every), int(remove_every)
        n_shelves = max(2, math.ceil(objects / (len(SLOTS) * fill)))
        cols = math.ceil(math.sqrt(n_shelves))
        heights = self.rng.choice([0.45, 0.75, 0.9], size=n_shelves)
        self.shelves = np.array(
            [[SHELF_PITCH * (i % cols + 0.5), SHELF_PITCH * (i // cols + 0.5), heights[i]] for i in range(n_shelves)]
        )
        # Serpentine patrol route over the shelf grid (rows alternate direction).
        rows: dict[int, list[int]] = {}
        for i in range(n_shelves):
            rows.setdefault(i // cols, []).append(i)
        self.route = [i for r, row in sorted(rows.items()) for i in (row if r % 2 == 0 else row[::-1])]
        # Looks: every class x colour pair in turn, shuffled, so look-alikes are spread over the house.
        looks = [(c, k) for k in COLOURS for c in CLASSES]
        order = self.rng.permutation(self.n)
        self.cls = [looks[order[i] % LOOKS][0] for i in range(self.n)]
        self.colour = [looks[order[i] % LOOKS][1] for i in range(self.n)]
        self.rgb = []
        for i in range(self.n):
            rgb = np.clip(np.array(COLOURS[self.colour[i]]) + self.rng.uniform(-0.02, 0.02, 3), 0, 1).astype(np.float32)
            if colour_name(rgb) != self.colour[i]:
                rgb = np.array(COLOURS[self.colour[i]], np.float32)
            self.rgb.append(rgb)
        self._clouds = {c: _cloud(s) for c, s in CLASSES.items()}
        self.late = list(range(self.n - int(round(late * self.n)), self.n)) if self.n > 1 else []
        self.max_removed = int(round(removed * self.n))
        self.removed: list[int] = []
        self.moves = self.moved_unseen = 0
        self.moved: set[int] = set()  # objects moved at least once
        # Where each object is: (shelf, slot), or None (not arrived yet / gone).
        self.at: list[tuple[int, int] | None] = [None] * self.n
        self.occupant: dict[tuple[int, int], int] = {}
        for i in range(self.n):
            if i not in self.late:
                self._put(i, self._free_slot())
        self.seen: set[int] = set()
        self.last_seen_at: dict[int, np.ndarray] = {}  # object -> box centre (3,) where last detected
        self.route_pos, self.direction, self.t = 0, 1, -1
        self.visited: set[int] = set()  # shelves the robot has looked at
        pose = np.eye(4)
        pose[:3, :3] = np.array([[0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])  # looking straight down
        self._pose = pose
        self.K = np.array([[FOCAL, 0.0, (IMAGE - 1) / 2], [0.0, FOCAL, (IMAGE - 1) / 2], [0.0, 0.0, 1.0]])

    # --- the world ---------------------------------------------------------
    def _free_slot(self, avoid: int = -1, shelves: list[int] | None = None) -> tuple[int, int]:
        """A random free slot, on one of ``shelves`` (default: any) other than ``avoid``."""
        for _ in range(1000):
            shelf = int(self.rng.integers(len(self.shelves))) if shelves is None else shelves[
                int(self.rng.integers(len(shelves)))]
            spot = (shelf, int(self.rng.integers(len(SLOTS))))
            if spot not in self.occupant and spot[0] != avoid:
                return spot
        raise RuntimeError("the house is full")

    def _put(self, obj: int, spot: tuple[int, int] | None) -> None:
        if self.at[obj] is not None:
            del self.occupant[self.at[obj]]
        self.at[obj] = spot
        if spot is not None:
            self.occupant[spot] = obj

    def position(self, obj: int) -> np.ndarray | None:
        """Box centre (3,) m of an object now (None: not in the house)."""
        if self.at[obj] is None:
            return None
        shelf, slot = self.at[obj]
        x, y, z = self.shelves[shelf]
        dx, dy = SLOTS[slot]
        return np.array([x + dx, y + dy, z + CLASSES[self.cls[obj]][2] / 2])

    def present(self) -> list[int]:
        return [i for i in range(self.n) if self.at[i] is not None]

    def _world(self, t: int) -> None:
        """The changes due at step t (rates, not a schedule over the run's length)."""
        if t > 0 and t % self.arrive_every == 0 and self.late:
            self._put(self.late.pop(0), self._free_slot())
        if t > 0 and t % self.remove_every == 0 and len(self.removed) < self.max_removed:
            here = self.present()
            gone = here[int(self.rng.integers(len(here)))]
            self._put(gone, None)
            self.removed.append(gone)
        if t % self.move_every == self.dwell // 2:  # half way through a look at a shelf
            self.moves += 1
            shelf = self.shelf_now()
            watched = [o for (s, _), o in self.occupant.items() if s == shelf]
            free = [k for k in range(len(SLOTS)) if (shelf, k) not in self.occupant]
            if self.moves % 2 == 0 and watched and free:
                # Moved on the shelf the robot is looking at (it sees the object jump).
                obj = watched[int(self.rng.integers(len(watched)))]
                self._put(obj, (shelf, free[int(self.rng.integers(len(free)))]))
                self.moved.add(obj)
            else:
                # Carried to another shelf the robot has looked at, most likely while it looks elsewhere
                # (carried to ground it never saw, a thing is found there as a new one: see the doc).
                here = self.present()
                obj = here[int(self.rng.integers(len(here)))]
                visited = sorted(self.visited - {self.at[obj][0]})
                if not visited:
                    return
                self._put(obj, self._free_slot(avoid=self.at[obj][0], shelves=visited))
                self.moved_unseen += 1
                self.moved.add(obj)

    def _walk(self, t: int) -> None:
        if t > 0 and t % self.dwell == 0 and len(self.route) > 1:
            nxt = self.route_pos + self.direction
            if not 0 <= nxt < len(self.route):
                self.direction = -self.direction
                nxt = self.route_pos + self.direction
            self.route_pos = nxt

    # --- what the robot sees ---------------------------------------------------
    def shelf_now(self) -> int:
        return self.route[self.route_pos]

    def frame(self, t: int) -> Frame:
        """The perception frame of step t (steps must come in order, each once)."""
        if t != self.t + 1:
            raise ValueError(f"frames come in order: expected step {self.t + 1}, got {t}")
        self.t = t
        self._walk(t)
        self._world(t)
        shelf = self.shelf_now()
        self.visited.add(shelf)
        sx, sy, sz = self.shelves[shelf]
        pose = self._pose.copy()
        pose[:3, 3] = (sx, sy, sz + EYE)
        depth = np.full((IMAGE, IMAGE), EYE, np.float32)
        dets = []
        c = (IMAGE - 1) / 2
        for slot in range(len(SLOTS)):
            obj = self.occupant.get((shelf, slot))
            if obj is None:
                continue
            size = CLASSES[self.cls[obj]]
            centre = self.position(obj) + self.rng.normal(0.0, self.jitter, 3)
            lo, hi = centre - np.asarray(size) / 2, centre + np.asarray(size) / 2
            z_top = EYE - size[2]
            # Image axes: u runs along -y, v along -x (the camera's pose above).
            u0, u1 = c + FOCAL * (sy - hi[1]) / z_top, c + FOCAL * (sy - lo[1]) / z_top
            v0, v1 = c + FOCAL * (sx - hi[0]) / z_top, c + FOCAL * (sx - lo[0]) / z_top
            depth[max(int(v0), 0) : int(math.ceil(v1)) + 1, max(int(u0), 0) : int(math.ceil(u1)) + 1] = z_top
            pixels = int(FOCAL**2 * size[0] * size[1] / z_top**2 * self.rng.uniform(0.95, 1.05))
            rgb = self.rgb[obj]
            dets.append(
                ObjectObservation(
                    f"head#{slot}", self.cls[obj], rgb, colour_name(rgb), centre.copy(), lo, hi,
                    self._clouds[self.cls[obj]] + centre.astype(np.float32), pixels, "head", t,
                )
            )
            self.seen.add(obj)
            self.last_seen_at[obj] = self.position(obj)
        view = CameraView("head", depth, self.K, pose, np.linalg.inv(pose))
        return Frame(t, dets, [view])


# --- measuring a memory fed by the house ------------------------------------------------------
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


# --- the grid -------------------------------------------------------------------------------------
MEASURES = {  # name -> (value of a grid point, unit)
    "update_median_ms": (lambda p: p["update"]["median_ms"], "ms"),
    "update_p99_ms": (lambda p: p["update"]["p99_ms"], "ms"),
    "update_last_1000_median_ms": (lambda p: p["update_last_1000"]["median_ms"], "ms"),
    "edge_refresh_median_ms": (lambda p: p["edge_refresh"]["median_ms"], "ms"),
    "query_p99_ms": (lambda p: p["queries"]["worst"]["p99_ms"], "ms"),
    "snapshot_median_ms": (lambda p: p["snapshot"]["median_ms"], "ms"),
    "snapshot_p99_ms": (lambda p: p["snapshot"]["p99_ms"], "ms"),
    "save_s": (lambda p: p["save_s"], "s"),
    "load_s": (lambda p: p["load_s"], "s"),
    "held_mb": (lambda p: p["held_mb"], "MB"),
    "held_traced_mb": (lambda p: p["held_traced_mb"], "MB"),
    "disk_mb": (lambda p: p["disk_mb"], "MB"),
    "events": (lambda p: p["events"], ""),
}


def _slope(x, y) -> float | None:
    """Least-squares slope of log y against log x (None with fewer than two usable points)."""
    pts = [(a, b) for a, b in zip(x, y) if a and b and a > 0 and b > 0]
    if len({a for a, _ in pts}) < 2:
        return None
    lx, ly = np.log([a for a, _ in pts]), np.log([b for _, b in pts])
    return round(float(np.polyfit(lx, ly, 1)[0]), 3)


def fit_growth(points: list[dict]) -> dict:
    """Per measure: the log-log slope against steps at each object count, and against objects at each
    step count (1: linear, 0: flat, 2: quadratic)."""
    steps = sorted({p["steps"] for p in points})
    objects = sorted({p["objects"] for p in points})
    out = {}
    for name, (get, unit) in MEASURES.items():
        at = {(p["steps"], p["objects"]): get(p) for p in points}
        vs_steps = {str(o): _slope([s for s in steps if (s, o) in at], [at[s, o] for s in steps if (s, o) in at])
                    for o in objects}
        vs_objects = {str(s): _slope([o for o in objects if (s, o) in at], [at[s, o] for o in objects if (s, o) in at])
                      for s in steps}
        out[name] = {"unit": unit, "slope_vs_steps": vs_steps, "slope_vs_objects": vs_objects}
    return out


def check_targets(point: dict) -> dict:
    """Each target against a measured grid point: value, target, met."""
    values = {
        "update_median_ms": point["update"]["median_ms"],
        "query_p99_ms": point["queries"]["worst"]["p99_ms"],
        "snapshot_median_ms": point["snapshot"]["median_ms"],
        "held_mb": point["held_mb"],
        "save_s": point["save_s"],
        "load_s": point["load_s"],
    }
    return {k: {"value": v, "target": TARGETS[k], "met": bool(v <= TARGETS[k])} for k, v in values.items()}


def plot_growth(points: list[dict], path: Path) -> Path:
    """One panel per measure against steps (log-log), one line per object count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(MEASURES)
    cols = 4
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows))
    objects = sorted({p["objects"] for p in points})
    target_of = {"update_median_ms": "update_median_ms", "query_p99_ms": "query_p99_ms",
                 "snapshot_median_ms": "snapshot_median_ms", "held_mb": "held_mb", "held_traced_mb": "held_mb",
                 "save_s": "save_s", "load_s": "load_s"}
    for ax, name in zip(axes.ravel(), names):
        get, unit = MEASURES[name]
        for o in objects:
            pts = sorted((p["steps"], get(p)) for p in points if p["objects"] == o)
            ax.plot([s for s, _ in pts], [v for _, v in pts], "o-", label=f"{o} objects")
        if name in target_of:
            ax.axhline(TARGETS[target_of[name]], color="grey", ls="--", lw=1, label="target")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{name}" + (f" ({unit})" if unit else ""), fontsize=9)
        ax.set_xlabel("steps", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes.ravel()[len(names):]:
        ax.axis("off")
    axes.ravel()[0].legend(fontsize=7)
    fig.suptitle("SpatialMemory at scale: synthetic house (embodied bench memory --grid)", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def machine() -> dict:
    """Where the numbers were taken: load averages, CPUs, Python."""
    import os
    import platform

    load = os.getloadavg() if hasattr(os, "getloadavg") else (None, None, None)
    return {"load_avg_1_5_15": [round(x, 2) for x in load], "cpus": os.cpu_count(), "python": platform.python_version(),
            "machine": platform.machine()}


def run_grid(steps: list[int], objects: list[int], seed: int = 0, out: Path | None = None, queries: int = 100,
             snapshots: int = 50, progress: bool = True, stream_knobs: dict | None = None) -> dict:
    """The grid steps x objects: one house per object count, run to the most steps and measured at each
    step count. Writes ``out``/results.json and ``out``/growth.png when ``out`` is given."""
    import json

    from tqdm import tqdm

    steps, objects = sorted(set(int(s) for s in steps)), sorted(set(int(o) for o in objects))
    if not steps or min(steps) < 1 or not objects or min(objects) < 1:
        raise ValueError(f"steps and objects must be >= 1, got {steps} and {objects}")
    started = machine()
    t0 = time.perf_counter()
    points: list[dict] = []
    with tqdm(total=len(objects) * steps[-1], desc="bench memory grid", unit="step", disable=not progress,
              smoothing=0.05) as bar:
        for o in objects:
            points += scale_run(o, steps, seed, queries=queries, snapshots=snapshots, bar=bar,
                                stream_knobs=stream_knobs)
    largest = max(points, key=lambda p: (p["steps"], p["objects"]))
    report = {
        "bench": "memory scale (synthetic house)",
        "steps": steps,
        "objects": objects,
        "seed": seed,
        "targets": {"at": {"steps": 100_000, "objects": 500}, **TARGETS},
        "target_check": {"at": {"steps": largest["steps"], "objects": largest["objects"]},
                         **check_targets(largest)},
        "grid": points,
        "growth": fit_growth(points),
        "wall_s": round(time.perf_counter() - t0, 1),
        "machine_before": started,
        "machine_after": machine(),
    }
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(report, indent=1))
        plot_growth(points, out / "growth.png")
        report["files"] = {"results": str(out / "results.json"), "plot": str(out / "growth.png")}
    return report
