"""The learned detector at run time: RGB-D in, an instance map and its class labels out.

    segment = LearnedSegmenter()                  # the shipped weights, or a run / weights file
    ids, labels = segment(rgb, depth, K, cam_to_world)
    # rgb (H,W,3) uint8, depth (H,W) float32 m, K (3,3) px, cam_to_world (4,4) (the region grouper's world
    # heights need the camera; without it the older pipeline below runs)
    # ids (H,W) int32, 0 = background; labels {id: class}: what the renderer's masks would give

Where the weights hold a region grouper (``grouper.RegionGrouper``), a frame is
cut into its colour-and-depth regions (``regions.colour_depth_regions``), each
described with the network's features averaged over it
(``region_graph.region_graph``), and the grouper names every region and joins
neighbours that are one object (``grouper.assemble``).

Otherwise three steps: the network's pixels vote for instances
(``decode.group_instances``); each region takes its majority instance
(``regions.snap_to_regions``), so masks follow the image's edges; the crop
classifier, where the weights hold one, names each instance from its crop and
the pixels' votes (``classifier.classify_instances``). Fragments of one object
then join (``decode.merge_fragments``).

Before any of it, a frame that shows a real camera's noise is cleaned (``denoise.clean_frame``): its
no-return pixels filled, its colour and depth smoothed within surfaces, and the region test made to allow
for the noise left; a noiseless frame passes untouched.

The perception stage then treats the prediction as it treats rendered masks.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from embodied.perception.learned.classifier import classify_instances, crop_opinion
from embodied.perception.learned.decode import group_instances, merge_fragments
from embodied.perception.learned.denoise import Cleaned, clean_frame
from embodied.perception.learned.grouper import assemble
from embodied.perception.learned.heap import keep_freed_memory
from embodied.perception.learned.model import OFFSET_SCALE, fold_batchnorms
from embodied.perception.learned.region_graph import RegionGraph, region_graph
from embodied.perception.learned.regions import colour_depth_regions, snap_to_regions
from embodied.perception.learned.weights import load_classifier, load_grouper, load_segmenter

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


def _load_fused(source: Path):
    """The segmenter network of ``source`` with its BatchNorms folded in (``SegNet.fused``)."""
    return load_segmenter(source).fused()


def _load_fused_classifier(source: Path):
    """The crop classifier of ``source`` with its BatchNorms folded in (what the grouper path asks)."""
    return fold_batchnorms(load_classifier(source))


class LearnedSegmenter:
    def __init__(self, source: str | Path | None = None, centre_threshold: float = 0.1, threads: int | None = 1,
                 classifier: str | Path | None = None, snap: bool = True, classify: bool = True,
                 propose: bool = True, grouper: str | Path | None = None, group: bool = True,
                 keep_heap: bool = True, denoise: bool = True):
        """``source``: a segmenter run or weights file (default: the shipped one). ``grouper``: a region
        grouper run or weights file (default: the one inside ``source``'s file, if any); ``group``: use it
        (frames with a camera). ``classifier``: a crop classifier run or weights file (default: the one
        inside ``source``'s file, if any). ``snap``: masks follow the image's colour and depth edges.
        ``classify``: name instances with the classifier (when there is one). ``propose``: the classifier
        may also find objects in small regions the network folded into their surroundings (needs
        ``snap``). ``threads``: torch threads while segmenting (1: the speed target's budget; None:
        torch's). ``keep_heap``: raise glibc's malloc thresholds for the process (``heap.keep_freed_memory``),
        so a frame's arrays reuse the last frame's memory instead of faulting fresh pages in (2 ms a frame).
        ``denoise``: clean a frame that shows a real camera's noise first (``denoise.clean_frame``)."""
        if keep_heap:
            keep_freed_memory()
        self.source = Path(source) if source else SHIPPED
        self.net = shared_net(self.source)
        self._runtime = shared_net(self.source, _load_fused)  # what the grouper path runs
        self.classes = self.net.config.classes
        self.classifier = shared_net(Path(classifier) if classifier else self.source, load_classifier) \
            if classify else None
        self.grouper = shared_net(Path(grouper) if grouper else self.source, load_grouper) if group else None
        self._asked = shared_net(Path(classifier) if classifier else self.source, _load_fused_classifier) \
            if classify and self.classifier is not None and self.grouper is not None else None
        for part, name in ((self.classifier, classifier), (self.grouper, grouper)):
            if part is not None and part.config.classes != self.classes:
                raise ValueError(f"the {type(part).__name__} of {name or self.source} names other classes than "
                                 f"the segmenter {self.source}")
        head = self.net.offset
        # The offset head in pixels, (2, C) and (2,): a region's mean vote for its instance's centre.
        self._offset = (head.weight[:, :, 0, 0].detach().numpy() * OFFSET_SCALE,
                        head.bias.detach().numpy() * OFFSET_SCALE)
        self.centre_threshold = centre_threshold
        self.threads = threads
        self.snap = snap
        self.propose = propose
        self.denoise = denoise
        # Per stage of the grouper path, ms of each frame (clean, network, regions, graph, grouper, assemble:
        # the last with the crop classifier's opinions) when set to a dict; ``embodied bench perception`` reads it.
        self.stage_times: dict[str, list[float]] | None = None

    def _lap(self, stage: str, since: float) -> float:
        """Now; the ms since ``since`` added to ``stage`` when timing stages."""
        now = time.perf_counter()
        if self.stage_times is not None:
            self.stage_times.setdefault(stage, []).append((now - since) * 1e3)
        return now

    @property
    def touching(self) -> tuple[str, ...]:
        """The classes whose objects touch one another in the training labels (blocks, drawers); the
        others' objects never do, so their pieces are pieces of one (``perception.pieces``)."""
        return tuple(self.net.config.touching or ())

    @property
    def needs_camera(self) -> bool:
        """Whether frames should come with their camera (the grouper reads world heights)."""
        return self.grouper is not None

    def __call__(self, rgb: np.ndarray, depth: np.ndarray, intrinsics: np.ndarray | None = None,
                 extrinsics: np.ndarray | None = None, camera: str = "") -> tuple[np.ndarray, dict[int, str]]:
        """``camera``: the camera's name (scene, wrist, head), which the grouper knows."""
        if rgb.ndim != 3 or rgb.shape[2] != 3 or depth.shape != rgb.shape[:2]:
            raise ValueError(f"rgb must be (H,W,3) and depth (H,W); got {rgb.shape} and {depth.shape}")
        previous = torch.get_num_threads()
        switch = bool(self.threads) and self.threads != previous
        if switch:
            torch.set_num_threads(self.threads)
        try:
            if self.grouper is not None and (intrinsics is None or extrinsics is None):
                raise ValueError(f"the region grouper of {self.source} reads world heights: pass the frame's "
                                 "intrinsics and extrinsics (or group=False for the pipeline without it)")
            frame = self.clean(rgb, depth)
            rgb, depth = frame.rgb, frame.depth
            if self.grouper is not None:
                graph, regions, _ = self._graph(frame, intrinsics, extrinsics, camera)
                start = time.perf_counter()
                logp, same = self.grouper.predict(graph)
                start = self._lap("grouper", start)
                opinion = crop_opinion(self._asked, rgb, depth) if self._asked is not None else None
                found = assemble(graph, logp, same, regions, self.grouper.config, opinion)
                self._lap("assemble", start)
                return found
            ids, labels, sem, regions, n = self._snapped(frame)
            if self.classifier is not None:
                ids, labels = classify_instances(self.classifier, rgb, depth, ids, labels, sem, STUFF,
                                                 regions=regions if self.propose else None, n_regions=n)
            if self.net.config.touching is not None:
                ids, labels = merge_fragments(ids, labels, self.net.config.touching)
            return ids, labels
        finally:
            if switch:
                torch.set_num_threads(previous)

    def clean(self, rgb: np.ndarray, depth: np.ndarray) -> Cleaned:
        """The frame as the detector reads it: with a real camera's noise taken out (``denoise.clean_frame``;
        untouched when it shows none, or with ``denoise`` off)."""
        rgb, depth = np.ascontiguousarray(rgb), np.ascontiguousarray(depth, dtype=np.float32)
        if not self.denoise:
            return Cleaned(rgb, depth)
        start = time.perf_counter()
        frame = clean_frame(rgb, depth)
        self._lap("clean", start)
        return frame

    def region_graph(self, rgb: np.ndarray, depth: np.ndarray, intrinsics: np.ndarray, extrinsics: np.ndarray,
                     camera: str = "") -> tuple[RegionGraph, np.ndarray, int]:
        """The frame's regions (H,W) int64, their count and their graph with the network's features (of the
        frame cleaned first, as at run time)."""
        return self._graph(self.clean(rgb, depth), intrinsics, extrinsics, camera)

    def _graph(self, frame: Cleaned, intrinsics: np.ndarray, extrinsics: np.ndarray,
               camera: str = "") -> tuple[RegionGraph, np.ndarray, int]:
        rgb, depth = frame.rgb, frame.depth
        start = time.perf_counter()
        features = self._runtime.pixel_features(rgb, depth)
        start = self._lap("network", start)
        regions, n = colour_depth_regions(rgb, depth, **frame.region_steps())
        start = self._lap("regions", start)
        graph = region_graph(rgb, depth, np.asarray(intrinsics, np.float64), np.asarray(extrinsics, np.float64),
                             features, *self._offset, regions, n, camera)
        self._lap("graph", start)
        return graph, regions, n

    def instances(self, rgb: np.ndarray, depth: np.ndarray) -> tuple[np.ndarray, dict[int, str], np.ndarray]:
        """The network's instances, snapped to the image's regions, before the classifier and the merge:
        (ids (H,W) int32, {id: class by pixel votes}, class per pixel (H,W), 0 = background)."""
        return self._snapped(self.clean(rgb, depth))[:3]

    def _snapped(self, frame: Cleaned):
        rgb, depth = frame.rgb, frame.depth
        sem, heat, offset = self.net.maps(rgb, depth)
        ids, labels = group_instances(sem, heat, offset, self.classes, STUFF, self.centre_threshold)
        if not self.snap:
            return ids, labels, sem, None, 0
        regions, n = colour_depth_regions(rgb, depth, **frame.region_steps())
        ids, labels = snap_to_regions(ids, labels, regions, n, sem, self.classes, STUFF)
        return ids, labels, sem, regions, n
