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

from embodied.memory.columns import groups, jsonable, schema_events, thawed
from embodied.memory.events import EventLog
from embodied.memory.fold import Fold

FORMAT = "columns"


def log_to_json(log: EventLog) -> dict:
    c = log.columns()
    rows, schemas = c["values"], c["schemas"]
    values = []
    for schema, events in zip(schemas, schema_events(c["keys"], len(schemas))):
        columns = zip(*[rows[k] for k in events]) if events else [[] for _ in schema]
        values.append([[jsonable(v) for v in column] for column in columns])
    doc = {"keyframe_every": log.keyframe_every, "noops": log.noops, "format": FORMAT, "nodes": list(c["nodes"]),
           "tags": list(c["tags"]), "schemas": [list(s) for s in schemas]}
    return {**doc, **{key: c[key].tolist() for key in ("t", "op", "node", "tag", "keys")}, "values": values}


def log_from_json(doc: dict) -> EventLog:
    """The log of ``doc`` (every index and length in range, as ``document.check_document`` makes sure), built a
    column at a time and folded a keyframe at a time (``Fold``). Raises ValueError at the first event out of
    time order, ADD of a node that exists, or change of one that does not."""
    t, node, keys = doc["t"], doc["node"], doc["keys"]
    log = EventLog(doc["keyframe_every"])
    log.noops = int(doc["noops"])
    log._node_names, log._tag_names = list(doc["nodes"]), list(doc["tags"])
    log._schemas = [tuple(s) for s in doc["schemas"]]
    log._node_code, log._tag_code, log._schema_code = ({name: k for k, name in enumerate(names)}
                                                       for names in (log._node_names, log._tag_names, log._schemas))
    log._ops, log._nodes, log._tags = array("b", doc["op"]), array("i", node), array("i", doc["tag"])
    log._keys = array("i", keys)
    shared: dict[int, int] = {}  # one int object per step
    times = [shared.setdefault(x, x) for x in t]
    log.times = array("q", times)
    log._last_t = times[-1] if times else 0
    late = np.flatnonzero(np.diff(np.asarray(t, dtype=np.int64)) < 0)
    if len(late):
        i = int(late[0]) + 1
        raise ValueError(f"event {i}: time {t[i]} is before the last logged time {t[i - 1]}: the log is append-only")
    log._values = thawed(doc["values"], log._keys, log._floats)
    codes = np.asarray(node, dtype=np.int64)
    log.by_node = {log._node_names[c]: array("q", rows.tobytes()) for c, rows in groups(codes).items()}
    by_tag = groups(np.asarray(doc["tag"], dtype=np.int64))
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
