"""Each camera's look at a node, and the evidence that it changed: lit, dimmed, recoloured.

Cameras see one surface in different colours (a highlight turns orange yellowish), so a node's colour is
judged against each camera's own reference look (``View.rgb``), which follows the looks that show no
change. A step of the brightest channel by ``brightness_ratio`` or more is a light going on or off (the
name kept: a white block in a drawer is still white); a firm change of colour name is a recolouring. Past
its threshold a frame brings half the evidence to decide (``beliefs.enter``), twice past it all of it: a
light is logged in its first frame, a weaker change after two, a one-frame glint never.
"""

from __future__ import annotations

import numpy as np

from embodied.memory.tracks import View
from embodied.perception.colour import colour_distance, colour_name, hue_nudged, named_firmly
from embodied.perception.types import ObjectObservation


def brightness(rgb: np.ndarray) -> float:
    return max(float(np.max(rgb)), 1e-3)


def judge_colour(det: ObjectObservation, reference: np.ndarray | None, view: View | None, a: dict, changes: dict,
                 config, extent: int = 0) -> int:
    """Judge ``det``'s colour against the camera's ``reference`` look (``view`` keeps it and the evidence);
    write a change into ``changes`` (``a``: the node's attributes); +1 brightened, -1 dimmed, else 0."""
    if reference is None or view is None:
        return 0
    cfg = config.association
    rgb = np.asarray(det.rgb, dtype=np.float64)
    ratio = np.log(brightness(rgb) / brightness(reference))
    step = abs(ratio) / np.log(cfg.brightness_ratio)
    far = colour_distance(rgb, reference) / cfg.colour_tolerance
    edge = config.on("hue_edge")
    renamed = (det.colour != colour_name(reference) and (named_firmly(rgb) or not edge) and det.colour != a["colour"]
               and not (edge and step > 1 and ratio > 0 and hue_nudged(rgb, reference)))
    strength = max(step, far if renamed else 0.0)
    b, blend = config.beliefs, config.track.reference_blend
    evidence = b.enter * min(1.0, 0.5 + (strength - 1.0) / 2)
    if extent and config.on("like_for_like"):  # a view of part of what the reference showed weighs its share
        evidence *= min(1.0, det.n_points / extent)
    view.pending = total = min(b.limit, max(0.0, view.pending) + evidence) if strength > 1 else 0.0
    if total < b.enter and not (b.single_frame and strength > 1):
        if strength <= 1:
            view.rgb = (1 - blend) * reference + blend * rgb
        return 0
    view.rgb, view.pending = rgb, 0.0
    rounded = tuple(round(float(x), 4) for x in rgb[:3])
    if renamed and far > 1:
        changes.update(colour=det.colour, rgb=rounded)
    elif step > 1:
        changes.update(rgb=rounded)
    else:
        return 0
    return (1 if ratio > 0 else -1) if step > 1 else 0
