"""The shape of a saved memory document (``persistence.to_json``), checked before a memory is built from it.

:func:`check_document` raises ``ValueError("<field path>: <what is wrong>")`` at the first field that is
missing, of the wrong type, not finite or out of range (the log's values a column at a time, in numpy where
it can); :func:`check_built` checks that the built graph and log describe the same nodes. Unknown fields
and attributes (a newer writer's) pass if plain: strings, booleans, null, finite numbers or lists of those.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from embodied.memory.affordances import KINDS, PHYSICAL
from embodied.memory.columns import schema_events
from embodied.memory.config import MemoryConfig
from embodied.memory.events import ADD, DELETE, UPDATE

if TYPE_CHECKING:
    from embodied.memory.memory import SpatialMemory

MAX_TIME = 2**62  # control steps; the event log keeps times as signed 64-bit integers
MAX_COORD = 1e6  # m: a coordinate beyond 1000 km is no place in any scene
NODE_FIELDS = {"kind": "str", "cls": "str", "position": "vec3", "first_seen": "time", "last_seen": "time",
               "visible": "bool", "status": "str"}
PHYSICAL_FIELDS = {"colour": "str", "rgb": "vec3", "box_min": "vec3", "box_max": "vec3", "unseen_since": "time",
                   "state": "str", "articulated": "bool", "inside": "str", "held": "bool", "n_obs": "count",
                   "confidence": "number"}
ATTR_TYPES = {**NODE_FIELDS, **PHYSICAL_FIELDS, "size": "vec3", "last_update": "time", "room": "str", "name": "str",
              "area": "number", "links": "strs", "pressed_by": "str", "note": "str"}
GRIP_FIELDS = {"closed": "bool", "holding": "str", "grasp_width": "number", "offset": "vec3", "peak": "number"}
TRACK_FIELDS = {"surface": "bool", "views": "dict", "points": "points", "box_min": "vec3", "box_max": "vec3",
                "parts": "dict", "velocity": "vec3", "t_obs": "time", "rigid": "bool", "height": "number",
                "votes": "dict", "left": "str", "left_t": "time", "gone": "belief", "press": "belief",
                "opened": "belief"}
VIEW_FIELDS = {"points": "points", "center": "vec3", "box_min": "vec3", "box_max": "vec3", "n_points": "count",
               "t": "time", "noise": "vec3", "pending": "number"}
ADD_FIELDS = {"kind": "str", "cls": "str", "position": "vec3"}  # what an ADD event's data must hold
LOG_COLUMNS = {"op": (0, 2), "node": "nodes", "tag": "tags", "keys": "schemas"}  # index columns and their range


def show(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


def finite(value: Any, where: str, limit: float = math.inf) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ValueError(f"{where}: expected a number, got {show(value)}")
    if isinstance(value, int) and abs(value) >= 2**63 or not math.isfinite(value) or abs(value) > limit:
        raise ValueError(f"{where}: {value!r} is out of range")
    return value


def check_value(value: Any, kind: str | None, where: str) -> None:
    """One value against a type name of the tables above (None: any plain value)."""
    if kind is None:
        if isinstance(value, list):
            for k, v in enumerate(value):
                check_value(v, None, f"{where}[{k}]")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            finite(value, where)
        elif not (value is None or isinstance(value, (str, bool))):
            raise ValueError(f"{where}: expected a string, boolean, number or list, got {show(value)}")
        return
    if kind in ("number", "time", "count"):
        finite(value, where)
        low = {"number": -math.inf, "time": -1, "count": 0}[kind]
        if kind != "number" and (not isinstance(value, int) or not low <= value < MAX_TIME):
            raise ValueError(f"{where}: expected an integer in {low}..{MAX_TIME - 1}, got {show(value)}")
    elif kind in ("vec3", "points", "belief"):
        items = [value] if kind == "vec3" else value if isinstance(value, list) else None
        if items is None or kind == "belief" and not (len(value) == 2 and isinstance(value[1], bool)):
            raise ValueError(f"{where}: expected {'[log-odds, decision]' if kind == 'belief' else kind}, "
                             f"got {show(value)}")
        for k, p in enumerate(items[:1] if kind == "belief" else items):
            if kind == "belief":
                finite(p, f"{where}[0]", 1e3)
            elif not (isinstance(p, list) and len(p) == 3):
                raise ValueError(f"{where}{'' if kind == 'vec3' else f'[{k}]'}: expected 3 numbers, got {show(p)}")
            else:
                for j, v in enumerate(p):
                    finite(v, f"{where}{'' if kind == 'vec3' else f'[{k}]'}[{j}]", MAX_COORD)
    else:
        ok = {"str": isinstance(value, str), "bool": isinstance(value, bool), "dict": isinstance(value, dict),
              "strs": isinstance(value, list) and all(isinstance(v, str) for v in value)}[kind]
        if not ok:
            raise ValueError(f"{where}: expected {kind}, got {show(value)}")


def check_fields(d: Any, table: dict[str, str], where: str) -> None:
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected an object, got {show(d)}")
    for key, kind in table.items():
        if key in d:
            check_value(d[key], kind, f"{where}.{key}")
        else:
            raise ValueError(f"{where}: missing {key!r}")


def check_attrs(attrs: Any, where: str, required: dict[str, str] | None = None) -> None:
    """Node attributes (a node of the graph, or an event's data): known ones typed, any other plain."""
    check_fields(attrs, {}, where)
    for key, value in attrs.items():
        check_value(value, ATTR_TYPES.get(key), f"{where}.{key}")
    for key in required or ():
        if key not in attrs:
            raise ValueError(f"{where}: missing {key!r}")
    if "kind" in attrs and attrs["kind"] not in KINDS:
        raise ValueError(f"{where}.kind: {attrs['kind']!r} is not one of {', '.join(KINDS)}")


def _column_ok(column: list, kind: str | None) -> bool:
    """Whether every value of a column plainly passes ``check_value`` (False: not sure, check each)."""
    types = set(map(type, column))
    if not column or kind in ("str", "bool"):
        return types <= {str if kind == "str" else bool}
    if kind in ("time", "count", "number") and types <= ({int} if kind != "number" else {int, float}):
        a = np.asarray(column, dtype=np.float64)
        low = {"time": -1, "count": 0, "number": -(2.0**63)}[kind]
        return bool(np.isfinite(a).all() and a.min() >= low and a.max() < (MAX_TIME if kind != "number" else 2.0**63))
    if kind == "vec3" and types == {list}:
        try:
            a = np.asarray(column, dtype=np.float64)
        except (ValueError, TypeError):
            return False
        return a.shape == (len(column), 3) and bool(np.isfinite(a).all() and np.abs(a).max() <= MAX_COORD) and \
            all(type(v) in (int, float) for p in column for v in p)
    return False


def check_document(doc: dict) -> None:
    """Raise ValueError naming the first field of ``doc`` (a saved memory) that is missing or malformed."""
    MemoryConfig.from_json(doc.get("config"))  # an unknown section or knob, a wrong type, a negative number
    for key, kind in (("t", "time"), ("frames", "count"), ("current_place", "str")):
        if key not in doc:
            raise ValueError(f"missing {key!r}")
        check_value(doc[key], kind, key)
    counters = doc.get("counters")
    check_fields(counters, {}, "counters")
    for key, value in counters.items():
        check_value(value, "count", f"counters.{key}")
    check_fields(doc.get("grip"), GRIP_FIELDS, "grip")
    if "width" not in doc["grip"]:
        raise ValueError("grip: missing 'width'")
    if doc["grip"]["width"] is not None:
        finite(doc["grip"]["width"], "grip.width")
    together = doc.get("together")
    if not isinstance(together, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(n, str) for n in p) for p in together):
        raise ValueError("together: expected a list of node-id pairs")
    nodes = doc.get("nodes")
    check_fields(nodes, {}, "nodes")
    for node, attrs in nodes.items():
        check_attrs(attrs, f"nodes.{node}", NODE_FIELDS)
        if attrs["kind"] in PHYSICAL:
            check_attrs(attrs, f"nodes.{node}", PHYSICAL_FIELDS)
    edges = doc.get("edges")
    if not isinstance(edges, list):
        raise ValueError(f"edges: expected a list, got {show(edges)}")
    for k, edge in enumerate(edges):
        if not (isinstance(edge, list) and len(edge) == 3 and all(isinstance(x, str) for x in edge)):
            raise ValueError(f"edges[{k}]: expected [from, to, relation], got {show(edge)}")
        if edge[0] not in nodes or edge[1] not in nodes:
            raise ValueError(f"edges[{k}]: {edge[0]!r} -> {edge[1]!r} joins a node that is not in nodes")
    log = doc.get("log")
    for k, where, data in _log(log, doc["t"]):  # ids are <class>_<n>: a counter behind one would hand it out again
        node, cls = log["nodes"][log["node"][k]], data.get("cls")
        if isinstance(cls, str) and node.startswith(cls + "_") and node[len(cls) + 1:].isdecimal() and \
                int(node[len(cls) + 1:]) >= counters.get(cls, 0):
            raise ValueError(f"counters.{cls}: {counters.get(cls, 0)} does not count past node {node!r} "
                             f"(added by {where})")
    _tracks(doc.get("tracks"), nodes)
    looked = doc.get("looked")
    if looked is not None and not (isinstance(looked, list) and all(
            isinstance(c, int) and not isinstance(c, bool) and abs(c) < 2**63 for c in looked)):
        raise ValueError("looked: expected a list of 64-bit integer cells")


def _log(log: Any, t: int) -> list[tuple[int, str, dict]]:
    """Check a log in the column layout of ``events_json``; returns (event, where, data) of its ADD events."""
    check_fields(log, {"keyframe_every": "count", "noops": "count"}, "log")
    if log["keyframe_every"] < 1:
        raise ValueError(f"log.keyframe_every: {log['keyframe_every']} is not >= 1")
    if log.get("format") != "columns":
        raise ValueError(f"log: expected 'format': 'columns', got {show(log.get('format'))}")
    for key in ("nodes", "tags", "schemas", "t", *LOG_COLUMNS, "values"):
        if not isinstance(log.get(key), list):
            raise ValueError(f"log.{key}: expected a list, got {show(log.get(key))}")
    for key in ("nodes", "tags"):
        if not _column_ok(log[key], "str"):
            raise ValueError(f"log.{key}: expected a list of strings")
    for k, schema in enumerate(log["schemas"]):
        if not (isinstance(schema, list) and all(type(x) is str for x in schema) and len(set(schema)) == len(schema)):
            raise ValueError(f"log.schemas[{k}]: expected a list of distinct attribute names, got {show(schema)}")
    n = len(log["t"])
    for key, names in {"t": (-1, min(t, MAX_TIME - 1)), **LOG_COLUMNS}.items():
        lo, hi = names if isinstance(names, tuple) else (0, len(log[names]) - 1)
        column = log[key]
        if len(column) != n:
            raise ValueError(f"log.{key}: {len(column)} entries for {n} events (log.t)")
        if column and not (set(map(type, column)) == {int} and lo <= min(column) and max(column) <= hi):
            k = next(k for k, x in enumerate(column) if not (type(x) is int and lo <= x <= hi))
            x = column[k]
            raise ValueError(f"log.{key}[{k}]: " + (f"is after the memory's time {t}" if key == "t" and type(x) is int
                                                    and x > t else f"expected an integer in {lo}..{hi}, got {show(x)}"))
    schemas, values, keys = log["schemas"], log["values"], log["keys"]
    if len(values) != len(schemas):
        raise ValueError(f"log.values: {len(values)} entries for {len(schemas)} schemas (one list of columns each)")
    events = schema_events(keys, len(schemas))
    for s, (schema, columns) in enumerate(zip(schemas, values)):
        if not (isinstance(columns, list) and len(columns) == len(schema)):
            raise ValueError(f"log.values[{s}]: expected {len(schema)} columns ({', '.join(schema)}), "
                             f"got {show(columns)}")
        for m, (key, column) in enumerate(zip(schema, columns)):
            where = f"log.values[{s}][{m}]"
            if not (isinstance(column, list) and len(column) == len(events[s])):
                raise ValueError(f"{where} ({key}): expected a list of {len(events[s])} values (one per event of "
                                 f"schema {s}), got {show(column)}")
            kind = ATTR_TYPES.get(key)
            if not _column_ok(column, kind):
                for j, value in enumerate(column):
                    check_value(value, kind, f"{where}[{j}] ({key} of event {events[s][j]})")
    adds = []
    for s, rows in enumerate(events):
        for j, k in enumerate(rows):
            if log["op"][k] == 0:
                data = {key: column[j] for key, column in zip(schemas[s], values[s])}
                check_attrs(data, f"log.values[{s}] (event {k})", ADD_FIELDS)
                adds.append((k, f"log.values[{s}] (event {k})", data))
    return sorted(adds)


def check_event(t: Any, op: Any, node: Any, tag: Any, data: Any, where: str = "event") -> None:
    """One event of the log (a line of a recording's events.jsonl)."""
    check_value(t, "time", f"{where}.t")
    if op not in (ADD, UPDATE, DELETE):
        raise ValueError(f"{where}.op: {op!r} is not ADD, UPDATE or DELETE")
    check_value(node, "str", f"{where}.node")
    check_value(tag, "str", f"{where}.tag")
    check_attrs(data, f"{where}.data", ADD_FIELDS if op == ADD else None)


def _tracks(tracks: Any, nodes: dict) -> None:
    check_fields(tracks, {}, "tracks")
    physical = {n for n, a in nodes.items() if a["kind"] in PHYSICAL}
    if set(tracks) != physical:
        odd = min(set(tracks) ^ physical)
        raise ValueError(f"tracks: {odd!r} " + ("has no track" if odd in physical
                                                else "is a track of no physical node"))
    for node, track in tracks.items():
        where = f"tracks.{node}"
        check_fields(track, TRACK_FIELDS, where)
        prev = track.get("prev_box", "missing")
        if prev is not None and not (isinstance(prev, list) and len(prev) == 2):
            raise ValueError(f"{where}.prev_box: expected null or [box_min, box_max], got {show(prev)}")
        for k, corner in enumerate(prev or ()):
            check_value(corner, "vec3", f"{where}.prev_box[{k}]")
        for key, value in track["parts"].items():
            finite(value, f"{where}.parts.{key}", MAX_COORD * 1e3)
        for key, value in track["votes"].items():
            check_value(value, "count", f"{where}.votes.{key}")
        for cam, view in track["views"].items():
            check_fields(view, VIEW_FIELDS, f"{where}.views.{cam}")
            for key in ("eye_z", "range"):
                if view.get(key) is not None:
                    finite(view[key], f"{where}.views.{cam}.{key}", MAX_COORD)
            if view.get("rgb") is not None:
                check_value(view["rgb"], "vec3", f"{where}.views.{cam}.rgb")


def check_built(memory: SpatialMemory) -> None:
    """What the built memory must agree on: the log's nodes now are the graph's."""
    logged, graph = set(memory.log.state), set(memory.graph.nodes)
    if logged != graph:
        odd = min(logged ^ graph)
        raise ValueError(f"log: node {odd!r} " + ("is in the graph but was never added by the log" if odd in graph
                                                  else "was added by the log but is not in nodes"))
