"""Memory geometry that the accuracy scorer checks: hidden contents follow their container,
rigid objects keep their height, parts hang in their housing; the scorer's exposed boxes."""

from __future__ import annotations

import numpy as np
import pytest

from embodied.eval.accuracy import exposed_boxes
from embodied.memory import SpatialMemory
from embodied.memory.config import MemoryConfig
from embodied.memory.spatial import relations
from tests.memory_helpers import detection, frame

CUP = (0.08, 0.08, 0.08)


def _ball():
    return detection((0.4, 0.0, 0.016), "ball", "yellow", size=(0.032,) * 3)


@pytest.mark.parametrize("rule", [True, False])
def test_lifting_a_cup_clear_uncovers_the_ball(rule):
    """Without the rule (``uncover``) the ball stays in the lifted cup."""
    memory = SpatialMemory(MemoryConfig(off=() if rule else ("uncover",)))
    for t in range(3):
        memory.update(frame(t, [_ball()]))
    t = 3
    for z in (0.10, 0.05, 0.0, 0.0, 0.06, 0.10):  # down over the ball, then lifted clear of it
        memory.update(frame(t, [detection((0.4, 0.0, 0.0), "cup", "blue", CUP, bottom=z)]))
        if z == 0.0:
            ball = memory.find(cls="ball")[0]
            assert memory.graph.nodes[ball]["inside"] == memory.find(cls="cup")[0]
        t += 1
    a = memory.graph.nodes[ball]
    if not rule:
        assert a["inside"] == memory.find(cls="cup")[0] and a["status"] == "hidden"
        return
    assert a["inside"] == "" and a["status"] != "hidden"
    assert not memory.related(ball, "in")


def test_a_block_seen_only_from_above_keeps_its_height():
    memory = SpatialMemory()
    memory.update(frame(0, [detection((0.4, 0.0, 0.02), size=(0.04, 0.04, 0.04))]))
    # The top face alone (a camera straight above, the sides hidden), the block where it was.
    top = detection((0.4, 0.0, 0.04), size=(0.04, 0.04, 0.0))
    top.n_points = 10  # a much smaller view than before: a partial one
    memory.update(frame(1, [top]))
    node = memory.find(cls="block")[0]
    a = memory.graph.nodes[node]
    assert a["box_min"][2] == pytest.approx(0.0, abs=0.004)
    assert a["position"][2] == pytest.approx(0.02, abs=0.004)


def test_one_tall_view_of_a_block_in_flight_does_not_sink_it():
    """A block carried through the air is seen once joined with what it passes over (10.8 cm tall), then
    set in a tray (its floor 1.6 cm up) and seen there: its box keeps the 4 cm it showed at rest, not the
    flight's 10.8, which had sunk it 5 cm under the tray, and the grasp went under it (on the learned
    segmenter). A height shown at rest counts."""
    memory = SpatialMemory()
    for t in range(3):
        memory.update(frame(t, [detection((0.35, 0.0, 0.02), size=(0.04, 0.04, 0.04))]))
    memory.update(frame(3, [detection((0.40, -0.05, 0.10), size=(0.04, 0.04, 0.108))]))
    for t in range(4, 8):
        memory.update(frame(t, [detection((0.45, -0.10, 0.036), size=(0.04, 0.04, 0.04))]))
    node = memory.find(cls="block")[0]
    assert memory.graph.nodes[node]["box_min"][2] == pytest.approx(0.016, abs=0.004)
    for t in range(8, 14):  # at rest, a taller view (a block 6 cm tall after all) counts
        memory.update(frame(t, [detection((0.45, -0.10, 0.03), size=(0.04, 0.04, 0.06))]))
    assert memory.tracks[node].height == pytest.approx(0.06, abs=0.002)


def test_a_block_shut_in_a_drawer_slides_in_with_it():
    memory = SpatialMemory()
    cab = detection((0.70, 0.0, 0.045), "cabinet", "grey", (0.24, 0.18, 0.09))
    # What the cameras see of a drawer: handle and front, plus the tray up to the housing when open.
    drawer = lambda out: detection((0.55 - out / 2, 0.0, 0.04), "drawer", "orange", (0.06 + out, 0.17, 0.07))
    block = lambda: detection((0.48, 0.0, 0.0), size=(0.04, 0.04, 0.04), bottom=0.016)
    t = 0
    for _ in range(2):
        memory.update(frame(t, [cab, drawer(0.12), block()]))
        t += 1
    for out in (0.06, 0.0, 0.0):  # the drawer shuts over the block
        memory.update(frame(t, [cab, drawer(out)]))
        t += 1
    node = memory.find(cls="block")[0]
    assert memory.graph.nodes[node]["inside"] == memory.find(cls="drawer")[0]
    assert memory.graph.nodes[node]["position"][0] == pytest.approx(0.60, abs=0.015)


def _node(kind, lo, hi, articulated=False):
    return {"kind": kind, "box_min": lo, "box_max": hi, "inside": "", "articulated": articulated}


def test_a_drawer_is_part_of_its_housing_and_not_on_the_table():
    nodes = {
        "table": _node("surface", (-0.2, -0.6, -0.7), (1.0, 0.6, 0.0)),
        "cabinet": _node("surface", (0.58, -0.09, 0.0), (0.82, 0.09, 0.09)),
        "drawer": _node("container", (0.52, -0.088, 0.011), (0.79, 0.088, 0.081), articulated=True),
        "block": _node("object", (0.3, -0.02, 0.0), (0.34, 0.02, 0.04)),
    }
    edges = relations(nodes, MemoryConfig().relations)
    assert ("drawer", "cabinet", "part_of") in edges
    assert not any(u == "drawer" and k == "on" for u, _, k in edges)
    assert ("cabinet", "table", "on") in edges and ("block", "table", "on") in edges


def test_scorer_compares_a_drawer_with_what_sticks_out_of_its_housing():
    truth = {
        "cabinet0": ("cabinet", np.array([0.577, -0.09, 0.0]), np.array([0.817, 0.09, 0.09])),
        "drawer0": ("drawer", np.array([0.393, -0.088, 0.011]), np.array([0.669, 0.088, 0.081])),
        "block": ("block", np.array([0.3, 0.0, 0.0]), np.array([0.34, 0.04, 0.04])),
    }
    ref = exposed_boxes(truth)
    _, lo, hi = ref["drawer0"]
    assert lo[0] == pytest.approx(0.393) and hi[0] == pytest.approx(0.577)  # the part in front of the housing
    assert np.allclose(ref["block"][1], truth["block"][1]) and np.allclose(ref["cabinet0"][2], truth["cabinet0"][2])
