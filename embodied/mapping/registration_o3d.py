"""open3d's point-to-plane ICP (6-DoF) cut to planar: the ``solver="open3d"`` ablation of the localiser.

The default solver (``registration.planar_icp``) estimates (x, y, yaw) only.
open3d's estimates all six degrees of freedom; on these views it buys a
better fit with a little pitch or roll (a few mrad) that the planar cut then
drops, leaving the translation that went with it (measured in docs/results.md's
drift table).
"""

from __future__ import annotations

import numpy as np
import open3d as o3d

from embodied.mapping.registration import Fit, VoxelMap, planar


def open3d_icp(pts: np.ndarray, target: VoxelMap, pivot: np.ndarray, max_corr: float, iterations: int = 12,
               kernel: float = 0.05) -> Fit:
    """World points ``pts`` (N,3) against the map's points near ``pivot`` (3,) that face it; the 6-DoF
    result's yaw, and the translation that moves ``pivot`` where the full result moves it."""
    rel = pivot - target.points
    near = (np.linalg.norm(rel[:, :2], axis=1) < target.crop) & (np.einsum("ij,ij->i", rel, target.normals) > 0)
    if near.sum() < 6:
        return Fit(np.eye(4), 0.0, 0.0, 0, 3)
    tgt = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(target.points[near]))
    tgt.normals = o3d.utility.Vector3dVector(target.normals[near])
    src = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(pts))
    reg = o3d.pipelines.registration
    loss = reg.TukeyLoss(kernel) if kernel > 0 else reg.L2Loss()
    result = reg.registration_icp(src, tgt, max_corr, np.eye(4), reg.TransformationEstimationPointToPlane(loss),
                                  reg.ICPConvergenceCriteria(max_iteration=iterations))
    T = np.asarray(result.transformation)
    pairs = np.asarray(result.correspondence_set)
    if not np.all(np.isfinite(T)) or not len(pairs):
        return Fit(np.eye(4), 0.0, 0.0, 0, 3)
    yaw = float(np.arctan2(T[1, 0] - T[0, 1], T[0, 0] + T[1, 1]))
    moved = T[:3, :3] @ pivot + T[:3, 3]
    delta = planar(yaw, moved[:2] - planar(yaw, (0.0, 0.0))[:2, :2] @ pivot[:2])
    q = pts[pairs[:, 0]] @ T[:3, :3].T + T[:3, 3]
    n = target.normals[near][pairs[:, 1]]
    r = np.einsum("ij,ij->i", n, q - target.points[near][pairs[:, 1]])
    structure = int((np.abs(n[:, 2]) < 0.5).sum())
    return Fit(delta, float(result.fitness), float(np.sqrt(np.mean(r**2))), structure, 0)
