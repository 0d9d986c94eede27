"""A learned RGB-D instance segmenter, trained on rendered labels, that stands in for the renderer's masks.

    embodied perception make-data --out DIR     render labelled frames (format: frames.py)
    embodied perception train --data DIR --out RUN
    embodied perception eval --weights RUN --data DIR

    PerceptionConfig(mode="learned")            the agent on the shipped weights
"""

from embodied.perception.learned.frames import Frames, FramesError, FrameWriter, load_frames
from embodied.perception.learned.model import SegmenterConfig, SegNet
from embodied.perception.learned.segmenter import SHIPPED, LearnedSegmenter
from embodied.perception.learned.weights import export_weights, load_segmenter

__all__ = [
    "SHIPPED",
    "FrameWriter",
    "Frames",
    "FramesError",
    "LearnedSegmenter",
    "SegNet",
    "SegmenterConfig",
    "export_weights",
    "load_frames",
    "load_segmenter",
]
