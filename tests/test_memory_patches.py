"""A patch beside a view of its colour is a piece of that thing (geometric mode's size classes).

The wrist camera over a (pink) block carried across the table sees its top face, and in one frame also a 5-point
sliver of its side 3 cm lower, which geometric perception reads as a "flat" thing of the block's colour.
Synthetic frames from a camera looking down."""

from __future__ import annotations

import numpy as np

from embodied.memory import SpatialMemory
from tests.memory_helpers import detection, frame, profile

BLOCK = (0.04, 0.04, 0.04)
SLIVER = ((0.46, 0.05, 0.10), "flat", "red", (0.03, 0.01, 0.0))


def _carry(memory: SpatialMemory) -> None:
    """The red block carried in -y at 12 cm, seen whole; at t=3 the sliver of its side beside it; then
    lowered onto the table at y=0."""
    path = [(0.16, 0.12), (0.13, 0.12), (0.10, 0.12), (0.07, 0.12), (0.04, 0.10), (0.02, 0.08), (0.0, 0.05),
            (0.0, 0.02), (0.0, 0.02)]
    for t, (y, z) in enumerate(path):
        dets = [detection((0.46, y, z), "small", "red", BLOCK)]
        if t == 3:
            dets.append(detection(*SLIVER))
        memory.update(frame(t, dets))


def test_a_sliver_beside_a_carried_block_is_no_second_thing():
    memory = SpatialMemory(profile(strict_class=False, min_sightings=3))
    _carry(memory)
    red = [n for n, a in memory.graph.nodes(data=True) if a.get("colour") == "red"]
    assert len(red) == 1, red
    assert np.linalg.norm(memory.tracks[red[0]].center - (0.46, 0.0, 0.02)) < 0.01
    assert memory.last_seen(red[0]) == 8


def test_a_patch_of_another_colour_or_far_away_is_still_a_thing():
    """The rule asks for the view's colour and nearness: a grey patch there, or a red one 10 cm off, is kept."""
    memory = SpatialMemory(profile(strict_class=False))
    block = detection((0.46, 0.07, 0.12), "small", "red", BLOCK)
    grey = detection((0.46, 0.05, 0.10), "flat", "grey", (0.03, 0.01, 0.0))
    far = detection((0.46, -0.08, 0.10), "flat", "red", (0.03, 0.01, 0.0))
    memory.update(frame(0, [block, grey, far]))
    assert sorted(a["colour"] for _, a in memory.graph.nodes(data=True) if a.get("cls") == "flat") == ["grey", "red"]


def test_without_the_rule_the_sliver_becomes_a_second_red_thing():
    """The ablation (``patch_piece`` off): every unmatched view a new node, the sliver is a second red node, as
    it was on geometric perception (where it then took the block's views and the plan fetched the other)."""
    memory = SpatialMemory(profile(("patch_piece",), strict_class=False, min_sightings=3))
    _carry(memory)
    red = [n for n, a in memory.graph.nodes(data=True) if a.get("colour") == "red"]
    assert len(red) == 2, red
