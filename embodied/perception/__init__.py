"""Perception: RGB-D observations -> object observations (world-frame clouds, boxes, colours).

perceive = Perceiver(env.unwrapped.labels, PerceptionConfig(mode="masks"))
frame = perceive(obs, t)          # Frame(t, objects=[ObjectObservation, ...], views=[...])
"""

from embodied.perception.colour import COLOUR_NAMES, colour_name
from embodied.perception.perceiver import Perceiver, tcp_of
from embodied.perception.pieces import is_line, join_views, lines
from embodied.perception.types import CameraView, Frame, ObjectObservation, PerceptionConfig

__all__ = [
    "COLOUR_NAMES",
    "CameraView",
    "Frame",
    "ObjectObservation",
    "Perceiver",
    "PerceptionConfig",
    "colour_name",
    "is_line",
    "join_views",
    "lines",
    "tcp_of",
]
