"""Per-node arrays that the per-frame passes (association, permanence) read, kept between frames.

Every frame's gating, visibility and containment tests read the boxes of hundreds of remembered objects;
building the arrays from the tracks each frame costs more than the tests, so they are refreshed by row:

- rows follow the physical-node list of ``SceneStore._kind_index``, replaced (never modified) when a node
  is added, deleted or changes kind: a new list (or graph) rebuilds every row;
- a track reports each replacement of its ``box_min``, ``box_max``, ``prev_box`` or ``velocity``
  (``Track.watch``) and only those rows are read again (the one in-place write, ``Track._complete_height``,
  follows a replacement in the same call).

Shapes: ``lo``, ``hi``, ``velocity``, ``prev_lo``, ``prev_hi`` (N,3) float64 m (m per step for velocity;
NaN where a track has no previous box), N physical nodes.
"""

from __future__ import annotations

import numpy as np

from embodied.memory.tracks import Track


class NodeRows:
    """Boxes and velocities of the physical nodes, with their attribute dicts and tracks, by row."""

    def __init__(self) -> None:
        self.tracks: list[Track] = []
        self._rebuild([], None, {})  # no rows

    def sync(self, nodes: list[str], graph, tracks: dict[str, Track]) -> NodeRows:
        """Bring every row up to date with ``nodes`` (the physical-node list), the graph and the tracks."""
        if nodes is not self.nodes or graph is not self.graph:
            self._rebuild(nodes, graph, tracks)
        elif self._dirty:
            for i in {self._row_of.get(k, -1) for k in self._dirty} - {-1}:
                track = self.tracks[i]
                self.lo[i], self.hi[i], self.velocity[i] = track.box_min, track.box_max, track.velocity
                self.prev_lo[i], self.prev_hi[i] = track.prev_box if track.prev_box is not None else (np.nan, np.nan)
            self._dirty.clear()
        return self

    def _rebuild(self, nodes: list[str], graph, tracks: dict[str, Track]) -> None:
        for track in self.tracks:
            track.watch(None)
        self.nodes, self.graph = nodes, graph
        self.tracks = [tracks[n] for n in nodes]
        self.attrs = [graph.nodes[n] for n in nodes]  # the graph's own dicts (mutated in place by the memory)
        self.kind = np.array([a["kind"] for a in self.attrs], dtype=object)  # a kind change makes a new list
        self.row = {n: i for i, n in enumerate(nodes)}
        self.lo = np.array([tr.box_min for tr in self.tracks], dtype=np.float64).reshape(-1, 3)
        self.hi = np.array([tr.box_max for tr in self.tracks], dtype=np.float64).reshape(-1, 3)
        self.velocity = np.array([tr.velocity for tr in self.tracks], dtype=np.float64).reshape(-1, 3)
        self.prev_lo = np.full((len(nodes), 3), np.nan)  # a container's box a frame ago, NaN where none
        self.prev_hi = np.full((len(nodes), 3), np.nan)
        for i, track in enumerate(self.tracks):
            if track.prev_box is not None:
                self.prev_lo[i], self.prev_hi[i] = track.prev_box
        self._dirty: list[int] = []  # ids of tracks that replaced a watched array since the last sync
        self._row_of = {id(tr): i for i, tr in enumerate(self.tracks)}
        for track in self.tracks:
            track.watch(self._dirty)

    def stale_rows(self, tracks: dict[str, Track]) -> list[str]:
        """For tests: the nodes whose row differs from their track (none, unless one changed behind the watch)."""
        stale = []
        for i, node in enumerate(self.nodes or ()):
            track = tracks[node]
            prev = track.prev_box if track.prev_box is not None else (np.full(3, np.nan), np.full(3, np.nan))
            same = (track is self.tracks[i] and np.array_equal(self.lo[i], track.box_min)
                    and np.array_equal(self.hi[i], track.box_max) and np.array_equal(self.velocity[i], track.velocity)
                    and np.array_equal(self.prev_lo[i], prev[0], equal_nan=True)
                    and np.array_equal(self.prev_hi[i], prev[1], equal_nan=True))
            if not same:
                stale.append(node)
        return stale
