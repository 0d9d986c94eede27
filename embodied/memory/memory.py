"""SpatialMemory: a scene-graph store fed by a tracker, with articulation plugins and the robot's body.

    memory = SpatialMemory()                      # or SpatialMemory(MemoryConfig.for_detector("learned"))
    for t, obs in enumerate(observations):
        memory.update(perceive(obs, t))
    memory.where_is("block_0"); memory.where_was("block_0", t=3); memory.snapshot(t=3)

One frame, in order (each a component the memory owns, talking through the store):
    tracker     views -> filters -> association -> update / spawn; duplicates merged  (tracker.py)
    drawers     parts judged open or shut once every camera is in                     (drawers.py)
    body        the agent's node, its hand (grasps, carries, presses) and places      (body.py)
    lifecycle   the state of every node not seen: occluded, missing, hidden, ...      (lifecycle.py)
    looked      the ground the cameras have looked at                                 (looked_at.py)
The store and its queries (``SceneQueries``) hold the graph and the episodic log; see store.py for the
node attributes and edges.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from embodied.mapping.looked_at import LookedAt
from embodied.memory import persistence
from embodied.memory.body import Body, fresh_grip
from embodied.memory.buttons import Buttons
from embodied.memory.config import MemoryConfig
from embodied.memory.drawers import Drawers
from embodied.memory.lifecycle import Lifecycle
from embodied.memory.query import SceneQueries
from embodied.memory.room_nodes import RoomNodes
from embodied.memory.tracker import Tracker
from embodied.perception.types import Frame


class SpatialMemory(SceneQueries):
    """Scene graph + event log, fed one perception :class:`Frame` at a time."""

    def __init__(self, config: MemoryConfig | None = None, **sections):
        if config is not None and sections:
            raise ValueError("pass either a MemoryConfig or its sections as keywords, not both")
        config = config or MemoryConfig(**sections)
        config.validate()
        super().__init__(config)
        self.frames = 0
        self.looked = LookedAt(config.lifecycle)
        hooks = SimpleNamespace()
        self.drawers = Drawers(self, config, hooks)
        self.buttons = Buttons(self, config, hooks)
        self.body = Body(self, config, self.buttons)
        self.lifecycle = Lifecycle(self, config)
        self.tracker = Tracker(self, config, hooks, self.drawers)
        self.room_nodes = RoomNodes(self)
        hooks.__dict__.update(
            geometry_changed=self._geometry_changed, container_moved=self.lifecycle.container_moved,
            carry_contents=self.lifecycle.carry_contents, holds_anything=self.lifecycle.holds_anything,
            narrower_across=self.drawers.narrower_across, slide_of=self.drawers.slide_direction,
            off_slide=self.drawers.off_slide, across_slide=self.drawers.across_slide,
            looked_at_many=self.looked.looked_at_many, hand_over=self.body.hand_over, reaching_in=self.body.reaching_in)

    def _geometry_changed(self, node: str, t: int) -> None:
        self.drawers.on_update(node, t)
        self.buttons.on_update(node, t)

    def update(self, frame: Frame) -> None:
        """Fold one perception frame (objects, camera views, proprio) into memory."""
        t = int(frame.t)
        if t < self.t:
            raise ValueError(f"frame time {t} is before the memory's time {self.t}: frames must come in order")
        self.t = t
        self.frames += 1
        seen = self.tracker.step(frame, t)
        self.drawers.end_frame(t)
        self.body.update(frame.proprio, frame.views, t, seen)
        self.lifecycle.update(frame.views, seen, t)
        self.looked.look(frame.views)

    # --- what other stages read -------------------------------------------------------------
    @property
    def grip(self) -> dict:
        """The hand's state: width, closed, holding (node), grasp_width, offset, tcp."""
        return self.body.grip

    @property
    def current_place(self) -> str:
        return self.body.current_place

    @property
    def together(self) -> set[tuple[str, str]]:
        """Node pairs seen at once, never merged."""
        return self.tracker.identity.together

    def slide_direction(self, node: str) -> np.ndarray | None:
        """(2,) unit world xy a drawer slides out along; None until it has been seen with a housing."""
        return self.drawers.slide_direction(node)

    def update_rooms(self, freespace, config=None):
        """Room nodes from the robot's own free-space map (see room_nodes.py); returns the segmentation."""
        return self.room_nodes.update_rooms(freespace, config)

    def rooms(self) -> dict[str, str]:
        """Room node id -> name ("" when unnamed), sorted by id."""
        return self.room_nodes.rooms()

    def delete(self, node: str, t: int | None = None, tag: str = "deleted") -> None:
        super().delete(node, t, tag)
        self.together.difference_update({p for p in self.together if node in p})

    def start_episode(self, gap: int) -> int:
        """Carry this memory into the next day in the same place: its clock jumps ``gap`` steps past the last
        frame (events stay in order, nothing of yesterday is a few steps ago), the robot holds nothing, tracks
        stand still. Returns the memory time of the new episode's first step."""
        if gap < 1:
            raise ValueError(f"gap must be >= 1, got {gap}")
        start = max(self.t, self.log.last_t, -1) + int(gap)
        self.t = start - 1
        self.body.current_place = ""
        self.body.grip = fresh_grip()
        self.looked.poses = {}
        for node, track in self.tracks.items():
            track.velocity = np.zeros(3)
            if self._graph.nodes[node].get("held"):
                self.set(node, start, "release", {"held": False})
        return start

    # --- persistence (see embodied.memory.persistence) ---------------------------------------------
    def save(self, path) -> Path:
        return persistence.save(self, path)

    @classmethod
    def load(cls, path) -> SpatialMemory:
        return persistence.load(path, cls)

    def state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON document, arrays): the memory exactly as it stands; ``from_state`` rebuilds it."""
        return persistence.state(self)

    @classmethod
    def from_state(cls, doc: dict, arrays: dict[str, np.ndarray]) -> SpatialMemory:
        return persistence.from_state(doc, arrays, cls)

    def export_graphml(self, path, t: int | None = None) -> Path:
        return persistence.export_graphml(self, path, t)
