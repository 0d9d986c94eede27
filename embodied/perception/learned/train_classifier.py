"""Train the crop classifier on rendered frames (``embodied perception train-classifier``).

Every true instance of at least ``min_pixels`` pixels in the frames becomes one
crop (``crops.instance_crops``), labelled with its class. Rare classes are
repeated in the pool ((median count / count) ** balance times, at least once),
so the loop's uniform draws see a bottle about as often as a block. Crops are
mirrored, their colour channels shuffled (the apartment draws its objects'
colours per episode: the class must come from the shape) and their brightness
jittered. The loop, checkpoints, resume and log are the action heads'
(``policies.loop``), as for the segmenter.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from embodied.perception.learned.classifier import CropConfig, CropNet
from embodied.perception.learned.crops import instance_crops
from embodied.perception.learned.frames import load_frames
from embodied.perception.learned.train import open_run, optimiser, run_summary, shared_loop_config
from embodied.perception.learned.weights import CLASSIFIER_KIND
from policies.checkpoint import read_json
from policies.loop import TrainConfig, fit, start_run

SCALE = 127.0  # crops are held as int8 (x * SCALE): 60k crops in 300 MB


@dataclass
class CropTrainConfig:
    data: list[str]  # frames folders
    out: str
    segmenter: str | None = None  # the segmenter (run or weights file) whose vocabulary the classifier uses
    steps: int = 3000
    batch_size: int = 256
    lr: float = 2e-3
    weight_decay: float = 1e-4
    warmup_steps: int = 100
    seed: int = 0
    threads: int = 1
    device: str = "auto"  # auto (CUDA when there is one), cpu or cuda
    checkpoint_every: int = 500
    log_every: int = 20
    resume: bool = False
    progress: bool = True
    min_pixels: int = 20
    balance: float = 0.5
    # also crop the segmenter's own instances (snapped, before naming), each labelled with the true class
    # covering most of it: the classifier then sees the ragged and merged masks it will get at run time
    predicted: bool = True
    model: dict[str, Any] = field(default_factory=dict)  # CropConfig fields, e.g. {"widths": [32, 64, 96]}

    def loop_config(self) -> TrainConfig:
        return shared_loop_config(self, CLASSIFIER_KIND)


def _predicted(segment, rgb: np.ndarray, depth: np.ndarray, true: np.ndarray, true_labels: dict[int, str],
               index: dict[str, int], min_pixels: int) -> tuple[np.ndarray, list[int], list[int]]:
    """The segmenter's instances of a frame and the class index of the true instance covering most of each
    (those mostly background or of a class outside ``index`` are left out)."""
    ids, labels, _ = segment.instances(rgb, depth)
    n_true = int(true.max(initial=0)) + 1
    m = int(ids.max(initial=0)) + 1
    counts = np.bincount(ids.ravel().astype(np.int64) * n_true + true.ravel(), minlength=m * n_true).reshape(m, n_true)
    wanted, ys = [], []
    for k in labels:
        row = counts[k]
        best = int(row.argmax())
        cls = true_labels.get(best)
        if row.sum() >= min_pixels and best and cls in index:
            wanted.append(k)
            ys.append(index[cls])
    return ids, wanted, ys


def build_crops(frames, classes: tuple[str, ...], min_pixels: int = 20, progress: bool = True, segment=None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Crops of every true instance of ``min_pixels`` or more in ``frames``, and with ``segment`` (a
    :class:`~.segmenter.LearnedSegmenter`) of its instances too: x (N,5,S,S) int8 (x SCALE), s (N,4)
    float32, label (N,) int64 (index into ``classes``)."""
    xs, ss, ys = [], [], []
    index = {c: k for k, c in enumerate(classes)}
    for i in tqdm(range(len(frames)), desc="crops", disable=not progress):
        true, labels = frames.instance[i].astype(np.int64), frames.labels(i)
        rgb, depth = frames.rgb[i], frames.depth[i].astype(np.float32)
        area = np.bincount(true.ravel(), minlength=max(labels, default=0) + 1)
        wanted = [k for k, c in labels.items() if k < len(area) and area[k] >= min_pixels and c in index]
        sets = [(true, wanted, [index[labels[k]] for k in wanted])]
        if segment is not None:
            sets.append(_predicted(segment, rgb, depth, true, labels, index, min_pixels))
        for ids, keys, classes_of in sets:
            if not keys:
                continue
            x, s = instance_crops(rgb, depth, ids, keys)
            xs.append(np.round(x * SCALE).astype(np.int8))
            ss.append(s)
            ys.extend(classes_of)
    if not ys:
        raise ValueError(f"no instance of {min_pixels}+ pixels in the frames: nothing to train the classifier on")
    return np.concatenate(xs), np.concatenate(ss), np.asarray(ys, np.int64)


def balanced_pool(labels: np.ndarray, balance: float) -> np.ndarray:
    """Indices into ``labels`` with each item of class c repeated round((median count / count_c) ** balance)
    times (at least once)."""
    counts = np.bincount(labels)
    median = np.median(counts[counts > 0])
    repeat = np.maximum(1, np.round((median / np.maximum(counts, 1)) ** balance)).astype(np.int64)
    return np.repeat(np.arange(len(labels)), repeat[labels])


def augment(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Mirror, channel shuffle (half the crops), brightness x0.8-1.2, of float crops (B,5,S,S)."""
    n = len(x)
    flip = rng.random(n) < 0.5
    x[flip] = x[flip, :, :, ::-1]
    shuffle = np.flatnonzero(rng.random(n) < 0.5)
    if len(shuffle):
        x[shuffle, :3] = x[shuffle][:, rng.permutation(3)]
    x[:, :3] *= rng.uniform(0.8, 1.2, (n, 1, 1, 1)).astype(np.float32)
    return np.ascontiguousarray(x)


def train_classifier(cfg: CropTrainConfig) -> dict[str, Any]:
    """Train (or resume) a crop-classifier run; returns a summary."""
    from embodied.perception.learned.segmenter import SHIPPED, LearnedSegmenter
    from embodied.perception.learned.weights import classifier_config, load_segmenter

    loop, out, ckpt = open_run(cfg)
    if ckpt is not None:
        net_cfg = classifier_config(read_json(out / "config.json")["classifier"], out / "config.json")
    else:
        classes = load_segmenter(cfg.segmenter or SHIPPED).config.classes
        net_cfg = classifier_config({**CropConfig(classes=classes).to_json(), **cfg.model}, Path("--model"))
    frames = load_frames(cfg.data, net_cfg.classes)
    segment = LearnedSegmenter(cfg.segmenter, threads=cfg.threads) if cfg.predicted else None
    x, s, y = build_crops(frames, net_cfg.classes, cfg.min_pixels, cfg.progress, segment)
    pool = balanced_pool(y, cfg.balance)
    torch.manual_seed(cfg.seed)
    model = CropNet(net_cfg)
    opt, ema, start, device = optimiser(model, cfg, ckpt, loop)
    per_class = np.bincount(y, minlength=len(net_cfg.classes))
    start_run(out, {"head": CLASSIFIER_KIND, "classifier": net_cfg.to_json(),
                    "train": json.loads(json.dumps(dataclasses.asdict(cfg)))},
              {"frames": len(frames), "crops": len(y), "pool": len(pool),
               "per_class": {c: int(n) for c, n in zip(net_cfg.classes, per_class)}}, start)

    def batch_fn(idx: torch.Tensor) -> dict[str, torch.Tensor]:
        rng = np.random.default_rng([cfg.seed, int(torch.randint(1 << 30, (1,)))])
        k = pool[idx.numpy()]
        return {"x": torch.from_numpy(augment(x[k].astype(np.float32) / SCALE, rng)), "s": torch.from_numpy(s[k]),
                "label": torch.from_numpy(y[k])}

    fitted = fit(loop, model, opt, ema, batch_fn, len(pool), out, start, device,
                 desc="train classifier")
    return {**run_summary(out, start, cfg.steps, fitted, model), "frames": len(frames), "crops": len(y)}
