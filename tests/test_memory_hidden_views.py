"""A thing hidden in a container is not taken by views of other things (geometric mode's size classes).

Glare on the cups under the wrist camera reads, on geometric perception, as a flat yellow patch, a 2 cm
yellow speck or a 25 cm yellow "large" thing: none of them is the yellow ball hidden under another cup,
which comes back into view as a solid of its own size. Synthetic frames from a camera looking down."""

from __future__ import annotations

import numpy as np
import pytest

from embodied.memory import SpatialMemory
from tests.memory_helpers import detection, frame, profile

CUP = (0.08, 0.08, 0.08)


def _twin():
    """The cup beside the ball's, resting on the table 12 cm along the row."""
    return detection((0.4, 0.12, 0.0), "cup", "orange", CUP, bottom=0.0)


def _cups() -> list:
    """The cup over the ball and its twin, both resting on the table."""
    return [detection((0.4, 0.0, 0.0), "cup", "orange", CUP, bottom=0.0), _twin()]


def _ball_hidden(off: tuple[str, ...] = ()) -> tuple[SpatialMemory, str, str, int]:
    """Geometric mode's memory (size classes continue one another), the named rules ``off`` switched off,
    with a small yellow ball shut under a cup."""
    memory = SpatialMemory(profile(off, strict_class=False))
    for t in range(3):
        ball = detection((0.4, 0.0, 0.016), "small", "yellow", size=(0.032,) * 3)
        memory.update(frame(t, [ball, _twin()]))
    t = 3
    for z in (0.10, 0.05, 0.0):  # the cup comes down over the ball
        memory.update(frame(t, [detection((0.4, 0.0, 0.0), "cup", "orange", CUP, bottom=z), _twin()]))
        t += 1
    ball = memory.find(cls="small")[0]
    cup = memory.graph.nodes[ball]["inside"]
    assert cup and memory.graph.nodes[ball]["status"] == "hidden"
    return memory, ball, cup, t


@pytest.mark.parametrize("glare", [
    ((0.4, 0.12, 0.08), "flat", (0.08, 0.08, 0.0)),   # the twin's whole top, lit yellow: another size class
    ((0.4, 0.13, 0.08), "small", (0.02, 0.02, 0.0)),  # a speck of it: the ball's own class, but no height
    ((0.4, 0.06, 0.07), "large", (0.25, 0.07, 0.03)),  # both tops seen as one thing: another size class
])
def test_glare_on_a_cup_does_not_take_the_ball_hidden_in_another(glare):
    centre, label, size = glare
    memory, ball, cup, t = _ball_hidden()
    for k in range(4):
        memory.update(frame(t + k, _cups() + [detection(centre, label, "yellow", size)]))
    a = memory.graph.nodes[ball]
    assert a["status"] == "hidden" and a["inside"] == cup
    assert np.linalg.norm(memory.tracks[ball].center[:2] - (0.4, 0.0)) < 0.01
    assert memory.last_seen(ball) < t  # the glare is another node, or none


def test_without_the_rule_a_speck_of_glare_takes_the_hidden_ball():
    """The ablation (``patch_not_hidden`` off): with every view counted a solid, the speck on the twin cup
    re-identifies the ball there, as it did on geometric perception before."""
    memory, ball, cup, t = _ball_hidden(("patch_not_hidden",))
    memory.update(frame(t, _cups() + [detection((0.4, 0.13, 0.08), "small", "yellow", (0.02, 0.02, 0.0))]))
    assert memory.last_seen(ball) == t
    assert memory.tracks[ball].center[1] > 0.1


def test_the_ball_seen_again_where_its_cup_left_it_is_the_same_node():
    """The rule leaves the real thing alone: lifted away, the cup uncovers the ball, whose view (a solid of
    its own size class) continues its node."""
    memory, ball, cup, t = _ball_hidden()
    for k, z in enumerate((0.05, 0.10, 0.15)):
        lifted = detection((0.4, 0.0, 0.0), "cup", "orange", CUP, bottom=z)
        seen = detection((0.4, 0.0, 0.016), "small", "yellow", size=(0.032,) * 3)
        memory.update(frame(t + k, [lifted, seen]))
    assert memory.find(cls="small") == [ball]
    assert memory.last_seen(ball) == t + 2 and memory.graph.nodes[ball]["status"] == "visible"
