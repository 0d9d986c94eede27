"""The viewer's data model: the scene graph sampled over an episode.

A ``Timeline`` is what the HTML page draws. It is built from a recording
(memory + keyframes, see ``embodied.viz.build``) and is plain JSON: node
descriptions once, then per sampled time only the node states and edges at
that moment.

Units: positions in metres (world frame), times in control steps.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class NodeInfo:
    """Static description of a graph node."""

    label: str  # e.g. "red block"
    kind: str  # object | container | articulated | surface | place | room | agent
    rgb: tuple[float, float, float] = (0.6, 0.6, 0.6)


@dataclass
class NodeState:
    """A node at one moment: position, and whether it is seen / inside something."""

    position: tuple[float, float, float]
    visible: bool = True
    inside: str | None = None  # id of the container holding it, if any
    status: str = ""  # memory's status: visible | occluded | out_of_view | hidden | missing | held ...


@dataclass
class Frame:
    t: int
    nodes: dict[str, NodeState]
    edges: list[tuple[str, str, str]]  # (source, target, relation)


@dataclass
class Event:
    t: int
    op: str  # ADD / UPDATE / DELETE
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
    info: dict = field(default_factory=dict)  # task, seed, steps, ... shown in the header
    # A planning agent's plan over time (see ``embodied.viz.build.plan_data``); None for other policies.
    plan: dict | None = None

    def to_json(self) -> dict:
        """Compact JSON; the page is sized by this, so lists replace repeated keys.

        frames[i].nodes[id] = [x, y, z, visible, inside, status]; events are
        [t, op, node, text]; path points [t, x, y, z]. Millimetres are plenty.
        ``plan`` is already plain JSON (null when the recording has none).
        """
        return {
            "title": self.title,
            "info": self.info,
            "nodes": {k: asdict(v) for k, v in self.nodes.items()},
            "frames": [
                {
                    "t": f.t,
                    "nodes": {
                        k: [round(s.position[0], 3), round(s.position[1], 3), round(s.position[2], 3),
                            int(s.visible), s.inside, s.status]
                        for k, s in f.nodes.items()
                    },
                    "edges": [list(e) for e in f.edges],
                }
                for f in self.frames
            ],
            "events": [[e.t, e.op, e.node, e.text] for e in self.events],
            "path": [[t, round(x, 3), round(y, 3), round(z, 3)] for t, x, y, z in self.path],
            "keyframes": [asdict(k) for k in self.keyframes],
            "plan": self.plan,
        }
