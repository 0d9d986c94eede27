"""The robot's own 2-D map of free space, built from head depth (no simulator geometry).

Frames and units: world frame, metres, z up; the map covers the floor
rectangle ``[low, low + size]`` (x, y) in square cells of ``res`` metres.
Cell ``(i, j)`` is row ``i`` (along y), column ``j`` (along x); its centre is
``low + res * (j + 0.5, i + 0.5)``.

Evidence per cell, accumulated over frames (``integrate``):

* ``hits``: depth points between ``z_min`` (5 cm, above the floor) and ``z_max`` (1.3 m, above the
  bumper top of 0.9 m and the head at 1.2 m): something the base would bump into stands there.
* ``free``: samples of camera rays that passed through the cell *below*
  ``free_height`` (0.4 m, under every piece of furniture's top; nothing in
  the apartment is lower) before reaching their end, and the floor points
  themselves (z < ``z_min``). A ray passing higher than that says nothing
  about a low obstacle beneath it (a bed, a coffee table), so it is ignored.
* ``visited``: cells the robot's own body covered (``mark_visited``).

A cell is *occupied* when ``hits >= min_hits`` and either ``hits >=
sure_hits`` or ``hits >= occ_ratio * free`` (a few stray hits are outvoted by the floor seen there later;
a table top seen again and again is not outvoted by the floor between its legs), *free* when it is visited
or has free evidence and is not occupied, *unknown* otherwise.

Planning (``path``) runs networkx A* on a coarser grid (``plan_res``, twice the map's cells by default)
whose nodes lie at least ``radius`` (bumper 0.18 m + margin) from every occupied cell (edge costs:
``grid_graph``; paths keep to the middle of doorways). Unknown floor within the known cells' bounding box
(+3 cells) may be crossed at a higher cost (the driver's depth check stops a blocked one);
``unknown_cost=None`` plans on known free cells only. The graph is rebuilt only when the grid changed.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
from scipy.ndimage import distance_transform_edt

from embodied.mapping.grid_graph import grid_graph
from embodied.mapping.registration import image_noise, smooth_grid_depth

ROBOT_RADIUS = 0.18  # m: the base's bumper capsule (scenes/apartment/robot.xml)
GOAL = -1  # the virtual goal node of ``path_to_any``


class FreeSpaceMap:
    """2-D free/occupied/unknown grid from RGB-D (depth only), with A* planning.

    Parameters (metres): ``low`` (2,) world xy of the map's corner, ``size``
    (2,) its extent, ``res`` the cell size, ``radius`` the planning clearance
    (robot radius + margin), ``prefer`` the clearance below which edges cost
    more, ``plan_res`` the planning grid's cell (a multiple of ``res``).
    """

    def __init__(
        self,
        low=(-1.0, -1.0),
        size=(10.0, 8.0),
        res: float = 0.05,
        radius: float = ROBOT_RADIUS + 0.07,
        prefer: float = 0.45,
        plan_res: float = 0.1,
        z_min: float = 0.05,
        z_max: float = 1.3,
        free_height: float = 0.4,
        stride: int = 4,
        max_range: float = 6.0,
        min_hits: int = 2,
        occ_ratio: float = 0.1,
        sure_hits: int = 12,
        unknown_cost: float | None = 2.0,
    ):
        self.low = np.asarray(low, dtype=np.float64)
        self.size = np.asarray(size, dtype=np.float64)
        self.res = float(res)
        self.shape = (int(round(self.size[1] / res)), int(round(self.size[0] / res)))
        self.radius, self.prefer = float(radius), float(prefer)
        self.k = max(1, int(round(plan_res / res)))  # fine cells per planning cell (per axis)
        self.z_min, self.z_max, self.free_height = float(z_min), float(z_max), float(free_height)
        self.stride, self.max_range = int(stride), float(max_range)
        self.min_hits, self.occ_ratio, self.sure_hits = int(min_hits), float(occ_ratio), int(sure_hits)
        self.unknown_cost = None if unknown_cost is None else float(unknown_cost)
        self.hits = np.zeros(self.shape, dtype=np.float32)
        self.free = np.zeros(self.shape, dtype=np.float32)
        self.visited = np.zeros(self.shape, dtype=bool)
        self.version = 0  # bumped by every change; the planning graph is cached per version
        self._rays: dict = {}
        self._cache: dict = {}

    # --- cells ------------------------------------------------------------------
    def cell(self, xy) -> tuple[int, int]:
        """(i, j) of the cell holding world ``xy`` (clipped to the map)."""
        j, i = np.floor((np.asarray(xy, dtype=np.float64)[:2] - self.low) / self.res).astype(int)
        return int(np.clip(i, 0, self.shape[0] - 1)), int(np.clip(j, 0, self.shape[1] - 1))

    def centre(self, i: int, j: int) -> np.ndarray:
        return self.low + self.res * np.array([j + 0.5, i + 0.5])

    def flat_cells(self, xy: np.ndarray) -> np.ndarray:
        """Flat cell indices of points (N, >=2); -1 for points off the map."""
        ij = np.floor((xy[:, :2] - self.low) / self.res).astype(np.int64)
        ok = (ij[:, 0] >= 0) & (ij[:, 0] < self.shape[1]) & (ij[:, 1] >= 0) & (ij[:, 1] < self.shape[0])
        return np.where(ok, ij[:, 1] * self.shape[1] + ij[:, 0], -1)

    def _add(self, grid: np.ndarray, flat: np.ndarray) -> None:
        flat = flat[flat >= 0]
        if len(flat):
            grid.ravel()[:] += np.bincount(flat, minlength=grid.size).astype(grid.dtype)

    # --- integration --------------------------------------------------------------
    def _unit_rays(self, K: np.ndarray, h: int, w: int) -> np.ndarray:
        key = (h, w, tuple(np.round(np.asarray(K, dtype=np.float64).ravel(), 6)))
        if key not in self._rays:
            s = self.stride
            v, u = np.mgrid[s // 2 : h : s, s // 2 : w : s]
            K = np.asarray(K, dtype=np.float64)
            x = (u.ravel() + 0.5 - K[0, 2]) / K[0, 0]
            y = (v.ravel() + 0.5 - K[1, 2]) / K[1, 1]
            self._rays = {key: (v.ravel(), u.ravel(), np.stack([x, y, np.ones_like(x)], axis=1))}
        return self._rays[key]

    def integrate(self, depth: np.ndarray, K: np.ndarray, cam_to_world: np.ndarray,
                  ignore: np.ndarray | None = None) -> None:
        """Fold one depth image into the map.

        ``depth`` (H, W) float32: metres along the optical axis, 0 / NaN / inf =
        no return. ``K`` (3, 3) pinhole intrinsics in pixels. ``cam_to_world``
        (4, 4) camera-to-world transform, OpenCV axes (x right, y down, z
        forward). ``ignore`` (H, W) bool, optional: pixels to leave out, e.g.
        small movable objects (one carried through the air would otherwise
        leave a trail of obstacles). Every ``stride``-th pixel in each
        direction is used.
        """
        depth = np.asarray(depth)
        v, u, rays = self._unit_rays(K, *depth.shape)
        sigma = image_noise(depth)  # m: the image's depth std at 1 m, read from itself (0: a noiseless camera)
        if sigma > 0:
            # Each sampled pixel's depth from a plane fitted to the block around it (noise cut about five-fold;
            # blocks across an edge dropped): at 3 m a 4 mm camera's single pixels scatter a wall's points
            # 4 cm to either side, and their tails, seen from every viewpoint of a tour, stack up as hits.
            d = smooth_grid_depth(depth, v, u, 0.05, self.max_range, sigma, ignore).ravel()
        else:
            d = depth[v, u].astype(np.float64)
        ok = np.isfinite(d) & (d > 0.05) & (d < self.max_range)
        if ignore is not None:
            ok &= ~np.asarray(ignore, dtype=bool)[v, u]
        if not ok.any():
            return
        T = np.asarray(cam_to_world, dtype=np.float64)
        pts = (rays[ok] * d[ok, None]) @ T[:3, :3].T + T[:3, 3]  # (N, 3) world points
        cam = T[:3, 3]
        z = pts[:, 2]
        obstacle = (z >= self.z_min) & (z <= self.z_max)
        floor = z < self.z_min
        self._add(self.hits, self.flat_cells(pts[obstacle]))
        # Free evidence: the low part (z < free_height) of rays ending on the floor or on a low
        # obstacle, stopping one cell short of an obstacle hit; floor points themselves.
        low_end = z < self.free_height
        if low_end.any() and cam[2] > self.free_height:
            p = pts[low_end]
            s0 = (cam[2] - self.free_height) / (cam[2] - p[:, 2])  # where the ray comes down to free_height
            length = np.linalg.norm((p - cam)[:, :2], axis=1)
            s1 = np.where(floor[low_end], 1.0, 1.0 - 1.5 * self.res / np.maximum(length, 1e-6))
            n = 12
            frac = np.linspace(0.0, 1.0, n)
            s = s0[:, None] + (s1 - s0)[:, None] * frac[None, :]  # (M, n)
            keep = (s1 > s0)[:, None] & np.ones((1, n), dtype=bool)
            samples = cam[None, None, :2] + s[..., None] * (p[:, None, :2] - cam[None, None, :2])
            self._add(self.free, self.flat_cells(samples[keep].reshape(-1, 2)))
        self.version += 1

    def mark_visited(self, xy, radius: float = ROBOT_RADIUS) -> None:
        """The robot's base stands at ``xy`` (2,): the disc it covers is free."""
        i, j = self.cell(xy)
        r = int(math.ceil(radius / self.res))
        i0, i1, j0, j1 = max(0, i - r), min(self.shape[0], i + r + 1), max(0, j - r), min(self.shape[1], j + r + 1)
        ii, jj = np.mgrid[i0:i1, j0:j1]
        c = self.low + self.res * (np.stack([jj, ii], axis=-1) + 0.5)
        inside = np.linalg.norm(c - np.asarray(xy, dtype=np.float64)[:2], axis=-1) <= radius
        if not self.visited[i0:i1, j0:j1][inside].all():
            self.visited[i0:i1, j0:j1] |= inside
            self.version += 1

    # --- state -------------------------------------------------------------------
    @property
    def occupied(self) -> np.ndarray:
        """(H, W) bool: something the base would bump into stands in the cell."""
        occ = (self.hits >= self.min_hits) & ((self.hits >= self.occ_ratio * self.free) | (self.hits >= self.sure_hits))
        return occ & ~self.visited

    @property
    def known_free(self) -> np.ndarray:
        """(H, W) bool: seen free (or driven over) and not occupied."""
        return (self.visited | (self.free > 0)) & ~self.occupied

    @property
    def unknown(self) -> np.ndarray:
        return ~(self.occupied | self.known_free)

    def clearance(self) -> np.ndarray:
        """(H, W) float: metres from each cell centre to the nearest occupied cell centre."""
        occ = self.occupied
        if not occ.any():
            return np.full(self.shape, np.inf)
        return distance_transform_edt(~occ) * self.res

    def _planning(self) -> dict:
        """Planning grid + graph for the current map version (cached)."""
        if self._cache.get("version") == self.version:
            return self._cache
        k = self.k
        h, w = self.shape[0] // k, self.shape[1] // k
        fine_clear = self.clearance()
        known_free = self.known_free
        clear = fine_clear[: h * k, : w * k].reshape(h, k, w, k).min(axis=(1, 3))
        known = known_free[: h * k, : w * k].reshape(h, k, w, k).mean(axis=(1, 3)) >= 0.5
        nav = clear >= self.radius
        if self.unknown_cost is None:
            nav &= known
        elif known.any():
            # Unknown cells count only near what has been seen (the bounding box of known cells + 3 cells).
            rows, cols = np.nonzero(known.any(axis=1))[0], np.nonzero(known.any(axis=0))[0]
            box = np.zeros_like(nav)
            box[max(0, rows[0] - 3) : rows[-1] + 4, max(0, cols[0] - 3) : cols[-1] + 4] = True
            nav &= box
        else:
            nav &= False
        clear_q = np.round(np.minimum(clear, self.prefer) / self.res).astype(np.int16)  # what edge costs see
        old = self._cache
        if (old and np.array_equal(old["nav"], nav) and np.array_equal(old["clear_q"], clear_q)
                and np.array_equal(old["known"], known)):
            # The map changed but not where it matters to the graph: keep it (building costs ~10 ms).
            old.update(version=self.version, fine_clear=fine_clear, known_free=known_free, clear=clear,
                       occupied=self.occupied)
            return old
        res = self.res * k
        graph = grid_graph(nav, clear_q * self.res, known, res, self.prefer, self.unknown_cost)
        jj, ii = np.meshgrid(np.arange(w), np.arange(h))
        centres = self.low + res * (np.stack([jj, ii], axis=-1) + 0.5)
        self._cache = {"version": self.version, "nav": nav, "graph": graph, "w": w, "centres": centres,
                       "clear": clear, "clear_q": clear_q, "fine_clear": fine_clear, "known_free": known_free,
                       "known": known, "occupied": self.occupied, "res": res}
        return self._cache

    def navigable(self) -> np.ndarray:
        """(h, w) bool on the planning grid (``plan_res`` cells): ``radius`` clear of occupied cells and
        known free (or, with ``unknown_cost`` set, unknown but near the known area)."""
        return self._planning()["nav"]

    def clearance_at(self, xy) -> np.ndarray:
        """(N,) clearance (m) at points (N, 2), looked up in the map's cells (0 off the map)."""
        xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        flat = self.flat_cells(xy)
        out = np.zeros(len(xy))
        out[flat >= 0] = self._planning()["fine_clear"].ravel()[flat[flat >= 0]]
        return out

    def segment_clear(self, a, b, radius: float | None = None, step: float | None = None, known: bool = True) -> bool:
        """Whether every point of the straight segment a -> b keeps ``radius`` clearance (and, with
        ``known``, is known free; else merely not occupied)."""
        a, b = np.asarray(a, dtype=np.float64)[:2], np.asarray(b, dtype=np.float64)[:2]
        step = step or self.res
        n = max(2, int(np.ceil(np.linalg.norm(b - a) / step)) + 1)
        pts = a + np.linspace(0.0, 1.0, n)[:, None] * (b - a)
        flat = self.flat_cells(pts)
        if (flat < 0).any():
            return False
        r = self.radius if radius is None else radius
        p = self._planning()
        cells = (p["known_free"] if known else ~p["occupied"]).ravel()[flat]
        return bool((p["fine_clear"].ravel()[flat] >= r).all() and cells.all())

    def nearest_free(self, xy) -> np.ndarray | None:
        """(2,) centre of the navigable planning cell (see ``navigable``) nearest to ``xy``; None if none."""
        p = self._planning()
        cells = np.argwhere(p["nav"])
        if len(cells) == 0:
            return None
        c = p["centres"][cells[:, 0], cells[:, 1]]
        return c[int(np.argmin(np.linalg.norm(c - np.asarray(xy, dtype=np.float64)[:2], axis=1)))].copy()

    def _node(self, xy) -> int | None:
        p = self._planning()
        q = self.nearest_free(xy)
        if q is None:
            return None
        j, i = np.floor((q - self.low) / p["res"]).astype(int)
        return int(i * p["w"] + j)

    def path(self, start_xy, goal_xy) -> list[np.ndarray]:
        """Waypoints [(2,) ...] from ``start_xy`` to the navigable cell nearest ``goal_xy``.

        The first point is ``start_xy`` itself; the list is shortened where
        the straight segment keeps the clearance. Empty when no path exists.
        """
        goal = np.asarray(goal_xy, dtype=np.float64)[:2]
        return self.path_to_any(start_xy, [goal], [0.0])

    def path_to_any(self, start_xy, goals, costs=None, end_radius: float | None = None) -> list[np.ndarray]:
        """Cheapest path from ``start_xy`` to any of ``goals`` (K, 2), each with an extra ``costs`` (K,).

        Goals are snapped to their planning cells (off-grid goals: nearest
        navigable cell). The last waypoint is the chosen goal itself when
        the segment to it from its planning cell keeps ``end_radius``
        clearance (default ``radius`` - 3 cm), else that cell's centre.
        """
        p = self._planning()
        g, w, res = p["graph"], p["w"], p["res"]
        start = np.asarray(start_xy, dtype=np.float64)[:2]
        a = self._node(start)
        goals = np.asarray(goals, dtype=np.float64).reshape(-1, 2)
        costs = np.zeros(len(goals)) if costs is None else np.asarray(costs, dtype=np.float64)
        if a is None or len(goals) == 0:
            return []
        targets: dict[int, tuple[float, int]] = {}
        for k, q in enumerate(goals):
            j, i = np.floor((q - self.low) / res).astype(int)
            node = int(i * w + j) if 0 <= i < p["nav"].shape[0] and 0 <= j < w and p["nav"][i, j] else self._node(q)
            if node is not None and (node not in targets or costs[k] < targets[node][0]):
                targets[node] = (float(costs[k]), k)
        goal_xy = {n: goals[k] for n, (_, k) in targets.items()}
        g.add_node(GOAL)
        for n, (c, _) in targets.items():
            g.add_edge(n, GOAL, weight=c + 1e-6)

        pts = np.array(list(goal_xy.values()))
        centre = pts.mean(axis=0)
        spread = float(np.linalg.norm(pts - centre, axis=1).max())
        # Admissible: edges cost at least their length, and every goal lies within ``spread`` of ``centre``.
        hmap = np.maximum(0.0, np.linalg.norm(p["centres"] - centre, axis=-1) - spread - res).ravel().tolist()

        def h(u: int, v: int) -> float:
            return 0.0 if u == GOAL else hmap[u]

        try:
            nodes = nx.astar_path(g, a, GOAL, heuristic=h, weight="weight")
        except nx.NetworkXNoPath:
            return []
        finally:
            g.remove_node(GOAL)
        nodes = nodes[:-1]
        end = goal_xy[nodes[-1]]
        points = [start] + [p["centres"][n // w, n % w].copy() for n in nodes[1:]]
        last = p["centres"][nodes[-1] // w, nodes[-1] % w]
        end_radius = self.radius - 0.03 if end_radius is None else end_radius
        if np.linalg.norm(end - last) > 1e-9 and self.segment_clear(last, end, end_radius, known=False):
            points.append(end.copy())
        return self.shorten(points)

    def shorten(self, points: list[np.ndarray]) -> list[np.ndarray]:
        """Drop waypoints while the straight segment keeps the planning clearance (greedy)."""
        out = [points[0]]
        i = 0
        while i < len(points) - 1:
            j = i + 1
            while j + 1 < len(points) and self.segment_clear(points[i], points[j + 1], self.radius + 0.02):
                j += 1
            out.append(points[j])
            i = j
        return out

    # --- persistence ----------------------------------------------------------------
    PARAMS = ("low", "size", "res", "radius", "prefer", "plan_res", "z_min", "z_max", "free_height", "stride",
              "max_range", "min_hits", "occ_ratio", "sure_hits", "unknown_cost")

    def state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON-plain parameters, arrays): ``hits`` and ``free`` (H, W) float32 evidence counts, ``visited``
        (H, W) bool. The planning graph is a cache: rebuilt from these, it is the same graph."""
        params = {k: getattr(self, k, None) for k in self.PARAMS}
        params.update(low=self.low.tolist(), size=self.size.tolist(), plan_res=self.res * self.k)
        return params, {"hits": self.hits.copy(), "free": self.free.copy(), "visited": self.visited.copy()}

    @classmethod
    def from_state(cls, params: dict, arrays: dict[str, np.ndarray]) -> FreeSpaceMap:
        """The map ``state`` describes; ValueError naming the parameter or array at fault."""
        missing = [k for k in cls.PARAMS if k not in params]
        if missing:
            raise ValueError(f"free-space map: parameter {missing[0]} missing")
        size, res = np.asarray(params["size"], dtype=np.float64).reshape(2), float(params["res"])
        shape = (round(size[1] / res), round(size[0] / res)) if res > 0 and np.isfinite(size).all() else None
        for key, dtype in (("hits", np.float32), ("free", np.float32), ("visited", np.bool_)):
            a = arrays.get(key)
            if a is None or a.dtype != dtype or a.shape != shape or not np.isfinite(a).all():
                got = "nothing" if a is None else f"{a.dtype} {a.shape}"
                raise ValueError(f"array {key}: must be a finite {np.dtype(dtype).name} {shape}, got {got} "
                                 f"(size {params['size']}, res {params['res']})")
        m = cls(**{k: params[k] for k in cls.PARAMS})
        m.hits[:], m.free[:], m.visited[:] = arrays["hits"], arrays["free"], arrays["visited"]
        m.version += 1
        return m

    def to_dict(self) -> dict:
        """JSON-plain: parameters plus the evidence grids (hits/free as lists, visited as 0/1 rows)."""
        return {**self.state()[0], "hits": self.hits.round(1).tolist(), "free": self.free.round(1).tolist(),
                "visited": self.visited.astype(np.uint8).tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> FreeSpaceMap:
        types = {"hits": np.float32, "free": np.float32, "visited": bool}
        return cls.from_state(d, {k: np.asarray(d[k], dtype=t) for k, t in types.items()})
