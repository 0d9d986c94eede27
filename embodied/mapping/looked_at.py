"""The ground the cameras have looked at: ``cells`` (``look_cell`` m, xy; saved as the "looked" field, None:
every place counts). A view on ground looked at before may be a known object moved unseen (``association``);
on new ground it is a discovery.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import numpy as np

from embodied.perception.types import CameraView


@functools.lru_cache(maxsize=16)
def _sparse_rays(shape: tuple[int, int], steps: tuple[int, int], K_bytes: bytes) -> np.ndarray:
    """(N,3) float64 camera-frame rays (x/z, y/z, 1) of every ``steps``-th pixel (rows, columns) of an image
    of ``shape``, row-major, for intrinsics ``K`` (3x3 float64, as bytes for the cache): depth times ray."""
    K = np.frombuffer(K_bytes, dtype=np.float64).reshape(3, 3)
    vs, us = np.mgrid[0 : shape[0] : steps[0], 0 : shape[1] : steps[1]]
    rays = np.stack([(us - K[0, 2]) / K[0, 0], (vs - K[1, 2]) / K[1, 1], np.ones(us.shape)], axis=-1)
    return rays.reshape(-1, 3)


def _barely_moved(before: np.ndarray, now: np.ndarray, move: float, turn: float) -> bool:
    """Whether a camera pose (4x4 camera-to-world) moved under ``move`` m and turned under ``turn`` degrees."""
    if np.abs(now[:3, 3] - before[:3, 3]).max() >= move:
        return False
    # cos of the rotation angle between the two: (trace(R1^T R2) - 1) / 2
    return (np.einsum("ij,ij->", before[:3, :3], now[:3, :3]) - 1.0) / 2.0 > np.cos(np.radians(turn))


class LookedAt:
    def __init__(self, cfg) -> None:
        self.cfg = cfg  # a LifecycleConfig: look_cell, look_move, look_turn
        self.cells: set[int] | None = set()
        self.poses: dict[str, np.ndarray] = {}  # camera -> its 4x4 pose when last read for cells

    def look(self, views: Iterable[CameraView]) -> None:
        """Note the ground cells this frame's cameras see (a sparse grid of depth pixels); a camera that moved
        less than ``look_move`` m and ``look_turn`` degrees since it was last read adds nothing new."""
        if self.cells is None:
            return
        for view in views:
            pose = np.asarray(view.cam_to_world, dtype=np.float64)
            before = self.poses.get(view.name)
            if before is not None and _barely_moved(before, pose, self.cfg.look_move, self.cfg.look_turn):
                continue
            self.poses[view.name] = pose.copy()
            h, w = view.depth.shape
            steps = (max(1, h // 24), max(1, w // 24))
            z = view.depth[:: steps[0], :: steps[1]].reshape(-1)
            hit = z > 0
            if not hit.any():
                continue
            rays = _sparse_rays((h, w), steps, np.asarray(view.K, dtype=np.float64).tobytes())[hit]
            cam = rays * z[hit, None].astype(np.float64)
            world = cam @ view.cam_to_world[:3, :3].T + view.cam_to_world[:3, 3]
            cells = np.floor(world[:, :2] / self.cfg.look_cell).astype(np.int64) + (1 << 20)
            self.cells.update(((cells[:, 0] << 21) | cells[:, 1]).tolist())

    def looked_at_many(self, points: np.ndarray) -> np.ndarray:
        """(D,) bool: whether a camera looked at the ground within a cell of each of points (D, 2+) m before
        this frame (True: no record)."""
        points = np.asarray(points, dtype=np.float64).reshape(len(points), -1)
        if self.cells is None:
            return np.ones(len(points), dtype=bool)
        cells = self.cells
        ij = np.floor(points[:, :2] / self.cfg.look_cell).astype(np.int64) + (1 << 20)
        d = np.array([-1, 0, 1], dtype=np.int64)
        keys = (((ij[:, 0, None, None] + d[None, :, None]) << 21) | (ij[:, 1, None, None] + d[None, None, :]))
        return np.fromiter((k in cells for k in keys.reshape(-1).tolist()), dtype=bool,
                           count=keys.size).reshape(len(points), 9).any(axis=1)
