"""Types of the values a saved memory holds, for :mod:`embodied.memory.document` and
:mod:`embodied.memory.document_columns`: ``check_value(value, kind, where)`` raises
``ValueError("<where>: <what is wrong>")``; ``surely``/``surely_all`` are the quick tests that pass only
values that plainly pass (False: not sure, run the full check)."""

from __future__ import annotations

import math
from typing import Any

from embodied.memory.affordances import KINDS

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
                "parts": "dict", "velocity": "vec3", "t_obs": "time", "rigid": "bool", "height": "number",
                "votes": "dict", "left": "str", "left_t": "time", "gone": "belief", "press": "belief",
                "opened": "belief"}
VIEW_FIELDS = {"points": "points", "center": "vec3", "box_min": "vec3", "box_max": "vec3", "n_points": "count",
               "t": "time", "noise": "vec3", "pending": "number"}


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def finite(value: Any, where: str, limit: float = math.inf) -> float:
    if not is_number(value):
        raise ValueError(f"{where}: expected a number, got {show(value)}")
    if isinstance(value, int) and abs(value) >= 2**63 or not math.isfinite(value) or abs(value) > limit:
        raise ValueError(f"{where}: {value!r} is out of range")
    return value


def show(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


def check_value(value: Any, kind: str, where: str) -> None:
    """One value against a type name of the tables above."""
    if surely(value, kind):
        return
    if kind == "str":
        ok = isinstance(value, str)
    elif kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "dict":
        ok = isinstance(value, dict)
    elif kind == "number":
        finite(value, where)
        return
    elif kind in ("time", "count"):
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok and not (0 if kind == "count" else -1) <= value < MAX_TIME:
            raise ValueError(f"{where}: {value!r} is out of range")
    elif kind == "vec3":
        if not isinstance(value, list) or len(value) != 3:
            raise ValueError(f"{where}: expected 3 numbers, got {show(value)}")
        for k, v in enumerate(value):
            finite(v, f"{where}[{k}]", MAX_COORD)
        return
    elif kind == "points":
        if not isinstance(value, list):
            raise ValueError(f"{where}: expected a list of points, got {show(value)}")
        for k, p in enumerate(value):
            check_value(p, "vec3", f"{where}[{k}]")
        return
    elif kind == "strs":
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    elif kind == "belief":  # [log-odds, decision]
        ok = isinstance(value, list) and len(value) == 2 and isinstance(value[1], bool)
        if ok:
            finite(value[0], f"{where}[0]", 1e3)
    else:
        raise AssertionError(kind)
    if not ok:
        raise ValueError(f"{where}: expected {kind}, got {show(value)}")


def check_fields(d: Any, table: dict[str, str], where: str, required: bool = True) -> None:
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected an object, got {show(d)}")
    for key, kind in table.items():
        if key in d:
            check_value(d[key], kind, f"{where}.{key}")
        elif required:
            raise ValueError(f"{where}: missing {key!r}")


def check_attrs(attrs: Any, where: str, required: dict[str, str] | None = None) -> None:
    """Node attributes (a node of the graph, or an event's data): known ones typed, any value plain."""
    if not isinstance(attrs, dict):
        raise ValueError(f"{where}: expected an object, got {show(attrs)}")
    for key, value in attrs.items():
        kind = ATTR_TYPES.get(key)
        # The quick test passes the values that plainly pass; the full check explains the others.
        if kind is None:
            if not surely_plain(value):
                check_plain(value, f"{where}.{key}")
        elif not surely(value, kind):
            check_value(value, kind, f"{where}.{key}")
    for key in required or ():
        if key not in attrs:
            raise ValueError(f"{where}: missing {key!r}")
    if "kind" in attrs and attrs["kind"] not in KINDS:
        raise ValueError(f"{where}.kind: {attrs['kind']!r} is not one of {', '.join(KINDS)}")


def surely(value: Any, kind: str) -> bool:
    """True only when ``check_value(value, kind)`` would pass (False: not sure). A saved memory holds hundreds of
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


def surely_all(values, kind: str) -> bool:
    """True only when every value passes ``check_value(value, kind)``: ``surely`` over a column, the common
    kinds without a call per value."""
    types = set(map(type, values))
    if kind in ("str", "bool"):
        return types <= {str if kind == "str" else bool}
    if kind in ("time", "count") and types <= {int}:
        return not values or (0 if kind == "count" else -1) <= min(values) and max(values) < MAX_TIME
    if kind == "number" and types <= {int, float}:
        return not values or -(2**63) < min(values) and max(values) < 2**63 and not any(map(math.isnan, values))
    return all(surely(v, kind) for v in values)


def surely_plain(value: Any) -> bool:
    """True only when ``check_plain(value)`` would pass."""
    tp = type(value)
    if tp is str or tp is bool or value is None:
        return True
    if tp is float:
        return -math.inf < value < math.inf
    if tp is list:
        return all(surely_plain(v) for v in value)
    return tp is int and -(2**63) < value < 2**63


def check_plain(value: Any, where: str) -> None:
    if isinstance(value, list):
        for k, v in enumerate(value):
            check_plain(v, f"{where}[{k}]")
    elif is_number(value):
        finite(value, where)
    elif not (value is None or isinstance(value, (str, bool))):
        raise ValueError(f"{where}: expected a string, boolean, number or list, got {show(value)}")
