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

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from embodied.memory.config import KINDS, MemoryConfig
from embodied.memory.events import ADD, DELETE, UPDATE

if TYPE_CHECKING:
    from embodied.memory.memory import SpatialMemory

MAX_TIME = 2**62  # control steps; the event log keeps times as signed 64-bit integers
MAX_COORD = 1e6  # m: a coordinate beyond 1000 km is no place in any scene
PHYSICAL = ("object", "container", "articulated", "surface")

# What every node carries, and what nodes with a track (physical ones) carry besides.
NODE_FIELDS = {"kind": "str", "cls": "str", "position": "vec3", "first_seen": "time", "last_seen": "time",
               "visible": "bool", "status": "str"}
PHYSICAL_FIELDS = {"colour": "str", "rgb": "vec3", "box_min": "vec3", "box_max": "vec3", "unseen_since": "time",
                   "state": "str", "articulated": "bool", "inside": "str", "held": "bool", "n_obs": "count",
                   "confidence": "number"}
# Types of the other attributes the memory writes, where a node has them.
ATTR_TYPES = {**NODE_FIELDS, **PHYSICAL_FIELDS, "size": "vec3", "last_update": "time", "room": "str", "name": "str",
              "area": "number", "links": "strs", "pressed_by": "str", "note": "str"}
GRIP_FIELDS = {"closed": "bool", "holding": "str", "grasp_width": "number", "offset": "vec3"}
TRACK_FIELDS = {"surface": "bool", "views": "dict", "points": "points", "box_min": "vec3", "box_max": "vec3",
                "rest": "dict", "velocity": "vec3", "t_obs": "time"}
VIEW_FIELDS = {"points": "points", "center": "vec3", "box_min": "vec3", "box_max": "vec3", "n_points": "count",
               "t": "time"}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value: Any, where: str, limit: float = math.inf) -> float:
    if not _number(value):
        raise ValueError(f"{where}: expected a number, got {_show(value)}")
    if isinstance(value, int) and abs(value) >= 2**63 or not math.isfinite(value) or abs(value) > limit:
        raise ValueError(f"{where}: {value!r} is out of range")
    return value


def _show(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


def _check(value: Any, kind: str, where: str) -> None:
    """One value against a type name of the tables above."""
    if _surely(value, kind):
        return
    if kind == "str":
        ok = isinstance(value, str)
    elif kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "dict":
        ok = isinstance(value, dict)
    elif kind == "number":
        _finite(value, where)
        return
    elif kind in ("time", "count"):
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok and not (0 if kind == "count" else -1) <= value < MAX_TIME:
            raise ValueError(f"{where}: {value!r} is out of range")
    elif kind == "vec3":
        if not isinstance(value, list) or len(value) != 3:
            raise ValueError(f"{where}: expected 3 numbers, got {_show(value)}")
        for k, v in enumerate(value):
            _finite(v, f"{where}[{k}]", MAX_COORD)
        return
    elif kind == "points":
        if not isinstance(value, list):
            raise ValueError(f"{where}: expected a list of points, got {_show(value)}")
        for k, p in enumerate(value):
            _check(p, "vec3", f"{where}[{k}]")
        return
    elif kind == "strs":
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    else:
        raise AssertionError(kind)
    if not ok:
        raise ValueError(f"{where}: expected {kind}, got {_show(value)}")


def _fields(d: Any, table: dict[str, str], where: str, required: bool = True) -> None:
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected an object, got {_show(d)}")
    for key, kind in table.items():
        if key in d:
            _check(d[key], kind, f"{where}.{key}")
        elif required:
            raise ValueError(f"{where}: missing {key!r}")


def _attrs(attrs: Any, where: str, required: dict[str, str] | None = None) -> None:
    """Node attributes (a node of the graph, or an event's data): known ones typed, any value plain."""
    if not isinstance(attrs, dict):
        raise ValueError(f"{where}: expected an object, got {_show(attrs)}")
    for key, value in attrs.items():
        kind = ATTR_TYPES.get(key)
        # The quick test passes the values that plainly pass; the full check explains the others.
        if kind is None:
            if not _surely_plain(value):
                _plain(value, f"{where}.{key}")
        elif not _surely(value, kind):
            _check(value, kind, f"{where}.{key}")
    for key in required or ():
        if key not in attrs:
            raise ValueError(f"{where}: missing {key!r}")
    if "kind" in attrs and attrs["kind"] not in KINDS:
        raise ValueError(f"{where}.kind: {attrs['kind']!r} is not one of {', '.join(KINDS)}")


def _surely(value: Any, kind: str) -> bool:
    """True only when ``_check(value, kind)`` would pass (False: not sure). A saved memory holds hundreds of
    thousands of event values: this keeps checking them a fraction of the load."""
    tp = type(value)
    if kind == "str":
        return tp is str
    if kind == "bool":
        return tp is bool
    if kind == "number":
        return (tp is float and -math.inf < value < math.inf) or (tp is int and -(2**63) < value < 2**63)
    if kind == "time":
        return tp is int and -1 <= value < MAX_TIME
    if kind == "count":
        return tp is int and 0 <= value < MAX_TIME
    if kind == "vec3":
        return tp is list and len(value) == 3 and all(
            (type(v) is float or type(v) is int) and -MAX_COORD <= v <= MAX_COORD for v in value
        )
    if kind == "points":
        return tp is list and all(
            type(p) is list and len(p) == 3
            and all((type(v) is float or type(v) is int) and -MAX_COORD <= v <= MAX_COORD for v in p)
            for p in value
        )
    return False


def _surely_all(values, kind: str) -> bool:
    """True only when every value passes ``_check(value, kind)``: ``_surely`` over a column, the common
    kinds without a call per value."""
    types = set(map(type, values))
    if kind in ("str", "bool"):
        return types <= {str if kind == "str" else bool}
    if kind in ("time", "count") and types <= {int}:
        return not values or (0 if kind == "count" else -1) <= min(values) and max(values) < MAX_TIME
    if kind == "number" and types <= {int, float}:
        return not values or -(2**63) < min(values) and max(values) < 2**63 and not any(map(math.isnan, values))
    return all(_surely(v, kind) for v in values)


def _surely_plain(value: Any) -> bool:
    """True only when ``_plain(value)`` would pass."""
    tp = type(value)
    if tp is str or tp is bool or value is None:
        return True
    if tp is float:
        return -math.inf < value < math.inf
    if tp is list:
        return all(_surely_plain(v) for v in value)
    return tp is int and -(2**63) < value < 2**63


def _plain(value: Any, where: str) -> None:
    if isinstance(value, list):
        for k, v in enumerate(value):
            _plain(v, f"{where}[{k}]")
    elif _number(value):
        _finite(value, where)
    elif not (value is None or isinstance(value, (str, bool))):
        raise ValueError(f"{where}: expected a string, boolean, number or list, got {_show(value)}")


def _config(d: Any) -> None:
    if not isinstance(d, dict):
        raise ValueError(f"config: expected an object, got {_show(d)}")
    fields = {f.name: f for f in dataclasses.fields(MemoryConfig)}
    for key, value in d.items():
        if key not in fields:
            raise ValueError(f"config: unknown knob {key!r}")
        default = fields[key].default
        where = f"config.{key}"
        if isinstance(default, bool):
            _check(value, "bool", where)
        elif isinstance(default, (int, float)):
            _finite(value, where)
            if isinstance(default, int) and not isinstance(value, int):
                raise ValueError(f"{where}: expected an integer, got {_show(value)}")
            if value < 0:
                raise ValueError(f"{where}: {value!r} is negative")
        elif isinstance(default, str):
            _check(value, "str", where)


def check_document(doc: dict) -> None:
    """Raise ValueError naming the first field of ``doc`` (a saved memory) that is missing or malformed."""
    _config(doc.get("config"))
    for key, kind in (("t", "time"), ("frames", "count"), ("current_place", "str")):
        if key not in doc:
            raise ValueError(f"missing {key!r}")
        _check(doc[key], kind, key)
    counters = doc.get("counters")
    if not isinstance(counters, dict):
        raise ValueError(f"counters: expected an object, got {_show(counters)}")
    for key, value in counters.items():
        _check(value, "count", f"counters.{key}")
    _fields(doc.get("grip"), GRIP_FIELDS, "grip")
    if "width" not in doc["grip"]:
        raise ValueError("grip: missing 'width'")
    width = doc["grip"]["width"]
    if width is not None:
        _finite(width, "grip.width")
    together = doc.get("together")
    if not isinstance(together, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(n, str) for n in p) for p in together):
        raise ValueError("together: expected a list of node-id pairs")
    nodes = doc.get("nodes")
    if not isinstance(nodes, dict):
        raise ValueError(f"nodes: expected an object, got {_show(nodes)}")
    for node, attrs in nodes.items():
        where = f"nodes.{node}"
        _attrs(attrs, where, NODE_FIELDS)
        if attrs["kind"] in PHYSICAL:
            _attrs(attrs, where, PHYSICAL_FIELDS)
    edges = doc.get("edges")
    if not isinstance(edges, list):
        raise ValueError(f"edges: expected a list, got {_show(edges)}")
    for k, edge in enumerate(edges):
        if not (isinstance(edge, list) and len(edge) == 3 and all(isinstance(x, str) for x in edge)):
            raise ValueError(f"edges[{k}]: expected [from, to, relation], got {_show(edge)}")
        if edge[0] not in nodes or edge[1] not in nodes:
            raise ValueError(f"edges[{k}]: {edge[0]!r} -> {edge[1]!r} joins a node that is not in nodes")
    _log(doc.get("log"), doc["t"])
    for where, node, cls in _added(doc["log"]):
        # Ids are <class>_<n> with n from the class's counter: a counter behind an id would hand it out again.
        if isinstance(cls, str) and node.startswith(cls + "_") and node[len(cls) + 1:].isdecimal() and \
                int(node[len(cls) + 1:]) >= counters.get(cls, 0):
            raise ValueError(f"counters.{cls}: {counters.get(cls, 0)} does not count past node {node!r} "
                             f"(added by {where})")
    _tracks(doc.get("tracks"), nodes)
    looked = doc.get("looked")
    if looked is not None:
        if not isinstance(looked, list):
            raise ValueError(f"looked: expected a list of cells, got {_show(looked)}")
        for k, cell in enumerate(looked):
            if not isinstance(cell, int) or isinstance(cell, bool) or abs(cell) >= 2**63:
                raise ValueError(f"looked[{k}]: expected a 64-bit integer cell, got {_show(cell)}")


def _log(log: Any, t: int) -> None:
    _fields(log, {"keyframe_every": "count", "noops": "count"}, "log")
    if log["keyframe_every"] < 1:
        raise ValueError(f"log.keyframe_every: {log['keyframe_every']} is not >= 1")
    if "events" not in log:
        from embodied.memory.document_columns import check_log_columns

        check_log_columns(log, t)
        return
    events = log["events"]
    if not isinstance(events, list):
        raise ValueError(f"log.events: expected a list, got {_show(events)}")
    for k, event in enumerate(events):
        where = f"log.events[{k}]"
        if not (isinstance(event, list) and len(event) == 5):
            raise ValueError(f"{where}: expected [t, op, node, tag, data], got {_show(event)}")
        check_event(*event, where)
        if event[0] > t:
            raise ValueError(f"{where}.t: {event[0]} is after the memory's time {t}")


def _added(log: dict):
    """(where, node, class) of every ADD event of a checked log, in either layout."""
    if "events" in log:
        for k, (_, op, node, _, data) in enumerate(log["events"]):
            if op == ADD:
                yield f"log.events[{k}]", node, data.get("cls")
        return
    from embodied.memory.document_columns import added_in_columns

    yield from added_in_columns(log)


def check_event(t: Any, op: Any, node: Any, tag: Any, data: Any, where: str = "event") -> None:
    """One event of the log (as saved, or a line of a recording's events.jsonl)."""
    _check(t, "time", f"{where}.t")
    if op not in (ADD, UPDATE, DELETE):
        raise ValueError(f"{where}.op: {op!r} is not ADD, UPDATE or DELETE")
    _check(node, "str", f"{where}.node")
    _check(tag, "str", f"{where}.tag")
    _attrs(data, f"{where}.data", {"kind": "str", "cls": "str", "position": "vec3"} if op == ADD else None)


def _tracks(tracks: Any, nodes: dict) -> None:
    if not isinstance(tracks, dict):
        raise ValueError(f"tracks: expected an object, got {_show(tracks)}")
    physical = {n for n, a in nodes.items() if a["kind"] in PHYSICAL}
    if set(tracks) != physical:
        odd = sorted(set(tracks) ^ physical)[0]
        raise ValueError(f"tracks: {odd!r} " + ("has no track" if odd in physical else "is a track of no physical node"))
    for node, track in tracks.items():
        where = f"tracks.{node}"
        _fields(track, TRACK_FIELDS, where)
        for key in ("rigid",):
            if key in track:
                _check(track[key], "bool", f"{where}.{key}")
        if "height" in track:
            _finite(track["height"], f"{where}.height", MAX_COORD)
        prev = track.get("prev_box")
        if prev is not None:
            if not (isinstance(prev, list) and len(prev) == 2):
                raise ValueError(f"{where}.prev_box: expected null or [box_min, box_max], got {_show(prev)}")
            for k, corner in enumerate(prev):
                _check(corner, "vec3", f"{where}.prev_box[{k}]")
        for key, value in track["rest"].items():
            _finite(value, f"{where}.rest.{key}", MAX_COORD * 1e3)
        for cam, view in track["views"].items():
            _fields(view, VIEW_FIELDS, f"{where}.views.{cam}")
            if view.get("eye_z") is not None:
                _finite(view["eye_z"], f"{where}.views.{cam}.eye_z", MAX_COORD)
            if view.get("rgb") is not None:
                _check(view["rgb"], "vec3", f"{where}.views.{cam}.rgb")


def check_built(memory: SpatialMemory) -> None:
    """What the built memory must agree on: the log's nodes now are the graph's."""
    logged, graph = set(memory.log.state), set(memory.graph.nodes)
    if logged != graph:
        odd = sorted(logged ^ graph)[0]
        raise ValueError(f"log: node {odd!r} " + ("is in the graph but was never added by the log" if odd in graph
                                                  else "was added by the log but is not in nodes"))
