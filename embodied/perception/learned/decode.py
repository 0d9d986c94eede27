"""Network outputs -> an instance map and its labels (Panoptic-DeepLab style grouping).

Thing pixels vote for a centre (pixel + offset) and join the nearest detected
centre peak; each instance takes the majority class of its pixels. Stuff
classes (floor, walls, the table) are one instance per class, as the
renderer's masks give them.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


def group_instances(semantic: torch.Tensor, centre: torch.Tensor, offset: torch.Tensor, classes: tuple[str, ...],
                    stuff: tuple[str, ...], threshold: float = 0.1, max_instances: int = 64
                    ) -> tuple[np.ndarray, dict[int, str]]:
    """One frame: semantic (C+1,H,W) logits, centre (1,H,W), offset (2,H,W) px ->
    (instance ids (H,W) int32, 0 = background; {id: class})."""
    _, h, w = semantic.shape
    sem = semantic.argmax(0)
    out = torch.zeros((h, w), dtype=torch.int32)
    labels: dict[int, str] = {}
    stuff_ids = [k + 1 for k, c in enumerate(classes) if c in stuff]
    next_id = 1
    for k in stuff_ids:
        mask = sem == k
        if bool(mask.any()):
            out[mask] = next_id
            labels[next_id] = classes[k - 1]
            next_id += 1
    thing = sem > 0
    for k in stuff_ids:
        thing &= sem != k
    if not bool(thing.any()):
        return out.numpy(), labels
    heat = centre[0]
    peaks = (heat == F.max_pool2d(heat[None, None], 5, 1, 2)[0, 0]) & (heat > threshold)
    py, px = torch.nonzero(peaks, as_tuple=True)
    if len(py) == 0:
        return out.numpy(), labels
    if len(py) > max_instances:
        top = heat[py, px].topk(max_instances).indices
        py, px = py[top], px[top]
    ty, tx = torch.nonzero(thing, as_tuple=True)
    vy, vx = ty + offset[0, ty, tx], tx + offset[1, ty, tx]
    d = (vy[:, None] - py[None].float()) ** 2 + (vx[:, None] - px[None].float()) ** 2
    nearest = d.argmin(1)
    n_classes = semantic.shape[0]
    votes = torch.zeros((len(py), n_classes), dtype=torch.int64)
    votes.index_put_((nearest, sem[ty, tx]), torch.ones_like(nearest), accumulate=True)
    majority = votes.argmax(1)
    ids = torch.full((len(py),), 0, dtype=torch.int32)
    for j in torch.nonzero(votes.sum(1) > 0).flatten().tolist():
        ids[j] = next_id
        labels[next_id] = classes[int(majority[j]) - 1]
        next_id += 1
    out[ty, tx] = ids[nearest]
    return out.numpy(), labels
