"""The shape of a saved memory document, checked before a memory is built from it.

:func:`check_document` walks the JSON of :func:`embodied.memory.persistence.to_json` and raises
``ValueError("<field path>: <what is wrong>")`` at the first field of the wrong type, a number that is
not finite (NaN, inf) or out of range, or a missing field the memory needs; :func:`check_built` then
checks what only the built memory shows (the graph, the event log and the tracks describe the same
nodes). A memory built from a document that passes both takes the next frame, answers queries and
rebuilds its past; ``persistence.load`` adds the file's name to the message.

Unknown fields and node attributes are accepted (newer writers may add some), but every attribute value
must be what the graph stores: a string, a boolean, null, a finite number, or a list of those.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from embodied.memory.config import MemoryConfig
from embodied.memory.document_columns import added_in_columns, check_log_columns
from embodied.memory.document_types import (
    GRIP_FIELDS,
    MAX_COORD,
    NODE_FIELDS,
    PHYSICAL,
    PHYSICAL_FIELDS,
    TRACK_FIELDS,
    VIEW_FIELDS,
    check_attrs,
    check_fields,
    check_value,
    finite,
    show,
)
from embodied.memory.events import ADD, DELETE, UPDATE

if TYPE_CHECKING:
    from embodied.memory.memory import SpatialMemory

def _config(d: Any) -> None:
    MemoryConfig.from_json(d)  # names an unknown section or knob, a wrong type or a negative number


def check_document(doc: dict) -> None:
    """Raise ValueError naming the first field of ``doc`` (a saved memory) that is missing or malformed."""
    _config(doc.get("config"))
    for key, kind in (("t", "time"), ("frames", "count"), ("current_place", "str")):
        if key not in doc:
            raise ValueError(f"missing {key!r}")
        check_value(doc[key], kind, key)
    counters = doc.get("counters")
    if not isinstance(counters, dict):
        raise ValueError(f"counters: expected an object, got {show(counters)}")
    for key, value in counters.items():
        check_value(value, "count", f"counters.{key}")
    check_fields(doc.get("grip"), GRIP_FIELDS, "grip")
    if "width" not in doc["grip"]:
        raise ValueError("grip: missing 'width'")
    width = doc["grip"]["width"]
    if width is not None:
        finite(width, "grip.width")
    together = doc.get("together")
    if not isinstance(together, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(n, str) for n in p) for p in together):
        raise ValueError("together: expected a list of node-id pairs")
    nodes = doc.get("nodes")
    if not isinstance(nodes, dict):
        raise ValueError(f"nodes: expected an object, got {show(nodes)}")
    for node, attrs in nodes.items():
        where = f"nodes.{node}"
        check_attrs(attrs, where, NODE_FIELDS)
        if attrs["kind"] in PHYSICAL:
            check_attrs(attrs, where, PHYSICAL_FIELDS)
    edges = doc.get("edges")
    if not isinstance(edges, list):
        raise ValueError(f"edges: expected a list, got {show(edges)}")
    for k, edge in enumerate(edges):
        if not (isinstance(edge, list) and len(edge) == 3 and all(isinstance(x, str) for x in edge)):
            raise ValueError(f"edges[{k}]: expected [from, to, relation], got {show(edge)}")
        if edge[0] not in nodes or edge[1] not in nodes:
            raise ValueError(f"edges[{k}]: {edge[0]!r} -> {edge[1]!r} joins a node that is not in nodes")
    _log(doc.get("log"), doc["t"])
    for where, node, cls in added_in_columns(doc["log"]):
        # Ids are <class>_<n> with n from the class's counter: a counter behind an id would hand it out again.
        if isinstance(cls, str) and node.startswith(cls + "_") and node[len(cls) + 1:].isdecimal() and \
                int(node[len(cls) + 1:]) >= counters.get(cls, 0):
            raise ValueError(f"counters.{cls}: {counters.get(cls, 0)} does not count past node {node!r} "
                             f"(added by {where})")
    _tracks(doc.get("tracks"), nodes)
    looked = doc.get("looked")
    if looked is not None:
        if not isinstance(looked, list):
            raise ValueError(f"looked: expected a list of cells, got {show(looked)}")
        for k, cell in enumerate(looked):
            if not isinstance(cell, int) or isinstance(cell, bool) or abs(cell) >= 2**63:
                raise ValueError(f"looked[{k}]: expected a 64-bit integer cell, got {show(cell)}")


def _log(log: Any, t: int) -> None:
    check_fields(log, {"keyframe_every": "count", "noops": "count"}, "log")
    if log["keyframe_every"] < 1:
        raise ValueError(f"log.keyframe_every: {log['keyframe_every']} is not >= 1")
    check_log_columns(log, t)


def check_event(t: Any, op: Any, node: Any, tag: Any, data: Any, where: str = "event") -> None:
    """One event of the log (as saved, or a line of a recording's events.jsonl)."""
    check_value(t, "time", f"{where}.t")
    if op not in (ADD, UPDATE, DELETE):
        raise ValueError(f"{where}.op: {op!r} is not ADD, UPDATE or DELETE")
    check_value(node, "str", f"{where}.node")
    check_value(tag, "str", f"{where}.tag")
    check_attrs(data, f"{where}.data", {"kind": "str", "cls": "str", "position": "vec3"} if op == ADD else None)


def _tracks(tracks: Any, nodes: dict) -> None:
    if not isinstance(tracks, dict):
        raise ValueError(f"tracks: expected an object, got {show(tracks)}")
    physical = {n for n, a in nodes.items() if a["kind"] in PHYSICAL}
    if set(tracks) != physical:
        odd = sorted(set(tracks) ^ physical)[0]
        raise ValueError(f"tracks: {odd!r} " + ("has no track" if odd in physical else "is a track of no physical node"))
    for node, track in tracks.items():
        where = f"tracks.{node}"
        check_fields(track, TRACK_FIELDS, where)
        if "prev_box" not in track:
            raise ValueError(f"{where}: missing 'prev_box'")
        prev = track["prev_box"]
        if prev is not None:
            if not (isinstance(prev, list) and len(prev) == 2):
                raise ValueError(f"{where}.prev_box: expected null or [box_min, box_max], got {show(prev)}")
            for k, corner in enumerate(prev):
                check_value(corner, "vec3", f"{where}.prev_box[{k}]")
        for key, value in track["parts"].items():
            finite(value, f"{where}.parts.{key}", MAX_COORD * 1e3)
        for key, value in track["votes"].items():
            check_value(value, "count", f"{where}.votes.{key}")
        for cam, view in track["views"].items():
            check_fields(view, VIEW_FIELDS, f"{where}.views.{cam}")
            if view.get("eye_z") is not None:
                finite(view["eye_z"], f"{where}.views.{cam}.eye_z", MAX_COORD)
            if view.get("rgb") is not None:
                check_value(view["rgb"], "vec3", f"{where}.views.{cam}.rgb")


def check_built(memory: SpatialMemory) -> None:
    """What the built memory must agree on: the log's nodes now are the graph's."""
    logged, graph = set(memory.log.state), set(memory.graph.nodes)
    if logged != graph:
        odd = sorted(logged ^ graph)[0]
        raise ValueError(f"log: node {odd!r} " + ("is in the graph but was never added by the log" if odd in graph
                                                  else "was added by the log but is not in nodes"))
