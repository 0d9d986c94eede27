"""Recording a run for the scene-graph viewer (``embodied run ... --record DIR``).

Directory layout (one subdirectory per episode, even for a single episode)::

    DIR/
      run.json                  the run: task, policy, options, seeds, and per
                                episode its folder, seed, steps, success, complete
      episode_000/              first episode (seed = --seed), episode_001/ the next, ...
        meta.json               task, seed, policy, options, image_size,
                                render_every, keyframe_every, steps, complete,
                                success; cameras {name: {width, height, K}} with
                                K the 3x3 pinhole intrinsics in pixels; keyframes
                                [{t, camera, file, depth_file, cam_to_world}] with
                                cam_to_world the 4x4 camera-to-world pose
                                (OpenCV axes: x right, y down, z forward), metres;
                                depth_file only where the observation had depth
                                (recordings made before depth was kept lack it)
        memory.json             the SpatialMemory (graph, event log, tracks) as
                                written by ``SpatialMemory.save``
        events.jsonl            the memory's event log, one JSON object a line:
                                {"t", "op", "node", "tag", "data"}
        keyframes/000040_scene.jpg   camera RGB at step 40 (JPEG), per camera
        keyframes/000040_scene_depth.png   its depth: 16-bit PNG, millimetres
                                (0: no depth, e.g. beyond 65.5 m or not finite)
        plan.json               only for policies that plan (the memory agent,
                                ``MemoryAgent.plan_record``): {"goal", "plan",
                                "done", "log": [{"t", "tag", "text"}], "trace":
                                [{"t", "call" (null: idle), "text"}]}; log tags
                                plan/replan hold the whole plan as text, the
                                others (skill_done, skill_failed, gave_up,
                                unresolved, ...) are outcomes; trace says which
                                skill call runs from step t on

Units: metres in the world frame (z up), times in control steps. Keyframes
are the observation images (``image_size``) of steps the env rendered, at
least ``keyframe_every`` steps apart.

Consistency: every file is written atomically (temporary file, then rename),
and ``meta.json`` is written last, so it describes files that exist. Files
are saved when an episode starts, every ``flush_every`` steps, when it ends,
and when the run is interrupted (Ctrl-C); SIGINT is held back while they are
written, so an interrupt never splits a save. An interrupted episode has
``"complete": false``. Images newer than the last save may sit in
``keyframes/`` unlisted; ``meta.json`` is the index.

Recording into a folder that already holds a recording replaces its episode
folders; any other non-empty folder is refused.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from embodied.data.commit import sigint_held
from embodied.data.images import encode_depth_png, encode_jpeg, shared_file_mode

if TYPE_CHECKING:
    from embodied.memory import SpatialMemory

FORMAT = "embodied.recording"
VERSION = 1
EPISODE_RE = re.compile(r"^episode_(\d{3,})$")


class EpisodeOutcome(Protocol):
    """What a recording keeps of a finished episode (``embodied.eval.rollout.EpisodeResult`` is one)."""

    steps: int
    success: bool


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write ``data`` to a temporary file beside ``path``, fsync, rename into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        os.fchmod(fd, shared_file_mode())  # mkstemp makes 0600; a recording is meant to be shared
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _dumps(doc) -> str:
    return json.dumps(doc, indent=1, default=_plain)


def _plain(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


class Recorder:
    """Writes the layout above; driven by :class:`embodied.agent.ride.MemoryRider`."""

    def __init__(
        self,
        root: str | os.PathLike,
        run_info: dict,
        env,
        keyframe_every: int = 10,
        flush_every: int = 500,
        jpeg_quality: int = 85,
    ):
        if keyframe_every < 1:
            raise ValueError(f"--keyframe-every must be >= 1, got {keyframe_every}")
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise ValueError(f"record path {self.root} exists and is not a directory")
        if self.root.is_dir() and any(self.root.iterdir()) and not (self.root / "run.json").exists():
            raise ValueError(f"record directory {self.root} is not empty and holds no recording; choose a new one")
        env = env.unwrapped
        self.keyframe_every, self.flush_every, self.quality = int(keyframe_every), int(flush_every), jpeg_quality
        self.cameras = {
            cam: {"width": env.image_size, "height": env.image_size, "K": np.asarray(env.rig.K[cam]).tolist()}
            for cam in env.cameras
        }
        self.base = {
            "format": FORMAT,
            "version": VERSION,
            **run_info,
            "image_size": env.image_size,
            "render_every": env.render_every,
            "keyframe_every": self.keyframe_every,
            "perception": {"mode": "masks", "shuffle_ids": True},
        }
        self.run = {"format": FORMAT + ".run", "version": VERSION, **run_info, "episodes": [], "complete": False}
        self.root.mkdir(parents=True, exist_ok=True)
        for old in self.root.iterdir():  # a previous recording's episodes would mix with this one's
            if old.is_dir() and EPISODE_RE.match(old.name):
                shutil.rmtree(old)
        atomic_write(self.root / "run.json", _dumps(self.run))
        self.open = False
        self.dir: Path | None = None
        self.meta: dict = {}
        self.memory: SpatialMemory | None = None
        self._last_keyframe = self._last_flush = 0
        self.policy = None  # the episode's policy; an agent's plan log is saved with the episode

    def set_policy(self, policy) -> None:
        self.policy = policy

    # --- episodes ---------------------------------------------------------------
    def begin_episode(self, seed: int, memory: SpatialMemory) -> None:
        index = len(self.run["episodes"])
        self.dir = self.root / f"episode_{index:03d}"
        (self.dir / "keyframes").mkdir(parents=True, exist_ok=True)
        self.memory = memory
        self.meta = {
            **self.base,
            "episode": index,
            "seed": int(seed),
            "steps": 0,
            "complete": False,
            "success": None,
            "cameras": self.cameras,
            "files": {"memory": "memory.json", "events": "events.jsonl", "plan": "plan.json"},
            "keyframes": [],
        }
        self.run["episodes"].append({"dir": self.dir.name, "seed": int(seed), "steps": 0, "complete": False})
        self.open = True
        self._last_keyframe = None
        self.flush()  # the folder is a valid (empty) recording from its first step

    def frame(self, t: int, obs: dict, memory: SpatialMemory) -> None:
        """A perceived step: take keyframes when due, save now and then."""
        self.meta["steps"] = int(t)
        self.memory = memory  # a policy may swap its memory mid-episode (the wiped-memory ablation)
        if self._last_keyframe is None or t - self._last_keyframe >= self.keyframe_every:
            self._last_keyframe = t
            for cam in self.cameras:
                name = f"keyframes/{t:06d}_{cam}.jpg"
                atomic_write(self.dir / name, encode_jpeg(obs[f"rgb/{cam}"], self.quality))
                entry = {"t": int(t), "camera": cam, "file": name}
                depth = obs.get(f"depth/{cam}")
                if depth is not None:
                    entry["depth_file"] = f"keyframes/{t:06d}_{cam}_depth.png"
                    atomic_write(self.dir / entry["depth_file"], encode_depth_png(depth))
                pose = np.asarray(obs[f"extrinsics/{cam}"], dtype=np.float64)
                self.meta["keyframes"].append({**entry, "cam_to_world": np.round(pose, 6).tolist()})
        if t - self._last_flush >= self.flush_every:
            self.flush()

    def end_episode(self, memory: SpatialMemory, result: EpisodeOutcome | None) -> None:
        self.memory = memory
        if result is not None:
            self.meta.update(steps=int(result.steps), complete=True, success=bool(result.success))
        self.flush()
        self.open = False

    def close(self) -> None:
        """End of the run (or an interrupt): save what is open and mark the run."""
        if self.open:
            self.meta["interrupted"] = True
            self.flush()
            self.open = False
        self.run["complete"] = all(e["complete"] for e in self.run["episodes"])
        with sigint_held():
            atomic_write(self.root / "run.json", _dumps(self.run))

    def flush(self) -> None:
        """Save memory, events, meta (in that order: meta names the others) and run.json."""
        if self.dir is None or self.memory is None:
            return
        self._last_flush = self.meta["steps"]
        entry = self.run["episodes"][-1]
        entry.update(steps=self.meta["steps"], complete=self.meta["complete"], success=self.meta["success"])
        with sigint_held():
            if hasattr(self.policy, "plan_record"):
                atomic_write(self.dir / self.meta["files"]["plan"], _dumps(self.policy.plan_record()))
            save_episode(self.dir, self.memory, self.meta)
            atomic_write(self.root / "run.json", _dumps(self.run))


def save_episode(folder: Path, memory: SpatialMemory, meta: dict) -> None:
    """memory.json, events.jsonl, then meta.json (it names the others, so it goes last)."""
    log = memory.log
    events = "".join(
        json.dumps({"t": e.t, "op": e.op, "node": e.node, "tag": e.tag, "data": e.to_list()[4]}) + "\n"
        for e in log.events
    )
    memory.save(folder / meta["files"]["memory"])
    atomic_write(folder / meta["files"]["events"], events)
    meta["events"] = len(log.events)
    meta["memory_t"] = memory.t
    atomic_write(folder / "meta.json", _dumps(meta))


# --- reading ------------------------------------------------------------------------


@dataclass
class Recording:
    """One recorded episode, checked and loaded."""

    path: Path  # the episode folder
    meta: dict
    memory: SpatialMemory
    events: list[dict]  # events.jsonl
    keyframes: list[dict]  # meta's keyframes, each with "path" (absolute) added, and "depth_path" with depth_file
    plan: dict | None = None  # plan.json (a planning agent's goal, plan log and skill trace); None if absent


def _read_json(path: Path, what: str) -> dict:
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


def episode_dirs(root: str | os.PathLike) -> list[Path]:
    """The episode folders of a run folder, in order."""
    root = Path(root)
    return sorted(p for p in root.iterdir() if p.is_dir() and EPISODE_RE.match(p.name)) if root.is_dir() else []


def find_episode(path: str | os.PathLike, episode: int = 0) -> Path:
    """An episode folder from a run folder (``episode`` picks one) or an episode folder itself."""
    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"recording directory not found: {path}")
    if (path / "meta.json").exists():
        return path
    if not (path / "run.json").exists():
        raise ValueError(f"{path} is not a recording: no meta.json or run.json (record one with embodied run --record)")
    _read_json(path / "run.json", "run")
    dirs = episode_dirs(path)
    if not dirs:
        raise ValueError(f"recording {path} has no episode folders (episode_000, ...)")
    if not 0 <= episode < len(dirs):
        raise ValueError(f"recording {path} has {len(dirs)} episode(s); --episode {episode} is out of range")
    return dirs[episode]


def load_recording(path: str | os.PathLike, episode: int = 0) -> Recording:
    """Load and check a recorded episode; any missing or corrupt file raises ValueError naming it."""
    from embodied.memory import SpatialMemory

    folder = find_episode(path, episode)
    meta = _read_json(folder / "meta.json", "recording meta")
    if meta.get("format") != FORMAT:
        raise ValueError(f"{folder / 'meta.json'} is not an {FORMAT} meta file (format: {meta.get('format')!r})")
    if meta.get("version") != VERSION:
        raise ValueError(f"{folder / 'meta.json'}: unsupported version {meta.get('version')!r}; this reads {VERSION}")
    _check_meta(meta, folder / "meta.json")
    memory_file = folder / meta["files"]["memory"]
    try:
        memory = SpatialMemory.load(memory_file)
    except FileNotFoundError:
        raise ValueError(f"memory file not found: {memory_file}") from None
    events_file = folder / meta["files"]["events"]
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
    return Recording(folder, meta, memory, events, keyframes, _read_plan(folder / meta["files"].get("plan", "plan.json")))


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


def _check_meta(meta: dict, path: Path) -> None:
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


def _short(meta: dict, field: str) -> str:
    value = meta
    for part in field.replace("]", "").replace("[", ".").split("."):
        value = value[int(part)] if isinstance(value, list) else value.get(part)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


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


def _read_plan(path: Path) -> dict | None:
    """plan.json, checked; None when the policy wrote none (only planning agents do)."""
    if not path.exists():
        return None
    plan = _read_json(path, "plan")
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
