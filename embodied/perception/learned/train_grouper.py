"""Train the region grouper on rendered frames (``embodied perception train-grouper``).

Every frame is cut into its colour-and-depth regions and described as a
:class:`~.region_graph.RegionGraph`, with the segmenter network's features
(its weights stay fixed). Each region's target is the true class most of its
pixels have, weighted by the square root of its area and by how pure it is;
each pair of neighbouring regions is one object when their majority true
instances are the same one. The loop, checkpoints, resume and log are the
action heads' (``policies.loop``), as for the segmenter and the classifier;
step ``s`` draws the same regions and pairs in every run with the same seed.
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

from embodied.perception.learned.frames import load_frames
from embodied.perception.learned.grouper import GrouperConfig, RegionGrouper
from embodied.perception.learned.region_graph import RegionGraph
from embodied.perception.learned.train import open_run, optimiser, run_summary, shared_loop_config
from embodied.perception.learned.weights import GROUPER_KIND, grouper_config, load_grouper
from policies.checkpoint import CheckpointError, read_json
from policies.loop import TrainConfig, fit, start_run


@dataclass
class GrouperTrainConfig:
    data: list[str]  # frames folders (version 2: with camera matrices)
    out: str
    segmenter: str | None = None  # whose network features the grouper reads (default: the shipped weights)
    steps: int = 4000
    batch_size: int = 2048  # regions per step, and as many pairs
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
    model: dict[str, Any] = field(default_factory=dict)  # GrouperConfig fields, e.g. {"hidden": 64}
    # A grouper run or weights file whose grouper starts this run: its weights, its configuration and its
    # feature normaliser (kept, so what it learned reads the same rows), e.g. the shipped one fine-tuned on
    # frames of a noisy camera.
    init_from: str | None = None

    def loop_config(self) -> TrainConfig:
        return shared_loop_config(self, GROUPER_KIND)


def region_targets(graph: RegionGraph, regions: np.ndarray, n: int, instance: np.ndarray, semantic: np.ndarray,
                   n_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For one frame: each region's true class index (0 = background), its purity (share of its pixels in its
    majority true instance), and per pair whether both regions' majority instances are one object."""
    r = regions.ravel().astype(np.int64)
    inst = instance.ravel().astype(np.int64)
    m = int(inst.max(initial=0)) + 1
    counts = np.bincount(r * m + inst, minlength=n * m).reshape(n, m)
    majority = counts.argmax(1)
    purity = counts.max(1) / np.maximum(counts.sum(1), 1)
    k = n_classes + 1
    cls = np.bincount(r * k + semantic.ravel().astype(np.int64), minlength=n * k).reshape(n, k).argmax(1)
    a, b = graph.pairs[:, 0], graph.pairs[:, 1]
    same = (majority[a] == majority[b]) & (majority[a] > 0)
    return cls, purity, same


def build_rows(frames, segment, progress: bool = True) -> dict[str, np.ndarray]:
    """Region and pair rows of every frame with their targets; ``segment`` a LearnedSegmenter (its network
    gives the features)."""
    parts: dict[str, list] = {k: [] for k in ("nodes", "node_class", "node_weight", "edges", "same")}
    n_classes = len(frames.classes)
    for i in tqdm(range(len(frames)), desc="regions", disable=not progress):
        rgb, depth = frames.rgb[i], frames.depth[i].astype(np.float32)
        K, X = frames.camera(i)
        graph, regions, n = segment.region_graph(rgb, depth, K, X, frames.frames[i]["camera"])
        cls, purity, same = region_targets(graph, regions, n, frames.instance[i], frames.semantic[i], n_classes)
        parts["nodes"].append(graph.nodes)
        parts["node_class"].append(cls)
        parts["node_weight"].append((np.sqrt(graph.area) * purity).astype(np.float32))
        parts["edges"].append(graph.edges)
        parts["same"].append(same.astype(np.float32))
    rows = {k: np.concatenate(v) for k, v in parts.items()}
    if not len(rows["edges"]):
        raise ValueError("the frames hold no neighbouring regions: nothing to train the grouper on")
    return rows


def train_grouper(cfg: GrouperTrainConfig) -> dict[str, Any]:
    """Train (or resume) a grouper run; returns a summary."""
    from embodied.perception.learned.segmenter import LearnedSegmenter

    loop, out, ckpt = open_run(cfg)
    segment = LearnedSegmenter(cfg.segmenter, threads=cfg.threads, classify=False, group=False)
    source = None
    if ckpt is not None:
        net_cfg = grouper_config(read_json(out / "config.json")["grouper"], out / "config.json")
    elif cfg.init_from:
        source = load_grouper(cfg.init_from)
        if source is None:
            raise CheckpointError(Path(cfg.init_from), "holds no region grouper to start from")
        if cfg.model:
            raise ValueError(f"--model {sorted(cfg.model)}: a grouper started from {cfg.init_from} keeps its shape")
        net_cfg = source.config
        if net_cfg.classes != segment.classes or net_cfg.features != segment.net.config.skip:
            raise CheckpointError(Path(cfg.init_from), f"its grouper reads other classes or features than the "
                                  f"segmenter {segment.source}")
    else:
        base = GrouperConfig(classes=segment.classes, features=segment.net.config.skip).to_json()
        net_cfg = grouper_config({**base, **cfg.model}, Path("--model"))
    frames = load_frames(cfg.data, net_cfg.classes)
    rows = build_rows(frames, segment, cfg.progress)
    torch.manual_seed(cfg.seed)
    model = RegionGrouper(net_cfg)
    if source is not None:
        model.load_state_dict(source.state_dict())  # its weights and its normaliser
    else:
        model.set_normaliser(rows["nodes"], rows["edges"])  # restored from the checkpoint on resume
    opt, ema, start, device = optimiser(model, cfg, ckpt, loop)
    n_nodes, n_edges = len(rows["nodes"]), len(rows["edges"])
    start_run(out, {"head": GROUPER_KIND, "grouper": net_cfg.to_json(),
                    "train": json.loads(json.dumps(dataclasses.asdict(cfg)))},
              {"frames": len(frames), "regions": n_nodes, "pairs": n_edges,
               "same_share": round(float(rows["same"].mean()), 4)}, start)
    tensors = {k: torch.from_numpy(v) for k, v in rows.items()}

    def batch_fn(idx: torch.Tensor) -> dict[str, torch.Tensor]:
        # The pairs are drawn from torch's generator, which the loop reseeds every step.
        pair = torch.randint(n_edges, (len(idx),))
        return {"nodes": tensors["nodes"][idx], "node_class": tensors["node_class"][idx],
                "node_weight": tensors["node_weight"][idx], "edges": tensors["edges"][pair],
                "same": tensors["same"][pair], "edge_weight": torch.ones(len(idx))}

    fitted = fit(loop, model, opt, ema, batch_fn, n_nodes, out, start, device, desc="train grouper")
    return {**run_summary(out, start, cfg.steps, fitted, model), "frames": len(frames), "regions": n_nodes,
            "pairs": n_edges}
