"""Patches of a surface read as things (learned mode).

In the randomized look a table can take a task object's colour; the segmenter then reads a patch of that
table as, say, the pink block (a few pixels of table seen between the arm and a cup give a flat view at
the table's height, which memory would take for the block's top face and complete 4 cm down, into the
table). A thing's flat view is its top face, and a top face stands above the surface it rests on (a
block's 4 cm, a pad's 2 mm); a flat view level with a surface seen in the same image is a piece of it.

    drop = surface_patches(objects, flat=0.005, tol=0.001, kept=("pad", "button", "drawer"))
    objects = [o for o in objects if o.key not in drop]
"""

from __future__ import annotations

import numpy as np

from embodied.perception.types import ObjectObservation

SURFACES = ("table", "floor")  # the horizontal surfaces things rest on, as the detectors name them


def surface_levels(objects: list[ObjectObservation], surfaces: tuple[str, ...]
                   ) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Per view of a class in ``surfaces`` (one camera): its xy box (2,) m min and max and its level, the
    median height (m) of its points (a table seen from above is mostly its top)."""
    return [(o.box_min[:2], o.box_max[:2], float(np.median(o.points[:, 2])))
            for o in objects if o.label in surfaces and len(o.points)]


def surface_patches(objects: list[ObjectObservation], flat: float, tol: float, kept: tuple[str, ...],
                    surfaces: tuple[str, ...] = SURFACES, noise_stds: float = 0.0) -> set[str]:
    """Keys of one camera's views that are patches of a surface: under ``flat`` m tall, of a class neither
    in ``kept`` nor in ``surfaces``, their centre over a surface view's xy box and their top within ``tol``
    m of its level (``surface_levels``). ``tol`` 0: none. With ``noise_stds``, ``flat`` and ``tol`` grow by
    that many stds of the view's points along z (``ObjectObservation.noise``): under depth noise a patch's
    top (the mean of its highest points) and its height (between two such means) stray by about one
    (realistic sensor, a 6-pixel patch of the table seen from 0.9 m: dropped 55 % of the time at 1 mm, 99 %
    at 1 mm + 2 stds)."""
    levels = surface_levels(objects, surfaces) if tol > 0 else []
    if not levels:
        return set()
    out = set()
    for obs in objects:
        slack = noise_stds * float(np.asarray(obs.noise)[2])
        if obs.label in kept or obs.label in surfaces or float(obs.box_max[2] - obs.box_min[2]) >= flat + slack:
            continue
        xy, top = obs.center[:2], float(obs.box_max[2])
        if any(np.all(xy >= lo) and np.all(xy <= hi) and abs(top - level) <= tol + slack
               for lo, hi, level in levels):
            out.add(obs.key)
    return out
