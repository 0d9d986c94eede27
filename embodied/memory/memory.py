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
from embodied.memory.articulation import Articulation
from embodied.memory.association import BESIDE_SLACK, LIT, PUSHED
from embodied.memory.config import MemoryConfig, kind_of
from embodied.memory import persistence
from embodied.memory.events import ADD, DELETE, UPDATE, EventLog
from embodied.memory.gating import centred_over, piece_of_view
from embodied.memory.permanence import Permanence
from embodied.memory.query import Queries
from embodied.memory.rejoin import Rejoining
from embodied.memory.room_nodes import RoomTracking
from embodied.memory.spatial import relations
from embodied.memory.node_rows import HolderMemo, NodeRows
from embodied.memory.tracker import Tracking
from embodied.memory.tracks import Track
from embodied.perception.colour import same_colour
from embodied.perception.types import Frame

# A lit thing's view at the image's edge makes a node once seen STEADY_FRAMES frames running in one place (its
# centre moving under STEADY_REACH m a frame), with no node of its class within STEADY_ALONE m.
STEADY_FRAMES = 3
STEADY_REACH = 0.005
STEADY_ALONE = 0.2


class SpatialMemory(Tracking, Articulation, Permanence, Rejoining, AgentTracking, RoomTracking, Queries):
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
        self.grip = {"width": None, "closed": False, "holding": "", "grasp_width": 0.0, "offset": (0.0, 0.0, 0.0),
                     "tcp": None}
        self.current_place = ""
        self._edges_dirty = False
        self._parts_dirty: set[str] = set()
        self._renamed: set[str] = set()  # nodes renamed by their class votes this frame (Rejoining._rejoin_renamed)
        self.together: set[tuple[str, str]] = set()  # node pairs seen at once: never merged
        self._frame_dets: dict[str, list] = {}  # the current frame's detections by camera (Association)
        # (camera, class) -> [(centre (3,) m, frames running, last step)]: views at the image's edge that made
        # no node yet (see _steady_at_edge)
        self._edge_views: dict[tuple[str, str], list[tuple[np.ndarray, int, int]]] = {}
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
        self._frame_dets = by_camera
        for dets in by_camera.values():
            if self.config.drawer_pieces:
                dets = self._carve_objects_from_drawers(self._carve_drawers_from_housings(dets))
                dets = self._join_drawer_pieces(dets)
            dets = self._drop_drawer_lookalikes(dets)
            if self.config.object_pieces:
                dets = self._join_object_pieces(self._drop_merged_views(dets))
            taken_here: set[str] = set()
            here: set[str] = set()
            paired = self._associate(dets, taken_here)
            views = [det for det, node, _ in paired if node is not None]
            for det, node, ov in paired:
                if node is None:
                    if piece_of_view(det, views, self.config.colour_tolerance):
                        continue  # a sliver of a thing this camera sees now, not a second one
                    if det.truncated and not self.config.new_from_truncated and kind_of(det.label) != "surface" \
                            and not (det.label in LIT and self._steady_at_edge(det, t)):
                        continue  # a piece at the image's edge waits for a whole view to become an object
                    if self._in_hand(det):
                        continue  # a glimpse between the fingers of what the hand holds, not a second one
                    if self._beside_pushed(det):
                        continue  # a sliver of a button's base, not a second button
                    node = self._add(det, t)
                else:
                    self._observe(node, det, t, ov)
                here.add(node)
            self._note_together(here)
            seen |= here
        self._merge_duplicates(t, seen)
        if self._renamed:
            self._rejoin_renamed(t)
        seen &= set(self._graph.nodes)
        for cls in sorted(self._parts_dirty):
            self._drawer_states(cls, t)
        self._parts_dirty.clear()
        self._proprio(frame.proprio, frame.views, t, seen)
        self._permanence(frame.views, seen, t)
        self._look(frame.views)

    def _steady_at_edge(self, det, t: int) -> bool:
        """Whether the camera has seen this view at the image's edge, of its class, in one place (centre within
        STEADY_REACH) for STEADY_FRAMES frames running. A moving camera's pieces at the edge jump from frame to
        frame; a screen standing at the scene camera's edge is seen there alike every frame, and waiting for a
        whole view it never entered memory (one randomized look: the agent never saw the colour it showed,
        RememberColor 930007, nor its flashes, CountFlashes 930007). Asked of things that light up only (LIT:
        screens, buttons), whose looks over time are the cue, and before their first flash (3 steps in)."""
        runs = [r for r in self._edge_views.get((det.camera, det.label), []) if r[2] >= t - 1]
        centre = np.asarray(det.center, dtype=np.float64)
        for k, (c, n, last) in enumerate(runs):
            if last == t - 1 and np.linalg.norm(c - centre) < STEADY_REACH:
                runs[k] = (c, n + 1, t)
                break
        else:
            runs.append((centre, 1, t))
            k = len(runs) - 1
        self._edge_views[det.camera, det.label] = runs
        if runs[k][1] < STEADY_FRAMES:
            return False
        # Only for a thing memory lacks: the wrist camera's steady sliver of a screen memory holds (its base, in
        # another colour than the face) made a second screen that took the scene camera's views of the first,
        # and its flashes went uncounted (CountFlashes 930091, default look).
        return all(np.linalg.norm(self.tracks[n].center - centre) > STEADY_ALONE for n in self._find(cls=det.label))

    # --- edges -----------------------------------------------------------------------
    def _beside_pushed(self, det) -> bool:
        """Whether a view of a pressed-in-place class (a button) nothing matched has its centre within
        BESIDE_SLACK of the box of a remembered one: a sliver of its base beside it. Buttons stand a hand's
        width apart; such a sliver had made a second button that then took the first one's views, and its
        flashes were logged on the wrong place (SequenceRecall 930053, randomized look)."""
        if det.label not in PUSHED:
            return False
        centre = (det.box_min + det.box_max)[None, :2] / 2
        return any(centred_over(centre, self.tracks[node].box_min[None], self.tracks[node].box_max[None],
                                BESIDE_SLACK)[0, 0] for node in self._find(cls=det.label))

    def _in_hand(self, det) -> bool:
        """Whether a detection nothing matched is a piece of the object the gripper holds: of its class
        and colour, within ``grasp_radius`` of its box. The fingers cut a held block into slivers of a
        few pixels; one had become a second red block beside the one carried, and the planner later
        fetched the ghost (StashAndFetch 920000 on the learned segmenter)."""
        reach = self.config.grasp_radius
        for node in self._physical():
            a = self._graph.nodes[node]
            if a["held"] and a["cls"] == det.label and same_colour(a["colour"], np.asarray(a["rgb"]), det.colour,
                                                                 det.rgb, self.config.colour_tolerance):
                track = self.tracks[node]
                gap = np.maximum(track.box_min - det.box_max, det.box_min - track.box_max).max()
                if gap < reach:
                    return True
        return False

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
        self.grip = {"width": None, "closed": False, "holding": "", "grasp_width": 0.0, "offset": (0.0, 0.0, 0.0),
                     "tcp": None}
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
