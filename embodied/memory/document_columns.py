"""Checks of an event log saved in the column layout of :mod:`embodied.memory.events_json`, for
:func:`embodied.memory.document.check_document`: ``ValueError("log.<field>...: <what is wrong>")`` at the
first name, index or value out of place. Values are checked a column at a time (one attribute of one
schema's events), the quick test first; the full check (``document_types``) names the first value that fails.
"""

from __future__ import annotations

import numpy as np

from embodied.memory.document_types import (
    ATTR_TYPES,
    MAX_TIME,
    check_attrs,
    check_plain,
    check_value,
    show,
    surely_all,
    surely_plain,
)

EVENT_COLUMNS = {"op": (0, 2), "node": "nodes", "tag": "tags", "keys": "schemas"}


def check_log_columns(log: dict, t: int) -> None:
    if log.get("format") != "columns":
        raise ValueError(f"log: missing 'events' (or 'format': 'columns'), got format {show(log.get('format'))}")
    for key in ("nodes", "tags", "schemas", "t", "op", "node", "tag", "keys", "values"):
        if not isinstance(log.get(key), list):
            raise ValueError(f"log.{key}: expected a list, got {show(log.get(key))}")
    for key in ("nodes", "tags"):
        for k, name in enumerate(log[key]):
            check_value(name, "str", f"log.{key}[{k}]")
    for k, schema in enumerate(log["schemas"]):
        if not (isinstance(schema, list) and all(type(x) is str for x in schema) and len(set(schema)) == len(schema)):
            raise ValueError(f"log.schemas[{k}]: expected a list of distinct attribute names, got {show(schema)}")
    n = len(log["t"])
    for key in EVENT_COLUMNS:
        if len(log[key]) != n:
            raise ValueError(f"log.{key}: {len(log[key])} entries for {n} events (log.t)")
    _integers(log["t"], "t", -1, min(t, MAX_TIME - 1), t)
    for key, names in EVENT_COLUMNS.items():
        lo, hi = names if isinstance(names, tuple) else (0, len(log[names]) - 1)
        _integers(log[key], key, lo, hi, t)
    schemas, values, keys = log["schemas"], log["values"], log["keys"]
    if len(values) != len(schemas):
        raise ValueError(f"log.values: {len(values)} entries for {len(schemas)} schemas (one list of columns each)")
    counts = np.bincount(np.asarray(keys, dtype=np.int64), minlength=len(schemas)) if n else [0] * len(schemas)
    events = schema_events(keys, len(schemas))
    for s, (schema, columns) in enumerate(zip(schemas, values)):
        if not (isinstance(columns, list) and len(columns) == len(schema)):
            raise ValueError(f"log.values[{s}]: expected {len(schema)} columns ({', '.join(schema)}), "
                             f"got {show(columns)}")
        for m, (key, column) in enumerate(zip(schema, columns)):
            where = f"log.values[{s}][{m}]"
            if not (isinstance(column, list) and len(column) == counts[s]):
                raise ValueError(f"{where} ({key}): expected a list of {counts[s]} values (one per event of "
                                 f"schema {s}), got {show(column)}")
            kind = ATTR_TYPES.get(key)
            sure = all(surely_plain(v) for v in column) if kind is None else surely_all(column, kind)
            if not sure:
                for j, value in enumerate(column):
                    name = f"{where}[{j}] ({key} of event {events[s][j]})"
                    check_plain(value, name) if kind is None else check_value(value, kind, name)
    for _, where, data in _adds(log, events):  # what a new node needs
        check_attrs(data, where, {"kind": "str", "cls": "str", "position": "vec3"})


def added_in_columns(log: dict):
    """(where, node, class) of every ADD event of a checked column log."""
    for k, where, data in _adds(log, schema_events(log["keys"], len(log["schemas"]))):
        yield where, log["nodes"][log["node"][k]], data.get("cls")


def schema_events(keys: list[int], schemas: int) -> list[list[int]]:
    """For each schema, the events that use it, in order."""
    out: list[list[int]] = [[] for _ in range(schemas)]
    if keys:
        codes = np.asarray(keys, dtype=np.int64)
        order = np.argsort(codes, kind="stable")
        for rows in np.split(order, np.flatnonzero(np.diff(codes[order])) + 1):
            out[int(codes[rows[0]])] = rows.tolist()
    return out


def _adds(log: dict, events: list[list[int]]):
    """(event, where, attributes) of every ADD event."""
    keys, schemas, values = log["keys"], log["schemas"], log["values"]
    position = {}  # event -> its place among its schema's events
    for rows in events:
        position.update((k, j) for j, k in enumerate(rows))
    for k in np.flatnonzero(np.asarray(log["op"], dtype=np.int64) == 0).tolist():
        s, j = keys[k], position[k]
        yield k, f"log.values[{s}] (event {k})", {key: column[j] for key, column in zip(schemas[s], values[s])}


def _integers(column: list, key: str, lo: int, hi: int, t: int) -> None:
    if not column or set(map(type, column)) == {int} and lo <= min(column) and max(column) <= hi:
        return
    for k, x in enumerate(column):
        if not (type(x) is int and lo <= x <= hi):
            what = f"is after the memory's time {t}" if key == "t" and type(x) is int and x > t else \
                f"expected an integer in {lo}..{hi}, got {show(x)}"
            raise ValueError(f"log.{key}[{k}]: {what}")
