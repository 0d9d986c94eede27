"""Episodic memory: an append-only event log with keyframes for time travel.

Every change to the scene graph is one event (Mem0-style operations):
    ADD     a node appears                    data: all its logged attributes
    UPDATE  some attributes change            data: only the changed ones
    DELETE  a node is removed (merged away)   data: {} or {"into": other}
    NOOP    nothing changed                   counted, not stored
``tag`` says why (seen, moved, unseen, opened, pressed, grasp, ...). Times are control steps, never decreasing.

The state at time t is the latest keyframe at or before t plus the events after it. Attribute dicts are
replaced, never mutated (copy-on-write), so a keyframe is a shallow dict: a slot per node. A keyframe comes
every ``keyframe_gap`` events, at least twice the node count, so keyframes hold about half a slot per event.
Only attributes (positions, boxes, states) are kept here, no point clouds.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from math import isnan

from embodied.memory.columns import jsonable, row_builder
from embodied.memory.fold import Fold, derive_box

ADD, UPDATE, DELETE, NOOP = "ADD", "UPDATE", "DELETE", "NOOP"
OPS = (ADD, UPDATE, DELETE, NOOP)
_OP_CODE = {ADD: 0, UPDATE: 1, DELETE: 2}


@dataclass(slots=True)
class Event:
    t: int  # control step
    op: str  # ADD / UPDATE / DELETE
    node: str  # node id
    tag: str  # why: seen, moved, unseen, opened, grasp, ...
    data: dict  # changed attributes; values are immutable (tuples, str, numbers)

    def to_list(self) -> list:
        return [self.t, self.op, self.node, self.tag, {k: jsonable(v) for k, v in self.data.items()}]


class EventView(Sequence):
    """The log's events as :class:`Event` objects, made when read (the log itself keeps columns)."""

    def __init__(self, log: EventLog):
        self._log = log

    def __len__(self) -> int:
        return len(self._log.times)

    def __getitem__(self, index):
        n = len(self)
        if isinstance(index, slice):
            return [self._log.event(k) for k in range(*index.indices(n))]
        k = index + n if index < 0 else index
        if not 0 <= k < n:
            raise IndexError(f"event {index} out of range: the log holds {n}")
        return self._log.event(k)

    def __iter__(self) -> Iterator[Event]:
        return (self._log.event(k) for k in range(len(self)))


class EventLog:
    """Append-only log with per-node, per-tag and trajectory indexes and keyframes. Events are kept as
    columns, not an object each (a lifelong log holds hundreds of thousands); ``events`` reads them back."""

    def __init__(self, keyframe_every: int = 256):
        self.keyframe_every = int(keyframe_every)
        self.times = array("q")
        self._ops = array("b")
        self._nodes = array("i")  # index into _node_names
        self._tags = array("i")  # index into _tag_names
        self._keys = array("i")  # index into _schemas: the event's attribute names, in order
        self._values: list[tuple] = []  # the event's attribute values, in the order of its names
        self._node_names: list[str] = []
        self._node_code: dict[str, int] = {}
        self._tag_names: list[str] = []
        self._tag_code: dict[str, int] = {}
        self._schemas: list[tuple[str, ...]] = []
        self._schema_code: dict[tuple[str, ...], int] = {}
        self._rows: list = []  # per schema: its history row builder (columns.row_builder)
        self._last_t = 0
        self._floats: dict[float, float] = {}  # one object per distinct float value (confidences repeat)
        self.by_node: dict[str, array] = {}
        self.by_tag: dict[str, array] = {}
        self.tag_times: dict[str, list[int]] = {}  # the times of each tag's events, oldest first
        self.traj_t: dict[str, array] = {}  # per node: the times and flattened xyz of its logged positions
        self.traj_xyz: dict[str, array] = {}
        self.state: dict[str, dict] = {}  # logged attributes now (copy-on-write dicts)
        self.kf_index = array("q", [0])  # keyframe k holds the state after events[:kf_index[k]]
        self.kf_state: list[dict[str, dict]] = [{}]
        self.noops = 0

    def __len__(self) -> int:
        return len(self.times)

    @property
    def events(self) -> EventView:
        """Every event, oldest first, as a read-only sequence of :class:`Event`."""
        return EventView(self)

    def event(self, index: int) -> Event:
        """Event number ``index`` (0: the oldest)."""
        names = self._schemas[self._keys[index]]
        return Event(self.times[index], OPS[self._ops[index]], self._node_names[self._nodes[index]],
                     self._tag_names[self._tags[index]], dict(zip(names, self._values[index])))

    @property
    def last_t(self) -> int:
        return self.times[-1] if self.times else -(2**62)

    def append(self, t: int, op: str, node: str, tag: str, data: dict | None = None) -> None:
        """Record one operation; NOOP is only counted."""
        if op == NOOP:
            self.noops += 1
            return
        t, keys, values = self._record(t, op, node, tag, data or {})
        self._apply(self.state, op, node, t, keys, values)
        if len(self.times) - self.kf_index[-1] >= self.keyframe_gap(len(self.state)):
            self.kf_index.append(len(self.times))
            self.kf_state.append(dict(self.state))

    def keyframe_gap(self, nodes: int) -> int:
        """Events between two keyframes of ``nodes`` nodes: at least twice as many, so that keyframes (a slot
        per node) hold about half a slot per event however many nodes there are."""
        return max(self.keyframe_every, 2 * nodes)

    def _record(self, t: int, op: str, node: str, tag: str, data: dict) -> tuple[int, tuple, tuple]:
        """Check one event, store it in the columns and indexes (not the state); (t, names, values)."""
        code = _OP_CODE.get(op)
        if code is None:
            raise ValueError(f"unknown event op {op!r}; valid: {OPS}")
        t = int(t)
        times = self.times
        if times and t <= times[-1]:
            if t < times[-1]:
                raise ValueError(f"event time {t} is before the last logged time {times[-1]}: the log is append-only")
            t = self._last_t  # one int object per step, shared by that step's entries in tag_times
        if op == ADD:
            if node in self.state:
                raise ValueError(f"ADD of existing node {node!r}")
        elif node not in self.state:
            raise ValueError(f"{op} of unknown node {node!r}")
        keys = tuple(data)
        floats = self._floats
        values = tuple(floats.setdefault(v, v) if type(v) is float and v and not isnan(v) else v for v in data.values())
        index = len(times)
        times.append(t)
        self._last_t = t
        self._ops.append(code)
        self._nodes.append(_code(node, self._node_names, self._node_code))
        self._tags.append(_code(tag, self._tag_names, self._tag_code))
        self._keys.append(_code(keys, self._schemas, self._schema_code))
        self._values.append(values)
        by_node = self.by_node.get(node)
        if by_node is None:
            by_node = self.by_node[node] = array("q")
        by_node.append(index)
        by_tag = self.by_tag.get(tag)
        if by_tag is None:
            by_tag = self.by_tag[tag] = array("q")
            self.tag_times[tag] = []
        by_tag.append(index)
        self.tag_times[tag].append(t)
        position = data.get("position")
        if position is not None:
            self.traj_t.setdefault(node, array("q")).append(t)
            self.traj_xyz.setdefault(node, array("d")).extend(position)
        return t, keys, values

    @staticmethod
    def _apply(state: dict[str, dict], op: str, node: str, t: int, keys: tuple, values: tuple) -> None:
        # last_update (the event's time) and the box (position +- half the size) are derived, not logged
        if op == DELETE:
            state.pop(node, None)
            return
        new = {} if op == ADD else dict(state[node])
        new.update(zip(keys, values))
        new["last_update"] = t
        if "size" in new and ("position" in keys or "size" in keys):
            derive_box(new)
        state[node] = new

    # --- time travel ------------------------------------------------------
    def state_at(self, t: int, own: bool = False) -> dict[str, dict]:
        """Every node's logged attributes after all events at times <= t (keyframe + events: ``Fold``).
        The dicts may be the keyframes' own: do not modify them, unless ``own`` (unshared copies)."""
        end = bisect.bisect_right(self.times, t)
        k = bisect.bisect_right(self.kf_index, end) - 1
        fold = Fold(dict(self.kf_state[k]))
        fold.events(self, self.kf_index[k], end)
        mine = set(fold.mine) if own else ()
        state = fold.finish()
        if own:  # the fold's own dicts are fresh copies already
            state.update({node: dict(attrs) for node, attrs in state.items() if node not in mine})
        return state

    def position_at(self, node: str, t: int) -> tuple[float, float, float] | None:
        """Last logged position of ``node`` at or before t (None if none yet)."""
        times = self.traj_t.get(node, ())
        k = bisect.bisect_right(times, t) - 1
        if k < 0:
            return None
        xyz = self.traj_xyz[node]
        return (xyz[3 * k], xyz[3 * k + 1], xyz[3 * k + 2])

    def trajectory(self, node: str) -> list[tuple[int, tuple[float, float, float]]]:
        times, xyz = self.traj_t.get(node, ()), self.traj_xyz.get(node, ())
        return [(times[k], (xyz[3 * k], xyz[3 * k + 1], xyz[3 * k + 2])) for k in range(len(times))]

    # --- indexes ------------------------------------------------------------
    def of_node(self, node: str) -> list[Event]:
        return [self.event(i) for i in self.by_node.get(node, ())]

    def history(self, node: str) -> list[dict]:
        """Every event of ``node``, oldest first, as {t, op, tag, data} dicts, straight from the columns."""
        times, ops, tags, keys, values = self.times, self._ops, self._tags, self._keys, self._values
        tag_names, rows = self._tag_names, self._rows
        while len(rows) < len(self._schemas):  # schemas only grow: one builder each, made on first use
            rows.append(row_builder(self._schemas[len(rows)]))
        return [rows[keys[i]](times[i], OPS[ops[i]], tag_names[tags[i]], values[i]) for i in self.by_node.get(node, ())]

    def of_tag(self, tag: str) -> list[Event]:
        return [self.event(i) for i in self.by_tag.get(tag, ())]

    def between(self, t0: int, t1: int) -> list[Event]:
        """Events with t0 < t <= t1."""
        lo, hi = bisect.bisect_right(self.times, t0), bisect.bisect_right(self.times, t1)
        return [self.event(i) for i in range(lo, hi)]

    # --- persistence (the JSON document: events_json.log_to_json / log_from_json) -----------
    def columns(self) -> dict:
        """The events as columns (read-only views): names ``nodes``, ``tags``, ``schemas`` (attribute-name
        tuples), and per event ``t``, ``op`` (0 ADD, 1 UPDATE, 2 DELETE), ``node``, ``tag``, ``keys`` (indexes
        into those names) and ``values`` (tuples, in the order of its schema)."""
        return {"nodes": self._node_names, "tags": self._tag_names, "schemas": self._schemas, "t": self.times,
                "op": self._ops, "node": self._nodes, "tag": self._tags, "keys": self._keys, "values": self._values}

    def replay(self, events: Iterable[Event]) -> None:
        for e in events:
            self.append(e.t, e.op, e.node, e.tag, e.data)


def _code(name, names: list, codes: dict) -> int:
    """The number of ``name`` in ``names`` (appended if new)."""
    code = codes.get(name)
    if code is None:
        code = codes[name] = len(names)
        names.append(name)
    return code
