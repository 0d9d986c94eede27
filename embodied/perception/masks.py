"""Mask detector: rendered instance segmentation plays a perfect 2-D detector.

Only pixels, depths, masks and the label map (instance id -> class, the
detector's vocabulary) are used; no simulator poses or states. Instance ids
name detections within one frame only.
"""

from __future__ import annotations

import numpy as np

from embodied.perception.clouds import Group, describe_batch
from embodied.perception.geometry import back_project, pixel_colours, stride_subsample
from embodied.perception.types import ObjectObservation, PerceptionConfig


def detect_masks(
    arrays: dict[str, np.ndarray],
    labels: dict[int, str],
    camera: str,
    t: int,
    cfg: PerceptionConfig,
    depth_sigma: float = 0.0,
) -> list[ObjectObservation]:
    """Object observations of one camera from its checked arrays (see ``geometry.camera_arrays``).

    ``arrays``: rgb (H,W,3), depth (H,W) m, segmentation (H,W) int32,
    intrinsics (3,3), extrinsics (4,4); ``depth_sigma``: the image's depth std at 1 m (m).
    """
    seg, depth = arrays["segmentation"], arrays["depth"]
    w = depth.shape[1]
    valid = (seg > 0) & (depth > cfg.min_depth) & (depth < cfg.max_depth)
    flat = np.flatnonzero(valid)
    if len(flat) == 0:
        return []
    ids = seg.ravel()[flat]
    # A stable sort groups each instance's pixels and keeps them in raster order,
    # so a regular stride over a group keeps its spatial spread.
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    cuts = np.flatnonzero(sorted_ids[1:] != sorted_ids[:-1]) + 1
    starts = np.concatenate([[0], cuts])
    stops = np.concatenate([cuts, [len(order)]])
    # A mask on the image border may be cut off: the memory then trusts its extent less.
    border = set(np.unique(np.concatenate([seg[0], seg[-1], seg[:, 0], seg[:, -1]])).tolist())
    behind = occluded_ids(seg, depth, max(cfg.occluder_jump, cfg.occluder_noise_stds * depth_sigma))
    chosen: list[tuple[int, str, np.ndarray, int]] = []
    for start, stop in zip(starts.tolist(), stops.tolist()):
        inst = int(sorted_ids[start])
        if stop - start < cfg.min_pixels:
            continue
        label = labels.get(inst, "object")
        if label in cfg.ignore_labels:
            continue
        picked = stride_subsample(order[start:stop], cfg.max_pixels)
        chosen.append((inst, label, flat[picked], stop - start))
    if not chosen:
        return []
    # One back-projection for every chosen pixel of the frame.
    all_idx = np.concatenate([c[2] for c in chosen])
    u, v = (all_idx % w).astype(np.float64), (all_idx // w).astype(np.float64)
    z = depth.ravel()[all_idx].astype(np.float64)
    points = back_project(u, v, z, arrays["intrinsics"].astype(np.float64), arrays["extrinsics"].astype(np.float64))
    colours = pixel_colours(arrays["rgb"], all_idx)
    groups, start = [], 0
    for inst, label, idx, n_pixels in chosen:
        groups.append(Group(label, f"{camera}#{inst}", start, start + len(idx), n_pixels, inst in border,
                            inst in behind))
        start += len(idx)
    return describe_batch(points, colours, groups, camera, t, cfg, arrays["extrinsics"][:3, 3], depth_sigma)


def occluded_ids(seg: np.ndarray, depth: np.ndarray, jump: float) -> set[int]:
    """Instance ids (of ``seg`` (H,W) int) with an edge pixel beside a pixel of another instance (or of
    none) whose depth (H,W) m reads nearer by more than ``jump`` m (at 1 m; the step grows with the range
    squared, as depth noise does, and is at least ``jump`` m). A pixel with no depth return says nothing."""
    out: set[int] = set()
    for a, b, za, zb in ((seg[:, :-1], seg[:, 1:], depth[:, :-1], depth[:, 1:]),
                         (seg[:-1], seg[1:], depth[:-1], depth[1:])):
        edge = np.nonzero(a != b)  # mask borders only: a few hundred of the image's pixels
        a, b, za, zb = a[edge], b[edge], za[edge], zb[edge]
        step = np.maximum(jump, jump * np.minimum(za, zb) ** 2)
        out.update(a[(zb > 0) & (za - zb > step)].tolist())
        out.update(b[(za > 0) & (zb - za > step)].tolist())
    out.discard(0)
    return out
