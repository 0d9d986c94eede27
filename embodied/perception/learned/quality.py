"""How well a segmenter matches the renderer's masks on held-out frames (``embodied perception eval``).

Each true instance of at least ``min_pixels`` pixels is matched to the
predicted instance that overlaps it most (class-agnostic). Per class:

* ``iou``: mean mask IoU of its true instances with their match (0 if none);
* ``recall``: share of its true instances matched at IoU >= 0.5;
* ``precision``: share of the predicted instances of the class that match a
  true instance at IoU >= 0.5;
* ``class_right`` / ``colour_right``: among matches at IoU >= 0.5, the share
  whose predicted class, and whose colour name (from the mean colour of the
  predicted mask against that of the true mask), is right.
"""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np
from tqdm import tqdm

from embodied.perception.colour import colour_name
from embodied.perception.learned.frames import Frames


def _pairs(true: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """(T+1, P+1) pixel counts of (true id, pred id) pairs."""
    t, p = true.astype(np.int64).ravel(), pred.astype(np.int64).ravel()
    nt, np_ = int(t.max(initial=0)) + 1, int(p.max(initial=0)) + 1
    return np.bincount(t * np_ + p, minlength=nt * np_).reshape(nt, np_)


def score_frame(true: np.ndarray, true_labels: dict, pred: np.ndarray, pred_labels: dict, rgb: np.ndarray,
                min_pixels: int, acc: dict) -> None:
    counts = _pairs(true, pred)
    t_area, p_area = counts.sum(1), counts.sum(0)
    matched_pred: set[int] = set()
    flat_rgb = rgb.reshape(-1, 3) / 255.0
    for ti in np.flatnonzero(t_area >= min_pixels):
        if ti == 0:
            continue
        cls = true_labels.get(int(ti), "")
        row = counts[ti].copy()
        row[0] = 0
        pi = int(row.argmax())
        inter = row[pi]
        iou = inter / (t_area[ti] + p_area[pi] - inter) if inter > 0 else 0.0
        a = acc[cls]
        a["iou"].append(iou)
        a["found"].append(iou >= 0.5)
        if iou >= 0.5:
            matched_pred.add(pi)
            a["class_right"].append(pred_labels.get(pi) == cls)
            mean_true = flat_rgb[true.ravel() == ti].mean(0)
            mean_pred = flat_rgb[pred.ravel() == pi].mean(0)
            a["colour_right"].append(colour_name(mean_true) == colour_name(mean_pred))
    for pi in np.flatnonzero(p_area >= min_pixels):
        if pi == 0:
            continue
        acc[pred_labels.get(int(pi), "")]["precise"].append(int(pi) in matched_pred)


def _mean(values: list) -> float | None:
    return round(float(np.mean(values)), 4) if values else None


def evaluate(segment, frames: Frames, labels_of, min_pixels: int = 20, progress: bool = True) -> dict:
    """Score ``segment(rgb, depth, K, cam_to_world, camera) -> (ids, labels)`` on ``frames`` (K and
    cam_to_world None for frames without cameras); ``labels_of(i)`` gives frame i's
    true {instance id: class}. Returns per-class and overall scores and the median ms per frame."""
    acc: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    ms = []
    for i in tqdm(range(len(frames)), desc="eval segmenter", disable=not progress):
        rgb, depth = frames.rgb[i], frames.depth[i].astype(np.float32)
        camera = frames.camera(i) if frames.intrinsics is not None else (None, None)
        t0 = time.perf_counter()
        pred, pred_labels = segment(rgb, depth, *camera, frames.frames[i]["camera"])
        ms.append((time.perf_counter() - t0) * 1e3)
        score_frame(frames.instance[i], labels_of(i), pred, pred_labels, rgb, min_pixels, acc)
    per_class = {}
    for cls in sorted(c for c in acc if c):
        a = acc[cls]
        per_class[cls] = {"instances": len(a["iou"]), "iou": _mean(a["iou"]), "recall": _mean(a["found"]),
                          "precision": _mean(a["precise"]), "class_right": _mean(a["class_right"]),
                          "colour_right": _mean(a["colour_right"])}
    scored = [v for v in per_class.values() if v["instances"]]
    pool = lambda key: [x for c in acc.values() for x in c[key]]  # noqa: E731
    return {
        "frames": len(frames),
        "min_pixels": min_pixels,
        "mean_iou": _mean([v["iou"] for v in scored]),  # mean over classes
        "instance_iou": _mean(pool("iou")),  # mean over instances
        "recall": _mean(pool("found")),
        "precision": _mean(pool("precise")),
        "class_right": _mean(pool("class_right")),
        "colour_right": _mean(pool("colour_right")),
        "ms_median": round(float(np.median(ms)), 2),
        "per_class": per_class,
    }
