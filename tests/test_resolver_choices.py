"""The resolver's choices where memory holds a detector's errors: which object was moved (not a round
trip, not a glimpse far off) and which container holds a thing (each read from a failed episode, each with
the case that must fail without its rule)."""

from __future__ import annotations

import pytest

from embodied.planner.grammar import parse


def test_the_object_that_was_moved_is_not_one_that_came_back(monkeypatch):
    """"The object that was moved" is the one away from where it was first seen: a block that memory saw
    carried 40 cm off and then back home (a detector's misreading elsewhere taken for it, on learned
    perception) ranks after one moved 12 cm that stays moved, though it went farther."""
    from embodied.memory import SpatialMemory
    from embodied.planner import resolver
    from embodied.planner.resolver import Resolver
    from tests.memory_helpers import detection, frame

    home, away = (0.30, -0.20, 0.02), (0.50, 0.15, 0.02)
    start, moved = (0.30, 0.20, 0.02), (0.42, 0.20, 0.02)
    memory = SpatialMemory()
    for t, (blue, red) in enumerate([(home, start)] * 5 + [(away, moved)] * 5 + [(home, moved)] * 5):
        memory.update(frame(t, [detection(blue, colour="blue"), detection(red, colour="red")]))
    ref = parse("go to the object that was moved").ref
    (red_node,) = [n for n in memory.find(cls="block") if memory.graph.nodes[n]["colour"] == "red"]
    assert Resolver(memory).resolve(ref)[0] == red_node
    monkeypatch.setattr(resolver, "RETURNED", 0.0)  # round trips rank by their farthest point like the rest
    assert Resolver(memory).resolve(ref)[0] != red_node


@pytest.mark.parametrize("hidden", [False, True])
@pytest.mark.parametrize("rule", [True, False])
def test_a_glimpse_far_off_does_not_make_the_object_that_was_moved(rule, hidden, monkeypatch):
    """A red block carried 12 cm in view is "the object that was moved", not the blue block whose node a
    one-frame look-alike 2.7 m off re-identified while it was out of view (a learned detector's "cyan
    book" on cyan furniture in the randomized look), nor when memory then holds it hidden in the box
    there, sunk to the box's floor (an "orange book" over a box 6 m off, learned). Without the glimpse rule the blue block, "moved" farthest, is taken."""
    from embodied.memory import SpatialMemory
    from embodied.planner.resolver import Resolver
    from tests.memory_helpers import detection, down_camera, frame

    if not rule:
        monkeypatch.setattr(Resolver, "_glimpses", lambda self, node: [])
    away, elsewhere = down_camera(3.0, 0.0), down_camera(6.0, 0.0)
    home, start, moved = (0.30, -0.20, 0.02), (0.30, 0.20, 0.02), (0.42, 0.20, 0.02)
    memory = SpatialMemory()
    memory.update(frame(0, [], pose=away))  # the ground there looked at: a later view there is no discovery
    t = 1
    for red in [start] * 5 + [(0.30 + 0.02 * k, 0.20, 0.02) for k in range(1, 7)] + [moved] * 3:
        memory.update(frame(t, [detection(home, colour="blue"), detection(red, colour="red")]))
        t += 1
    memory.update(frame(t, [], pose=elsewhere))  # both blocks out of view
    glimpse = detection((3.0, 0.1, 0.08 if hidden else 0.02), colour="blue")
    box = [detection((3.0, 0.1, 0.0), "box", "brown", (0.2, 0.2, 0.1), bottom=0.0)] if hidden else []
    memory.update(frame(t + 1, [glimpse, *box], pose=away))
    (blue_node,) = [n for n in memory.find(cls="block") if memory.graph.nodes[n]["colour"] == "blue"]
    assert memory.graph.nodes[blue_node]["position"][0] == pytest.approx(3.0, abs=0.01), "re-identified there"
    if hidden:
        memory.update(frame(t + 2, box, pose=away))
        assert memory.graph.nodes[blue_node]["status"] == "hidden", "held in the box"
        assert memory.graph.nodes[blue_node]["position"][2] < 0.06, "sunk to the box's floor, after the glimpse"
    memory.update(frame(t + 3, [], pose=elsewhere))
    (red_node,) = [n for n in memory.find(cls="block") if memory.graph.nodes[n]["colour"] == "red"]
    first = Resolver(memory).resolve(parse("go to the object that was moved").ref)[0]
    assert first == (red_node if rule else blue_node)


@pytest.mark.parametrize("rule", [True, False])
def test_the_drawer_holding_a_block_is_the_one_it_went_into_when_two_boxes_take_it_in(rule, monkeypatch):
    """A drawer seen merged with its neighbour reaches over the next drawer's tray, so both drawers' boxes
    take in the block stashed in the second: "the drawer that holds the red block" is the one memory saw it
    go into, else the nearest (on learned perception the agent had opened the first, which ends the
    episode). Without the rule (the first listed) the merged drawer is opened."""
    from embodied.memory import SpatialMemory
    from embodied.planner.planner import Planner
    from embodied.planner.resolver import Resolver
    from tests.memory_helpers import detection, frame

    memory = SpatialMemory()
    merged = detection((0.55, 0.018, 0.045), "drawer", "orange", size=(0.09, 0.316, 0.08))
    second = detection((0.55, 0.185, 0.05), "drawer", "orange", size=(0.07, 0.17, 0.06))
    block = detection((0.55, 0.165, 0.035), "block", "red", size=(0.02, 0.035, 0.04))
    memory.update(frame(0, [merged, second, block]))
    (node,) = memory.find(cls="block")
    drawers = memory.where_is(node)["in"]
    first, into = sorted(drawers, key=lambda d: memory.graph.nodes[d]["position"][1])
    assert drawers[0] == first, "the merged drawer is listed first"
    assert Resolver(memory).holder(node) == into, "no record: the nearest"
    memory.graph.nodes[node]["inside"] = into  # as if seen set in and shut away
    if not rule:
        monkeypatch.setattr(Resolver, "holder", lambda self, n: self.memory.where_is(n)["in"][0])
    plan = Planner().plan(parse("open the drawer that holds the red block"), memory)
    assert plan[0].skill == "open" and plan[0].target == (into if rule else first)
