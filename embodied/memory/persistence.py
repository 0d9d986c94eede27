"""Saving and loading the memory: JSON that round-trips exactly, and GraphML export.

Files are written atomically (``embodied.atomic``); a corrupt or truncated file raises ValueError naming it.
Loading takes the class to build (``SpatialMemory.load`` passes itself): memory.py imports this module.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np

from embodied.atomic import atomic_write
from embodied.memory.columns import frozen, jsonable
from embodied.memory.config import MemoryConfig
from embodied.memory.document import check_built, check_document
from embodied.memory.events_json import log_from_json, log_to_json
from embodied.memory.tracks import Track

if TYPE_CHECKING:
    from embodied.memory.memory import SpatialMemory

FORMAT = "embodied.memory"
VERSION = 2  # 2: the rebuilt memory (configuration by component, beliefs in the tracks); 1 is not read


def to_json(memory: SpatialMemory, refresh: bool = True) -> dict:
    """The whole memory as a JSON-ready dict: graph, event log, tracker state. ``refresh=False`` leaves the
    geometric edges as they stand (the memory unchanged by saving it) and notes whether they are due."""
    graph = memory.graph if refresh else memory._graph
    return {
        "format": FORMAT, "version": VERSION, "config": memory.config.to_json(), "t": memory.t, "frames": memory.frames,
        "counters": dict(memory.counters), "grip": {k: jsonable(v) for k, v in memory.grip.items()},
        "current_place": memory.current_place, "together": sorted([list(p) for p in memory.together]),
        "nodes": {n: {k: jsonable(v) for k, v in a.items()} for n, a in graph.nodes(data=True)},
        "edges": [[u, v, k] for u, v, k in graph.edges(keys=True)],
        "edges_dirty": bool(memory._edges_dirty) and not refresh, "log": log_to_json(memory.log),
        "tracks": {n: tr.to_json() for n, tr in memory.tracks.items()},
        "looked": None if memory.looked.cells is None else sorted(memory.looked.cells),
        "edge_views": [[cam, cls, [[[float(x) for x in c], int(n), int(last)] for c, n, last in runs]]
                       for (cam, cls), runs in memory.tracker.spawner.edge_views.items()],
    }


def from_json(doc: dict, make: Callable[[MemoryConfig], SpatialMemory]) -> SpatialMemory:
    """The memory ``doc`` describes, built as ``make(config)`` (the SpatialMemory class) and then filled."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"not an {FORMAT} document (format field: "
                         f"{doc.get('format') if isinstance(doc, dict) else None!r})")
    if doc.get("version") != VERSION:
        raise ValueError(f"unsupported {FORMAT} version {doc.get('version')!r}; this code reads version {VERSION}")
    check_document(doc)  # every field typed, finite and in range before anything is built from it
    config = MemoryConfig.from_json(doc["config"])
    memory = make(config)
    memory.t, memory.frames = int(doc["t"]), int(doc["frames"])
    memory.counters = {k: int(v) for k, v in doc["counters"].items()}
    memory.body.grip = {k: frozen(v) for k, v in doc["grip"].items()}
    memory.body.current_place = str(doc["current_place"])
    memory.together.update((str(u), str(v)) for u, v in doc["together"])
    memory._graph.add_nodes_from((node, {k: frozen(v) for k, v in attrs.items()})
                                 for node, attrs in doc["nodes"].items())
    memory._graph.add_edges_from((u, v, k, {"rel": k}) for u, v, k in doc["edges"])
    memory.log = log_from_json(doc["log"])
    memory.tracks.update({n: Track.from_json(d, config) for n, d in doc["tracks"].items()})
    looked = doc.get("looked")  # None: every place counts as looked at
    memory.looked.cells = None if looked is None else {int(k) for k in looked}
    memory.tracker.spawner.edge_views = _edge_views(doc.get("edge_views", []))
    memory._edges_dirty = False
    check_built(memory)
    dirty = doc.get("edges_dirty", False)
    if not isinstance(dirty, bool):
        raise ValueError(f"edges_dirty: expected a boolean, got {type(dirty).__name__}")
    memory._edges_dirty = dirty  # saved without bringing the edges up to date: they are due
    return memory


def state(memory: SpatialMemory) -> tuple[dict, dict[str, np.ndarray]]:
    """The memory as it stands, unchanged: the :func:`to_json` document (edges as they are) and the arrays it
    does not hold: per track (in the document's order) ``tracks.K.keys`` (N,) int64 voxel keys and
    ``tracks.K.samples`` (M,3) float32 m visibility samples, and ``look_pose.K`` (4,4) float64, the pose each
    camera of ``doc["look_cameras"]`` had when its ground cells were last read."""
    doc = {**to_json(memory, refresh=False), "look_cameras": list(memory.looked.poses)}
    arrays = {}
    for k, track in enumerate(memory.tracks.values()):
        arrays[f"tracks.{k}.keys"] = np.ascontiguousarray(track.keys, dtype=np.int64)
        arrays[f"tracks.{k}.samples"] = np.ascontiguousarray(track.samples, dtype=np.float32).reshape(-1, 3)
    for k, pose in enumerate(memory.looked.poses.values()):
        arrays[f"look_pose.{k}"] = np.asarray(pose, dtype=np.float64)
    return doc, arrays


def from_state(doc: dict, arrays: dict[str, np.ndarray],
               make: Callable[[MemoryConfig], SpatialMemory]) -> SpatialMemory:
    """The memory :func:`state` describes; a missing or misshapen array raises ValueError naming it."""
    memory = from_json(doc, make)
    for k, track in enumerate(memory.tracks.values()):
        track.keys = _array(arrays, f"tracks.{k}.keys", np.int64, (-1,))
        track.samples = _array(arrays, f"tracks.{k}.samples", np.float32, (-1, 3))
    cameras = doc.get("look_cameras", [])
    if not isinstance(cameras, list) or not all(isinstance(c, str) for c in cameras):
        raise ValueError("look_cameras: expected a list of camera names")
    memory.looked.poses = {c: _array(arrays, f"look_pose.{k}", np.float64, (4, 4)) for k, c in enumerate(cameras)}
    return memory


def _edge_views(doc) -> dict:
    """The spawn rule's runs of views at the image's edge (``Spawner.edge_views``) from their saved form."""
    if not isinstance(doc, list):
        raise ValueError("edge_views: expected a list")
    out = {}
    for k, entry in enumerate(doc):
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str) and isinstance(entry[1], str)
                and isinstance(entry[2], list)):
            raise ValueError(f"edge_views[{k}]: expected [camera, class, runs]")
        if not all(isinstance(run, list) and len(run) == 3 and isinstance(run[0], list) and len(run[0]) == 3
                   and all(isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x) for x in run[0])
                   and all(isinstance(x, int) and not isinstance(x, bool) for x in run[1:]) for run in entry[2]):
            raise ValueError(f"edge_views[{k}]: expected runs of [[x, y, z], frames, step]")
        out[entry[0], entry[1]] = [(np.asarray(run[0], dtype=np.float64), run[1], run[2]) for run in entry[2]]
    return out


def _array(arrays: dict, key: str, dtype, shape: tuple) -> np.ndarray:
    """``arrays[key]`` of ``dtype`` and ``shape`` (-1: any length), finite; else ValueError naming ``key``."""
    if key not in arrays:
        raise ValueError(f"array {key}: missing")
    a = arrays[key]
    if a.dtype != dtype or a.ndim != len(shape) or any(s not in (-1, n) for s, n in zip(shape, a.shape)):
        raise ValueError(f"array {key}: expected {np.dtype(dtype).name} of shape {shape}, got {a.dtype} {a.shape}")
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        raise ValueError(f"array {key}: not finite")
    return a.copy()


def save(memory: SpatialMemory, path: str | os.PathLike) -> Path:
    """Write the memory to ``path`` as JSON, atomically. Returns the path."""
    return atomic_write(path, json.dumps(to_json(memory), separators=(",", ":")))


def load(path: str | os.PathLike, make: Callable[[MemoryConfig], SpatialMemory]) -> SpatialMemory:
    """Read a memory saved by :func:`save` (built by ``make``, the SpatialMemory class); a corrupt or
    truncated file raises ValueError naming it."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"memory file not found: {path}") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"memory file {path} is corrupt (not UTF-8 text): {e}") from None
    except json.JSONDecodeError as e:
        where = f"{e.msg} at line {e.lineno} column {e.colno}"
        raise ValueError(f"memory file {path} is corrupt or truncated: {where}") from None
    try:
        return from_json(doc, make)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise ValueError(f"memory file {path} is not a valid memory: {type(e).__name__}: {e}") from None


def export_graphml(memory: SpatialMemory, path: str | os.PathLike, t: int | None = None) -> Path:
    """Write the scene graph (now, or as it stood at time ``t``) as GraphML, atomically; vectors (GraphML has
    no tuples) as strings "x y z"."""
    graph = memory.graph if t is None else memory.snapshot(t)
    flat = nx.MultiDiGraph()
    flat.add_nodes_from((node, {k: " ".join(repr(float(x)) for x in v) if isinstance(v, tuple) else v
                                for k, v in attrs.items()}) for node, attrs in graph.nodes(data=True))
    flat.add_edges_from((u, v, k, {"rel": k}) for u, v, k in graph.edges(keys=True))
    return atomic_write(path, "\n".join(nx.generate_graphml(flat)) + "\n")
