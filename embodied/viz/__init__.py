"""Visualising scene graphs over time: an offline HTML viewer and video overlays."""

from embodied.viz.build import build_timeline
from embodied.viz.html import render_page, write_page
from embodied.viz.timeline import Event, Frame, Keyframe, NodeInfo, NodeState, Timeline

__all__ = ["Event", "Frame", "Keyframe", "NodeInfo", "NodeState", "Timeline", "build_timeline", "render_page", "write_page"]
