"""Memory on a learned detector's views of things that light up (screens, buttons), read from the randomized
look: a lit screen named otherwise, a screen only ever seen at the image's edge. Each rule with the case
that must fail without it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from embodied.memory import SpatialMemory, affordances
from tests.memory_helpers import detection, frame, profile


def _learned(off: tuple[str, ...] = ()) -> SpatialMemory:
    """The memory the agent keeps on the learned detector (class votes, edge pieces wait), the named rules
    ``off`` switched off."""
    return SpatialMemory(profile(off, class_votes=True, new_from_truncated=False))


def _screen(label: str, colour: str, truncated: bool = False, dx: float = 0.0, z: float = 0.10):
    det = detection((0.185 + dx, -0.414, z), label, colour, size=(0.02, 0.10, 0.08 if z > 0.05 else 0.02),
                    key="top#screen")
    return dataclasses.replace(det, truncated=truncated)


@pytest.mark.parametrize("rule", [True, False])
def test_a_lit_screen_named_a_cup_is_still_the_screen(rule, monkeypatch):
    """In the randomized look the screen, lit red, was named a red cup on every frame of the cue. A screen
    lights up (emissive), so a view of another class on its points continues it, and no vote renames it:
    one node, which shows red. Without the rule (a screen that is not emissive) the red view made a cup
    (or, voted, turned the screen into one), and memory never saw the screen show a colour."""
    if not rule:
        monkeypatch.setitem(affordances.TABLE, "cue_panel",
                            dataclasses.replace(affordances.TABLE["cue_panel"], emissive=False))
    memory = _learned()
    looks = [("cue_panel", "grey")] * 4 + [("cup", "red")] * 6 + [("cue_panel", "grey")] * 4
    for t, (label, colour) in enumerate(looks):
        memory.update(frame(t, [_screen(label, colour)]))
    screens, cups = memory.find(cls="cue_panel"), memory.find(cls="cup")
    showed_red = any(e["data"].get("colour") == "red" for n in screens for e in memory.history(n) if e.get("data"))
    assert (len(screens) == 1 and not cups and showed_red) is rule


@pytest.mark.parametrize("case", ["steady", "jumping", "not lit", "known", "rule off"])
def test_a_screen_only_ever_seen_at_the_image_edge_enters_memory_when_steady(case):
    """In the randomized look the jittered scene camera saw the screen
    only at its image's edge, and a learned detector's view cut by the edge waits for a whole view, so the
    screen never entered memory. Seen in one place three frames running (a still camera), a lit thing's edge
    view makes its node. Pieces that jump from frame to frame (a moving wrist camera) still wait, as do edge
    views of things that do not light up, and a steady sliver of a screen memory already holds (the wrist
    camera's view of its base, in another colour, had made a second screen that took the first one's
    views). The rule: ``steady_edge``."""
    memory = _learned(("steady_edge",) if case == "rule off" else ())
    known = detection((0.185, -0.414, 0.10), "cue_panel", "orange", size=(0.02, 0.10, 0.08), key="side#screen")
    for t in range(4):
        label = "block" if case == "not lit" else "cue_panel"
        edge = _screen(label, "grey", truncated=True, dx=0.03 * t if case == "jumping" else 0.0,
                       z=0.01 if case == "known" else 0.10)  # the known screen's base, below its face
        memory.update(frame(t, [known, edge] if case == "known" else [edge]))
    made = memory.find(cls="block" if case == "not lit" else "cue_panel")
    if case == "known":
        assert [memory.graph.nodes[n]["colour"] for n in made] == ["orange"]
        return
    assert bool(made) is (case == "steady")
    if case == "steady":
        assert memory.graph.nodes[made[0]]["first_seen"] == 2
        assert np.allclose(memory.graph.nodes[made[0]]["position"][:2], (0.185, -0.414), atol=0.01)
