"""Episodic memory: an append-only event log with keyframes for time travel.

Every change to the scene graph is one event (Mem0-style operations):
    ADD     a node appears                    data: all its logged attributes
    UPDATE  some attributes change            data: only the changed ones
    DELETE  a node is removed (merged away)   data: {} or {"into": other}
    NOOP    nothing changed                   counted, not stored
``tag`` says why (seen, moved, unseen, occluded, missing, contained, opened,
closed, pressed, grasp, release, ...). Times are control steps and never
decrease.

The state as it stood at time t is rebuilt from the latest keyframe at or
before t plus the events after it. Node attribute dicts are replaced, never
mutated, when they change (copy-on-write), so a keyframe is just a shallow
dict of references: a slot per node. Keyframes come every ``keyframe_every``
events, or every as many events as there are nodes when that is more, so
over a long run they hold about one slot per event whatever the node count
(a snapshot then replays at most that many events).
No point clouds are kept here: only attributes (positions, boxes, states).
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

ADD, UPDATE, DELETE, NOOP = "ADD", "UPDATE", "DELETE", "NOOP"
OPS = (ADD, UPDATE, DELETE, NOOP)


@dataclass(slots=True)
class Event:
    t: int  # control step
    op: str  # ADD / UPDATE / DELETE
    node: str  # node id
    tag: str  # why: seen, moved, unseen, opened, grasp, ...
    data: dict  # changed attributes; values are immutable (tuples, str, numbers)

    def to_list(self) -> list:
        return [self.t, self.op, self.node, self.tag, {k: _jsonable(v) for k, v in self.data.items()}]


def _jsonable(value: Any) -> Any:
    return [_jsonable(v) for v in value] if isinstance(value, tuple) else value


def _frozen(value: Any) -> Any:
    """JSON lists back to the tuples they were (attribute values are never lists)."""
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


class EventLog:
    """Append-only log with per-node, per-tag and trajectory indexes and keyframes."""

    def __init__(self, keyframe_every: int = 256):
        self.keyframe_every = int(keyframe_every)
        self.events: list[Event] = []
        self.times = array("q")
        self.by_node: dict[str, array] = {}
        self.by_tag: dict[str, array] = {}
        # Trajectories: times and flattened xyz of every logged position, per node.
        self.traj_t: dict[str, array] = {}
        self.traj_xyz: dict[str, array] = {}
        self.state: dict[str, dict] = {}  # logged attributes now (copy-on-write dicts)
        self.kf_index = array("q", [0])  # keyframe k holds the state after events[:kf_index[k]]
        self.kf_state: list[dict[str, dict]] = [{}]
        self.noops = 0

    def __len__(self) -> int:
        return len(self.events)

    @property
    def last_t(self) -> int:
        return self.times[-1] if self.times else -(2**62)

    def append(self, t: int, op: str, node: str, tag: str, data: dict | None = None) -> Event | None:
        """Record one operation; NOOP is only counted. Returns the stored event."""
        if op == NOOP:
            self.noops += 1
            return None
        if op not in OPS:
            raise ValueError(f"unknown event op {op!r}; valid: {OPS}")
        t = int(t)
        if t < self.last_t:
            raise ValueError(f"event time {t} is before the last logged time {self.last_t}: the log is append-only")
        data = dict(data or {})
        if op == ADD and node in self.state:
            raise ValueError(f"ADD of existing node {node!r}")
        if op in (UPDATE, DELETE) and node not in self.state:
            raise ValueError(f"{op} of unknown node {node!r}")
        event = Event(t, op, node, tag, data)
        index = len(self.events)
        self.events.append(event)
        self.times.append(t)
        self.by_node.setdefault(node, array("q")).append(index)
        self.by_tag.setdefault(tag, array("q")).append(index)
        self._apply(self.state, event)
        position = data.get("position")
        if position is not None:
            self.traj_t.setdefault(node, array("q")).append(t)
            self.traj_xyz.setdefault(node, array("d")).extend(position)
        # A keyframe holds a slot per node: at least as many events as there are nodes between two
        # keyframes keeps all of them at about a slot per event, however many nodes there are.
        if len(self.events) - self.kf_index[-1] >= max(self.keyframe_every, len(self.state)):
            self.kf_index.append(len(self.events))
            self.kf_state.append(dict(self.state))
        return event

    @staticmethod
    def _apply(state: dict[str, dict], event: Event) -> None:
        # last_update is the event's own time, and a box is its position +- half its size:
        # both derived here rather than stored in every event.
        data = event.data
        if event.op == ADD:
            new = {**data, "last_update": event.t}
        elif event.op == UPDATE:
            new = {**state[event.node], **data, "last_update": event.t}
        else:
            state.pop(event.node, None)
            return
        if "size" in new and ("position" in data or "size" in data):
            (x, y, z), (sx, sy, sz) = new["position"], new["size"]
            new["box_min"] = (x - sx / 2, y - sy / 2, z - sz / 2)
            new["box_max"] = (x + sx / 2, y + sy / 2, z + sz / 2)
        state[event.node] = new

    # --- time travel ------------------------------------------------------
    def state_at(self, t: int) -> dict[str, dict]:
        """Logged attributes of every node as they stood after all events at times <= t."""
        end = bisect.bisect_right(self.times, t)
        k = bisect.bisect_right(self.kf_index, end) - 1
        state = dict(self.kf_state[k])
        for i in range(self.kf_index[k], end):
            self._apply(state, self.events[i])
        return state

    def position_at(self, node: str, t: int) -> tuple[float, float, float] | None:
        """Last logged position of ``node`` at or before t (None if none yet)."""
        times = self.traj_t.get(node)
        if not times:
            return None
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
        return [self.events[i] for i in self.by_node.get(node, ())]

    def of_tag(self, tag: str) -> list[Event]:
        return [self.events[i] for i in self.by_tag.get(tag, ())]

    def between(self, t0: int, t1: int) -> list[Event]:
        """Events with t0 < t <= t1."""
        lo, hi = bisect.bisect_right(self.times, t0), bisect.bisect_right(self.times, t1)
        return self.events[lo:hi]

    # --- persistence ----------------------------------------------------------
    def to_json(self) -> dict:
        return {
            "keyframe_every": self.keyframe_every,
            "noops": self.noops,
            "events": [e.to_list() for e in self.events],
        }

    @classmethod
    def from_json(cls, doc: dict) -> EventLog:
        log = cls(doc["keyframe_every"])
        for t, op, node, tag, data in doc["events"]:
            log.append(t, op, node, tag, {k: _frozen(v) for k, v in data.items()})
        log.noops = int(doc["noops"])
        return log

    def replay(self, events: Iterable[Event]) -> None:
        for e in events:
            self.append(e.t, e.op, e.node, e.tag, e.data)
