"""Training windows for the heads, from a recorded dataset (``embodied.data.DemoDataset``).

The adapter is thin: it reads items through the dataset's ``__getitem__`` (windows
with pad masks) and its ``frames`` columns (``skill.id``, ``skill.index``,
``episode_index``, ``observation.state``, ``skill.params``), and

* keeps only frames where a skill runs (``skill.id >= 0``, optionally only the named skills);
* cuts each action window at the end of its skill segment: steps past the segment
  (or past the episode) repeat the segment's last action, are flagged in
  ``action_is_pad`` and get ``action_done = 1`` (the head's done channel learns where
  a skill ends from where the demonstrator's call ended);
* holds every window in memory (images as uint8), so training draws batches by index
  without decoding video each step;
* computes statistics of the call features in the robot's frame (``skill.params_rel``),
  which the dataset's ``meta/stats.json`` cannot hold;
* gives every frame its steps since the skill call started (``skill.elapsed``: 0 at the
  segment's first frame), for heads conditioned on time into the skill;
* keeps the frame's route features (``skill.guide``, (G,) base frame) where the dataset
  has them (mobile-base recordings of the agent) and ``guide`` is on.

``save(folder, dataset_stats)`` writes the windows as a *pack* (``windows.safetensors``
plus ``windows.json``: skills, cameras, the dataset's statistics) and ``load(folder)``
reads it back with neither the simulator nor the video reader, so a machine that has
only torch can train on it (``embodied train --data PACK`` accepts a pack folder).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from embodied.planner.calls import SKILL_IDS
from policies.checkpoint import atomic_folder, read_json
from policies.conditioning import feature_stats, relative_params, robot_kind

IMAGE_PREFIX = "observation.images."
PACK_FORMAT = "embodied-skill-windows/1"
KEEP = ("observation.state", "action", "action_is_pad", "skill.id", "skill.params", "episode_index", "index")


class SkillWindows:
    """Every skill frame of ``dataset`` as in-memory tensors; ``batch(indices)`` -> dict of tensors."""

    def __init__(self, dataset: Any, skills: list[str] | tuple[str, ...] = (), cameras: tuple[str, ...] = (),
                 progress: bool = True, guide: bool = True):
        frames = dataset.frames
        for key in ("skill.id", "skill.index", "episode_index", "observation.state", "skill.params", "action"):
            if key not in frames:
                raise ValueError(f"dataset {getattr(dataset, 'root', '')} has no {key!r} column")
        unknown = [s for s in skills if s not in SKILL_IDS]
        if unknown:
            raise ValueError(f"unknown skill {unknown[0]!r}; skills: {', '.join(SKILL_IDS)}")
        sid = np.asarray(frames["skill.id"]).reshape(-1)
        wanted = np.isin(sid, [SKILL_IDS[s] for s in skills]) if skills else sid >= 0
        self.frame_ids = np.flatnonzero(wanted)
        if len(self.frame_ids) == 0:
            have = sorted({k for k, v in SKILL_IDS.items() if v in set(sid.tolist())})
            raise ValueError(f"dataset {getattr(dataset, 'root', '')} has no frames of skills "
                             f"{list(skills) or 'any'}; it has {have}")
        self.skills = tuple(skills) if skills else tuple(sorted({k for k, v in SKILL_IDS.items()
                                                                 if v in set(sid[self.frame_ids].tolist())},
                                                                key=SKILL_IDS.get))
        self.cameras = tuple(cameras)
        self.robot = robot_kind(int(np.asarray(frames["observation.state"]).shape[-1]))
        seg = np.asarray(frames["skill.index"]).reshape(-1)
        ep = np.asarray(frames["episode_index"]).reshape(-1)
        n = len(seg)
        cols: dict[str, list[torch.Tensor]] = {}
        it = tqdm(self.frame_ids, desc="windows", unit="frame", disable=not progress, leave=False)
        for i in it:
            item = dataset[int(i)]
            h = item["action"].shape[0]
            j = np.arange(i, i + h)
            inside = (j < n) & (ep[np.minimum(j, n - 1)] == ep[i]) & (seg[np.minimum(j, n - 1)] == seg[i])
            inside &= ~item["action_is_pad"].numpy()
            inside = np.logical_and.accumulate(inside)  # a segment does not resume once it ended
            done = torch.from_numpy(~inside)
            action = item["action"].clone()
            last = int(inside.sum()) - 1  # frame i itself is always inside
            action[last + 1:] = action[last]
            item["action"], item["action_is_pad"], item["action_done"] = action, done.clone(), done.float()
            for key in (*KEEP, "action_done"):
                cols.setdefault(key, []).append(item[key])
            for cam in self.cameras:
                img = item[IMAGE_PREFIX + cam]
                cols.setdefault(IMAGE_PREFIX + cam, []).append((img * 255).round().to(torch.uint8))
        self.data = {k: torch.stack(v) for k, v in cols.items()}
        self.data["skill.elapsed"] = torch.from_numpy(segment_elapsed(ep, seg)[self.frame_ids])
        if guide and "skill.guide" in frames:
            self.data["skill.guide"] = torch.from_numpy(np.asarray(frames["skill.guide"], np.float32)[self.frame_ids])
        self.obs_horizon = self.data["observation.state"].shape[1]
        self.horizon = self.data["action"].shape[1]

    def __len__(self) -> int:
        return len(self.frame_ids)

    def save(self, folder: str | Path, dataset_stats: dict[str, dict]) -> dict:
        """Write the windows and the dataset's statistics as a pack (atomically); returns its summary."""
        from safetensors.torch import save_file

        meta = {"format": PACK_FORMAT, "skills": list(self.skills), "cameras": list(self.cameras),
                "frames": len(self), "dataset_stats": _plain(dataset_stats)}
        with atomic_folder(Path(folder)) as tmp:
            tensors = {k: v.contiguous() for k, v in self.data.items()}
            tensors["frame_ids"] = torch.from_numpy(np.asarray(self.frame_ids, np.int64))
            save_file(tensors, str(tmp / "windows.safetensors"))
            (tmp / "windows.json").write_text(json.dumps(meta, indent=1) + "\n")
        size = sum(f.stat().st_size for f in Path(folder).iterdir())
        return {"pack": str(folder), "frames": len(self), "skills": list(self.skills), "bytes": size}

    @classmethod
    def load(cls, folder: str | Path) -> tuple[SkillWindows, dict[str, dict]]:
        """(windows, dataset statistics) from a pack that :meth:`save` wrote."""
        from safetensors.torch import load_file

        folder = Path(folder)
        meta = read_json(folder / "windows.json")
        if meta.get("format") != PACK_FORMAT:
            raise ValueError(f"{folder / 'windows.json'}: format {meta.get('format')!r}, expected {PACK_FORMAT!r}")
        data = load_file(str(folder / "windows.safetensors"))
        self = cls.__new__(cls)
        self.frame_ids = data.pop("frame_ids").numpy()
        self.data, self.skills, self.cameras = data, tuple(meta["skills"]), tuple(meta["cameras"])
        self.robot = robot_kind(int(data["observation.state"].shape[-1]))
        self.obs_horizon = data["observation.state"].shape[1]
        self.horizon = data["action"].shape[1]
        return self, meta["dataset_stats"]

    @staticmethod
    def is_pack(folder: str | Path) -> bool:
        return (Path(folder) / "windows.json").is_file()

    def batch(self, indices: torch.Tensor) -> dict[str, torch.Tensor]:
        out = {k: v[indices] for k, v in self.data.items()}
        for cam in self.cameras:
            out[IMAGE_PREFIX + cam] = out[IMAGE_PREFIX + cam].float().div_(255.0)
        return out

    def stats(self, dataset_stats: dict[str, dict]) -> dict[str, dict]:
        """The normaliser's statistics: state and action from the dataset, call features from the windows."""
        out: dict[str, dict] = {}
        for key in ("observation.state", "action"):
            if key not in dataset_stats:
                raise ValueError(f"dataset statistics lack {key!r}")
            out[key] = {s: torch.as_tensor(dataset_stats[key][s], dtype=torch.float32).reshape(-1).tolist()
                        for s in ("mean", "std", "min", "max")}
        rel = relative_params(self.data["observation.state"][:, -1], self.data["skill.params"], self.robot)
        out["skill.params_rel"] = feature_stats(rel)
        if "skill.guide" in self.data:
            out["skill.guide"] = feature_stats(self.data["skill.guide"])
        return out

    @property
    def guide_dim(self) -> int:
        """Route features per frame (0: the dataset has none, or they are off)."""
        return int(self.data["skill.guide"].shape[-1]) if "skill.guide" in self.data else 0


def _plain(value: Any) -> Any:
    """Statistics as JSON: arrays and tensors become lists."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


def segment_elapsed(episode: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """(N,) float32: frames since the start of each frame's run of equal (episode, segment) values."""
    n = len(segment)
    start = np.ones(n, dtype=bool)
    start[1:] = (episode[1:] != episode[:-1]) | (segment[1:] != segment[:-1])
    first = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    return (np.arange(n) - first).astype(np.float32)
