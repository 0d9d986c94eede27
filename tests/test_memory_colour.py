"""What memory logs as a change of colour: a still thing that changes its look (a cue panel, a lit
button) is recoloured; a block seen in another colour while it moves catches a highlight and is not."""

from __future__ import annotations

import pytest

from embodied.memory import SpatialMemory
from tests.memory_helpers import detection, frame


def _seen(memory: SpatialMemory, t: int, centre, colour: str) -> None:
    memory.update(frame(t, [detection(centre, colour=colour, camera="top", key="top#block")]))


@pytest.mark.parametrize("moving", [False, True])
def test_a_colour_seen_while_moving_is_no_change_of_colour(moving):
    memory = SpatialMemory()
    _seen(memory, 0, (0.4, 0.0, 0.02), "orange")
    _seen(memory, 1, (0.4, 0.0, 0.02), "orange")
    # The next look is yellow: in place (a panel that changed), or 2 cm further (lifted by something into a
    # highlight: an orange block in bright light is named yellow).
    _seen(memory, 2, (0.42 if moving else 0.4, 0.0, 0.02), "yellow")
    (block,) = memory.find(cls="block")
    tags = [e["tag"] for e in memory.history(block)]
    assert ("recoloured" in tags) is not moving
    assert memory.graph.nodes[block]["colour"] == ("orange" if moving else "yellow")
    # Set down and seen orange again: still the orange block, never recoloured.
    _seen(memory, 3, (0.42 if moving else 0.4, 0.0, 0.02), "orange" if moving else "yellow")
    assert memory.find(cls="block") == [block]
    assert memory.graph.nodes[block]["colour"] == ("orange" if moving else "yellow")
