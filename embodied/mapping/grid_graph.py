"""The planning graph of an occupancy grid: 8-connected navigable cells, edges weighted by length and
by how close they pass to obstacles (for :class:`embodied.mapping.freespace.FreeSpaceMap`)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np


def grid_graph(nav: np.ndarray, clear: np.ndarray, known: np.ndarray, res: float, prefer: float,
               unknown_cost: float | None) -> nx.Graph:
    """Nodes: the navigable cells of ``nav`` (h, w) bool, numbered ``i * w + j``. Edges join 8-neighbours,
    costing their length (cells of ``res`` m) times ``1 + 2 (prefer - c)`` where their lower clearance c
    (``clear`` (h, w), m) is under ``prefer`` m, times ``1 + unknown_cost`` unless both ends are ``known``
    (``unknown_cost`` None: no such factor)."""
    h, w = nav.shape
    graph = nx.Graph()
    ids = np.arange(h * w).reshape(h, w)
    graph.add_nodes_from(ids[nav].tolist())
    for di, dj in ((0, 1), (1, 0), (1, 1), (1, -1)):
        src_v = (slice(0, h - di), slice(max(0, -dj), w - max(0, dj)))
        dst_v = (slice(di, h), slice(max(0, dj), w + min(0, dj)))
        ok = nav[src_v] & nav[dst_v]
        src, dst = ids[src_v][ok], ids[dst_v][ok]
        c = np.minimum(clear.flat[src], clear.flat[dst])
        cost = res * math.hypot(di, dj) * (1.0 + 2.0 * np.maximum(0.0, prefer - c))
        if unknown_cost is not None:
            cost *= np.where(known.flat[src] & known.flat[dst], 1.0, 1.0 + unknown_cost)
        graph.add_weighted_edges_from(zip(src.tolist(), dst.tolist(), cost.tolist()))
    return graph
