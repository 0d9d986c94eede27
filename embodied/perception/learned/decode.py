"""Network outputs -> an instance map and its labels (Panoptic-DeepLab style grouping).

Thing pixels vote for a centre (pixel + offset) and join the nearest detected
centre peak; each instance takes the majority class of its pixels. Stuff
classes (floor, walls, the table) are one instance per class, as the
renderer's masks give them. Numpy only: a frame groups in well under a
millisecond.

A big object (a bed, a sofa) can get two centre peaks and come out in
fragments. ``merge_fragments`` joins touching instances of one class unless
that class's instances touch each other in the training labels (a drawer
row, stacked blocks), which the training run measures (``touching_classes``).
"""

from __future__ import annotations

import numpy as np

PEAK_WINDOW = 5  # px: a centre is the maximum of the heat within this window
TOUCH_GAP = 6  # px: instances of a class this close in the training labels are never merged (cups 12 cm apart)


def centre_peaks(heat: np.ndarray, threshold: float, max_instances: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of local maxima of ``heat`` (H,W) above ``threshold``, strongest first."""
    r = PEAK_WINDOW // 2
    h, w = heat.shape
    padded = np.pad(heat, r, constant_values=-1.0)
    local = np.maximum.reduce([padded[dy:dy + h, dx:dx + w] for dy in range(2 * r + 1) for dx in range(2 * r + 1)])
    py, px = np.nonzero((heat >= local) & (heat > threshold))
    order = np.argsort(-heat[py, px], kind="stable")[:max_instances]
    return py[order], px[order]


def group_instances(sem: np.ndarray, heat: np.ndarray, offset: np.ndarray, classes: tuple[str, ...],
                    stuff: tuple[str, ...], threshold: float = 0.1, max_instances: int = 64
                    ) -> tuple[np.ndarray, dict[int, str]]:
    """One frame: class per pixel (H,W) (0 = background, k = classes[k-1]), centre heat (H,W), offsets
    (2,H,W) px -> (instance ids (H,W) int32, 0 = background; {id: class})."""
    n_classes = len(classes) + 1
    is_stuff = np.zeros(n_classes, bool)
    is_stuff[[k + 1 for k, c in enumerate(classes) if c in stuff]] = True
    present = np.bincount(sem.ravel(), minlength=n_classes) > 0
    lut = np.zeros(n_classes, np.int32)
    labels: dict[int, str] = {}
    for k in np.flatnonzero(is_stuff & present):
        lut[k] = len(labels) + 1
        labels[len(labels) + 1] = classes[k - 1]
    out = lut[sem]
    thing = (sem > 0) & ~is_stuff[sem]
    if not thing.any():
        return out, labels
    py, px = centre_peaks(heat, threshold, max_instances)
    if len(py) == 0:
        return out, labels
    ty, tx = np.nonzero(thing)
    vy, vx = ty + offset[0, ty, tx], tx + offset[1, ty, tx]
    nearest = ((vy[:, None] - py[None]) ** 2 + (vx[:, None] - px[None]) ** 2).argmin(1)
    votes = np.bincount(nearest * n_classes + sem[ty, tx], minlength=len(py) * n_classes).reshape(len(py), n_classes)
    used = np.flatnonzero(votes.sum(1) > 0)
    ids = np.zeros(len(py), np.int32)
    first = len(labels) + 1
    ids[used] = np.arange(first, first + len(used), dtype=np.int32)
    for j, k in zip(used.tolist(), votes[used].argmax(1).tolist()):
        labels[int(ids[j])] = classes[k - 1]
    out[ty, tx] = ids[nearest]
    return out, labels


def merge_fragments(ids: np.ndarray, labels: dict[int, str], keep_apart: tuple[str, ...], min_contact: int = 8
                    ) -> tuple[np.ndarray, dict[int, str]]:
    """Join instances of one class (not in ``keep_apart``) that share at least ``min_contact`` pixel edges."""
    a = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    b = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    edge = (a != b) & (a > 0) & (b > 0)
    if not edge.any():
        return ids, labels
    n = int(ids.max()) + 1
    contact = np.bincount(np.minimum(a, b)[edge] * n + np.maximum(a, b)[edge], minlength=n * n).reshape(n, n)
    root = np.arange(n)
    for p, q in zip(*np.nonzero(contact >= min_contact)):
        cls = labels.get(int(p))
        if cls is None or cls != labels.get(int(q)) or cls in keep_apart:
            continue
        rp, rq = _root(root, int(p)), _root(root, int(q))
        root[max(rp, rq)] = min(rp, rq)
    final = np.array([_root(root, k) for k in range(n)])
    if (final == np.arange(n)).all():
        return ids, labels
    return final[ids], {k: c for k, c in labels.items() if final[k] == k}


def _root(parent: np.ndarray, k: int) -> int:
    while parent[k] != k:
        parent[k] = parent[parent[k]]
        k = int(parent[k])
    return k


def touching_classes(instance: np.ndarray, labels_of, frames: np.ndarray, gap: int = TOUCH_GAP) -> tuple[str, ...]:
    """Classes with two instances at most ``gap`` px apart (1: sharing a pixel edge) in any of ``frames``
    (indices into ``instance`` (N,H,W); ``labels_of(i)`` gives frame i's {id: class}). The margin covers
    predicted masks a pixel or two wider than the true ones: buttons on a panel, pads on the table."""
    found: set[str] = set()
    for i in frames:
        ids = instance[i].astype(np.int64)
        a = np.concatenate([x for d in range(1, gap + 1) for x in (ids[:, :-d].ravel(), ids[:-d, :].ravel())])
        b = np.concatenate([x for d in range(1, gap + 1) for x in (ids[:, d:].ravel(), ids[d:, :].ravel())])
        edge = (a != b) & (a > 0) & (b > 0)
        labels = labels_of(int(i))
        for p, q in set(zip(a[edge].tolist(), b[edge].tolist())):
            if labels.get(p) is not None and labels.get(p) == labels.get(q):
                found.add(labels[p])
    return tuple(sorted(found))


def measure_touching(frames, sample: int = 3000, seed: int = 0) -> tuple[str, ...]:
    """``touching_classes`` over a random sample of ``frames`` (a :class:`~.frames.Frames`)."""
    idx = np.random.default_rng(seed).permutation(len(frames))[:sample]
    return touching_classes(frames.instance, frames.labels, idx)
