"""From a recorded episode to a :class:`Timeline` the page can draw.

The memory's event log can hold one change per step, so the page does not
get a frame per step: the slider stops at event times only, at most
``max_stops`` of them, chosen half by event count (busy stretches get more
stops) and half evenly in time (quiet stretches still get some). Each stop
is the memory's own ``snapshot(t)``, so what the page shows at a stop is
exactly what the memory would have answered then.

A planning agent's ``plan.json`` (see ``embodied.data.recording``) adds the
plan: every plan/replan, the outcomes and the running skill call over time
(:func:`plan_data`); its times become slider stops too, so the slider stops
where a skill starts or ends.

    timeline = build_timeline(load_recording("rec/"))
    write_page(timeline, "out.html")
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Sequence

import numpy as np

from embodied.data.recording import Recording
from embodied.viz.timeline import Event, Frame, Keyframe, NodeInfo, NodeState, Timeline

# Relations drawn in the 3D view; in_room would tie every object to a room centre.
DRAWN_RELATIONS = ("on", "in", "near", "part_of", "connects")


def sample_stops(times: Sequence[int], last_t: int, max_stops: int) -> list[int]:
    """Slider stops: distinct event times (plus the last step), at most ``max_stops``.

    ``times`` are the event times in log order (non-decreasing, repeats kept:
    the repeats are what "busy" means).
    """
    if max_stops < 2:
        raise ValueError(f"max_stops must be >= 2, got {max_stops}")
    times = np.asarray(times, dtype=np.int64)
    distinct = np.unique(np.append(times, last_t))
    if len(distinct) <= max_stops:
        return distinct.tolist()
    half = max_stops // 2
    by_count = times[np.linspace(0, len(times) - 1, half).round().astype(int)]
    # Evenly spaced times, each moved back to the latest event time at or before it.
    targets = np.linspace(distinct[0], distinct[-1], max_stops - half)
    by_time = distinct[np.maximum(np.searchsorted(distinct, targets, side="right") - 1, 0)]
    stops = np.unique(np.concatenate([by_count, by_time, [distinct[0], distinct[-1]]]))
    return stops.tolist()


def node_label(node: str, a: dict) -> str:
    """What the viewers call a node: "robot", a place's or room's name, else "<colour> <class>"."""
    kind = a.get("kind", "object")
    if kind == "agent":
        return "robot"
    if kind == "place":
        return node.replace("_", " ")
    if kind == "room":
        return a.get("name") or node.replace("_", " ")
    cls = str(a.get("cls", node)).replace("_", " ")
    colour = a.get("colour") or ""
    return f"{colour} {cls}".strip()


def describe_event(event: dict) -> str:
    """One line for the event list: why, and the attributes that changed."""
    data = event.get("data") or {}
    parts = [event["tag"]]
    if event["op"] == "ADD" and data.get("cls"):
        parts.append(node_label(event["node"], data))
    if "position" in data:
        x, y, z = data["position"]
        parts.append(f"at ({x:.2f}, {y:.2f}, {z:.2f})")
    for key in ("status", "inside", "state", "held"):
        if key in data and data[key] != event["tag"]:  # "occluded status=occluded" says it twice
            parts.append(f"{key}={data[key] if data[key] not in ('', None) else '-'}")
    if event["op"] == "DELETE" and data.get("into"):
        parts.append(f"into {data['into']}")
    return " ".join(parts)


def thin_path(path: list[tuple[int, tuple]], limit: int) -> list[tuple[int, float, float, float]]:
    """At most ``limit`` (t, x, y, z) points of a (t, position) path, evenly spaced, first and last kept."""
    if len(path) > limit:
        keep = np.unique(np.linspace(0, len(path) - 1, limit).round().astype(int))
        path = [path[k] for k in keep]
    return [(int(t), float(p[0]), float(p[1]), float(p[2])) for t, p in path]


_PLAN_LINE = re.compile(r"^[ >] +(\d+)\. (.*?)(  \[done\])?$")  # MemoryAgent.plan_text's call lines


def call_key(text: str) -> str:
    """What identifies a call in a plan across re-resolution: ``"pick(red block"``.

    ``str(SkillCall)`` is ``skill(note @ x, y, z, yaw ...)``; the position after ``@``
    changes when the call is refreshed from memory as it starts, the rest does not.
    """
    return text.split(" @ ")[0]


def _parse_plan(text: str) -> tuple[str | None, list[list]]:
    """A plan/replan log entry's text -> (goal, [[call text, key, done], ...])."""
    goal, items = None, []
    for line in str(text).splitlines():
        if line.startswith("goal: "):
            goal = line[len("goal: "):] if line != "goal: -" else None
            continue
        m = _PLAN_LINE.match(line)
        if m:
            items.append([m.group(2), call_key(m.group(2)), bool(m.group(3))])
        elif line.strip():  # a line in a shape this does not know: shown as it is
            items.append([line.strip(), None, False])
    return goal, items


def plan_data(plan: dict, limit: int = 2_000) -> dict:
    """``plan.json`` as the page draws it (small: the agent logs a few entries per goal).

    Returns ``{"goal", "plans", "log", "trace"}`` with ``plans`` [t, tag, goal,
    items, log index] for each plan/replan entry (items [text, key, done] in plan
    order, done when the plan text says so), ``log`` [t, tag, text] for every
    entry (plan/replan summarised: their calls are in ``plans``), and ``trace``
    [t, skill, target, text, key] of the call running from step t on (skill null:
    idle; one entry per step, the last one). The newest ``limit`` log and trace
    entries are kept.
    """
    log = sorted(plan.get("log") or [], key=lambda e: e["t"])[-limit:]  # stable: same-step order kept
    plans, rows = [], []
    for index, entry in enumerate(log):
        tag, text = str(entry["tag"]), str(entry.get("text", ""))
        if tag in ("plan", "replan"):
            goal, items = _parse_plan(text)
            plans.append([int(entry["t"]), tag, goal, items, index])
            text = f"{len(items)} call{'s' if len(items) != 1 else ''}: " + ", ".join(
                it[0].split("(")[0] for it in items) if items else "empty plan"
        rows.append([int(entry["t"]), tag, text])
    trace: list[list] = []
    for entry in sorted(plan.get("trace") or [], key=lambda e: e["t"]):
        call = entry.get("call")
        text = str(entry.get("text") or "") if call else ""
        row = [int(entry["t"]), call["skill"], call.get("target") or None, text, call_key(text)] if call \
            else [int(entry["t"]), None, None, "", None]
        if trace and trace[-1][0] == row[0]:
            trace[-1] = row  # two changes in one step (a call ends, the next starts): the last holds
        else:
            trace.append(row)
    return {"goal": plan.get("goal"), "plans": plans, "log": rows, "trace": trace[-limit:]}


def _plan_stops(plan: dict, last_t: int, limit: int) -> list[int]:
    """Step times where the plan changes (a call starts or ends, a plan is made), at most ``limit``."""
    times = sorted({min(max(int(t), 0), last_t) for t in [r[0] for r in plan["trace"]] + [p[0] for p in plan["log"]]})
    if len(times) > limit:
        if limit < 1:
            return []
        times = [times[k] for k in np.unique(np.linspace(0, len(times) - 1, limit).round().astype(int))]
    return times


def _keyframes(recording: Recording, limit: int) -> list[Keyframe]:
    """Up to ``limit`` images, spread evenly over time; all cameras of a chosen step together."""
    from PIL import Image, UnidentifiedImageError

    steps = sorted({k["t"] for k in recording.keyframes})
    per_step = max(1, len(recording.meta.get("cameras", {})) or 1)
    budget = max(1, limit // per_step)
    if len(steps) > budget:
        steps = [steps[k] for k in np.unique(np.linspace(0, len(steps) - 1, budget).round().astype(int))]
    chosen = set(steps)
    out = []
    for k in recording.keyframes:
        if k["t"] not in chosen:
            continue
        data = k["path"].read_bytes()
        try:
            with Image.open(io.BytesIO(data)) as image:
                if image.format != "JPEG":
                    raise ValueError(f"expected a JPEG, found {image.format}")
                image.load()  # decodes fully, so a truncated file is caught here, not in the page
        except (UnidentifiedImageError, OSError, ValueError) as e:
            raise ValueError(f"keyframe image {k['path']} is corrupt: {e}") from None
        out.append(Keyframe(int(k["t"]), k["camera"], base64.b64encode(data).decode("ascii")))
    return out


def build_timeline(
    recording: Recording,
    max_stops: int = 300,
    max_keyframes: int = 240,
    max_events: int = 20_000,
    max_path: int = 2_000,
) -> Timeline:
    memory = recording.memory
    log = memory.log
    last_t = max(memory.t, 0)
    plan = plan_data(recording.plan) if getattr(recording, "plan", None) is not None else None
    # Where a skill starts or ends is worth a stop of its own: up to a quarter of the stops.
    fixed = _plan_stops(plan, last_t, max_stops // 4) if plan is not None else []
    stops = sorted(set(sample_stops(list(log.times), last_t, max(2, max_stops - len(fixed)))) | set(fixed))
    infos: dict[str, NodeInfo] = {}
    frames: list[Frame] = []
    for t in stops:
        graph = memory.snapshot(t)
        states = {}
        for node, a in graph.nodes(data=True):
            if "position" not in a:
                continue
            rgb = a.get("rgb") or (0.6, 0.6, 0.6)
            # The latest description wins (colour estimates settle as more is seen).
            infos[node] = NodeInfo(node_label(node, a), str(a.get("kind", "object")), tuple(float(c) for c in rgb[:3]))
            status = str(a.get("status") or "")
            visible = bool(a.get("visible", status == "visible"))
            states[node] = NodeState(tuple(float(c) for c in a["position"]), visible, a.get("inside") or None, status)
        edges = sorted((u, v, k) for u, v, k in graph.edges(keys=True) if k in DRAWN_RELATIONS)
        if any(k == "connects" for _, _, k in edges):  # place links come in both directions; draw each once
            edges = [(u, v, k) for u, v, k in edges if k != "connects" or u < v]
        frames.append(Frame(int(t), states, edges))
    events = recording.events
    if len(events) > max_events:  # the newest are kept: the end of an episode is what gets asked about
        events = events[-max_events:]
    meta = recording.meta
    info = {
        "task": meta.get("task"),
        "seed": meta.get("seed"),
        "episode": meta.get("episode"),
        "steps": meta.get("steps"),
        "complete": meta.get("complete"),
        "success": meta.get("success"),
        "events_total": len(recording.events),
        "events_shown": len(events),
        "stops": len(frames),
    }
    return Timeline(
        title=f"{meta.get('task', 'recording')} seed {meta.get('seed', '?')}",
        nodes=infos,
        frames=frames,
        events=[Event(int(e["t"]), e["op"], e["node"], describe_event(e)) for e in events],
        path=thin_path(memory.trajectory("agent") if "agent" in log.by_node else [], max_path),
        keyframes=_keyframes(recording, max_keyframes),
        info=info,
        plan=plan,
    )
