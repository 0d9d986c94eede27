"""Privileged 2-D geometry for planning: collision boxes, an occupancy grid and A*.

Everything here reads simulator ground truth (the compiled model's collision
boxes), so only the env's own scripting, success checks, experts and tests
may use it; the agent never sees it.

Units are metres and radians. Boxes are rows ``[cx, cy, hx, hy, yaw]``: the
centre, half extents along the box's own x/y axes, and its rotation about z.
Grid cell ``(i, j)`` is row ``i`` (along y), column ``j`` (along x); its centre
is ``low + res * (j, i)``.
"""

from __future__ import annotations

import math

import mujoco
import networkx as nx
import numpy as np

_BOX = int(mujoco.mjtGeom.mjGEOM_BOX)


def collision_boxes(model: mujoco.MjModel, data: mujoco.MjData, exclude_body: int) -> np.ndarray:
    """(N, 5) footprints of the static boxes the robot can bump into.

    A geom counts when it is a box with conaffinity bit 1 (what the robot's
    bumper collides with) that reaches above the floor; geoms sunk below the
    floor (closed-off wall tiles turned doorways) are skipped.
    """
    rows = []
    for g in range(model.ngeom):
        if model.geom_type[g] != _BOX or not model.geom_conaffinity[g] & 1 or model.geom_bodyid[g] == exclude_body:
            continue
        if data.geom_xpos[g, 2] + model.geom_size[g, 2] < 0.05:
            continue
        mat = data.geom_xmat[g]
        rows.append([*data.geom_xpos[g, :2], *model.geom_size[g, :2], np.arctan2(mat[3], mat[0])])
    return np.array(rows, dtype=np.float64).reshape(-1, 5)


def box_distance(points: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """(M,) distance in metres from each of ``points`` (M, 2) to the nearest box; 0 inside one."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    if len(boxes) == 0:
        return np.full(len(points), np.inf)
    d = points[:, None, :] - boxes[None, :, :2]
    c, s = np.cos(boxes[:, 4]), np.sin(boxes[:, 4])
    local = np.stack([c * d[..., 0] + s * d[..., 1], -s * d[..., 0] + c * d[..., 1]], axis=-1)
    outside = np.maximum(np.abs(local) - boxes[None, :, 2:4], 0.0)
    return np.linalg.norm(outside, axis=-1).min(axis=1)


class OccupancyGrid:
    """Exact clearance sampled on a regular grid over the floor.

    ``clearance`` (H, W) is each cell centre's distance to the nearest box.
    A cell is ``navigable`` when that distance is at least ``radius``; since
    clearance changes by at most the distance moved, a straight move between
    neighbouring navigable cells keeps ``radius - res/sqrt(2)`` of room.
    """

    def __init__(self, boxes: np.ndarray, low, high, res: float = 0.1, radius: float = 0.3):
        self.boxes = np.asarray(boxes, dtype=np.float64)
        self.low = np.asarray(low, dtype=np.float64)
        self.res = float(res)
        self.radius = float(radius)
        self.shape = tuple(int(n) for n in np.floor((np.asarray(high) - self.low) / self.res).astype(int)[::-1] + 1)
        jj, ii = np.meshgrid(np.arange(self.shape[1]), np.arange(self.shape[0]))
        self.centres = self.low + self.res * np.stack([jj, ii], axis=-1)  # (H, W, 2)
        self.clearance = box_distance(self.centres.reshape(-1, 2), self.boxes).reshape(self.shape)
        self.navigable = self.clearance >= self.radius

    def cell(self, xy) -> tuple[int, int]:
        j, i = np.rint((np.asarray(xy, dtype=np.float64) - self.low) / self.res).astype(int)
        return int(np.clip(i, 0, self.shape[0] - 1)), int(np.clip(j, 0, self.shape[1] - 1))

    def centre(self, cell: tuple[int, int]) -> np.ndarray:
        return self.centres[cell].copy()

    def reachable(self, seed) -> np.ndarray:
        """(H, W) bool: navigable cells 8-connected to the navigable cell nearest ``seed``."""
        reach = np.zeros(self.shape, dtype=bool)
        reach[self.nearest(seed)] = True
        while True:
            grown = reach.copy()
            grown[1:] |= reach[:-1]
            grown[:-1] |= reach[1:]
            grown[:, 1:] |= grown[:, :-1].copy()
            grown[:, :-1] |= grown[:, 1:].copy()
            grown &= self.navigable
            if np.array_equal(grown, reach):
                return reach
            reach = grown

    def nearest(self, xy, mask: np.ndarray | None = None) -> tuple[int, int]:
        """The cell of ``mask`` (default: navigable cells) whose centre is nearest to ``xy``."""
        mask = self.navigable if mask is None else mask
        i, j = self.cell(xy)
        if mask[i, j]:
            return i, j
        cells = np.argwhere(mask)
        if len(cells) == 0:
            raise RuntimeError("no cell to snap to")
        k = np.argmin(np.linalg.norm(self.centres[cells[:, 0], cells[:, 1]] - np.asarray(xy)[:2], axis=1))
        return int(cells[k, 0]), int(cells[k, 1])

    def clearance_at(self, points: np.ndarray) -> np.ndarray:
        """Exact clearance (M,) of arbitrary points (M, 2)."""
        return box_distance(points, self.boxes)

    def segment_clear(self, a, b, radius: float | None = None, step: float = 0.05) -> bool:
        """Whether a disc of ``radius`` swept from ``a`` to ``b`` touches no box."""
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        n = max(2, int(np.ceil(np.linalg.norm(b - a) / step)) + 1)
        pts = a + np.linspace(0.0, 1.0, n)[:, None] * (b - a)
        return bool(self.clearance_at(pts).min() >= (self.radius if radius is None else radius))


class GridPlanner:
    """A* (networkx) over the 8-connected graph of navigable cells.

    Edge cost is length times a penalty that grows as clearance drops below
    ``prefer`` metres, so paths keep to the middle of doorways and aisles.
    """

    def __init__(self, grid: OccupancyGrid, mask: np.ndarray | None = None, prefer: float = 0.55, penalty: float = 2.0):
        self.grid = grid
        h, w = grid.shape
        nav = grid.navigable if mask is None else mask & grid.navigable
        self.mask = nav
        self.graph = nx.Graph()
        ids = np.arange(h * w).reshape(h, w)
        self.graph.add_nodes_from(ids[nav].tolist())
        for di, dj in ((0, 1), (1, 0), (1, 1), (1, -1)):
            src_view = (slice(0, h - di), slice(max(0, -dj), w - max(0, dj)))
            dst_view = (slice(di, h), slice(max(0, dj), w + min(0, dj)))
            ok = nav[src_view] & nav[dst_view]
            src, dst = ids[src_view][ok], ids[dst_view][ok]
            c = np.minimum(grid.clearance.flat[src], grid.clearance.flat[dst])
            length = grid.res * np.hypot(di, dj)
            cost = length * (1.0 + penalty * np.maximum(0.0, prefer - c))
            self.graph.add_weighted_edges_from(zip(src.tolist(), dst.tolist(), cost.tolist()))
        self._w = w

    def node(self, xy) -> int:
        """The navigable cell nearest to ``xy`` (the robot may stand a little off-grid)."""
        i, j = self.grid.nearest(xy, self.mask)
        return i * self._w + j

    def xy(self, node: int) -> np.ndarray:
        return self.grid.centres[node // self._w, node % self._w].copy()

    def component(self, xy) -> set[int]:
        return nx.node_connected_component(self.graph, self.node(xy))

    def path(self, start, goal) -> list[np.ndarray]:
        """Waypoints (k, 2) from ``start`` to ``goal``, shortened where the straight line stays clear.

        Raises ``nx.NetworkXNoPath`` when the two are not connected.
        """
        a, b = self.node(start), self.node(goal)

        w, res = self._w, self.grid.res

        def h(u: int, v: int) -> float:
            return res * math.hypot(u // w - v // w, u % w - v % w)

        nodes = nx.astar_path(self.graph, a, b, heuristic=h, weight="weight")
        points = [np.asarray(start, dtype=np.float64)[:2]] + [self.xy(n) for n in nodes[1:-1]]
        points.append(self.xy(b))
        return self.shorten(points)

    def shorten(self, points: list[np.ndarray]) -> list[np.ndarray]:
        """Drop waypoints while the straight segment keeps the planning clearance (greedy, forward)."""
        out = [points[0]]
        i = 0
        while i < len(points) - 1:
            j = i + 1
            # Extra margin on shortcuts keeps them off walls the raw path stayed clear of.
            while j + 1 < len(points) and self.grid.segment_clear(points[i], points[j + 1], self.grid.radius + 0.03):
                j += 1
            out.append(points[j])
            i = j
        return out
