"""Pieces of one object that an occluder cut apart (learned mode).

A learned segmenter names what it sees: a block half behind a drawer's handle comes out as a few-pixel
piece beside the handle and the rest of the block on its other side, two instances the region grouper
never compares (they are no neighbours in the image). In 3D the pieces touch. Memory would make two
objects of them, seen together in every frame and so never merged.

    objects = join_pieces(objects, max_pixels=12, gap=0.02, singular=lambda c: c not in touching,
                          singular_gap=0.06)

A class whose objects never touch one another (in the segmenter's training labels: a dumbbell, a lamp;
not blocks or drawers, ``SegmenterConfig.touching``) joins its pieces whatever their size, and further
apart: a dumbbell lying across a bed shows its two weights and its bar as three pieces with bed between
them in the image, the bar's ends lost to the bed (the pieces' boxes 4 cm apart), and memory had made
three dumbbells of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from embodied.perception.types import ObjectObservation


def join_pieces(objects: list[ObjectObservation], max_pixels: int, gap: float,
                singular: Callable[[str], bool] = lambda label: False, singular_gap: float = 0.0
                ) -> list[ObjectObservation]:
    """One camera's observations with each piece of fewer than ``max_pixels`` valid pixels folded into
    the largest other observation of its class and colour name whose box lies within ``gap`` m of its box
    (none: it stays as it is); for a ``singular`` class (one whose objects never touch one another), every
    observation within ``max(gap, singular_gap)`` of another of its class and colour, whatever its size,
    joins it (chains included). Order kept, folded pieces dropped. ``max_pixels`` 0: off."""
    if max_pixels <= 0 or len(objects) < 2:
        return objects
    order = sorted(range(len(objects)), key=lambda i: -objects[i].n_points)
    into: dict[int, int] = {}
    for i in order[::-1]:  # smallest first
        piece = objects[i]
        one_of_a_kind = singular(piece.label)
        if piece.n_points >= max_pixels and not one_of_a_kind:
            continue
        reach = max(gap, singular_gap) if one_of_a_kind else gap
        for j in order:
            other = objects[j]
            if j == i or j in into or (other.n_points, -j) <= (piece.n_points, -i):
                continue
            if other.label != piece.label or other.colour != piece.colour:
                continue
            if _apart(piece, other) <= reach or (one_of_a_kind and _near_joined(piece, j, into, objects, reach)):
                into[i] = j
                break
    if not into:
        return objects
    pieces: dict[int, list[int]] = {}
    for i, j in into.items():
        while j in into:  # a piece folded into a piece that was folded in turn
            j = into[j]
        pieces.setdefault(j, []).append(i)
    out = []
    for k, obs in enumerate(objects):
        if k in into:
            continue
        out.append(_joined(obs, [objects[i] for i in pieces[k]]) if k in pieces else obs)
    return out


def is_line(view: ObjectObservation, width: float, noise_stds: float = 0.0) -> bool:
    """Whether ``view`` is thinner than ``width`` m along two axes: a line, no view of a solid thing. With
    ``noise_stds`` the width along each axis grows by that many stds of one of its points (``view.noise``):
    depth noise thickens a one-pixel line along the viewing ray (realistic sensor: 2 mm at the table)."""
    width = width + noise_stds * np.asarray(view.noise, dtype=np.float64)
    return bool(lines(view.box_min[None], view.box_max[None], width)[0])


def lines(lo: np.ndarray, hi: np.ndarray, width) -> np.ndarray:
    """(D,) bool: boxes (D,3) m thinner than ``width`` m (scalar or (3,)) along two axes (``is_line``)."""
    return (np.asarray(hi) - np.asarray(lo) < width).sum(axis=1) >= 2


def _apart(a: ObjectObservation, b: ObjectObservation) -> float:
    """The gap (m) between two boxes along the axis they are furthest apart on (negative: overlapping)."""
    return float(np.max(np.maximum(a.box_min - b.box_max, b.box_min - a.box_max)))


def _near_joined(piece: ObjectObservation, j: int, into: dict[int, int], objects: list, gap: float) -> bool:
    """Whether ``piece`` lies within ``gap`` of a smaller piece already folded into ``j`` (a dumbbell's far
    weight is not near the near weight, but near the bar that joined it)."""
    return any(k != j and target == j and _apart(piece, objects[k]) <= gap for k, target in into.items())


def join_views(views: list[ObjectObservation]) -> ObjectObservation:
    """Several observations of one object (one camera, one frame) as one: the one of most pixels grown by
    the others (their points, box and pixels added, colour weighted by pixels)."""
    k = max(range(len(views)), key=lambda i: views[i].n_points)
    return _joined(views[k], views[:k] + views[k + 1:])


def _joined(whole: ObjectObservation, parts: list[ObjectObservation]) -> ObjectObservation:
    """``whole`` grown by ``parts``: their points, box and pixel count added, colour weighted by pixels."""
    every = [whole, *parts]
    points = np.concatenate([o.points for o in every])
    weights = np.array([o.n_points for o in every], dtype=np.float64)
    rgb = (np.stack([o.rgb for o in every]) * weights[:, None]).sum(0) / weights.sum()
    return dataclasses.replace(
        whole,
        rgb=rgb.astype(np.float32),
        centroid=points.mean(0).astype(np.float64),
        box_min=np.min([o.box_min for o in every], axis=0),
        box_max=np.max([o.box_max for o in every], axis=0),
        points=points,
        n_points=int(weights.sum()),
        truncated=any(o.truncated for o in every),
        occluded=any(o.occluded for o in every),
    )
