"""SpatialMemory: a spatial scene graph (networkx) with an episodic event log.

    memory = SpatialMemory()
    for t, obs in enumerate(observations):
        memory.update(perceive(obs, t))
    memory.where_is("block_0"); memory.where_was("block_0", t=3); memory.snapshot(t=3)

Nodes (``memory.graph``, a MultiDiGraph keyed by relation) carry:
    kind        object | container | articulated | surface | place | room | agent
    cls, colour, rgb (3,) [0,1]
    position    (3,) m, box centre;  box_min, box_max (3,) m
    first_seen, last_seen (steps), last_update (step of the last logged change)
    visible     seen in the latest frame;  status: visible | occluded | missing
                | out_of_view | unseen | hidden | held;  unseen_since (step or -1)
    state       articulation: open | closed | pressed | released | ""
    inside      remembered container of an unseen object ("" if none)
    held, n_obs, confidence
    room        the room node it stands in ("" or absent: none known; see ``update_rooms``)
Room nodes (``update_rooms(freespace)``, from the robot's own free-space map) add
    name (kitchen, bedroom, ... or ""), area (m^2), links (rooms sharing a doorway).
Edges (rel): on, in, near, part_of, in_room, connects; recomputed from
geometry (see ``spatial.relations``) when the graph is read after something moved;
connects edges join consecutive places and rooms that share a doorway.
"""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np

from embodied.memory.agent import AGENT, AgentTracking
from embodied.memory.config import HOUSING_CLASSES, MemoryConfig, kind_of
from embodied.memory import persistence
from embodied.memory.events import ADD, DELETE, UPDATE, EventLog
from embodied.memory.permanence import Permanence
from embodied.memory.query import Queries
from embodied.memory.room_nodes import RoomTracking
from embodied.memory.spatial import relations
from embodied.memory.node_rows import HolderMemo, NodeRows
from embodied.memory.tracker import Tracking
from embodied.memory.tracks import Track
from embodied.perception.types import Frame


class SpatialMemory(Tracking, Permanence, AgentTracking, RoomTracking, Queries):
    """Scene graph + event log, fed one perception :class:`Frame` at a time."""

    def __init__(self, config: MemoryConfig | None = None, **knobs):
        if config is not None and knobs:
            raise ValueError("pass either a MemoryConfig or keyword knobs, not both")
        self.config = config or MemoryConfig(**knobs)
        self.config.validate()
        self._graph = nx.MultiDiGraph()
        self.log = EventLog(self.config.keyframe_every)
        self.tracks: dict[str, Track] = {}
        self.t = -1
        self.counters: dict[str, int] = {}
        # Gripper state machine (workcell proprioception).
        self.grip = {"width": None, "closed": False, "holding": "", "grasp_width": 0.0, "offset": (0.0, 0.0, 0.0)}
        self.current_place = ""
        self._edges_dirty = False
        self._parts_dirty: set[str] = set()
        self.together: set[tuple[str, str]] = set()  # node pairs seen at once: never merged
        self.changed: set[str] = set()
        self.frames = 0
        self._eyes: dict[str, float] = {}  # camera -> height (m) in the current frame
        self._optics: dict[str, tuple[np.ndarray, float]] = {}  # camera -> (position (3,) m, focal length px)
        # Ground cells the cameras have looked at (see Tracking._look); None: not kept (an old file).
        self._looked: set[int] | None = set()
        self._look_pose: dict[str, np.ndarray] = {}  # camera -> its 4x4 pose when last read for cells
        self._kinds: tuple[int, list[str], list[str]] | None = None  # see Tracking._kind_index
        self._rows = NodeRows()  # the physical nodes' boxes as arrays, kept between frames (see node_rows)
        self._holder_memo = HolderMemo()  # each lost object's container (Permanence._permanence)
        self._place_xy: tuple[list | None, np.ndarray] = (None, np.zeros((0, 2)))  # places xy (AgentTracking._places)
        self._place_paths: tuple = (None, -1, None)  # (places list, links made, nx.Graph): Queries._place_graph

    @property
    def graph(self) -> nx.MultiDiGraph:
        """The scene graph now. Geometric edges are brought up to date on access, not every frame:
        a frame costs nothing for edges nobody looks at."""
        if self._edges_dirty:
            self._refresh_edges()
        return self._graph

    @graph.setter
    def graph(self, value: nx.MultiDiGraph) -> None:
        self._graph = value
        self._kinds = None

    # --- node bookkeeping -------------------------------------------------
    def _new_id(self, cls: str) -> str:
        k = self.counters.get(cls, 0)
        self.counters[cls] = k + 1
        return f"{cls}_{k}"

    def _add_node(self, node: str, attrs: dict, t: int, tag: str) -> None:
        self.log.append(t, ADD, node, tag, _compact(attrs, {}))
        attrs["last_update"] = t  # the log derives it from the event time
        self._graph.add_node(node, **attrs)
        self._kinds = None
        self._edges_dirty = True

    def _set(self, node: str, t: int, tag: str, changes: dict) -> None:
        """Write changed attributes to the graph and log them as one UPDATE."""
        a = self._graph.nodes[node]
        diff = {k: v for k, v in changes.items() if a.get(k) != v}
        if not diff:
            self.log.append(t, "NOOP", node, tag)
            return
        self.log.append(t, UPDATE, node, tag, _compact(diff, a))
        a.update(diff)
        a["last_update"] = t
        if "kind" in diff:
            self._kinds = None
        if any(k in diff for k in ("position", "box_min", "inside", "kind", "room", "held")):
            self._edges_dirty = True

    def delete(self, node: str, t: int | None = None, tag: str = "deleted") -> None:
        """Forget a node (e.g. a merged duplicate); the log keeps its history."""
        if node not in self._graph:
            raise KeyError(f"no node {node!r} in memory")
        t = self.t if t is None else t
        self._graph.remove_node(node)
        self._kinds = None
        self.tracks.pop(node, None)
        self.log.append(t, DELETE, node, tag)
        self._edges_dirty = True

    # --- the update ------------------------------------------------------------
    def update(self, frame: Frame) -> None:
        """Fold one perception frame (objects, camera views, proprio) into memory."""
        t = int(frame.t)
        if t < self.t:
            raise ValueError(f"frame time {t} is before the memory's time {self.t}: frames must come in order")
        self.t = t
        self.frames += 1
        self.changed: set[str] = set()  # nodes whose geometry changed this frame
        self._eyes = {v.name: float(v.cam_to_world[2, 3]) for v in frame.views}
        self._optics = {v.name: (v.cam_to_world[:3, 3], float(v.K[0, 0])) for v in frame.views}
        seen: set[str] = set()
        by_camera: dict[str, list] = {}
        for det in frame.objects:
            by_camera.setdefault(det.camera, []).append(det)
        for dets in by_camera.values():
            taken_here: set[str] = set()
            here: set[str] = set()
            for det, node, ov in self._associate(dets, taken_here):
                if node is None:
                    if det.truncated and not self.config.new_from_truncated and kind_of(det.label) != "surface":
                        continue  # a piece at the image's edge waits for a whole view to become an object
                    node = self._add(det, t)
                else:
                    self._observe(node, det, t, ov)
                here.add(node)
            self._note_together(here)
            seen |= here
        self._merge_duplicates(t, seen)
        seen &= set(self._graph.nodes)
        for cls in sorted(self._parts_dirty):
            self._drawer_states(cls, t)
        self._parts_dirty.clear()
        self._proprio(frame.proprio, frame.views, t, seen)
        self._permanence(frame.views, seen, t)
        self._look(frame.views)

    # --- articulation -----------------------------------------------------------------
    def _articulation(self, node: str, t: int) -> None:
        """Drawer open/closed and button pressed/released from observed geometry."""
        a = self._graph.nodes[node]
        if not a.get("articulated"):
            return
        cfg = self.config
        track = self.tracks[node]
        rest = track.rest
        if a["cls"] in ("button", "switch"):
            if a.get("pressed_by") == "agent":
                return  # the robot's own press is judged from proprioception (see _touch)
            # The cap travels down when pressed: compare its top with the highest top seen.
            top = float(track.box_max[2])
            rest["top"] = max(rest.get("top", top), top)
            state = "pressed" if top < rest["top"] - cfg.button_press_delta else "released"
        else:
            found = self._drawer_travel(node, track)
            if found is None:
                return
            travel, outward = found
            if "now" in rest and abs(travel - rest["now"]) > 1e-3:
                # What was hidden in the drawer slides with it (a block shut in stays behind its front);
                # the slide is kept for what gets shut in during this very frame (see _permanence).
                slide = (travel - rest["now"]) * outward
                rest.update(slid_x=float(slide[0]), slid_y=float(slide[1]), slid_t=float(t))
                self._carry_contents(node, slide, t)
            rest["now"] = travel
            # Closed is the least travel seen on a part of this class (all drawers of a row
            # look alike), so a drawer first seen open still reads open once a shut one is seen.
            rest["travel"] = min(rest.get("travel", travel), travel)
            self._parts_dirty.add(a["cls"])  # judged once per frame, when every part has been seen
            return
        if state != a["state"]:
            self._set(node, t, state, {"state": state})

    def _drawer_states(self, cls: str, t: int) -> None:
        """Open/closed for every part of a class against the row's reference travel."""
        parts = [n for n in self._find(cls=cls) if "now" in self.tracks[n].rest]
        if not parts:  # the frame's parts were merged into nodes not yet placed in a housing
            return
        # The median of the rests, so one drawer seen half-hidden does not move the reference; parts
        # seen a tenth as often as the best seen (fleeting fragments) do not vote.
        most = max(self._graph.nodes[n]["n_obs"] for n in parts)
        voters = [n for n in parts if self._graph.nodes[n]["n_obs"] * 10 >= most] or parts
        ref = float(np.median([self.tracks[n].rest["travel"] for n in voters]))
        for n in parts:
            rest = self.tracks[n].rest
            state = "open" if rest["now"] > ref + self.config.drawer_open_delta else "closed"
            before = self._graph.nodes[n]["state"]
            if state == before:
                continue
            if before and abs(rest["now"] - rest.get("judged", rest["now"])) < self.config.drawer_open_delta / 2:
                continue  # the part did not slide: the reference moved (a new view of the row), not the drawer
            rest["judged"] = rest["now"]
            self._set(n, t, "opened" if state == "open" else "closed", {"state": state})

    def _drawer_travel(self, node: str, track) -> tuple[float, np.ndarray] | None:
        """How far a sliding part sticks out of its housing (m) and the outward direction (3,);
        None while no housing is known.

        The housing is the one whose footprint, grown by 3 cm (a shut drawer's
        front sits just outside it), overlaps the part's footprint most.
        """
        lo, hi = track.box_min, track.box_max
        best, best_area, outward = None, 0.0, np.zeros(3)
        for other in self._find(kind="surface"):
            if self._graph.nodes[other]["cls"] not in HOUSING_CLASSES:
                continue
            h = self.tracks[other]
            w = np.minimum(hi[:2], h.box_max[:2] + 0.03) - np.maximum(lo[:2], h.box_min[:2] - 0.03)
            area = float(np.prod(np.clip(w, 0, None)))
            if area > best_area:
                best_area = area
                out = (h.box_min[0] - lo[0], h.box_min[1] - lo[1], hi[0] - h.box_max[0], hi[1] - h.box_max[1])
                k = int(np.argmax(out))
                best = float(out[k])
                outward = np.zeros(3)
                outward[k % 2] = -1.0 if k < 2 else 1.0
        if best is not None:
            return best, outward
        if self._graph.nodes[node]["cls"] != "drawer_unit":
            return None
        # A drawer unit modelled as one entity grows longer as it opens (nothing to carry along).
        return float(max(hi[0] - lo[0], hi[1] - lo[1])), np.zeros(3)

    # --- edges -----------------------------------------------------------------------
    def _refresh_edges(self) -> None:
        """Bring the geometric edges up to date (diffing keeps networkx work small)."""
        want = relations(dict(self._graph.nodes(data=True)), self.config)
        have = {(u, v, k) for u, v, k in self._graph.edges(keys=True) if k != "connects"}
        for u, v, k in have - want:
            self._graph.remove_edge(u, v, key=k)
        for u, v, k in want - have:
            self._graph.add_edge(u, v, key=k, rel=k)
        self._edges_dirty = False

    # --- the agent's own notes -----------------------------------------------------------
    def note(self, t: int, tag: str, text: str) -> None:
        """Log what the agent did or decided (plan, skill_failed, replan, ...) as an event of the
        agent node at step ``t`` (clamped so the log stays in time order)."""
        if AGENT not in self._graph:
            return
        self.log.append(max(int(t), self.log.last_t, self.t), UPDATE, AGENT, tag, {"note": str(text)})

    def hear(self, t: int, text: str) -> None:
        """Log the instruction (the goal text) the robot is given at step ``t`` when it differs from the
        last one heard: instructions are events too, recalled through ``notes("instruction")``."""
        heard = self.log.of_tag("instruction")
        if text and not (heard and heard[-1].data.get("note") == text):
            self.note(t, "instruction", text)

    # --- persistence (see embodied.memory.persistence) ----------------------------------
    def save(self, path) -> Path:
        return persistence.save(self, path)

    @classmethod
    def load(cls, path) -> SpatialMemory:
        return persistence.load(path, cls)

    def state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON document, arrays): the memory exactly as it stands, saving nothing of it unchanged
        (see ``persistence.state``); ``from_state`` rebuilds it."""
        return persistence.state(self)

    @classmethod
    def from_state(cls, doc: dict, arrays: dict[str, np.ndarray]) -> SpatialMemory:
        return persistence.from_state(doc, arrays, cls)

    def start_episode(self, gap: int) -> int:
        """Carry this memory into a new episode in the same place (the next day: same rooms, objects may
        have moved): its clock jumps ``gap`` steps past the last frame, so events stay in time order and
        nothing of the last episode counts as a few steps ago (hand-offs, motion prediction); the robot
        was moved (no place edge from where it stood) and holds nothing; tracks stand still. Returns the
        memory time of the new episode's first step."""
        if gap < 1:
            raise ValueError(f"gap must be >= 1, got {gap}")
        start = max(self.t, self.log.last_t, -1) + int(gap)
        self.t = start - 1
        self.current_place = ""
        self.grip = {"width": None, "closed": False, "holding": "", "grasp_width": 0.0, "offset": (0.0, 0.0, 0.0)}
        self._look_pose = {}
        for node, track in self.tracks.items():
            track.velocity = np.zeros(3)
            if self._graph.nodes[node].get("held"):
                self._set(node, start, "release", {"held": False})
        return start

    def export_graphml(self, path, t: int | None = None):
        return persistence.export_graphml(self, path, t)

    # --- time travel -----------------------------------------------------------------
    def snapshot(self, t: int) -> nx.MultiDiGraph:
        """The scene graph as it stood at time ``t``, rebuilt from keyframe + deltas."""
        now = min(t, self.t)
        nodes = self.log.state_at(t, own=True)  # the graph's own copies, as networkx would make
        for attrs in nodes.values():
            if attrs.get("visible"):
                attrs["last_seen"] = max(attrs.get("last_seen", now), now)
        # The rules read the fresh copies, just made and still in cache, rather than the log's dicts.
        edges = list(relations(nodes, self.config))
        edges += [(node, other, "connects") for node, attrs in nodes.items()
                  for other in attrs.get("links", ()) if other in nodes]
        return graph_of(nodes, edges)


def graph_of(nodes: dict[str, dict], edges: list[tuple[str, str, str]]) -> nx.MultiDiGraph:
    """A MultiDiGraph of ``nodes`` (id -> attribute dict, taken as the graph's own) and keyed edges
    (u, v, key) with ``rel=key``, all between those nodes: what ``add_nodes_from`` and ``add_edges_from``
    build, written straight into networkx's adjacency dicts (its documented dict-of-dicts layout), three
    times faster for the ~1,500 edges of a 500-object house. tests/test_memory_fast_paths.py checks the two
    agree."""
    g = nx.MultiDiGraph()
    g._node.update(nodes)
    succ, pred = g._succ, g._pred
    succ.update({node: {} for node in nodes})
    pred.update({node: {} for node in nodes})
    for u, v, key in edges:
        out = succ[u]
        keyed = out.get(v)
        if keyed is None:
            out[v] = pred[v][u] = {key: {"rel": key}}
        else:
            keyed[key] = {"rel": key}
    return g


def _compact(changes: dict, before: dict) -> dict:
    """What the log stores of a change: boxes as their size, only when the size changed.

    The box centre is the position, so a moved object's event carries just its
    position; ``EventLog`` rebuilds box_min/box_max from position and size.
    """
    if "box_min" not in changes and "box_max" not in changes:
        return changes
    out = {k: v for k, v in changes.items() if k not in ("box_min", "box_max")}
    lo = changes.get("box_min", before.get("box_min"))
    hi = changes.get("box_max", before.get("box_max"))
    size = (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2])
    old = before.get("box_min"), before.get("box_max")
    if old[0] is None or any(abs((h - l) - s) > 1e-4 for l, h, s in zip(old[0], old[1], size)):
        out["size"] = size
    if "position" not in out:
        out["position"] = ((lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2)
    return out
