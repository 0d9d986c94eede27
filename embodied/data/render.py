"""``embodied data video``: one episode's cameras side by side, with phase and skill, as an mp4."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from embodied.data.layout import commit_file, temp_path
from embodied.data.video import EpisodeEncoder
from embodied.planner.calls import SKILLS

PHASES = ("observe", "delay", "recall")
MIN_HEIGHT = 256


def _caption(frame: np.ndarray, text: str) -> np.ndarray:
    try:
        from PIL import Image, ImageDraw
    except ImportError:  # captions need pillow (the viz extra); frames alone still render
        return frame
    img = Image.fromarray(frame)
    draw = ImageDraw.Draw(img)
    draw.text((3, 1), text, fill=(255, 255, 255))
    return np.asarray(img)


def render_episode(root: str | Path, episode: int, out: str | Path, progress: bool = False) -> dict:
    from tqdm import tqdm

    from embodied.data.reader import DemoDataset

    ds = DemoDataset(root, 1, 1)
    if not 0 <= episode < len(ds.episodes):
        raise ValueError(f"episode {episode} is not in {root}; it has episodes 0..{len(ds.episodes) - 1}")
    r = ds.episodes[episode]
    a, b = r["dataset_from_index"], r["dataset_to_index"]
    views = [ds.episode_frames(cam, episode) for cam in ds.cameras]
    if not views:
        raise ValueError(f"{root} has no cameras to render")
    tiled = np.concatenate(views, axis=2)
    scale = max(1, int(np.ceil(MIN_HEIGHT / tiled.shape[1])))
    h, w = tiled.shape[1] * scale, tiled.shape[2] * scale
    top = 16  # caption strip
    out = Path(out)
    enc = EpisodeEncoder(h + top, ds.fps, crf=18, width=w + w % 2)
    for k in tqdm(range(b - a), desc=f"episode {episode}", disable=not progress, leave=False):
        frame = np.zeros((h + top, w + w % 2, 3), np.uint8)
        frame[top:, :w] = tiled[k].repeat(scale, axis=0).repeat(scale, axis=1)
        sid = int(ds.frames["skill.id"][a + k])
        skill = SKILLS[sid] if sid >= 0 else "-"
        text = f"t={k} {PHASES[int(ds.frames['phase'][a + k])]} skill={skill}"
        enc.add(_caption(frame, text))
    tmp = temp_path(out)
    try:
        tmp.write_bytes(enc.close())
        commit_file(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return {"episode": episode, "frames": b - a, "task": r["tasks"][0], "success": bool(r.get("success")),
            "output": os.fspath(out), "size": [h + top, w + w % 2]}
