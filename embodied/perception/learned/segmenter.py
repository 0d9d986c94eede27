"""The learned detector at run time: RGB-D in, an instance map and its class labels out.

    segment = LearnedSegmenter()                  # the shipped weights, or a run / weights file
    ids, labels = segment(rgb, depth)             # rgb (H,W,3) uint8, depth (H,W) float32 m
    # ids (H,W) int32, 0 = background; labels {id: class}: what the renderer's masks would give

The perception stage then treats the prediction as it treats rendered masks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from embodied.perception.learned.decode import group_instances, merge_fragments
from embodied.perception.learned.weights import load_segmenter

SHIPPED = Path(__file__).with_name("shipped") / "segmenter.safetensors"
STUFF = ("floor", "wall", "table")  # one instance per class, as the renderer's masks give them


_LOADED: dict[str, object] = {}


def shared_net(source: Path):
    """The network of ``source``, loaded once per process (each episode's perceiver shares it; it is
    only read)."""
    key = str(source.resolve())
    if key not in _LOADED:
        _LOADED[key] = load_segmenter(source)
    return _LOADED[key]


class LearnedSegmenter:
    def __init__(self, source: str | Path | None = None, centre_threshold: float = 0.1, threads: int | None = 1):
        """``threads``: torch threads while segmenting (1: the speed target's budget; None: torch's)."""
        self.source = Path(source) if source else SHIPPED
        self.net = shared_net(self.source)
        self.classes = self.net.config.classes
        self.centre_threshold = centre_threshold
        self.threads = threads

    def __call__(self, rgb: np.ndarray, depth: np.ndarray) -> tuple[np.ndarray, dict[int, str]]:
        if rgb.ndim != 3 or rgb.shape[2] != 3 or depth.shape != rgb.shape[:2]:
            raise ValueError(f"rgb must be (H,W,3) and depth (H,W); got {rgb.shape} and {depth.shape}")
        previous = torch.get_num_threads()
        switch = bool(self.threads) and self.threads != previous
        if switch:
            torch.set_num_threads(self.threads)
        try:
            sem, heat, offset = self.net.maps(np.ascontiguousarray(rgb), np.ascontiguousarray(depth, dtype=np.float32))
            ids, labels = group_instances(sem, heat, offset, self.classes, STUFF, self.centre_threshold)
            if self.net.config.touching is not None:
                ids, labels = merge_fragments(ids, labels, self.net.config.touching)
            return ids, labels
        finally:
            if switch:
                torch.set_num_threads(previous)
