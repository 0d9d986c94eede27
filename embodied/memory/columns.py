"""Helpers for an event log kept as columns (:mod:`embodied.memory.events`): grouping events by a code,
and turning the memory's tuples into JSON lists and back."""

from __future__ import annotations

from array import array
from math import isnan
from typing import Any

import numpy as np


def frozen(value: Any) -> Any:
    """JSON lists back to the tuples they were (attribute values are never lists)."""
    return tuple(frozen(v) for v in value) if isinstance(value, list) else value


def jsonable(value: Any) -> Any:
    """Tuples as JSON lists, numpy scalars as Python numbers."""
    if isinstance(value, tuple):
        return [jsonable(v) for v in value]
    return value.item() if isinstance(value, np.generic) else value


def row_builder(names: tuple[str, ...]):
    """A function ``(t, op, tag, values) -> {"t", "op", "tag", "data": {name: value}}`` for events of one
    schema, compiled with the names as constant keys: over twice as fast as ``dict(zip(names, values))``."""
    if not all(isinstance(n, str) for n in names):
        raise ValueError(f"event log: attribute names must be strings, got {names!r}")
    data = ", ".join(f"{n!r}: v[{i}]" for i, n in enumerate(names))  # repr: any string is a safe literal
    return eval(f"lambda t, o, g, v: {{'t': t, 'op': o, 'tag': g, 'data': {{{data}}}}}", {})


def groups(codes: np.ndarray) -> dict[int, np.ndarray]:
    """code -> the positions (int64, ascending) where ``codes`` (K,) holds it."""
    order = np.argsort(codes, kind="stable")
    cuts = np.flatnonzero(np.diff(codes[order])) + 1
    return {int(codes[rows[0]]): rows for rows in np.split(order, cuts) if len(rows)}


def schema_events(keys, schemas: int) -> list[list[int]]:
    """For each of ``schemas`` schemas, the events (positions in ``keys`` (K,)) that use it, in order."""
    found = groups(np.asarray(keys, dtype=np.int64))
    return [found[s].tolist() if s in found else [] for s in range(schemas)]


def thawed(values: list, keys: array, floats: dict[float, float]) -> list[tuple]:
    """Each event's values as a tuple, from one list of columns per schema (``values[s][m][j]``: attribute m
    of the j-th event of schema s): JSON lists back to tuples, equal floats one object."""
    out: list = [()] * len(keys)
    for code, events in groups(np.frombuffer(keys, dtype=np.int32).astype(np.int64)).items():
        columns = []
        for column in values[code]:
            kinds = set(map(type, column))
            if list in kinds:
                column = [frozen(v) for v in column]
            elif float in kinds:
                column = [floats.setdefault(v, v) if type(v) is float and v and not isnan(v) else v for v in column]
            columns.append(column)
        for k, row in zip(events.tolist(), zip(*columns)):  # no columns: the events keep ()
            out[k] = row
    return out
