"""The learned detector at run time: RGB-D in, an instance map and its class labels out.

    segment = LearnedSegmenter()                  # the shipped weights, or a run / weights file
    ids, labels = segment(rgb, depth)             # rgb (H,W,3) uint8, depth (H,W) float32 m
    # ids (H,W) int32, 0 = background; labels {id: class}: what the renderer's masks would give

Three steps: the network's pixels vote for instances (``decode.group_instances``);
each colour-and-depth region of the image takes its majority instance
(``regions.snap_to_regions``), so masks follow the image's edges; the crop
classifier, where the weights hold one, names each instance from its crop and
the pixels' votes (``classifier.classify_instances``). Fragments of one object
then join (``decode.merge_fragments``).

The perception stage then treats the prediction as it treats rendered masks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from embodied.perception.learned.classifier import classify_instances
from embodied.perception.learned.decode import group_instances, merge_fragments
from embodied.perception.learned.regions import colour_depth_regions, snap_to_regions
from embodied.perception.learned.weights import load_classifier, load_segmenter

SHIPPED = Path(__file__).with_name("shipped") / "segmenter.safetensors"
STUFF = ("floor", "wall", "table")  # one instance per class, as the renderer's masks give them


_LOADED: dict[str, object] = {}


def shared_net(source: Path, load=load_segmenter):
    """The network ``load(source)`` gives, loaded once per process (each episode's perceiver shares it;
    it is only read)."""
    key = f"{load.__name__}:{source.resolve()}"
    if key not in _LOADED:
        _LOADED[key] = load(source)
    return _LOADED[key]


class LearnedSegmenter:
    def __init__(self, source: str | Path | None = None, centre_threshold: float = 0.1, threads: int | None = 1,
                 classifier: str | Path | None = None, snap: bool = True, classify: bool = True,
                 propose: bool = True):
        """``source``: a segmenter run or weights file (default: the shipped one). ``classifier``: a crop
        classifier run or weights file (default: the one inside ``source``'s file, if any). ``snap``: masks
        follow the image's colour and depth edges. ``classify``: name instances with the classifier (when
        there is one). ``propose``: the classifier may also find objects in small regions the network
        folded into their surroundings (needs ``snap``). ``threads``: torch threads while segmenting (1:
        the speed target's budget; None: torch's)."""
        self.source = Path(source) if source else SHIPPED
        self.net = shared_net(self.source)
        self.classes = self.net.config.classes
        self.classifier = shared_net(Path(classifier) if classifier else self.source, load_classifier) \
            if classify else None
        if self.classifier is not None and self.classifier.config.classes != self.classes:
            raise ValueError(f"the classifier of {classifier or self.source} names other classes than the "
                             f"segmenter {self.source}")
        self.centre_threshold = centre_threshold
        self.threads = threads
        self.snap = snap
        self.propose = propose

    def __call__(self, rgb: np.ndarray, depth: np.ndarray) -> tuple[np.ndarray, dict[int, str]]:
        if rgb.ndim != 3 or rgb.shape[2] != 3 or depth.shape != rgb.shape[:2]:
            raise ValueError(f"rgb must be (H,W,3) and depth (H,W); got {rgb.shape} and {depth.shape}")
        previous = torch.get_num_threads()
        switch = bool(self.threads) and self.threads != previous
        if switch:
            torch.set_num_threads(self.threads)
        try:
            rgb, depth = np.ascontiguousarray(rgb), np.ascontiguousarray(depth, dtype=np.float32)
            ids, labels, sem, regions, n = self._snapped(rgb, depth)
            if self.classifier is not None:
                ids, labels = classify_instances(self.classifier, rgb, depth, ids, labels, sem, STUFF,
                                                 regions=regions if self.propose else None, n_regions=n)
            if self.net.config.touching is not None:
                ids, labels = merge_fragments(ids, labels, self.net.config.touching)
            return ids, labels
        finally:
            if switch:
                torch.set_num_threads(previous)

    def instances(self, rgb: np.ndarray, depth: np.ndarray) -> tuple[np.ndarray, dict[int, str], np.ndarray]:
        """The network's instances, snapped to the image's regions, before the classifier and the merge:
        (ids (H,W) int32, {id: class by pixel votes}, class per pixel (H,W), 0 = background)."""
        return self._snapped(rgb, depth)[:3]

    def _snapped(self, rgb: np.ndarray, depth: np.ndarray):
        sem, heat, offset = self.net.maps(rgb, depth)
        ids, labels = group_instances(sem, heat, offset, self.classes, STUFF, self.centre_threshold)
        if not self.snap:
            return ids, labels, sem, None, 0
        regions, n = colour_depth_regions(rgb, depth)
        ids, labels = snap_to_regions(ids, labels, regions, n, sem, self.classes, STUFF)
        return ids, labels, sem, regions, n
