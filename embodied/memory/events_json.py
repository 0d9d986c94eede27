"""The event log as JSON: columns, so that a lifelong log of hundreds of thousands of events loads fast.

    {"keyframe_every": 256, "noops": 12, "format": "columns",
     "nodes": ["block_0", ...], "tags": ["seen", ...], "schemas": [["status", "visible"], ...],
     "t": [0, 0, 3, ...], "op": [0, 1, ...], "node": [0, ...], "tag": [0, ...], "keys": [0, ...],
     "values": [[[...], [...]], ...]}

``op`` is 0 ADD, 1 UPDATE, 2 DELETE; ``node``, ``tag`` and ``keys`` index ``nodes``, ``tags`` and
``schemas``. ``values[s]`` holds one column per attribute of schema s: its values for the events of that
schema, in event order (JSON lists where the memory holds tuples). Files written before this layout
hold ``"events": [[t, op, node, tag, {data}], ...]`` instead; both load. ``document.check_document``
checks either before a log is built from it.
"""

from __future__ import annotations

from embodied.memory.events import OPS, EventLog, _jsonable

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
    if "events" in doc:
        doc = {**doc, **events_to_columns(doc["events"])}
    return EventLog.from_columns(
        doc["keyframe_every"], doc["noops"], doc["nodes"], doc["tags"], doc["schemas"], doc["t"], doc["op"],
        doc["node"], doc["tag"], doc["keys"], doc["values"],
    )


def events_to_columns(events: list) -> dict:
    """The columns of an event list of the earlier layout ([t, op, node, tag, {data}] each)."""
    nodes: dict[str, int] = {}
    tags: dict[str, int] = {}
    schemas: dict[tuple[str, ...], int] = {}
    values: list[list[list]] = []
    out: dict[str, list] = {"t": [], "op": [], "node": [], "tag": [], "keys": []}
    for t, op, node, tag, data in events:
        out["t"].append(t)
        out["op"].append(OPS.index(op))
        out["node"].append(nodes.setdefault(node, len(nodes)))
        out["tag"].append(tags.setdefault(tag, len(tags)))
        schema = schemas.setdefault(tuple(data), len(schemas))
        if schema == len(values):
            values.append([[] for _ in data])
        out["keys"].append(schema)
        for column, value in zip(values[schema], data.values()):
            column.append(value)
    return {"nodes": list(nodes), "tags": list(tags), "schemas": [list(s) for s in schemas], "values": values, **out}


def _schema_events(keys, schemas: int) -> list[list[int]]:
    """For each schema, the events that use it, in order."""
    out: list[list[int]] = [[] for _ in range(schemas)]
    for k, s in enumerate(keys):
        out[s].append(k)
    return out
