"""A recorded episode as one rerun recording (``embodied viz DIR --format rrd -o episode.rrd``).

Everything is on the ``step`` sequence timeline (control steps); open the file
with ``rerun episode.rrd``. Entity layout (world frame: metres, z up)::

    world                        ViewCoordinates RIGHT_HAND_Z_UP (static)
    world/cameras/<cam>          Pinhole (static: K, width x height, camera_xyz RDF,
                                 OpenCV axes) + Transform3D (cam_to_world, per keyframe)
    world/cameras/<cam>/image    EncodedImage: the keyframe JPEG
    world/cameras/<cam>/depth    DepthImage: uint16 millimetres, meter=1000 (only
                                 for recordings that kept depth keyframes)
    world/memory/objects         Boxes3D: the remembered nodes with a box, centres +
                                 half sizes, labels like "red cup", at every step the
                                 memory changed (its own ``snapshot(t)``)
    world/memory/relations       LineStrips3D: on/in/near edges between node centres,
                                 labelled with the relation (same steps)
    world/robot/path             LineStrips3D: the robot's remembered pose track up to
                                 each step (the moving camera's positions when memory
                                 has no agent track)
    events                       TextLog: the memory's event log, at each event's step
    plan/log                     TextLog: plan.json's log (plan, replan, outcomes)
    plan/skill                   TextLog: the skill call running from each step on
    plan/current                 TextDocument: the whole current plan, at each plan/replan
    episode                      TextLog: start (step 0) and end (the last step)

    export_rrd(load_recording("rec/"), "episode.rrd")
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from embodied.data.images import decode_depth_png, shared_file_mode
from embodied.data.recording import Recording
from embodied.viz.build import describe_event, node_label, plan_data, sample_stops, thin_path

EXTRA = "rerun"  # pip install 'embodied[rerun]'
RELATIONS = ("on", "in", "near")  # drawn between node centres
NO_BOX = ("agent", "place", "room")  # kinds that are not objects on the table/floor
WARN_TAGS = ("skill_failed", "gave_up", "unresolved")


def import_rerun():
    """``rerun`` (the rerun-sdk package), or an ImportError naming the extra that installs it."""
    try:
        import rerun as rr
    except ImportError as e:
        raise ImportError(
            f"embodied viz --format rrd needs rerun-sdk: pip install 'embodied[{EXTRA}]' "
            f"(or pip install rerun-sdk==0.41.0); import failed: {e}"
        ) from e
    return rr


def _rgb255(a: dict) -> list[int]:
    rgb = a.get("rgb") or (0.6, 0.6, 0.6)
    return [int(round(255 * min(max(float(c), 0.0), 1.0))) for c in rgb[:3]]


def _box(a: dict) -> tuple[list[float], list[float]] | None:
    """Centre and half size of a node's box (box_min/box_max, else position +- size/2)."""
    if "box_min" in a and "box_max" in a:
        lo, hi = np.asarray(a["box_min"], np.float64), np.asarray(a["box_max"], np.float64)
        return ((lo + hi) / 2).tolist(), np.maximum((hi - lo) / 2, 1e-4).tolist()
    if "position" in a and "size" in a:
        return list(map(float, a["position"])), np.maximum(np.asarray(a["size"], np.float64) / 2, 1e-4).tolist()
    return None


def _memory_stops(recording: Recording, max_stops: int | None) -> list[int]:
    """The steps the memory changed (every distinct event time; sampled down past ``max_stops``)."""
    memory = recording.memory
    times = list(memory.log.times)
    if not times:
        return [max(memory.t, 0)]
    if max_stops is None:
        return sorted(set(times))
    return sample_stops(times, max(times), max_stops)


def _log_memory(rr, rec, recording: Recording, stops: list[int]) -> set[str]:
    """Boxes and relation lines at each stop; returns the ids of the nodes ever drawn."""
    memory, drawn = recording.memory, set()
    for t in stops:
        graph = memory.snapshot(t)
        centres, halves, labels, colours = [], [], [], []
        for node, a in graph.nodes(data=True):
            box = _box(a) if str(a.get("kind", "object")) not in NO_BOX else None
            if box is None:
                continue
            drawn.add(node)
            centres.append(box[0])
            halves.append(box[1])
            labels.append(node_label(node, a))
            colours.append(_rgb255(a))
        strips, rel_labels = [], []
        for u, v, k in sorted(graph.edges(keys=True)):
            if k not in RELATIONS or (k == "near" and u > v and graph.has_edge(v, u, key="near")):
                continue  # near comes in both directions: drawn once
            pu, pv = graph.nodes[u].get("position"), graph.nodes[v].get("position")
            if pu is None or pv is None:
                continue
            strips.append([list(map(float, pu)), list(map(float, pv))])
            rel_labels.append(k)
        rec.set_time("step", sequence=int(t))
        rec.log("world/memory/objects", rr.Boxes3D(centers=centres, half_sizes=halves, labels=labels,
                                                   colors=colours, show_labels=True))
        rec.log("world/memory/relations", rr.LineStrips3D(strips, labels=rel_labels, radii=0.002))
    return drawn


def _camera_path(recording: Recording) -> list[tuple[int, tuple]]:
    """The positions of the camera that moves furthest (a fixed scene camera says nothing about the robot)."""
    tracks: dict[str, list[tuple[int, tuple]]] = {}
    for k in recording.keyframes:
        pose = np.asarray(k["cam_to_world"], np.float64)
        tracks.setdefault(k["camera"], []).append((int(k["t"]), tuple(pose[:3, 3])))
    if not tracks:
        return []

    def length(track):
        xyz = np.asarray([p for _, p in track])
        return float(np.linalg.norm(np.diff(xyz, axis=0), axis=1).sum()) if len(xyz) > 1 else 0.0

    return max(tracks.values(), key=length)


def _log_path(rr, rec, recording: Recording, max_path: int) -> str:
    memory = recording.memory
    source = "memory" if "agent" in memory.log.by_node and memory.trajectory("agent") else "cameras"
    path = thin_path(memory.trajectory("agent") if source == "memory" else _camera_path(recording), max_path)
    for i, (t, *_) in enumerate(path):
        rec.set_time("step", sequence=int(t))
        rec.log("world/robot/path", rr.LineStrips3D([[p[1:] for p in path[: i + 1]]], radii=0.004,
                                                    colors=[[255, 140, 0]]))
    return source


def _log_cameras(rr, rec, recording: Recording) -> tuple[int, bool]:
    depth = False
    for cam, c in recording.meta["cameras"].items():
        rec.log(f"world/cameras/{cam}", rr.Pinhole(
            image_from_camera=np.asarray(c["K"], np.float64), resolution=[c["width"], c["height"]],
            camera_xyz=rr.ViewCoordinates.RDF, image_plane_distance=0.1), static=True)
    for k in recording.keyframes:
        cam, pose = k["camera"], np.asarray(k["cam_to_world"], np.float64)
        rec.set_time("step", sequence=int(k["t"]))
        rec.log(f"world/cameras/{cam}", rr.Transform3D(translation=pose[:3, 3], mat3x3=pose[:3, :3]))
        rec.log(f"world/cameras/{cam}/image", rr.EncodedImage(contents=k["path"].read_bytes(),
                                                              media_type="image/jpeg"))
        if k.get("depth_path") is not None:
            try:
                mm = np.round(decode_depth_png(k["depth_path"]) * 1000.0).astype(np.uint16)
            except OSError as e:
                raise ValueError(f"keyframe depth image {k['depth_path']} is corrupt: {e}") from None
            rec.log(f"world/cameras/{cam}/depth", rr.DepthImage(mm, meter=1000.0))
            depth = True
    return len(recording.keyframes), depth


def _log_text(rr, rec, recording: Recording, max_events: int) -> tuple[int, int]:
    events = recording.events[-max_events:]  # the newest are kept, as in the page
    for e in events:
        rec.set_time("step", sequence=int(e["t"]))
        node = f"{e['node']}: " if e.get("node") else ""
        rec.log("events", rr.TextLog(f"{node}{e['op']} {describe_event(e)}", level="INFO"))
    if recording.plan is None:
        return len(events), 0
    plan = plan_data(recording.plan, limit=max_events)
    raw = sorted(recording.plan.get("log") or [], key=lambda e: e["t"])[-max_events:]  # plan_data's rows, in order
    for (t, tag, text), entry in zip(plan["log"], raw):
        rec.set_time("step", sequence=t)
        rec.log("plan/log", rr.TextLog(f"[{tag}] {text}", level="WARN" if tag in WARN_TAGS else "INFO"))
        if tag in ("plan", "replan"):  # the whole plan, as the agent wrote it
            rec.log("plan/current", rr.TextDocument(str(entry.get("text", "")), media_type=rr.MediaType.TEXT))
    for t, skill, _target, text, _key in plan["trace"]:
        rec.set_time("step", sequence=t)
        rec.log("plan/skill", rr.TextLog(f"running {text or skill}" if skill else "idle", level="INFO"))
    return len(events), len(plan["log"]) + len(plan["trace"])


def export_rrd(
    recording: Recording,
    out: str | os.PathLike,
    max_stops: int | None = None,
    max_events: int = 20_000,
    max_path: int = 1_000,
) -> dict:
    """Write ``recording`` to ``out`` (.rrd), atomically: a temporary file beside it, then a rename.

    Returns a summary: the file, its size, the step range and what it holds.
    """
    rr = import_rerun()
    out = Path(out)
    if out.is_dir():
        raise ValueError(f"output {out} is a directory; give a file name such as {out / 'episode.rrd'}")
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = recording.meta
    title = f"{meta.get('task', 'recording')} seed {meta.get('seed', '?')} episode {meta.get('episode', 0)}"
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".partial")
    os.close(fd)
    rec = rr.RecordingStream("embodied", recording_id=f"{recording.path.resolve()}")
    closed = False
    try:
        rec.save(tmp)
        rec.set_log_time_enabled(False)
        rec.set_log_tick_enabled(False)
        rec.send_recording_name(title)
        rec.log("world", rr.ViewCoordinates.RIGHT_HAND_Z_UP, static=True)
        keyframes, depth = _log_cameras(rr, rec, recording)
        stops = _memory_stops(recording, max_stops)
        nodes = _log_memory(rr, rec, recording, stops)
        path = _log_path(rr, rec, recording, max_path)
        events, plan = _log_text(rr, rec, recording, max_events)
        times = [0, int(meta.get("steps") or 0), *stops, *(int(k["t"]) for k in recording.keyframes)]
        first, last = min(times), max(times)
        rec.set_time("step", sequence=first)
        rec.log("episode", rr.TextLog(f"start: {title}", level="INFO"))
        rec.set_time("step", sequence=last)
        ended = "complete" if meta.get("complete") else "incomplete (interrupted)"
        rec.log("episode", rr.TextLog(f"end after {meta.get('steps')} steps: {ended}, success={meta.get('success')}",
                                      level="INFO"))
        rec.flush()
        rec.disconnect()  # closes the file sink: the file is whole before it is renamed into place
        closed = True
        os.chmod(tmp, shared_file_mode())  # mkstemp makes 0600; a recording is meant to be shared
        os.replace(tmp, out)
    except BaseException:
        if not closed:
            rec.disconnect()
        Path(tmp).unlink(missing_ok=True)
        raise
    return {
        "rrd": str(out),
        "episode": str(recording.path),
        "mb": round(out.stat().st_size / 2**20, 2),
        "steps": [first, last],
        "stops": len(stops),
        "nodes": len(nodes),
        "events": events,
        "plan_entries": plan,
        "keyframes": keyframes,
        "depth": depth,
        "path_from": path,
    }
