"""The event log as JSON: columns, so that a lifelong log of hundreds of thousands of events loads fast.

    {"keyframe_every": 256, "noops": 12, "format": "columns",
     "nodes": ["block_0", ...], "tags": ["seen", ...], "schemas": [["status", "visible"], ...],
     "t": [0, 0, 3, ...], "op": [0, 1, ...], "node": [0, ...], "tag": [0, ...], "keys": [0, ...],
     "values": [[[...], [...]], ...]}

``op`` is 0 ADD, 1 UPDATE, 2 DELETE; ``node``, ``tag`` and ``keys`` index ``nodes``, ``tags`` and
``schemas``. ``values[s]`` holds one column per attribute of schema s: its values for the events of that
schema, in event order (JSON lists where the memory holds tuples). ``document.check_document`` checks
it before a log is built from it.
"""

from __future__ import annotations

from array import array

import numpy as np

from embodied.memory.columns import groups, thawed
from embodied.memory.events import EventLog, _jsonable
from embodied.memory.fold import Fold

FORMAT = "columns"


def log_to_json(log: EventLog) -> dict:
    c = log.columns()
    rows = c["values"]
    values = []
    for events in _schema_events(c["keys"], len(c["schemas"])):
        columns = zip(*[rows[k] for k in events]) if events else ()
        values.append([[_jsonable(v) for v in column] for column in columns])
        values[-1] += [[] for _ in range(len(c["schemas"][len(values) - 1]) - len(values[-1]))]
    return {
        "keyframe_every": log.keyframe_every,
        "noops": log.noops,
        "format": FORMAT,
        "nodes": list(c["nodes"]),
        "tags": list(c["tags"]),
        "schemas": [list(s) for s in c["schemas"]],
        "t": c["t"].tolist(),
        "op": c["op"].tolist(),
        "node": c["node"].tolist(),
        "tag": c["tag"].tolist(),
        "keys": c["keys"].tolist(),
        "values": values,
    }


def log_from_json(doc: dict) -> EventLog:
    return log_from_columns(
        doc["keyframe_every"], doc["noops"], doc["nodes"], doc["tags"], doc["schemas"], doc["t"], doc["op"],
        doc["node"], doc["tag"], doc["keys"], doc["values"],
    )


def _schema_events(keys, schemas: int) -> list[list[int]]:
    """For each schema, the events that use it, in order."""
    out: list[list[int]] = [[] for _ in range(schemas)]
    for k, s in enumerate(keys):
        out[s].append(k)
    return out


def log_from_columns(keyframe_every: int, noops: int, nodes: list[str], tags: list[str],
                     schemas: list[tuple[str, ...]], t: list[int], op: list[int], node: list[int], tag: list[int],
                     keys: list[int], values: list[list[list]]) -> EventLog:
        """A log holding these events, in the layout of ``columns`` but with the values as one list of
        columns per schema (``values[s][m]``: attribute m of schema s's events, in event order; see
        ``events_json``), every index and length in range (as ``document.check_document`` makes sure;
        JSON lists among the values become tuples). The indexes
        and trajectories are built a column at a time, the events folded into the state a keyframe at a
        time (``Fold``). Raises ValueError at the first event out of time order, ADD of a node that
        exists, or change of one that does not."""
        log = EventLog(keyframe_every)
        log.noops = int(noops)
        log._node_names, log._tag_names, log._schemas = list(nodes), list(tags), [tuple(s) for s in schemas]
        log._node_code = {n: k for k, n in enumerate(log._node_names)}
        log._tag_code = {n: k for k, n in enumerate(log._tag_names)}
        log._schema_code = {s: k for k, s in enumerate(log._schemas)}
        log._ops, log._nodes, log._tags, log._keys = array("b", op), array("i", node), array("i", tag), array("i", keys)
        shared: dict[int, int] = {}  # one int object per step
        times = [shared.setdefault(x, x) for x in t]
        log.times = array("q", times)
        log._last_t = times[-1] if times else 0
        late = np.flatnonzero(np.diff(np.asarray(t, dtype=np.int64)) < 0)
        if len(late):
            i = int(late[0]) + 1
            raise ValueError(
                f"event {i}: time {t[i]} is before the last logged time {t[i - 1]}: the log is append-only"
            )
        log._values = thawed(values, log._keys, log._schemas, log._floats)
        codes = np.asarray(node, dtype=np.int64)
        log.by_node = {log._node_names[c]: array("q", rows.tobytes()) for c, rows in groups(codes).items()}
        by_tag = groups(np.asarray(tag, dtype=np.int64))
        log.by_tag = {log._tag_names[c]: array("q", rows.tobytes()) for c, rows in by_tag.items()}
        log.tag_times = {log._tag_names[c]: [times[i] for i in rows.tolist()] for c, rows in by_tag.items()}
        # Trajectories: the events whose schema holds a position, node by node in time order.
        where = {k: s.index("position") for k, s in enumerate(log._schemas) if "position" in s}
        moved = np.flatnonzero(np.isin(np.asarray(keys, dtype=np.int64), list(where)))
        for c, rows in groups(codes[moved]).items():
            rows = moved[rows].tolist()
            name = log._node_names[c]
            log.traj_t[name] = array("q", [times[i] for i in rows])
            log.traj_xyz[name] = array("d", [x for i in rows for x in log._values[i][where[keys[i]]]])
        fold = Fold(log.state)
        fold.events(log, 0, len(times), keyframes=True)
        fold.finish()
        return log
