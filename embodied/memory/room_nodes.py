"""Room nodes in the scene graph (mixed into :class:`SpatialMemory`).

    seg = memory.update_rooms(freespace)     # freespace: the robot's own FreeSpaceMap
    memory.rooms()                           # {"room_0": "kitchen", "room_1": "", ...}
    memory.room_of("red mug")                # "room_0"

``update_rooms`` segments the map (:func:`embodied.mapping.rooms.segment_rooms`)
and writes the result into the graph, logging every change as an event:

* one ``room`` node per region: ``position`` (3,) m its centre on the floor
  (z = 0, a point the robot can drive to), ``box_min``/``box_max`` (3,) m
  its floor's extent (z = 0), ``area`` m^2, ``name`` and ``links`` (the
  rooms it shares a doorway with: ``connects`` edges both ways). A region
  keeps the id of the room node whose centre it covers, so ids stay put as
  the map grows; a room no region covers any more is deleted.
* a ``room`` attribute on every object, piece of furniture and place: the
  room it stands in (``in_room`` edges, see ``spatial.relations``). A place
  is in the room under it; a thing on furniture in the room whose floor a
  line of sight to it (from where the robot saw it first and last) meets
  first. Structure (floor, walls) is in no room.
* ``name``: the room type whose cue furniture (``RoomConfig.names``) the
  room holds most of; "" when none is there or two types tie.

Nothing here reads the simulator: the map and the agent's own logged path.
"""

from __future__ import annotations

from embodied.memory.agent import AGENT
from embodied.mapping.freespace import FreeSpaceMap
from embodied.mapping.rooms import RoomConfig, RoomSegmentation, segment_rooms

STRUCTURE_CLASSES = frozenset({"floor", "wall", "walls", "ceiling", "plane"})
ROOMED_KINDS = ("object", "container", "articulated", "surface", "place")


class RoomTracking:
    """Needs the SpatialMemory fields (graph, log, t, _add_node, _set, delete, _new_id)."""

    def update_rooms(self, freespace: FreeSpaceMap, config: RoomConfig | None = None) -> RoomSegmentation:
        """Segment ``freespace`` into rooms and bring the room nodes and ``in_room`` /
        ``connects`` edges up to date (see the module docstring). Returns the segmentation."""
        cfg = config or RoomConfig()
        seg = segment_rooms(freespace, cfg)
        t = max(self.t, 0)
        ids = self._match_rooms(seg, t)
        for k, node in ids.items():
            x0, y0, x1, y1 = (float(v) for v in seg.boxes[k - 1])
            cx, cy = (float(v) for v in seg.centres[k - 1])
            attrs = {"position": (cx, cy, 0.0), "box_min": (x0, y0, 0.0), "box_max": (x1, y1, 0.0),
                     "area": round(float(seg.areas[k - 1]), 2)}
            if node not in self._graph:
                self._add_node(node, {"kind": "room", "cls": "room", "name": "", "links": (), "first_seen": t,
                                      "last_seen": t, "visible": False, "status": "", **attrs}, t, "seen")
            else:
                self._set(node, t, "reshaped", attrs)
                self._graph.nodes[node]["last_seen"] = t
        self._assign(seg, ids, t)
        self._link(seg, ids, t)
        for node in ids.values():
            self._name(node, cfg, t)
        self._edges_dirty = True
        return seg

    def rooms(self) -> dict[str, str]:
        """Room node id -> name ("" when unnamed), sorted by id."""
        return {n: self._graph.nodes[n].get("name", "") for n in self.find(kind="room")}

    # --- helpers -------------------------------------------------------------------------
    def _match_rooms(self, seg: RoomSegmentation, t: int) -> dict[int, str]:
        """Region label -> room node id: the existing room whose centre the region covers, else a new id."""
        ids: dict[int, str] = {}
        for node in self.find(kind="room"):
            k = seg.label_at(self._graph.nodes[node]["position"])
            if k and k not in ids:
                ids[k] = node
            else:
                self.delete(node, t, "room_gone")
        for k in range(1, seg.count + 1):
            if k not in ids:
                ids[k] = self._new_id("room")
        return ids

    def _assign(self, seg: RoomSegmentation, ids: dict[int, str], t: int) -> None:
        for node, a in list(self._graph.nodes(data=True)):
            if a["kind"] not in ROOMED_KINDS or a.get("cls") in STRUCTURE_CLASSES:
                continue
            eyes = []
            if a["kind"] != "place":
                for when in ("first_seen", "last_seen"):
                    eye = self.log.position_at(AGENT, int(a.get(when, -1)))
                    if eye is not None:
                        eyes.append(eye[:2])
            k = seg.room_at(a["position"], eyes)
            room = ids.get(k, "")
            if a.get("room", "") != room:
                self._set(node, t, "room", {"room": room})

    def _link(self, seg: RoomSegmentation, ids: dict[int, str], t: int) -> None:
        links: dict[str, set[str]] = {node: set() for node in ids.values()}
        for door in seg.doorways:
            a, b = ids[door.rooms[0]], ids[door.rooms[1]]
            links[a].add(b)
            links[b].add(a)
        for node, want in links.items():
            have = set(self._graph.nodes[node].get("links", ()))
            for other in have - want:
                if self._graph.has_edge(node, other, key="connects"):
                    self._graph.remove_edge(node, other, key="connects")
            for other in want:
                if not self._graph.has_edge(node, other, key="connects"):
                    self._graph.add_edge(node, other, key="connects", rel="connects")
            if have != want:
                self._set(node, t, "connected", {"links": tuple(sorted(want))})

    def _name(self, room: str, cfg: RoomConfig, t: int) -> None:
        held = {a.get("cls") for _, a in self._graph.nodes(data=True) if a.get("room") == room}
        votes = {name: len(cues & held) for name, cues in cfg.names.items()}
        top = max(votes.values(), default=0)
        best = [name for name, v in votes.items() if v == top]
        name = best[0] if top > 0 and len(best) == 1 else ""
        if self._graph.nodes[room].get("name", "") != name:
            self._set(room, t, "named", {"name": name})
