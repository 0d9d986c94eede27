"""The scene-graph store: the graph, the episodic log and each node's track, with no perception logic.

Every change goes through ``add_node`` / ``set`` / ``delete``, which write the graph and log one event, so
the graph at any past time can be rebuilt from the log (``snapshot``). Geometric edges are brought up to
date when the graph is read after something moved.

Nodes (``graph``, a MultiDiGraph keyed by relation) carry:
    kind        object | container | articulated | surface | place | room | agent
    cls, colour, rgb (3,) [0,1];  position (3,) m, box centre;  box_min, box_max (3,) m
    first_seen, last_seen (steps), last_update (step of the last logged change)
    visible     seen in the latest frame;  status: visible | occluded | missing | out_of_view | unseen | hidden
                | held;  unseen_since (step or -1)
    state       articulation: open | closed | pressed | released | ""
    inside      remembered container of an unseen object ("" if none);  held, n_obs, confidence, articulated
    room        the room node it stands in ("" or absent: none known)
Edges (rel): on, in, near, part_of, in_room, connects.
"""

from __future__ import annotations

import networkx as nx

from embodied.memory.affordances import PHYSICAL
from embodied.memory.config import MemoryConfig
from embodied.memory.events import ADD, DELETE, UPDATE, EventLog
from embodied.memory.node_rows import NodeRows
from embodied.memory.spatial import relations
from embodied.memory.tracks import Track

AGENT = "agent"


class SceneStore:
    def __init__(self, config: MemoryConfig):
        self.config = config
        self._graph = nx.MultiDiGraph()
        self.log = EventLog(config.log.keyframe_every)
        self.tracks: dict[str, Track] = {}
        self.t = -1
        self.counters: dict[str, int] = {}
        self._edges_dirty = False
        self._kinds: tuple | None = None  # (node count, physical nodes, place nodes), see _kind_index
        self._rows = NodeRows()
        self._place_paths: tuple = (None, -1, None)  # (places list, links made, nx.Graph), see _place_graph

    @property
    def graph(self) -> nx.MultiDiGraph:
        """The scene graph now, its geometric edges brought up to date."""
        if self._edges_dirty:
            self._refresh_edges()
        return self._graph

    @graph.setter
    def graph(self, value: nx.MultiDiGraph) -> None:
        self._graph = value
        self._kinds = None

    # --- node bookkeeping -------------------------------------------------------------
    def new_id(self, cls: str) -> str:
        k = self.counters.get(cls, 0)
        self.counters[cls] = k + 1
        return f"{cls}_{k}"

    def add_node(self, node: str, attrs: dict, t: int, tag: str) -> None:
        self.log.append(t, ADD, node, tag, _compact(attrs, {}))
        attrs["last_update"] = t  # the log derives it from the event time
        self._graph.add_node(node, **attrs)
        self._kinds = None
        self._edges_dirty = True

    def set(self, node: str, t: int, tag: str, changes: dict) -> None:
        """Write changed attributes to the graph and log them as one UPDATE (a NOOP if none changed)."""
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
        """Forget a node (a merged duplicate, a room no longer there); the log keeps its history."""
        if node not in self._graph:
            raise KeyError(f"no node {node!r} in memory")
        self._graph.remove_node(node)
        self._kinds = None
        self.tracks.pop(node, None)
        self.log.append(self.t if t is None else t, DELETE, node, tag)
        self._edges_dirty = True

    def physical(self) -> list[str]:
        """Physical node ids in graph order (kept between frames; do not modify the list)."""
        return self._kind_index()[1]

    def place_nodes(self) -> list[str]:
        return self._kind_index()[2]

    def rows(self) -> NodeRows:
        """The physical nodes' boxes, velocities, attribute dicts and tracks as rows, up to date now."""
        return self._rows.sync(self.physical(), self._graph, self.tracks)

    def _kind_index(self) -> tuple[int, list[str], list[str]]:
        """(node count, physical nodes, place nodes) in graph order, redone when a node comes, goes or changes kind."""
        if self._kinds is None or self._kinds[0] != len(self._graph):
            kinds = self._graph.nodes(data="kind")
            physical, places = [n for n, k in kinds if k in PHYSICAL], [n for n, k in kinds if k == "place"]
            self._kinds = (len(self._graph), physical, places)
        return self._kinds

    def nodes_of(self, cls: str | None = None, kind: str | None = None, least: int = 1, colour: str | None = None,
                 status: str | None = None) -> list[str]:
        """Node ids of a class, kind, colour name and status (None: any) seen at least ``least`` times, sorted."""
        return sorted(n for n, a in self._graph.nodes(data=True) if a.get("n_obs", least) >= least
                      and (cls is None or a.get("cls") == cls) and (kind is None or a.get("kind") == kind)
                      and (colour is None or a.get("colour") == colour)
                      and (status is None or a.get("status") == status))

    def _refresh_edges(self) -> None:
        """Bring the geometric edges up to date (diffing keeps networkx work small)."""
        want = relations(dict(self._graph.nodes(data=True)), self.config.relations)
        have = {(u, v, k) for u, v, k in self._graph.edges(keys=True) if k != "connects"}
        self._graph.remove_edges_from(have - want)
        self._graph.add_edges_from((u, v, k, {"rel": k}) for u, v, k in want - have)
        self._edges_dirty = False

    # --- the agent's own notes -------------------------------------------------------------
    def note(self, t: int, tag: str, text: str) -> None:
        """Log what the agent did or decided (plan, skill_failed, replan, ...) as an event of the agent node at
        step ``t`` (clamped so the log stays in time order)."""
        if AGENT in self._graph:
            self.log.append(max(int(t), self.log.last_t, self.t), UPDATE, AGENT, tag, {"note": str(text)})

    def hear(self, t: int, text: str) -> None:
        """Log the instruction (the goal text) heard at step ``t`` when it differs from the last one."""
        heard = self.log.of_tag("instruction")
        if text and not (heard and heard[-1].data.get("note") == text):
            self.note(t, "instruction", text)

    # --- time travel ------------------------------------------------------------------------
    def snapshot(self, t: int) -> nx.MultiDiGraph:
        """The scene graph as it stood at time ``t``, rebuilt from keyframe + deltas."""
        now = min(t, self.t)
        nodes = self.log.state_at(t, own=True)  # the graph's own copies, as networkx would make
        for attrs in nodes.values():
            if attrs.get("visible"):
                attrs["last_seen"] = max(attrs.get("last_seen", now), now)
        edges = list(relations(nodes, self.config.relations))
        edges += [(node, other, "connects") for node, attrs in nodes.items()
                  for other in attrs.get("links", ()) if other in nodes]
        return graph_of(nodes, edges)


def graph_of(nodes: dict[str, dict], edges: list[tuple[str, str, str]]) -> nx.MultiDiGraph:
    """A MultiDiGraph of ``nodes`` (id -> attribute dict, taken as the graph's own) and edges (u, v, key),
    ``rel=key``, written straight into networkx's dict-of-dicts: three times faster than ``add_edges_from``."""
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
    """What the log stores of a change: a box as its size, only when that changed (the centre is the position;
    ``EventLog`` derives box_min/box_max)."""
    if "box_min" not in changes and "box_max" not in changes:
        return changes
    out = {k: v for k, v in changes.items() if k not in ("box_min", "box_max")}
    lo, hi = (changes.get(k, before.get(k)) for k in ("box_min", "box_max"))
    size = (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2])
    old = before.get("box_min"), before.get("box_max")
    if old[0] is None or any(abs((h - l) - s) > 1e-4 for l, h, s in zip(old[0], old[1], size)):
        out["size"] = size
    if "position" not in out:
        out["position"] = ((lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2)
    return out
