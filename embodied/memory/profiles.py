"""What a detector gets wrong (``DetectorProfile``), and the named rules memory can switch off (``RULES``).

A profile's fields each switch one mechanism the detector needs (``MemoryConfig.for_detector``); a rule is a
mechanism for one kind of evidence a general one does not cover, listed here with what it does, switched
off by name in ``MemoryConfig.off`` (tests/test_memory_rules.py holds one ablation per rule).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DETECTORS = ("masks", "learned", "geometric")
RULES = {
    # association
    "lit_face": "a view of another class centred over an emissive node is its lit face (class votes)",
    "unmoved_elsewhere": "a node another camera sees unmoved this frame is taken by no view's nearness",
    "standing_still": "a container lost at rest takes a view off its footprint after passing look-alikes",
    "patch_not_hidden": "a patch (a size class with no height) never takes a thing hidden in a container",
    "slide_gate": "a part on a slide is taken only by views along its slide",
    "anchored_footprint": "an anchored thing is taken only by views centred over it",
    "looked_at_ground": "a node is found again only on ground a camera looked at before",
    "no_lines": "a line (thin along two axes) finds no node again",
    "handoff": "a node lost a moment ago close by is the better explanation of a look-alike view",
    # spawn
    "patch_piece": "a patch beside a view of its colour that found a node is a piece of it",
    "steady_edge": "an emissive thing seen still at the image's edge makes a node (where edge views wait)",
    "in_hand": "a view of the held object's class and colour beside it is a sliver between the fingers",
    "beside_pressable": "a pressable view centred by a remembered one is a sliver of its base",
    # measurement update
    "one_face": "a view flat along an axis on which the object is thick shows one face",
    "reaches_out": "a smaller view reaching out of the camera's last one shows the object elsewhere",
    "nested": "a view nested in the camera's last (or holding it) shows the same still thing",
    "shape_reference": "a size-class node's last view of another size class is no reference",
    "lit_face_partial": "a pressable part's view of another class is its lit face: part of it",
    "height": "a rigid object seen from above keeps the height it showed at rest",
    "like_for_like": "a view of part of what the reference look showed weighs its share as colour evidence",
    "hue_edge": "a hue at its name's edge, or nudged by a brighter look, is no change of colour",
    # lifecycle and identity
    "glimpse": "an object seen a moment after leaving a container, then lost, is still in it",
    "sink": "an object lost into a container above its floor sank to it",
    "uncover": "a cup lifted clear of what it covered holds it no longer",
    "rejoin": "a node renamed by its votes joins the node of its new class known gone",
    # parts and the hand
    "reaching_in": "a drawer the fingers reach into is not judged (the arm hides its front)",
    "off_slide_is_partial": "a drawer view shifted off its slide shows part of it (it slides along it only)",
    "front_face": "a part's view nothing cuts or hides shows its front where the part is on its slide",
    "hand_hides_cap": "a cap under the hand is judged from proprioception alone",
    "grasp_takes_out": "an object grasped is in no container any more",
}


@dataclass
class DetectorProfile:
    """What a detector gets wrong, so what memory must allow for. Each field switches one mechanism."""

    name: str = "masks"  # the detector: masks (the renderer's, exact), learned (an RGB-D segmenter), geometric
    # Labels flicker (a plate read as a book): another class's view may continue a node; nodes take the majority class.
    class_votes: bool = False
    strict_class: bool = True  # labels are exact classes; off: size classes (geometric) may continue any movable node
    min_sightings: int = 1  # a node seen fewer times is tentative: no plan uses it (ConceptGraphs keeps after 3)
    new_from_truncated: bool = True  # an unmatched view cut by the image's edge makes a node (off: only whole views do)
    steady_frames: int = 3  # frames an emissive thing seen still only at the image's edge takes to make a node
    # m: an object merely out of view (not found missing) is picked up again only this near where it was
    # (None: anywhere); stray far views of a learned detector take objects' names.
    reid_out_of_view_reach: float | None = None
    object_pieces: bool = False  # pieces of one object join, and views of two objects as one are left out
    drawer_pieces: bool = False  # pieces of a drawer join, merged rows are left out, and neighbours cut out
    drawer_narrow_views: bool = False  # a drawer view much narrower across its slide is a part hidden
    row_slide: bool = False  # a drawer with no slide vote takes its row's (seen pulled out, apart from its housing)

    @classmethod
    def of(cls, name: str, **overrides: Any) -> DetectorProfile:
        if name not in DETECTORS:
            raise ValueError(f"unknown detector {name!r}; detectors: {', '.join(DETECTORS)}")
        learned, geometric = name == "learned", name == "geometric"
        base = {"name": name, "class_votes": learned, "strict_class": not geometric,
                "min_sightings": 1 if name == "masks" else 3, "new_from_truncated": not learned,
                "reid_out_of_view_reach": 1.5 if learned else None, "object_pieces": learned, "drawer_pieces": learned,
                "drawer_narrow_views": learned, "row_slide": geometric}
        return cls(**{**base, **overrides})
