"""Geometry of the navigate skill: where to stand near a target, and what is in the way ahead.

Both are pure functions of the robot's own free-space map and head camera: no skill state.
"""

from __future__ import annotations

import numpy as np

from embodied.mapping.freespace import ROBOT_RADIUS, FreeSpaceMap


def stand_off_candidates(free: FreeSpaceMap, target: np.ndarray, ring: tuple[float, float, float],
                         stand_clear: float, support: float) -> tuple[np.ndarray, np.ndarray]:
    """(K, 2) candidate stand-off points (world xy, m; map cell centres) around ``target`` (2,) and their
    extra costs (K,).

    ``ring`` is (min, max, preferred) distance from the target in metres. A candidate is a known-free
    map cell (or, when the map plans through unknown cells, any unoccupied one, at a small extra cost)
    within the ring, with at least ``stand_clear`` clearance (a little less than the planning radius:
    the last metres are driven slowly), whose straight line to the target crosses no occupied cell short
    of the target's own ``support`` (the last metres, where the furniture it stands on is).
    """
    stand_min, stand_max, stand_prefer = ring
    r = int(np.ceil(stand_max / free.res)) + 1
    ci, cj = free.cell(target)
    i0, i1 = max(0, ci - r), min(free.shape[0], ci + r + 1)
    j0, j1 = max(0, cj - r), min(free.shape[1], cj + r + 1)
    ii, jj = np.mgrid[i0:i1, j0:j1]
    pts = free.low + free.res * (np.stack([jj.ravel(), ii.ravel()], axis=1) + 0.5)
    d = np.linalg.norm(pts - target, axis=1)
    flat = ii.ravel() * free.shape[1] + jj.ravel()
    clear = free.clearance_at(pts)
    unoccupied = free.known_free.ravel()[flat] if free.unknown_cost is None else ~free.occupied.ravel()[flat]
    keep = (d >= stand_min) & (d <= stand_max) & (clear >= stand_clear) & unoccupied
    known = free.known_free.ravel()[flat][keep]
    pts, d = pts[keep], d[keep]
    if not len(pts):
        return np.zeros((0, 2)), np.zeros(0)
    # Line of sight: samples every half cell from the candidate to ``support`` short of the target.
    frac = np.linspace(0.0, 1.0, int(np.ceil(stand_max / (free.res / 2))) + 1)
    span = np.maximum(0.0, d - support) / np.maximum(d, 1e-9)
    seg = pts[:, None, :] + (frac[None, :, None] * span[:, None, None]) * (target - pts)[:, None, :]
    cells = free.flat_cells(seg.reshape(-1, 2)).reshape(len(pts), -1)
    occ = free.occupied.ravel()
    ok = ~((cells < 0) | occ[np.maximum(cells, 0)]).any(axis=1)
    pts, d, known = pts[ok], d[ok], known[ok]
    # Closer is better (a remembered position is a few cm off at worst; the reach is 0.5 m), known floor
    # a little better than unknown; among equals the path length decides.
    cost = 3.0 * np.abs(d - stand_prefer) + 0.3 * ~known
    return pts, cost


def nearest_obstacle_ahead(depth: np.ndarray, intrinsics: np.ndarray, extrinsics: np.ndarray,
                           pose: np.ndarray) -> float:
    """Distance (m, along the heading from the base centre) of the nearest obstacle in the base's corridor.

    ``depth`` (H, W) float32 metres of the head camera, ``intrinsics`` (3, 3), ``extrinsics`` (4, 4)
    camera-to-world, ``pose`` (3,) base [x, y, yaw]. An obstacle point is 5 cm .. 1.3 m high and within
    the robot's radius + 2 cm of the heading line; the third nearest counts (two stray pixels do not).
    ``inf`` when fewer than three points are ahead.
    """
    depth = np.asarray(depth)
    K = np.asarray(intrinsics, dtype=np.float64)
    T = np.asarray(extrinsics, dtype=np.float64)
    h, w = depth.shape
    v, u = np.mgrid[h // 3 : h : 3, w // 4 : 3 * w // 4 : 3]  # central columns, middle-to-bottom rows
    d = depth[v, u].astype(np.float64)
    ok = np.isfinite(d) & (d > 0.02)
    if not ok.any():
        return float("inf")
    x = (u[ok] + 0.5 - K[0, 2]) / K[0, 0] * d[ok]
    y = (v[ok] + 0.5 - K[1, 2]) / K[1, 1] * d[ok]
    pts = np.stack([x, y, d[ok]], axis=1) @ T[:3, :3].T + T[:3, 3]
    rel = pts[:, :2] - pose[:2]
    c, s = np.cos(pose[2]), np.sin(pose[2])
    fwd, lat = c * rel[:, 0] + s * rel[:, 1], -s * rel[:, 0] + c * rel[:, 1]
    obstacle = (pts[:, 2] > 0.05) & (pts[:, 2] < 1.3) & (np.abs(lat) < ROBOT_RADIUS + 0.02)
    ahead = fwd[obstacle & (fwd > 0)]
    if len(ahead) < 3:
        return float("inf")
    return float(np.sort(ahead)[2])
