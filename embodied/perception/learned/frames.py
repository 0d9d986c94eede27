"""The on-disk format of labelled frames for the learned segmenter, and its reader.

A frames folder::

    DIR/meta.json                   {"format": "embodied.seg-frames", "version": 2, "image_size": S,
                                     "episodes": ["ep-00000", ...], "classes": [...]}
    DIR/ep-00000.safetensors        rgb        (N,S,S,3) uint8
                                    depth      (N,S,S)   float16 m, z-depth, 0 = no return
                                    instance   (N,S,S)   int16, the renderer's instance id, 0 = background
                                    intrinsics (N,3,3)   float32 px, the camera's pinhole matrix
                                    extrinsics (N,4,4)   float32, camera -> world (OpenCV axes), as the
                                                         observation gives it (a mobile base's: odometry)
    DIR/ep-00000.json               {"task", "seed", "suite", "classes": {"<instance id>": "<class>"},
                                     "frames": [{"step", "camera", "phase"}, ...]}

One episode is one unit of work: its two files are written under temporary
names and renamed into place, then ``meta.json`` is replaced, so a killed
``make-data`` keeps every finished episode and resumes after the last one.
``classes`` in meta.json is the sorted union of the episodes' classes: a
frame's semantic label at a pixel is ``1 + classes.index(class of its instance)``.
Version 1 folders (no camera matrices) still read; their ``Frames.intrinsics`` is None.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load_file, save_file

FORMAT, VERSION = "embodied.seg-frames", 2
READABLE = (1, 2)
ARRAYS = {"rgb": np.uint8, "depth": np.float16, "instance": np.int16, "intrinsics": np.float32,
          "extrinsics": np.float32}
CAMERA_ARRAYS = ("intrinsics", "extrinsics")  # absent from version 1


class FramesError(ValueError):
    """A frames folder or file is missing, corrupt or inconsistent; the message names the file."""

    def __init__(self, path: str | Path, problem: str):
        super().__init__(f"{path}: {problem}")


def _atomic(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    write(tmp)
    tmp.replace(path)


def read_meta(root: str | Path) -> dict:
    root = Path(root)
    path = root / "meta.json"
    if not path.exists():
        raise FramesError(root, "is not a frames folder (no meta.json); make one with `embodied perception make-data`")
    try:
        meta = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise FramesError(path, f"is not JSON ({exc})") from None
    if meta.get("format") != FORMAT or meta.get("version") not in READABLE:
        raise FramesError(path, f"is not {FORMAT} version {' or '.join(map(str, READABLE))}")
    return meta


class FrameWriter:
    """Appends episodes to a frames folder (created, or resumed where it stopped)."""

    def __init__(self, root: str | Path, image_size: int):
        self.root = Path(root)
        if self.root.exists() and any(self.root.iterdir()) and not (self.root / "meta.json").exists():
            raise FramesError(
                self.root, "holds other files and no meta.json: pick an empty or new folder")
        self.root.mkdir(parents=True, exist_ok=True)
        if (self.root / "meta.json").exists():
            self.meta = read_meta(self.root)
            if self.meta["image_size"] != image_size:
                raise FramesError(self.root / "meta.json",
                                  f"has image_size {self.meta['image_size']}, not {image_size}")
            if self.meta["version"] != VERSION:
                raise FramesError(self.root / "meta.json", f"is version {self.meta['version']}: new episodes "
                                  f"are version {VERSION}; write them to a new folder")
        else:
            self.meta = {"format": FORMAT, "version": VERSION, "image_size": image_size, "episodes": [], "classes": []}
        for stale in self.root.glob(".*.tmp"):  # left by a killed run
            stale.unlink()

    @property
    def episodes_done(self) -> int:
        return len(self.meta["episodes"])

    def add_episode(self, arrays: dict[str, np.ndarray], info: dict) -> str:
        """Write one episode: ``arrays`` as in the module docstring, ``info`` its JSON sidecar."""
        n = len(info["frames"])
        s = self.meta["image_size"]
        shapes = {"rgb": (n, s, s, 3), "depth": (n, s, s), "instance": (n, s, s), "intrinsics": (n, 3, 3),
                  "extrinsics": (n, 4, 4)}
        for key, dtype in ARRAYS.items():
            if arrays[key].shape != shapes[key]:
                raise ValueError(f"{key} has shape {arrays[key].shape}, expected {shapes[key]}")
        name = f"ep-{self.episodes_done:05d}"
        tensors = {k: np.ascontiguousarray(arrays[k].astype(dtype)) for k, dtype in ARRAYS.items()}
        _atomic(self.root / f"{name}.safetensors", lambda p: save_file(tensors, str(p)))
        _atomic(self.root / f"{name}.json", lambda p: p.write_text(json.dumps(info)))
        self.meta["episodes"].append(name)
        self.meta["classes"] = sorted(set(self.meta["classes"]) | set(info["classes"].values()))
        _atomic(self.root / "meta.json", lambda p: p.write_text(json.dumps(self.meta, indent=1)))
        return name


@dataclass
class Frames:
    """All frames of one or more folders, in memory, with semantic labels on one vocabulary."""

    rgb: np.ndarray  # (N,S,S,3) uint8
    depth: np.ndarray  # (N,S,S) float16 m
    instance: np.ndarray  # (N,S,S) int16, ids unique within a frame
    semantic: np.ndarray  # (N,S,S) uint8, 0 = background, k = classes[k-1]
    classes: tuple[str, ...]
    frames: list[dict]  # per frame: task, seed, step, camera, phase, episode (index into episode_labels)
    episode_labels: list[dict[int, str]]  # per episode: instance id -> class
    intrinsics: np.ndarray | None = None  # (N,3,3) float32 px; None for version 1 folders
    extrinsics: np.ndarray | None = None  # (N,4,4) float32 camera -> world

    def __len__(self) -> int:
        return len(self.rgb)

    def head(self, n: int) -> Frames:
        """The first ``n`` frames."""
        cut = lambda a: None if a is None else a[:n]  # noqa: E731
        return Frames(self.rgb[:n], self.depth[:n], self.instance[:n], self.semantic[:n], self.classes,
                      self.frames[:n], self.episode_labels, cut(self.intrinsics), cut(self.extrinsics))

    def camera(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Frame ``i``'s (intrinsics (3,3), extrinsics (4,4)); a version 1 folder has none (ValueError)."""
        if self.intrinsics is None:
            raise ValueError("these frames carry no camera matrices (frames version 1): render them again "
                             "with `embodied perception make-data`")
        return self.intrinsics[i], self.extrinsics[i]

    def labels(self, i: int) -> dict[int, str]:
        """Frame ``i``'s true {instance id: class}."""
        return self.episode_labels[self.frames[i]["episode"]]


def load_frames(roots: str | Path | list, classes: tuple[str, ...] | None = None) -> Frames:
    """Read frames folders; ``classes`` fixes the vocabulary (a trained net's), else the folders' union."""
    roots = [Path(r) for r in (roots if isinstance(roots, list | tuple) else [roots])]
    metas = [read_meta(r) for r in roots]
    sizes = {m["image_size"] for m in metas}
    if len(sizes) != 1:
        raise FramesError(roots[0], f"folders differ in image_size: {sorted(sizes)}")
    vocab = tuple(classes) if classes else tuple(sorted({c for m in metas for c in m["classes"]}))
    index = {c: k + 1 for k, c in enumerate(vocab)}
    parts: dict[str, list] = {"rgb": [], "depth": [], "instance": [], "semantic": [], "intrinsics": [],
                              "extrinsics": []}
    frames: list[dict] = []
    episode_labels: list[dict[int, str]] = []
    for root, meta in zip(roots, metas):
        for name in meta["episodes"]:
            path = root / f"{name}.safetensors"
            try:
                arrays = load_file(str(path))
                info = json.loads((root / f"{name}.json").read_text())
            except (OSError, SafetensorError, json.JSONDecodeError) as exc:
                raise FramesError(path, f"unreadable ({exc})") from None
            lut = np.zeros(int(arrays["instance"].max(initial=0)) + 1, dtype=np.uint8)
            for inst, cls in info["classes"].items():
                if int(inst) < len(lut):
                    lut[int(inst)] = index.get(cls, 0)  # a class outside the vocabulary is background
            inst = arrays["instance"]
            parts["rgb"].append(arrays["rgb"])
            parts["depth"].append(arrays["depth"])
            parts["instance"].append(inst)
            parts["semantic"].append(lut[np.clip(inst, 0, None)])
            for key in CAMERA_ARRAYS:
                if key in arrays:
                    parts[key].append(arrays[key])
            ep = len(episode_labels)
            episode_labels.append({int(k): v for k, v in info["classes"].items()})
            frames += [{"task": info["task"], "seed": info["seed"], "episode": ep, **f} for f in info["frames"]]
    if not frames:
        raise FramesError(roots[0], "holds no frames")
    cameras = [None, None]
    if all(len(parts[k]) == len(parts["rgb"]) for k in CAMERA_ARRAYS):
        cameras = [np.concatenate(parts[k]) for k in CAMERA_ARRAYS]
    cat = {k: np.concatenate(parts[k]) for k in ("rgb", "depth", "instance", "semantic")}
    return Frames(cat["rgb"], cat["depth"], cat["instance"], cat["semantic"], vocab, frames, episode_labels,
                  *cameras)
