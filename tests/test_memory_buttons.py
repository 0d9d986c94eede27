"""Buttons under a learned detector (``DetectorProfile.class_votes``): pressed in place and lit, never moved.
Each rule was read from a failed SequenceRecall episode in the randomized look, and each test has the
case that must fail without its rule: a named rule (``MemoryConfig.off``), a knob, a detector profile
field, or, where the rule is now what a button affords (``affordances.TABLE``: anchored, emissive), the
button given other affordances."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from embodied.memory import SpatialMemory
from embodied.memory import affordances
from embodied.memory.config import AssociationConfig, DetectorProfile, MemoryConfig
from tests.memory_helpers import detection, frame, profile

WHOLE = dict(size=(0.05, 0.06, 0.034))


def _row(memory: SpatialMemory, frames: int = 4, camera: str = "top") -> dict[float, str]:
    """Two buttons 10 cm apart seen whole for ``frames`` frames; their nodes by y."""
    views = [detection((0.45, y, 0.019), "button", "grey", camera=camera, key=f"{camera}#{y}", **WHOLE)
             for y in (-0.05, 0.05)]
    for t in range(frames):
        memory.update(frame(t, views))
    return {round(float(memory.graph.nodes[n]["position"][1]), 2): n for n in memory.find(cls="button")}


def _afford(monkeypatch, **flags) -> None:
    """Buttons afford ``flags`` instead (an ablation of what the affordance table makes of them)."""
    monkeypatch.setitem(affordances.TABLE, "button", dataclasses.replace(affordances.TABLE["button"], **flags))


@pytest.mark.parametrize("rule", [True, False])
def test_a_lit_cap_named_a_block_beside_a_sliver_of_the_base_is_the_button_lit(rule):
    """As a button lit, the scene camera named its cap a yellow block and still named
    a sliver of its base a button. The sliver, same class and on its points, had taken the node, the cap
    made a block, and the flash went to the block. A view named otherwise centred over a lit thing is the
    thing lit, whatever else overlaps it (``lit_face``); the sliver makes no second button."""
    memory = SpatialMemory(profile(() if rule else ("lit_face",), class_votes=True))
    buttons = _row(memory)
    sliver = detection((0.445, -0.023, 0.008), "button", "grey", size=(0.03, 0.004, 0.012), key="top#s")
    cap = detection((0.452, -0.049, 0.029), "block", "yellow", size=(0.038, 0.044, 0.014), key="top#cap")
    for t in range(4, 8):
        memory.update(frame(t, [sliver, cap]))
    tags = [e["tag"] for e in memory.history(buttons[-0.05])]
    lit = "brightened" in tags and not memory.find(cls="block") and len(memory.find(cls="button")) == 2
    assert lit is rule


@pytest.mark.parametrize("rule", [True, False])
def test_a_button_s_lit_cap_that_sits_higher_is_a_flash_not_a_move(rule, monkeypatch):
    """The lit view of a button was its cap alone, 9 mm above the whole button's centre (here 12 mm).
    Logged as "moved", the flash went uncounted. Lit things never move by themselves: a button is emissive
    (a change of colour is its light, not a move) and anchored (it never moves); without both it moves. The
    cap shows half of what the whole button did, so it weighs half the evidence (``like_for_like``) and is
    seen for two frames (a flash lasts three steps or more at every preset)."""
    if not rule:
        _afford(monkeypatch, emissive=False, jointed=False)
    memory = SpatialMemory(profile(class_votes=True))
    buttons = _row(memory)
    cap = detection((0.45, -0.05, 0.031), "button", "yellow", size=(0.05, 0.06, 0.02), key="top#-0.05")
    for t in (4, 5):
        memory.update(frame(t, [cap, detection((0.45, 0.05, 0.019), "button", "grey", key="top#0.05", **WHOLE)]))
    tags = [e["tag"] for e in memory.history(buttons[-0.05])]
    assert ("brightened" in tags and "moved" not in tags) is rule


@pytest.mark.parametrize("rule", [True, False])
def test_a_button_view_centred_off_its_box_neither_moves_it_nor_makes_another(rule):
    """A thin line of the table's pattern named button, beside a lit button, had dragged its node 4 cm aside
    and judged it pressed, or made a second button that took the first one's views. A button is pressed in
    place: a view of it centred more than ``association.beside`` off its box is not of it, nor is a new
    button made of it (``anchored_footprint``, ``beside_pressable``); within that slack it is a view of the
    button, which never moves. With no slack, the line makes a button that merges into the first and
    drags it."""
    beside = AssociationConfig() if rule else AssociationConfig(beside=0.0)
    memory = SpatialMemory(MemoryConfig(detector=DetectorProfile(class_votes=True), association=beside))
    buttons = _row(memory)
    before = np.asarray(memory.graph.nodes[buttons[-0.05]]["position"])
    line = detection((0.45, -0.012, 0.006), "button", "grey", size=(0.06, 0.006, 0.008), key="top#line")
    for t in range(4, 8):
        memory.update(frame(t, [line, detection((0.45, 0.05, 0.019), "button", "grey", key="top#0.05", **WHOLE)]))
    after = np.asarray(memory.graph.nodes[buttons[-0.05]]["position"])
    kept = len(memory.find(cls="button")) == 2 and bool(np.linalg.norm(after - before) < 0.005)
    assert kept is rule


@pytest.mark.parametrize("rule", [True, False])
def test_a_sunk_view_from_one_camera_keeps_the_other_camera_s_look_at_the_button(rule, monkeypatch):
    """As a button lit, the scene camera saw only its base, 6 mm lower. Taken as a move, it dropped the
    wrist camera's last view, so the wrist's lit view had nothing to compare with and the flash went
    unlogged. A button never moves (anchored) and a smaller view of it is part of it: the other cameras'
    views stay. Without the rule the button is a part that slides (prismatic, as every articulated part
    but a pressed one was), whose views are never partial."""
    if not rule:
        _afford(monkeypatch, prismatic=True)
    memory = SpatialMemory(profile(class_votes=True))
    scene = detection((0.45, 0.05, 0.019), "button", "grey", key="scene#b", camera="scene", **WHOLE)
    wrist = detection((0.45, 0.05, 0.019), "button", "grey", key="wrist#b", camera="wrist", **WHOLE)
    for t in range(4):
        memory.update(frame(t, [scene, wrist]))
    (button,) = memory.find(cls="button")
    base = detection((0.465, 0.05, 0.012), "button", "grey", size=(0.03, 0.06, 0.024), key="scene#b", camera="scene")
    lit = detection((0.45, 0.05, 0.019), "button", "yellow", key="wrist#b", camera="wrist", **WHOLE)
    memory.update(frame(4, [base, lit]))
    tags = [e["tag"] for e in memory.history(button)]
    assert ("brightened" in tags) is rule


@pytest.mark.parametrize("rule", [True, False])
def test_two_buttons_seen_as_one_leave_both_where_they_are(rule):
    """The moving wrist camera saw two neighbouring buttons as one wide button, which had stretched one node
    over both. Buttons are rigid: a view of their class covering two settled ones and far wider than either
    is left out until they are seen apart (the merged-view filter of ``DetectorProfile.object_pieces``)."""
    memory = SpatialMemory(profile(class_votes=True, object_pieces=rule))
    buttons = _row(memory, frames=12)
    where = {y: np.asarray(memory.graph.nodes[n]["position"]) for y, n in buttons.items()}
    both = detection((0.45, 0.0, 0.019), "button", "grey", size=(0.05, 0.16, 0.034), key="top#both")
    for t in range(12, 15):
        memory.update(frame(t, [both]))
    kept = len(memory.find(cls="button")) == 2 and all(
        np.linalg.norm(np.asarray(memory.graph.nodes[n]["position"]) - where[y]) < 0.005 for y, n in buttons.items())
    assert kept is rule
