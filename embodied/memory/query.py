"""The memory's read API: the scene-graph store plus the questions planners and viewers ask of it.

Objects are named by node id (``block_0``) or by a description ``<colour> <class>`` (``red block``, or the
class alone when there is only one). Times are control steps.
"""

from __future__ import annotations

from collections import Counter

import networkx as nx
import numpy as np

from embodied.memory.store import SceneStore


class SceneQueries(SceneStore):
    def resolve(self, ref: str) -> str:
        """Node id of ``ref`` (an id, or "<colour> <class>" / "<class>" naming exactly one node)."""
        if ref in self._graph or ref in self.log.by_node:
            return ref
        words = ref.replace("_", " ").split()
        colour = words[0] if len(words) > 1 else None
        cls = "_".join(words[1:] if len(words) > 1 else words)
        found = self.find(cls=cls, colour=colour)
        if len(found) == 1:
            return found[0]
        if not found:
            known = sorted(n for n, a in self._graph.nodes(data=True) if a["kind"] != "agent")
            raise KeyError(f"nothing in memory matches {ref!r}; known objects: {known}")
        raise KeyError(f"{ref!r} is ambiguous: {found}")

    def find(self, cls: str | None = None, colour: str | None = None, kind: str | None = None,
             status: str | None = None) -> list[str]:
        """Node ids with the given class / colour name / kind / status (None: any), sorted; tentative nodes
        (seen fewer than the detector profile's ``min_sightings`` times) are left out."""
        return self.nodes_of(cls, kind, self.config.detector.min_sightings, colour, status)

    def once_named(self, cls: str) -> list[str]:
        """Node ids (sorted, tentative ones left out) whose views the detector named ``cls`` at least once,
        whatever class their votes made them since."""
        return [n for n in self.find() if n in self.tracks and self.tracks[n].votes.get(cls, 0) > 0]

    def tentative(self, node: str) -> bool:
        """Whether ``node`` was seen fewer than ``min_sightings`` times (``find`` leaves it out)."""
        least = self.config.detector.min_sightings
        return self._graph.nodes[node].get("n_obs", least) < least

    def related(self, node: str, rel: str) -> list[str]:
        """Targets of ``node``'s outgoing edges of relation ``rel``."""
        node = self.resolve(node)
        return sorted(v for _, v, k in self.graph.out_edges(node, keys=True) if k == rel)

    def where_is(self, obj: str) -> dict:
        """Where the object is now, as remembered: position (3,) m, status, containers/supports, room."""
        node = self.resolve(obj)
        if node not in self.graph:
            raise KeyError(f"{node!r} was deleted from memory at t={self.log.of_node(node)[-1].t}")
        a = self.graph.nodes[node]
        return {"node": node, "position": a["position"], "status": a.get("status", ""),
                "visible": a.get("visible", False), "in": self.related(node, "in"), "on": self.related(node, "on"),
                "room": self.room_of(node), "last_seen": a.get("last_seen", -1), "state": a.get("state", ""),
                "held": bool(a.get("held", False))}

    def where_was(self, obj: str, t: int) -> tuple[float, float, float] | None:
        """Position (3,) m of the object at time ``t`` (None: not yet seen by then)."""
        return self.log.position_at(self.resolve(obj), t)

    def last_seen(self, obj: str) -> int:
        node = self.resolve(obj)
        if node in self._graph:
            return int(self._graph.nodes[node]["last_seen"])
        return int(self.log.state_at(self.t).get(node, {}).get("last_seen", self.log.of_node(node)[-1].t))

    def history(self, obj: str) -> list[dict]:
        """Every logged event of the object, oldest first: {t, op, tag, data}."""
        return self.log.history(self.resolve(obj))

    def trajectory(self, obj: str) -> list[tuple[int, tuple[float, float, float]]]:
        """(t, position) each time the object's logged position changed."""
        return self.log.trajectory(self.resolve(obj))

    def objects_in(self, container: str) -> list[str]:
        """Objects in the container, seen there or remembered there while hidden."""
        node = self.resolve(container)
        return sorted(u for u, _, k in self.graph.in_edges(node, keys=True) if k == "in")

    def changed_between(self, t0: int, t1: int) -> dict[str, list[str]]:
        """Nodes with logged changes in (t0, t1], with the tags of their events in order."""
        out: dict[str, list[str]] = {}
        for e in self.log.between(t0, t1):
            out.setdefault(e.node, []).append(e.tag if e.op == "UPDATE" else f"{e.op.lower()}:{e.tag}")
        return out

    def notes(self, tag: str) -> list[tuple[int, str]]:
        """(t, text) of the agent's own notes tagged ``tag`` ("instruction", "plan", ...), oldest first."""
        return [(e.t, str(e.data.get("note", ""))) for e in self.log.of_tag(tag) if e.node == "agent"]

    def when(self, tag: str, obj: str | None = None) -> list[int]:
        """Times of events tagged ``tag`` (grasp, release, opened, closed, pressed, moved, missing, ...)."""
        if obj is None:
            return list(self.log.tag_times.get(tag, ()))  # a copy of the log's own list
        node = self.resolve(obj)
        of_node, of_tag = self.log.by_node.get(node), self.log.by_tag.get(tag)
        if not of_node or not of_tag:
            return []
        # Both indexes ascend: bisect the tag's (100k events for "seen") for each of the node's (a few hundred).
        mine, tagged = np.frombuffer(of_node, dtype=np.int64), np.frombuffer(of_tag, dtype=np.int64)
        at = np.minimum(np.searchsorted(tagged, mine), len(tagged) - 1)
        return np.frombuffer(self.log.times, dtype=np.int64)[mine[tagged[at] == mine]].tolist()

    def room_of(self, obj: str) -> str:
        """Room node the object (or place) is in ("" if rooms are unknown; see ``update_rooms``)."""
        node = self.resolve(obj)
        rooms = [v for _, v, k in self.graph.out_edges(node, keys=True) if k == "in_room"]
        return rooms[0] if rooms else ""

    def places(self) -> list[str]:
        return self.find(kind="place")

    def nearest_place(self, position) -> str:
        places = self.places()
        if not places:
            raise KeyError("memory has no place nodes (places come from the agent's travels)")
        p = np.asarray(position, dtype=np.float64)[:2]
        d = [np.linalg.norm(np.asarray(self._graph.nodes[n]["position"])[:2] - p) for n in places]
        return places[int(np.argmin(d))]

    def path(self, a: str, b: str) -> list[str]:
        """Shortest path of place ids between two places or objects (their nearest places)."""
        ends = []
        for ref in (a, b):
            node = self.resolve(ref)
            kind = self.graph.nodes[node]["kind"] if node in self.graph else ""
            ends.append(node if kind == "place" else self.nearest_place(self.graph.nodes[node]["position"]))
        places = nx.Graph(self._place_graph())
        places.add_nodes_from(ends)
        try:
            return nx.shortest_path(places, ends[0], ends[1], weight="weight")
        except nx.NetworkXNoPath:
            raise KeyError(f"no known path between {ends[0]!r} and {ends[1]!r}") from None

    def _place_graph(self) -> nx.Graph:
        """The places joined by the robot's travels, edges weighted by length (m); kept until a node comes or
        goes or a link is made (places never move). Do not modify: ``path`` copies it."""
        places = self.place_nodes()
        links = len(self.log.tag_times.get("connected", ()))
        cached = self._place_paths
        if cached[0] is places and cached[1] == links:
            return cached[2]
        g = nx.Graph()
        graph = self.graph
        kinds = graph.nodes(data="kind")
        # The places' edges in the order of graph.edges() (the same path on ties), without walking every edge.
        for u, v, k in graph.out_edges([n for n, kind in kinds if kind == "place"], keys=True):
            if k == "connects" and kinds[v] == "place":
                pu, pv = (np.asarray(graph.nodes[n]["position"]) for n in (u, v))
                g.add_edge(u, v, weight=float(np.linalg.norm(pu - pv)))
        self._place_paths = (places, links, g)
        return g

    def summary(self) -> dict:
        """Counts for reports: nodes by kind, edges by relation, events."""
        kinds = dict(Counter(a["kind"] for _, a in self.graph.nodes(data=True)))
        rels = dict(Counter(k for _, _, k in self.graph.edges(keys=True)))
        return {"t": self.t, "nodes": kinds, "edges": rels, "events": len(self.log), "noops": self.log.noops}
