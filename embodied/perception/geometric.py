"""Geometric detector: no masks. Support planes by RANSAC, objects by DBSCAN.

Pipeline per camera (numbers sized for 128x128 images of the workcell):
  1. back-project a regular stride of the valid pixels, voxel-downsample (8 mm);
  2. RANSAC (open3d ``segment_plane``, all 100 samples: ``fit_plane``) for up to ``max_planes`` planes: the
     first horizontal plane is the support (the table, or the floor); lower
     horizontal planes (the floor under the table) go too; everything at or
     below the support is dropped;
  3. DBSCAN (open3d ``cluster_dbscan``) on the rest; clusters taller than
     ``max_object_height`` above the support are the arm, clusters touching
     the TCP are the gripper (from proprioception): both dropped;
  4. each cluster is described by its shape class (flat/small/medium/tall/
     large, used as its label) and colour.
The support itself is reported with the label ``surface``.
"""

from __future__ import annotations

import numpy as np

from embodied.perception.clouds import Group, describe_batch
from embodied.perception.geometric_colour import find_pads
from embodied.perception.geometric_shapes import label_parts
from embodied.perception.geometry import back_project, pixel_colours, shape_class, stride_subsample
from embodied.perception.types import ObjectObservation, PerceptionConfig

_HORIZONTAL = 0.9  # |n_z| above this: a horizontal plane
_WIDE = 0.15  # m; a cluster this wide that touches the fingers is furniture they work on, not held
_FINGERTIPS = 0.06  # m from the TCP: the open fingers' tips reach 4.5 cm aside and 1 cm below it
_SLIVER = 0.04  # m: noise points within about this of a cluster are slivers of it, not small objects
_LEVEL = 0.01  # m: a support's points (5th to 95th percentile of height) span at most this
_RAISED = 0.015  # m: a flat view this far above the support is an object's top face (see _top_only) ...
_TOP_ONLY = 0.06  # m ... up to this high: a block's (4 cm), or one's in an open drawer's tray (1.6 cm up)
_BLOCK = 0.04  # m: such a face's box reaches this far down (a block's height), at most to the support
# m: a cluster whose lowest point is this far above the support is a bit of the arm (things the env
# carries hang at most 12 cm up, a cue panel's screen 6 cm): a white link of the arm high over the table
# can otherwise re-identify a white block hidden under the hand
_FLOATING = 0.2


def open3d():
    """The open3d module; geometric mode needs it (the ``perception`` extra), the masks path does not."""
    try:
        import open3d as o3d
    except ImportError as exc:
        raise ImportError("perception mode 'geometric' needs open3d: pip install 'embodied[perception]' "
                          f"(and apt libusb-1.0-0); importing it failed: {exc}") from None
    return o3d


def detect_geometric(
    arrays: dict[str, np.ndarray],
    camera: str,
    t: int,
    cfg: PerceptionConfig,
    tcp: np.ndarray | None = None,
    support_hint: float | None = None,
    depth_sigma: float = 0.0,
) -> tuple[list[ObjectObservation], list[float]]:
    """Objects and support-plane heights (m) seen by one camera; ``tcp`` (3,) m or None. ``support_hint``
    (m): the support another camera found in this frame; a level face above it is no support (the wrist
    camera over an open drawer sees the tray's floor as the largest level plane). ``depth_sigma``: the
    image's depth std at 1 m (m)."""
    o3d = open3d()
    depth = arrays["depth"]
    w = depth.shape[1]
    flat = np.flatnonzero((depth > cfg.min_depth) & (depth < cfg.max_depth))
    flat = stride_subsample(flat, cfg.geometric_max_pixels)
    if len(flat) < cfg.cluster_min_points:
        return [], []
    u, v = (flat % w).astype(np.float64), (flat // w).astype(np.float64)
    z = depth.ravel()[flat].astype(np.float64)
    points = back_project(u, v, z, arrays["intrinsics"].astype(np.float64), arrays["extrinsics"].astype(np.float64))
    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(points))
    cloud.colors = o3d.utility.Vector3dVector(pixel_colours(arrays["rgb"], flat))
    cloud = cloud.voxel_down_sample(cfg.geometric_voxel)
    pts, cols = np.asarray(cloud.points), np.asarray(cloud.colors)

    keep = np.ones(len(pts), dtype=bool)
    if tcp is not None:
        # The hand and fingers: everything over the TCP's neighbourhood from just below it up. Cut
        # before clustering, so an arm reaching into a drawer unit does not join it into one cluster.
        keep &= ~((np.linalg.norm(pts[:, :2] - tcp[:2], axis=1) < cfg.hand_radius) & (pts[:, 2] > tcp[2] - 0.005))
    support: float | None = None
    heights: list[float] = []
    chunks: list[np.ndarray] = []  # point indices of each reported object, plane first
    names: list[str] = []
    labels_of: list[str] = []  # class word per chunk, "" for a cluster of no known shape
    clusters: list[np.ndarray] = []
    # Fixed RANSAC seed: the same frame always gives the same planes.
    o3d.utility.random.seed(cfg.seed)
    candidate = keep.copy()  # points a plane may still be fitted to
    for _ in range(cfg.max_planes):
        rest = np.flatnonzero(candidate)
        if len(rest) < cfg.plane_min_inliers:
            break
        plane, inliers = fit_plane(cloud.select_by_index(rest.tolist()), cfg.plane_distance)
        if len(inliers) < cfg.plane_min_inliers:
            break
        c, d = plane[2], plane[3]
        if abs(c) < _HORIZONTAL:
            break  # the largest structure left is vertical: no more supports
        idx = rest[np.asarray(inliers)]
        height = float(-d / c)
        # A broad face tilted by up to 25 degrees (the arm's link before the wrist camera), or a level one
        # above the support another camera found, is no support: its points stay for the clusters, and
        # the search goes on without them.
        tilted = np.ptp(np.percentile(pts[idx, 2], [5, 95])) > _LEVEL
        raised = support is None and support_hint is not None and height > support_hint + 2 * cfg.plane_distance
        if tilted or raised:
            candidate[idx] = False
            continue
        if support is not None and height > support + cfg.plane_distance:
            break  # a raised horizontal face (a drawer top) is an object, not a support
        keep[idx] = candidate[idx] = False
        heights.append(height)
        if support is None:
            support, support_idx = height, idx
            chunks.append(idx)
            names.append("plane")
            labels_of.append("surface")
    floor = support if support is not None else support_hint
    if floor is not None:
        keep &= pts[:, 2] > floor + cfg.plane_distance
    rest = np.flatnonzero(keep)
    if len(rest) >= cfg.cluster_min_points:
        labels = np.asarray(
            cloud.select_by_index(rest.tolist()).cluster_dbscan(cfg.cluster_eps, cfg.cluster_min_points)
        )
        base = floor if floor is not None else float(pts[:, 2].min())
        base_xy = np.asarray(cfg.robot_base, dtype=np.float64)
        for k in range(int(labels.max()) + 1 if len(labels) else 0):
            idx = rest[labels == k]
            cp = pts[idx]
            if cp[:, 2].max() > base + cfg.max_object_height:
                continue  # the arm reaches up to its base: no tabletop object is this tall
            if cp[:, 2].min() > base + _FLOATING:
                continue  # hanging this high with nothing under it, off the fingers (below): a link of the arm
            if np.min(np.linalg.norm(cp[:, :2] - base_xy, axis=1)) < cfg.robot_base_radius:
                continue  # the arm's foot, cut off from the rest of the arm by occlusion
            if tcp is not None:
                near = np.linalg.norm(cp - tcp, axis=1) < cfg.tcp_clearance
                if near.any() and np.ptp(cp[:, :2], axis=0).max() < _WIDE:
                    continue  # the fingers, or whatever they hold
                idx = idx[~near]  # furniture the fingers touch: only the touched bit goes
            clusters.append(idx)
        clusters += _small_things(pts, rest[labels < 0], base, cfg, clusters, tcp)
        for k, (label, idx) in enumerate(label_parts(pts, clusters, base, cfg.cluster_min_points, cols)):
            chunks.append(idx)
            names.append(f"c{k}")
            labels_of.append(label)
    if support is not None:
        for k, idx in enumerate(find_pads(pts, cols, support_idx, support, clusters, cfg.cluster_min_points)):
            chunks.append(idx)
            names.append(f"pad{k}")
            labels_of.append("pad")
    if not chunks:
        return [], heights
    groups, start = [], 0
    for name, label, idx in zip(names, labels_of, chunks):
        groups.append(Group(label, f"{camera}#{name}", start, start + len(idx), len(idx)))
        start += len(idx)
    order = np.concatenate(chunks)
    objects = describe_batch(pts[order], cols[order], groups, camera, t, cfg, arrays["extrinsics"][:3, 3],
                             depth_sigma)
    eye_z = float(arrays["extrinsics"][2, 3])
    for obs in objects:
        if not obs.label:
            if floor is not None and obs.shape == "flat" and _top_only(obs, floor, eye_z):
                obs.box_min = obs.box_min.copy()
                obs.box_min[2] = max(floor, float(obs.box_max[2]) - _BLOCK)
                obs.shape = shape_class(obs.extent)
            obs.label = obs.shape
    return objects, heights


def fit_plane(cloud, distance: float, iterations: int = 100) -> tuple[np.ndarray, list[int]]:
    """open3d's RANSAC plane ((4,) a, b, c, d with ax + by + cz + d = 0, and the inliers' indices) over
    every one of ``iterations`` samples, the seed set by the caller. Its default stops early once the best
    plane so far is probably found, and when depends on its threads' timing: one frame gave two planes a
    point apart from run to run, and a whole agent's episode another outcome from run to run. All samples
    drawn, the best is always the same."""
    plane, inliers = cloud.segment_plane(distance, 3, iterations, probability=1.0)
    return np.asarray(plane), inliers


def _top_only(obs: ObjectObservation, support: float, eye_z: float) -> bool:
    """Whether a flat view is the top face of a small object standing on the support, seen from above:
    a camera looking down on a block sees that face alone, at a small object's height (on the table or
    in an open drawer's tray). Its box then reaches a block's height down, at most to the support (else
    the wrist camera's top face and the scene camera's block are two objects; a block in a tray stands
    on the tray's floor). Higher up it is something carried, which is left as seen."""
    top = float(obs.box_max[2]) - support
    return bool(obs.box_min[2] > support + _RAISED and top <= _TOP_ONLY and eye_z > obs.box_max[2])


def _small_things(
    pts: np.ndarray, noise: np.ndarray, base: float, cfg: PerceptionConfig, big: list[np.ndarray],
    tcp: np.ndarray | None = None,
) -> list[np.ndarray]:
    """Clusters of a few points that DBSCAN left as noise, resting on the support and clear of every
    bigger cluster (not a sliver of one) and of the open fingers' tips (within ``_FINGERTIPS`` of the
    TCP ``tcp`` (3,) m): a small object far from the camera (a 3 cm ball a metre away is about 3
    pixels across). None reaches within ``robot_base_radius`` of the arm's base: bits of the arm's foot
    had been two "small" things there in every workcell episode, which a plan could then try to pick."""
    o3d = open3d()
    if len(noise) < cfg.small_min_points:
        return []
    if big:
        others = pts[np.concatenate(big)]
        keys = {tuple(k) for k in np.floor(others / _SLIVER).astype(np.int64)}
        cells = np.floor(pts[noise] / _SLIVER).astype(np.int64)
        around = np.array([[dx, dy, dz] for dx in (-1, 0, 1) for dy in (-1, 0, 1) for dz in (-1, 0, 1)])
        near = np.array([any(tuple(c + d) in keys for d in around) for c in cells], dtype=bool)
        noise = noise[~near]
        if len(noise) < cfg.small_min_points:
            return []
    sub = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(pts[noise]))
    labels = np.asarray(sub.cluster_dbscan(cfg.cluster_eps, cfg.small_min_points))
    found = []
    base_xy = np.asarray(cfg.robot_base, dtype=np.float64)
    for k in range(int(labels.max()) + 1 if len(labels) else 0):
        idx = noise[labels == k]
        cp = pts[idx]
        if np.min(np.linalg.norm(cp[:, :2] - base_xy, axis=1)) < cfg.robot_base_radius:
            continue
        resting = cp[:, 2].min() <= base + cfg.small_max_height / 2 and cp[:, 2].max() <= base + cfg.small_max_height
        if tcp is not None and np.min(np.linalg.norm(cp - tcp, axis=1)) < _FINGERTIPS:
            continue
        if resting and np.ptp(cp[:, :2], axis=0).max() <= cfg.small_max_height:
            found.append(idx)
    return found
