"""The viewer's data model: the scene graph sampled over an episode.

A ``Timeline`` is what the HTML page draws. It is built from a recording
(memory + keyframes) and is plain JSON: node descriptions once, then per
sampled time only the node states and edges at that moment.

Units: positions in metres (world frame), times in control steps.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class NodeInfo:
    """Static description of a graph node."""

    label: str  # e.g. "red block"
    kind: str  # object | container | surface | place | room | agent
    rgb: tuple[float, float, float] = (0.6, 0.6, 0.6)


@dataclass
class NodeState:
    """A node at one moment: position, and whether it is seen / inside something."""

    position: tuple[float, float, float]
    visible: bool = True
    inside: str | None = None  # id of the container holding it, if any


@dataclass
class Frame:
    t: int
    nodes: dict[str, NodeState]
    edges: list[tuple[str, str, str]]  # (source, target, relation)


@dataclass
class Event:
    t: int
    op: str  # ADD / UPDATE / DELETE / NOOP or a named event
    node: str | None
    text: str


@dataclass
class Keyframe:
    t: int
    camera: str
    jpeg_base64: str


@dataclass
class Timeline:
    title: str
    nodes: dict[str, NodeInfo]
    frames: list[Frame]
    events: list[Event] = field(default_factory=list)
    path: list[tuple[int, float, float, float]] = field(default_factory=list)  # robot (t, x, y, z)
    keyframes: list[Keyframe] = field(default_factory=list)

    def to_json(self) -> dict:
        """Compact JSON: frames store node states as [x, y, z, visible, inside]."""
        return {
            "title": self.title,
            "nodes": {k: asdict(v) for k, v in self.nodes.items()},
            "frames": [
                {
                    "t": f.t,
                    "nodes": {
                        k: [round(s.position[0], 4), round(s.position[1], 4), round(s.position[2], 4),
                            int(s.visible), s.inside]
                        for k, s in f.nodes.items()
                    },
                    "edges": [list(e) for e in f.edges],
                }
                for f in self.frames
            ],
            "events": [asdict(e) for e in self.events],
            "path": [[t, round(x, 4), round(y, 4), round(z, 4)] for t, x, y, z in self.path],
            "keyframes": [asdict(k) for k in self.keyframes],
        }
