"""Arrow tables of the layout: the features of a recording, frame rows, episode rows.

Columns of ``data/…parquet`` (one row per frame; shapes as in ``info.json``)::

    observation.state   float32 [D]   proprioception (names in info.json)
    action              float32 [A]   the action taken at this frame, clipped to the action space
    timestamp           float32       frame_index / fps, seconds from the episode start
    frame_index, episode_index, index, task_index   int64
    next.reward         float32       reward of this step
    next.done           bool          the episode ended with this step
    next.success        bool          the task was solved after this step (true on the last frame of a success)
    phase               int64         0 observe, 1 delay, 2 recall (of the observation)
    skill.id            int64         SKILL_IDS of the running skill call, -1 (NO_SKILL) for none
    skill.params        float32 [8]   SkillCall.params(): x, y, z, yaw, size_x, size_y, size_z, has_yaw (zeros: none)
    skill.index         int64         which call of the episode's plan (0, 1, ...), -1 for none
    skill.guide         float32 [6]   only mobile-base recordings of the agent: the running skill's route
                                      features, base frame (GUIDE_NAMES; zeros: none)
    observation.depth.<cam>  uint16 [H, W]   with --depth: depth in millimetres, 0 = no return
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from embodied.data.episode import ACTION_NAMES, STATE_NAMES
from embodied.data.layout import DEPTH_PREFIX, DEPTH_SCALE, IMAGE_PREFIX, Feature, video_feature
from embodied.data.stats import array_stats
from embodied.planner.calls import SKILLS

PARAM_NAMES = ["x", "y", "z", "yaw", "size_x", "size_y", "size_z", "has_yaw"]
GUIDE_NAMES = ["wp_forward", "wp_left", "next_forward", "next_left", "last", "arrived"]
SCALARS = {
    "timestamp": "float32",
    "frame_index": "int64",
    "episode_index": "int64",
    "index": "int64",
    "task_index": "int64",
    "next.reward": "float32",
    "next.done": "bool",
    "next.success": "bool",
    "phase": "int64",
    "skill.id": "int64",
    "skill.index": "int64",
}
ARROW = {"float32": pa.float32(), "int64": pa.int64(), "bool": pa.bool_(), "uint16": pa.uint16()}


def _names(table: dict[str, list[str]], robot: str, n: int) -> list[str]:
    names = table.get(robot, [])
    return names if len(names) == n else [f"{i}" for i in range(n)]


def features_for(meta: dict, arrays: dict[str, np.ndarray], image_size: int) -> dict[str, dict]:
    """``info["features"]`` for a recording whose first episode is (``meta``, ``arrays``)."""
    robot, fps = meta["robot_type"], meta["fps"]
    d_state, d_action = arrays["observation.state"].shape[1], arrays["action"].shape[1]
    feats: dict[str, Feature] = {
        "observation.state": Feature("float32", (d_state,), _names(STATE_NAMES, robot, d_state)),
        "action": Feature("float32", (d_action,), _names(ACTION_NAMES, robot, d_action)),
    }
    for cam in meta["cameras"]:
        feats[f"{IMAGE_PREFIX}{cam}"] = video_feature(image_size, fps)
    for key, kind in SCALARS.items():
        feats[key] = Feature(kind, (1,), None)
    feats["phase"].description = "0 observe, 1 delay, 2 recall"
    feats["skill.id"].description = f"running skill: index into {list(SKILLS)}; -1 none"
    feats["skill.params"] = Feature(
        "float32", (len(PARAM_NAMES),), PARAM_NAMES, description="SkillCall.params() of the running call (world frame)"
    )
    feats["skill.index"].description = "position of the running call in the episode's plan; -1 none"
    if "skill.guide" in arrays:
        feats["skill.guide"] = Feature("float32", (len(GUIDE_NAMES),), GUIDE_NAMES,
                                       description="route features of the running skill, base frame (m; flags)")
    for key, arr in arrays.items():
        if key.startswith(DEPTH_PREFIX):
            feats[key] = Feature(
                "uint16", tuple(arr.shape[1:]), ["height", "width"], description=f"depth, 1/{DEPTH_SCALE:g} m units; 0 = none"
            )
    return {k: f.to_dict() for k, f in feats.items()}


def check_compatible(features: dict, meta: dict, arrays: dict[str, np.ndarray], fps: int) -> None:
    """Refuse an episode whose shapes or cameras differ from the dataset's."""
    task = meta["job"]["task"]
    if meta["fps"] != fps:
        raise ValueError(f"{task} runs at {meta['fps']} fps but the dataset at {fps}; record it into another dataset")
    cams = sorted(k[len(IMAGE_PREFIX):] for k, f in features.items() if f["dtype"] == "video")
    if sorted(meta["cameras"]) != cams:
        raise ValueError(f"{task} has cameras {meta['cameras']} but the dataset has {cams}; use --cameras or another dataset")
    size = int(meta["job"]["image_size"])
    for key, f in features.items():
        if f["dtype"] == "video" and list(f["shape"][:2]) != [size, size]:
            raise ValueError(f"{task} is recorded at {size} px but the dataset's {key} is {f['shape'][0]} px; "
                             "use the same --image-size or another dataset")
    for key, arr in arrays.items():
        if key == "task_local":
            continue
        f = features.get(key)
        if f is None:
            raise ValueError(f"{task} records {key!r}, which the dataset does not declare (--depth differs?)")
        shape = tuple(f["shape"])
        got = tuple(arr.shape[1:]) or (1,)
        if got != shape:
            raise ValueError(f"{task}: {key} has shape {list(got)} but the dataset declares {list(shape)}")
    if "skill.guide" in features and "skill.guide" not in arrays:
        raise ValueError(f"{task} records no skill.guide but the dataset declares it (recorded with another policy?)")
    missing = [k for k in features if k.startswith(DEPTH_PREFIX) and k not in arrays]
    if missing:
        raise ValueError(f"{task} records no {missing[0]} but the dataset declares it (--depth differs?)")


def _column(values: np.ndarray, kind: str) -> pa.Array:
    values = np.ascontiguousarray(values)
    if values.ndim == 1:
        return pa.array(values, type=ARROW[kind])
    flat = pa.array(values.reshape(-1), type=ARROW[kind])
    if values.ndim == 2:
        return pa.FixedSizeListArray.from_arrays(flat, values.shape[1])
    inner = pa.FixedSizeListArray.from_arrays(flat, values.shape[2])
    return pa.ListArray.from_arrays(pa.array(np.arange(values.shape[0] + 1) * values.shape[1], pa.int32()), inner)


def frame_table(features: dict, arrays: dict[str, np.ndarray], episode: int, first_index: int, task_ids, fps: int) -> pa.Table:
    """The rows of one episode: ``task_ids[k]`` is the global task index of the episode's k-th task."""
    n = len(arrays["action"])
    frame = np.arange(n, dtype=np.int64)
    derived = {
        "timestamp": (frame / fps).astype(np.float32),
        "frame_index": frame,
        "episode_index": np.full(n, episode, np.int64),
        "index": first_index + frame,
        "task_index": np.asarray(task_ids, np.int64)[arrays["task_local"]],
    }
    cols = {}
    for key, f in features.items():
        if f["dtype"] == "video":
            continue
        values = derived[key] if key in derived else arrays[key]
        cols[key] = _column(values, f["dtype"])
    return pa.table(cols)


def frame_stats(features: dict, table: pa.Table) -> dict[str, dict]:
    """Per-feature statistics of one episode's rows (depth: over all pixels, in stored units)."""
    out = {}
    for key, f in features.items():
        if f["dtype"] == "video":
            continue
        col = table.column(key).combine_chunks()
        if key.startswith(DEPTH_PREFIX):
            values = np.asarray(col.flatten().flatten(), dtype=np.float64)
        elif len(f["shape"]) == 1 and f["shape"][0] > 1 or isinstance(col.type, pa.FixedSizeListType):
            values = np.asarray(col.flatten(), dtype=np.float64).reshape(len(col), -1)
        else:
            values = np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
        out[key] = array_stats(values)
    return out


def flatten_stats(stats: dict[str, dict]) -> dict[str, list]:
    return {f"stats/{key}/{name}": value for key, s in stats.items() for name, value in s.items()}


def unflatten_stats(row: dict) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for col, value in row.items():
        if col.startswith("stats/") and value is not None:
            key, _, name = col[len("stats/"):].rpartition("/")
            out.setdefault(key, {})[name] = value
    return out


def calls_json(calls: list[dict]) -> str:
    return json.dumps(calls)
