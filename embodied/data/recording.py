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
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from embodied.atomic import atomic_write as write_atomically
from embodied.data.commit import sigint_held
from embodied.data.images import encode_depth_png, encode_jpeg, shared_file_mode
from embodied.data.recording_checks import check_meta, listed_keyframes, read_events, read_json_object, read_plan

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
    """``embodied.atomic.atomic_write``, the file readable by all: a recording is meant to be shared."""
    write_atomically(path, data, shared_file_mode())


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
    read_json_object(path / "run.json", "run")
    dirs = episode_dirs(path)
    if not dirs:
        raise ValueError(f"recording {path} has no episode folders (episode_000, ...)")
    if not 0 <= episode < len(dirs):
        raise ValueError(f"recording {path} has {len(dirs)} episode(s); --episode {episode} is out of range")
    return dirs[episode]


def load_recording(path: str | os.PathLike, episode: int = 0) -> Recording:
    """Load and check a recorded episode; any missing or corrupt file raises ValueError naming it (the checks:
    :mod:`embodied.data.recording_checks`)."""
    from embodied.memory import SpatialMemory

    folder = find_episode(path, episode)
    meta = read_json_object(folder / "meta.json", "recording meta")
    if meta.get("format") != FORMAT:
        raise ValueError(f"{folder / 'meta.json'} is not an {FORMAT} meta file (format: {meta.get('format')!r})")
    if meta.get("version") != VERSION:
        raise ValueError(f"{folder / 'meta.json'}: unsupported version {meta.get('version')!r}; this reads {VERSION}")
    check_meta(meta, folder / "meta.json")
    memory_file = folder / meta["files"]["memory"]
    try:
        memory = SpatialMemory.load(memory_file)
    except FileNotFoundError:
        raise ValueError(f"memory file not found: {memory_file}") from None
    events = read_events(folder / meta["files"]["events"])
    keyframes = listed_keyframes(folder, meta)
    plan = read_plan(folder / meta["files"].get("plan", "plan.json"))
    return Recording(folder, meta, memory, events, keyframes, plan)
