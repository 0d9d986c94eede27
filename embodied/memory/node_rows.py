"""Per-node arrays that the per-frame passes (association, permanence) read, kept between frames.

A house holds hundreds of remembered objects, and every frame's gating, visibility and containment
tests read all of their boxes. Building those arrays from the tracks each time costs more than the
tests themselves, so they are kept here and refreshed row by row:

- the row order is the physical-node list of ``SceneStore._kind_index``, a list object that is replaced
  (never modified) whenever a node is added, deleted or changes kind: a new list (or a new graph)
  rebuilds every row;
- each track of a row reports every replacement of its ``box_min``, ``box_max``, ``prev_box`` or ``velocity`` (see
  ``Track.watch``), and only those rows are read again. Tracks replace these arrays rather than write
  into them; the one in-place write (``Track._complete_height``) follows a replacement in the same call.
  A node's track object is only ever set when the node is added (a new list).

Every row re-read gets a new ``stamp`` from a counter that only grows (``clock`` is always past every
stamp), and a rebuild a new ``generation``: an answer computed from some rows at ``clock`` c still holds
while those rows' stamps stay below c.

Shapes: ``lo``, ``hi``, ``velocity``, ``prev_lo``, ``prev_hi`` (N,3) float64 m (m per step for velocity;
NaN where a track has no previous box), N physical nodes.
"""

from __future__ import annotations

import numpy as np

from embodied.memory.tracks import Track


class NodeRows:
    """Boxes and velocities of the physical nodes, with their attribute dicts and tracks, by row."""

    def __init__(self) -> None:
        self.nodes: list[str] | None = None
        self.graph = None
        self.tracks: list[Track] = []
        self.attrs: list[dict] = []  # the graph's own attribute dicts (mutated in place by the memory)
        self.row: dict[str, int] = {}
        self.kind = np.zeros(0, dtype=object)
        self.lo = np.zeros((0, 3))
        self.hi = np.zeros((0, 3))
        self.velocity = np.zeros((0, 3))
        # A container's box a frame ago (where it had one): (N,3) m, NaN where none.
        self.prev_lo = np.zeros((0, 3))
        self.prev_hi = np.zeros((0, 3))
        self.stamp = np.zeros(0, dtype=np.int64)  # (N,) the clock when each row was last read
        self.clock = 1
        self.generation = 0
        self._dirty: list[int] = []  # ids of tracks that replaced a watched array since the last sync
        self._row_of: dict[int, int] = {}  # id(track) -> row

    def sync(self, nodes: list[str], graph, tracks: dict[str, Track]) -> NodeRows:
        """Bring every row up to date with ``nodes`` (the physical-node list), the graph and the tracks."""
        if nodes is not self.nodes or graph is not self.graph:
            self._rebuild(nodes, graph, tracks)
        elif self._dirty:
            for i in {self._row_of.get(k, -1) for k in self._dirty} - {-1}:
                track = self.tracks[i]
                self.lo[i], self.hi[i], self.velocity[i] = track.box_min, track.box_max, track.velocity
                self.prev_lo[i], self.prev_hi[i] = track.prev_box if track.prev_box is not None else (np.nan, np.nan)
                self.stamp[i] = self.clock
            self.clock += 1
            self._dirty.clear()
        return self

    def _rebuild(self, nodes: list[str], graph, tracks: dict[str, Track]) -> None:
        for track in self.tracks:
            track.watch(None)
        self.nodes, self.graph = nodes, graph
        self.tracks = [tracks[n] for n in nodes]
        self.attrs = [graph.nodes[n] for n in nodes]
        self.kind = np.array([a["kind"] for a in self.attrs], dtype=object)  # a kind change makes a new list
        self.row = {n: i for i, n in enumerate(nodes)}
        self.lo = np.array([tr.box_min for tr in self.tracks], dtype=np.float64).reshape(-1, 3)
        self.hi = np.array([tr.box_max for tr in self.tracks], dtype=np.float64).reshape(-1, 3)
        self.velocity = np.array([tr.velocity for tr in self.tracks], dtype=np.float64).reshape(-1, 3)
        self.prev_lo = np.full((len(nodes), 3), np.nan)
        self.prev_hi = np.full((len(nodes), 3), np.nan)
        for i, track in enumerate(self.tracks):
            if track.prev_box is not None:
                self.prev_lo[i], self.prev_hi[i] = track.prev_box
        self.stamp = np.zeros(len(nodes), dtype=np.int64)
        self.generation += 1
        self._dirty = []
        self._row_of = {id(tr): i for i, tr in enumerate(self.tracks)}
        for track in self.tracks:
            track.watch(self._dirty)

    def stale_rows(self, tracks: dict[str, Track]) -> list[str]:
        """The nodes whose row differs from their track now (none, unless a track was changed behind
        the watch): for tests."""
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
