"""Room nodes in the scene graph, written into the store from the robot's own free-space map.

    seg = memory.update_rooms(freespace)     # freespace: the robot's own FreeSpaceMap
    memory.rooms()                           # {"room_0": "kitchen", "room_1": "", ...}
    memory.room_of("red mug")                # "room_0"

``update_rooms`` segments the map (``mapping.rooms.segment_rooms``) and logs every change it makes:

* a ``room`` node per region: ``position`` (3,) m its floor centre (z = 0, a point to drive to),
  ``box_min``/``box_max`` (3,) m its floor (z = 0), ``area`` m^2, ``name``, and ``links`` (rooms through a
  doorway: ``connects`` edges both ways). A region keeps the id of the room whose centre it covers, so ids
  stay put as the map grows; a room no region covers is deleted.
* a ``room`` attribute on every object, piece of furniture and place (``in_room`` edges): a place is in the
  room under it, a thing on furniture in the room whose floor a line of sight to it (from where the robot
  saw it first and last) meets first. Structure (floor, walls) is in no room.
* ``name``: the room type (``RoomConfig.names``) whose cue furniture it holds most of ("" on none or a tie).

Nothing here reads the simulator: only the map and the agent's own logged path.
"""

from __future__ import annotations

from embodied.mapping.freespace import FreeSpaceMap
from embodied.mapping.rooms import RoomConfig, RoomSegmentation, segment_rooms
from embodied.memory.affordances import PHYSICAL, STRUCTURE_CLASSES, affords  # noqa: F401 (eval: STRUCTURE_CLASSES)
from embodied.memory.store import AGENT

ROOMED_KINDS = (*PHYSICAL, "place")


class RoomNodes:
    """Room nodes of a store (a :class:`SceneQueries`: graph, log, find, add_node, set, delete, new_id)."""

    def __init__(self, store):
        self.store = store

    def update_rooms(self, freespace: FreeSpaceMap, config: RoomConfig | None = None) -> RoomSegmentation:
        """Segment ``freespace`` into rooms and bring the room nodes and their edges up to date."""
        cfg = config or RoomConfig()
        seg = segment_rooms(freespace, cfg)
        t = max(self.store.t, 0)
        ids = self._match_rooms(seg, t)
        for k, node in ids.items():
            x0, y0, x1, y1 = (float(v) for v in seg.boxes[k - 1])
            cx, cy = (float(v) for v in seg.centres[k - 1])
            attrs = {"position": (cx, cy, 0.0), "box_min": (x0, y0, 0.0), "box_max": (x1, y1, 0.0),
                     "area": round(float(seg.areas[k - 1]), 2)}
            if node not in self.store._graph:
                self.store.add_node(node, {"kind": "room", "cls": "room", "name": "", "links": (), "first_seen": t,
                                      "last_seen": t, "visible": False, "status": "", **attrs}, t, "seen")
            else:
                self.store.set(node, t, "reshaped", attrs)
                self.store._graph.nodes[node]["last_seen"] = t
        self._assign(seg, ids, t)
        self._link(seg, ids, t)
        for node in ids.values():
            self._name(node, cfg, t)
        self.store._edges_dirty = True
        return seg

    def rooms(self) -> dict[str, str]:
        """Room node id -> name ("" when unnamed), sorted by id."""
        return {n: self.store._graph.nodes[n].get("name", "") for n in self.store.find(kind="room")}

    def _match_rooms(self, seg: RoomSegmentation, t: int) -> dict[int, str]:
        """Region label -> room node id: the existing room whose centre the region covers, else a new id."""
        ids: dict[int, str] = {}
        for node in self.store.find(kind="room"):
            k = seg.label_at(self.store._graph.nodes[node]["position"])
            if k and k not in ids:
                ids[k] = node
            else:
                self.store.delete(node, t, "room_gone")
        for k in range(1, seg.count + 1):
            if k not in ids:
                ids[k] = self.store.new_id("room")
        return ids

    def _assign(self, seg: RoomSegmentation, ids: dict[int, str], t: int) -> None:
        for node, a in list(self.store._graph.nodes(data=True)):
            if a["kind"] not in ROOMED_KINDS or affords(a.get("cls", "")).structure:
                continue
            seen = () if a["kind"] == "place" else (int(a.get(when, -1)) for when in ("first_seen", "last_seen"))
            eyes = [eye[:2] for eye in (self.store.log.position_at(AGENT, step) for step in seen) if eye is not None]
            k = seg.room_at(a["position"], eyes)
            room = ids.get(k, "")
            if a.get("room", "") != room:
                self.store.set(node, t, "room", {"room": room})

    def _link(self, seg: RoomSegmentation, ids: dict[int, str], t: int) -> None:
        links: dict[str, set[str]] = {node: set() for node in ids.values()}
        for door in seg.doorways:
            a, b = ids[door.rooms[0]], ids[door.rooms[1]]
            links[a].add(b)
            links[b].add(a)
        for node, want in links.items():
            have = set(self.store._graph.nodes[node].get("links", ()))
            self.store._graph.remove_edges_from((node, other, "connects") for other in have - want)  # missing: skipped
            self.store._graph.add_edges_from((node, other, "connects", {"rel": "connects"}) for other in want)
            if have != want:
                self.store.set(node, t, "connected", {"links": tuple(sorted(want))})

    def _name(self, room: str, cfg: RoomConfig, t: int) -> None:
        held = {a.get("cls") for _, a in self.store._graph.nodes(data=True) if a.get("room") == room}
        votes = {name: len(cues & held) for name, cues in cfg.names.items()}
        top = max(votes.values(), default=0)
        best = [name for name, v in votes.items() if v == top]
        name = best[0] if top > 0 and len(best) == 1 else ""
        if self.store._graph.nodes[room].get("name", "") != name:
            self.store.set(room, t, "named", {"name": name})
