"""Checks of a recorded episode's files (the layout: :mod:`embodied.data.recording`), before a reader
uses them: meta.json's fields and their types, every line of events.jsonl, the keyframe images meta.json
lists, plan.json. Each problem raises ValueError naming the file, and the field or line at fault: a
recording is read from disk, where a crash, a copy or a hand edit may have broken it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path


def read_json_object(path: Path, what: str) -> dict:
    """The JSON object in ``path``; ValueError naming the file (``what`` it is) when it is missing,
    unreadable, not JSON or not an object."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{what} file not found: {path}") from None
    except (UnicodeDecodeError, OSError) as e:
        raise ValueError(f"{what} file {path} is unreadable: {e}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{what} file {path} is corrupt or truncated: {e.msg} at line {e.lineno}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{what} file {path} is corrupt: expected a JSON object")
    return doc


def check_meta(meta: dict, path: Path) -> None:
    """The fields of meta.json that readers use, with their types; ValueError naming the file and field."""
    for key in ("task", "seed", "cameras", "keyframes", "files"):
        if key not in meta:
            raise ValueError(f"{path} is missing the field {key!r}")

    def wrong(field: str, expected: str):
        return ValueError(f"{path} is corrupt: {field} must be {expected}, got {str(_short(meta, field))}")

    if not isinstance(meta["task"], str):
        raise wrong("task", "a string")
    for key in ("seed", "episode", "steps"):
        if key in meta and not (_int(meta[key]) and meta[key] >= 0 if key != "seed" else _int(meta[key])):
            raise wrong(key, "an integer" + ("" if key == "seed" else " >= 0"))
    if not isinstance(meta.get("complete", False), bool) or not isinstance(meta.get("success"), (bool, type(None))):
        raise wrong("complete" if not isinstance(meta.get("complete", False), bool) else "success", "true or false")
    files = meta["files"]
    if not isinstance(files, dict) or not all(_inside(files.get(k)) for k in ("memory", "events")) or \
            not _inside(files.get("plan", "plan.json")):
        raise wrong("files", "an object naming the memory, events (and plan) files inside the episode folder")
    cameras = meta["cameras"]
    if not isinstance(cameras, dict) or not all(
            isinstance(c, dict) and _int(c.get("width")) and _int(c.get("height")) and c["width"] > 0 and
            c["height"] > 0 and _matrix(c.get("K"), 3) for c in cameras.values()):
        raise wrong("cameras", "{name: {width, height, K (3x3)}}")
    if not isinstance(meta["keyframes"], list):
        raise wrong("keyframes", "a list")
    for k, frame in enumerate(meta["keyframes"]):
        if not (isinstance(frame, dict) and _int(frame.get("t")) and 0 <= frame["t"] < 2**62 and
                isinstance(frame.get("camera"), str) and _inside(frame.get("file")) and
                (frame.get("depth_file") is None or _inside(frame["depth_file"])) and
                _matrix(frame.get("cam_to_world"), 4)):
            raise wrong(f"keyframes[{k}]", "{t (a step), camera, file (and depth_file) inside the folder, "
                                           "cam_to_world (4x4)}")


def _int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _matrix(value, n: int) -> bool:
    """An n x n matrix of finite numbers."""
    return isinstance(value, list) and len(value) == n and all(
        isinstance(row, list) and len(row) == n and all(
            _int(x) and abs(x) <= 2**53 or isinstance(x, float) and math.isfinite(x) for x in row) for row in value)


def _inside(name) -> bool:
    """A file name relative to the episode folder that stays inside it."""
    return isinstance(name, str) and name != "" and not Path(name).is_absolute() and ".." not in Path(name).parts


def _short(meta: dict, field: str) -> str:
    value = meta
    for part in field.replace("]", "").replace("[", ".").split("."):
        value = value[int(part)] if isinstance(value, list) else value.get(part)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def read_events(events_file: Path) -> list[dict]:
    """events.jsonl, each line checked as the memory's event log keeps it; ValueError naming the file and line."""
    events = []
    try:
        lines = events_file.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise ValueError(f"events file not found: {events_file}") from None
    except (UnicodeDecodeError, OSError) as e:
        raise ValueError(f"events file {events_file} is unreadable: {e}") from None
    for number, line in enumerate(lines, 1):
        try:
            event = json.loads(line)
        except ValueError as e:
            raise ValueError(f"events file {events_file} is corrupt at line {number}: {e}") from None
        problem = _event_problem(event)
        if problem:
            raise ValueError(f"events file {events_file} is corrupt at line {number}: {problem}")
        events.append(event)
    return events


def _event_problem(event) -> str:
    """What is wrong with one line of events.jsonl ("" if nothing): the memory's event, as the log keeps it."""
    from embodied.memory.document import check_event

    if not isinstance(event, dict) or not {"t", "op", "node", "tag"} <= event.keys():
        return "expected an object with t, op, node, tag"
    try:
        check_event(event["t"], event["op"], event["node"], event["tag"], event.get("data", {}), "event")
    except ValueError as e:
        return str(e)
    return ""


def listed_keyframes(folder: Path, meta: dict) -> list[dict]:
    """meta.json's keyframes, each with "path" (and "depth_path" with depth_file) in ``folder``; ValueError
    naming an image it lists that is not there."""
    keyframes = []
    for k in meta["keyframes"]:
        image = folder / k["file"]
        if not image.is_file():
            raise ValueError(f"keyframe image not found: {image} (listed in {folder / 'meta.json'})")
        extra = {}
        if k.get("depth_file"):
            extra["depth_path"] = folder / k["depth_file"]
            if not extra["depth_path"].is_file():
                raise ValueError(f"keyframe depth image not found: {extra['depth_path']} "
                                 f"(listed in {folder / 'meta.json'})")
        keyframes.append({**k, "path": image, **extra})
    return keyframes


def read_plan(path: Path) -> dict | None:
    """plan.json, checked; None when the policy wrote none (only planning agents do)."""
    if not path.exists():
        return None
    plan = read_json_object(path, "plan")
    for key, need in (("log", {"t", "tag", "text"}), ("trace", {"t", "call"})):
        entries = plan.get(key, [])
        if not isinstance(entries, list):
            raise ValueError(f"plan file {path} is corrupt: {key!r} must be a list")
        for number, entry in enumerate(entries):
            if not isinstance(entry, dict) or not need <= entry.keys() or not isinstance(entry["t"], int):
                raise ValueError(f"plan file {path} is corrupt: {key}[{number}] must be an object with "
                                 f"{', '.join(sorted(need))} (t an integer step)")
            call = entry.get("call")
            if key == "trace" and call is not None and not (isinstance(call, dict) and "skill" in call):
                raise ValueError(f"plan file {path} is corrupt: trace[{number}].call must be null or a skill call")
    if not isinstance(plan.get("goal", ""), (str, type(None))):
        raise ValueError(f"plan file {path} is corrupt: 'goal' must be a string")
    return plan
