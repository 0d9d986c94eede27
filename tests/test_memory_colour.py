"""What memory logs as a change of colour: a still thing that changes its look (a cue panel, a lit
button) is recoloured; a block seen in another colour while it moves catches a highlight and is not. A
change is evidence gathered over frames: one twice past its threshold holds at once, a weaker one over
more frames."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from embodied.memory import MemoryConfig, SpatialMemory, affordances
from embodied.perception.colour import colour_name
from tests.memory_helpers import detection, frame


def _seen(memory: SpatialMemory, t: int, centre, colour: str) -> None:
    memory.update(frame(t, [detection(centre, colour=colour, camera="top", key="top#block")]))


@pytest.mark.parametrize("moving", [False, True])
def test_a_colour_seen_while_moving_is_no_change_of_colour(moving):
    memory = SpatialMemory()
    _seen(memory, 0, (0.4, 0.0, 0.02), "orange")
    _seen(memory, 1, (0.4, 0.0, 0.02), "orange")
    # The next looks are yellow: in place (a panel that changed; 1.45 times the colour tolerance from
    # orange, so three looks make it a change), or 2 cm further (lifted by something into a highlight: an
    # orange block in bright light is named yellow), then set down and seen orange again.
    t = 2
    for _ in range(3):
        _seen(memory, t, (0.42 if moving else 0.4, 0.0, 0.02), "yellow")
        t += 1
        if moving:
            break
    (block,) = memory.find(cls="block")
    tags = [e["tag"] for e in memory.history(block)]
    assert ("recoloured" in tags) is not moving
    assert memory.graph.nodes[block]["colour"] == ("orange" if moving else "yellow")
    # Set down and seen orange again: still the orange block, never recoloured.
    for _ in range(3):
        _seen(memory, t, (0.42 if moving else 0.4, 0.0, 0.02), "orange" if moving else "yellow")
        t += 1
    assert memory.find(cls="block") == [block]
    assert memory.graph.nodes[block]["colour"] == ("orange" if moving else "yellow")
    assert [e["tag"] for e in memory.history(block)].count("recoloured") == (0 if moving else 1)


def test_a_weaker_change_of_colour_holds_after_two_frames():
    """A still block seen yellow in place, 1.45 times the colour tolerance from its orange: not a change on
    one frame's evidence, a change on two (a clear change, twice the tolerance, holds at once)."""
    memory = SpatialMemory()
    for t in range(2):
        _seen(memory, t, (0.4, 0.0, 0.02), "orange")
    _seen(memory, 2, (0.4, 0.0, 0.02), "yellow")
    (block,) = memory.find(cls="block")
    assert memory.graph.nodes[block]["colour"] == "orange"
    _seen(memory, 3, (0.4, 0.0, 0.02), "yellow")
    assert memory.graph.nodes[block]["colour"] == "yellow"


def _seen_rgb(memory: SpatialMemory, t: int, rgb) -> None:
    det = detection((0.4, 0.0, 0.02), colour="orange", camera="wrist", key="wrist#block")
    rgb = np.asarray(rgb, np.float32)
    memory.update(frame(t, [dataclasses.replace(det, rgb=rgb, colour=colour_name(rgb))]))


@pytest.mark.parametrize("rule", [True, False])
@pytest.mark.parametrize("case", ["edge", "brighter", "repainted"])
def test_lighting_that_tips_orange_into_yellow_is_no_change_of_colour(case, rule):
    """Read on the randomized look: a still orange block, seen by the wrist camera
    at hue 48 (yellow's band begins at 45), then from nearer, far brighter and clipped to hue 57, was
    recoloured yellow, and the recall fetched it for "the yellow block". A name read on the edge of its
    band, and a hue nudged as the view brightens, are lighting; a new paint at full hue is a change. The
    ablation takes both out (``hue_edge``). The camera watches the still block ten steps: the edge hue lies
    just past the colour tolerance (1.1 times), whose evidence takes that long to add up."""
    memory = SpatialMemory(MemoryConfig(off=() if rule else ("hue_edge",)))
    orange = (0.96, 0.55, 0.06) if case != "brighter" else (0.60, 0.31, 0.03)  # hue 33 / 31: orange
    for t in range(2):
        _seen_rgb(memory, t, orange)
    now = {"edge": (0.87, 0.71, 0.08), "brighter": (0.93, 0.89, 0.18), "repainted": (0.93, 0.90, 0.10)}[case]
    for t in range(2, 12):
        _seen_rgb(memory, t, now)
    (block,) = memory.find(cls="block")
    changed = memory.graph.nodes[block]["colour"] == "yellow"
    assert changed is (case == "repainted" or not rule)


@pytest.mark.parametrize("rule", [True, False])
def test_a_screen_seen_whole_only_once_lit_is_recoloured(rule, monkeypatch):
    """Read on the randomized look: the detector took only the
    top rim of a grey screen, then its whole face, 4 cm lower with several times the points, when it lit.
    That view holds the rim's box: more of the same still screen, so its red is a change of colour, logged
    as the screen lighting up (what a flash count counts). A screen is mounted, too: it never moves
    (anchored). Without both (``nested`` off, a screen that is not mounted) the shift is motion: the screen
    is never recoloured (the agent has no colour to look for) and the flash goes uncounted."""
    if not rule:
        monkeypatch.setitem(affordances.TABLE, "cue_panel",
                            dataclasses.replace(affordances.TABLE["cue_panel"], mounted=False))
    memory = SpatialMemory(MemoryConfig(off=() if rule else ("nested",)))
    rim = detection((0.18, -0.42, 0.14), "cue_panel", "grey", (0.02, 0.10, 0.0), camera="top", key="top#panel")
    face = detection((0.18, -0.42, 0.10), "cue_panel", "red", (0.02, 0.10, 0.08), camera="top", key="top#panel")
    for t in range(3):
        memory.update(frame(t, [rim]))
    memory.update(frame(3, [face]))
    (panel,) = memory.find(cls="cue_panel")
    assert face.n_points >= 2 * rim.n_points
    assert (memory.graph.nodes[panel]["colour"] == "red") is rule
    assert ([e["tag"] for e in memory.history(panel) if e["t"] == 3] == ["brightened"]) is rule
