"""One ablation per named rule (``embodied.memory.config.RULES``): a case memory gets right with the rule on
and wrong with it switched off (``MemoryConfig(off=(rule,))``). ``ABLATIONS`` says where each rule's test
lives: most rules were read from a failed episode and are tested beside the views that case concerns; the
rules no such test switched off have their case here, on synthetic frames from a camera looking down."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from embodied.memory import SpatialMemory
from embodied.memory.config import RULES
from tests.memory_helpers import box_points, detection, frame, profile

TESTS = Path(__file__).resolve().parent

# rule -> "file::test" of the test that runs its case with the rule on and off.
ABLATIONS = {
    "lit_face": "test_memory_buttons.py::test_a_lit_cap_named_a_block_beside_a_sliver_of_the_base_is_the_button_lit",
    "unmoved_elsewhere": "test_memory_imperfect_views.py::test_a_node_another_camera_sees_unmoved_is_not_taken_by_nearness",
    "standing_still": "test_memory_imperfect_views.py::test_without_the_rule_the_cup_standing_still_takes_the_passing_view",
    "patch_not_hidden": "test_memory_hidden_views.py::test_without_the_rule_a_speck_of_glare_takes_the_hidden_ball",
    "slide_gate": "test_memory_rules.py::test_slide_gate",
    "anchored_footprint": "test_memory_rules.py::test_anchored_footprint",
    "looked_at_ground": "test_memory_scale.py::test_an_object_found_in_new_ground_is_a_new_one_a_look_alike_moved_unseen_is_not",
    "no_lines": "test_memory_far_views.py::test_a_line_far_off_does_not_take_a_missing_block",
    "handoff": "test_memory.py::test_a_track_lost_and_picked_up_close_by_stays_one_object",
    "patch_piece": "test_memory_patches.py::test_without_the_rule_the_sliver_becomes_a_second_red_thing",
    "steady_edge": "test_memory_lit_things.py::test_a_screen_only_ever_seen_at_the_image_edge_enters_memory_when_steady",
    "in_hand": "test_memory_imperfect_views.py::test_a_sliver_of_the_held_block_between_the_fingers_is_no_second_block",
    "beside_pressable": "test_memory_rules.py::test_beside_pressable",
    "one_face": "test_memory_imperfect_views.py::test_a_view_of_one_face_of_a_block_does_not_move_it",
    "reaches_out": "test_memory_imperfect_views.py::test_a_block_set_down_and_seen_with_fewer_points_is_remembered_where_it_rests",
    "nested": "test_memory_rules.py::test_nested",
    "shape_reference": "test_memory_imperfect_views.py::test_a_small_thing_seen_once_merged_with_its_neighbour_follows_its_own_views_after",
    "lit_face_partial": "test_memory_rules.py::test_lit_face_partial",
    "height": "test_memory_rules.py::test_height",
    "like_for_like": "test_memory_rules.py::test_like_for_like",
    "hue_edge": "test_memory_colour.py::test_lighting_that_tips_orange_into_yellow_is_no_change_of_colour",
    "glimpse": "test_memory_rules.py::test_glimpse",
    "sink": "test_memory_rules.py::test_sink",
    "uncover": "test_memory_accuracy.py::test_lifting_a_cup_clear_uncovers_the_ball",
    "rejoin": "test_memory_class_votes.py::test_with_class_votes_a_known_object_first_misnamed_elsewhere_is_rejoined_when_renamed",
    "reaching_in": "test_geometric_drawer_views.py::test_a_drawer_the_fingers_reach_into_keeps_its_travel_and_what_it_holds",
    "off_slide_is_partial": "test_memory_drawer_views.py::test_a_view_of_two_drawers_seen_as_one_moves_neither",
    "front_face": "test_memory_drawer_views.py::test_a_drawer_pushed_shut_is_where_the_strip_of_its_front_shows_it",
    "hand_hides_cap": "test_memory.py::test_a_view_of_a_button_with_the_hand_over_it_does_not_raise_its_rest_top",
    "grasp_takes_out": "test_memory.py::test_an_object_taken_out_of_a_container_is_in_it_no_longer",
}


def test_every_rule_has_an_ablation_that_switches_it_off():
    """Each rule in RULES names a test that exists and switches that rule off by name."""
    assert set(ABLATIONS) == set(RULES)
    for rule, where in ABLATIONS.items():
        file, name = where.split("::")
        tree = ast.parse((TESTS / file).read_text(encoding="utf-8"))
        (test,) = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name]
        strings = {node.value for node in ast.walk(test) if isinstance(node, ast.Constant)}
        helpers = {node.func.id for node in ast.walk(test) if isinstance(node, ast.Call)
                   and isinstance(node.func, ast.Name)}
        # the rule's name in the test, or in the module helper it calls with it
        named = rule in strings or any(rule in {c.value for c in ast.walk(f) if isinstance(c, ast.Constant)}
                                       for f in tree.body if isinstance(f, ast.FunctionDef) and f.name in helpers)
        assert named, f"{where} does not switch {rule!r} off"


def _memory(rule: str, on: bool, **detector) -> SpatialMemory:
    return SpatialMemory(profile(() if on else (rule,), **detector))


WHOLE = dict(size=(0.05, 0.06, 0.034))  # a button: its grey base and cap


def _cab(y: float = 0.0):
    return detection((0.70, y, 0.045), "cabinet", "grey", (0.24, 0.18, 0.09))


def _drawer(y: float = 0.0, out: float = 0.0):
    """A drawer as the cameras see it ``out`` m open: front and handle, and the tray out to the housing."""
    return detection((0.55 - out / 2, y, 0.04), "drawer", "orange", (0.06 + out, 0.17, 0.07))


# --- association ------------------------------------------------------------------------------------
@pytest.mark.parametrize("rule", [True, False])
def test_anchored_footprint(rule):
    """A button is hidden by the arm for longer than a hand-off; then the camera sees only the next
    button, its view 3 cm from the first one's box, its points within a voxel of the first's. A button
    never moves: a view not centred over it is not of it, and the next button is a node of its own. Without
    the rule the first button's node takes the view and jumps 8.5 cm."""
    memory = _memory("anchored_footprint", rule)
    first = lambda: detection((0.45, -0.05, 0.019), "button", "grey", key="top#a", **WHOLE)  # noqa: E731
    for t in range(4):
        memory.update(frame(t, [first()]))
    (node,) = memory.find(cls="button")
    arm = box_points((0.40, -0.10, 0.20), (0.50, 0.0, 0.21))
    for t in range(4, 12):
        memory.update(frame(t, [], [arm]))
    assert memory.graph.nodes[node]["status"] == "occluded"
    for t in range(12, 15):
        memory.update(frame(t, [detection((0.45, 0.035, 0.019), "button", "grey", key="top#b", **WHOLE)], [arm]))
    stayed = memory.graph.nodes[node]["position"][1] == pytest.approx(-0.05, abs=0.005)
    assert (stayed and len(memory.find(cls="button")) == 2) is rule


@pytest.mark.parametrize("rule", [True, False])
def test_slide_gate(rule):
    """A drawer hidden by the arm; the camera sees the inner third of the next drawer of the row, 13.5 cm
    across the first one's slide, its points within a voxel of the first's. A drawer moves only along its
    slide: that view is another drawer's, which becomes a node. Without the rule the hidden drawer takes
    it (as a view of part of itself) and the next drawer never enters memory."""
    memory = _memory("slide_gate", rule)
    for t in range(3):
        memory.update(frame(t, [_cab(0.0), _cab(0.19), _drawer(0.0)]))
    (node,) = memory.find(cls="drawer")
    part = detection((0.55, 0.135, 0.04), "drawer", "orange", (0.06, 0.06, 0.07))
    arm = box_points((0.50, -0.09, 0.15), (0.60, 0.09, 0.16))
    for t in range(3, 6):
        memory.update(frame(t, [_cab(0.0), _cab(0.19), part], [arm]))
    assert memory.graph.nodes[node]["position"][1] == pytest.approx(0.0, abs=0.01)
    assert (len(memory.find(cls="drawer")) == 2) is rule


# --- spawn --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rule", [True, False])
def test_beside_pressable(rule):
    """The camera sees a button whole and, beside it, a sliver of its base named button, 8 mm off its box.
    The whole view is the button; the sliver is a piece of it, no second button. Without the rule the
    sliver makes one."""
    memory = _memory("beside_pressable", rule)
    whole = lambda: detection((0.45, -0.05, 0.019), "button", "grey", key="top#a", **WHOLE)  # noqa: E731
    for t in range(4):
        memory.update(frame(t, [whole()]))
    sliver = lambda: detection((0.45, -0.012, 0.006), "button", "grey", size=(0.04, 0.008, 0.012))  # noqa: E731
    for t in range(4, 7):
        memory.update(frame(t, [whole(), sliver()]))
    assert (len(memory.find(cls="button")) == 1) is rule


# --- measurement update -----------------------------------------------------------------------------
@pytest.mark.parametrize("rule", [True, False])
def test_nested(rule):
    """A lamp whose top rim alone was seen, grey, then its whole face, 4 cm lower with many more points,
    as it lit red: the whole view holds the rim's, so the lamp did not move and its red is a light. Without
    the rule the shift is motion: logged as moved, and the colour never changes (a moving thing's shading
    is no colour)."""
    memory = _memory("nested", rule)
    rim = detection((0.18, -0.42, 0.14), "lamp", "grey", (0.02, 0.10, 0.0), key="top#lamp")
    face = detection((0.18, -0.42, 0.10), "lamp", "red", (0.02, 0.10, 0.08), key="top#lamp")
    for t in range(3):
        memory.update(frame(t, [rim]))
    memory.update(frame(3, [face]))
    (lamp,) = memory.find(cls="lamp")
    assert face.n_points >= 2 * rim.n_points
    tags = [e["tag"] for e in memory.history(lamp) if e["t"] == 3]
    assert (memory.graph.nodes[lamp]["colour"] == "red" and tags == ["brightened"]) is rule


@pytest.mark.parametrize("rule", [True, False])
def test_lit_face_partial(rule):
    """A learned detector names a lit button's cap a yellow block, a view as full as the button's own but
    only its top 16 mm. The cap is part of the button: its box keeps the base down to the table. Without
    the rule the cap is taken for the whole button, whose box rises off the table."""
    memory = _memory("lit_face_partial", rule, class_votes=True)
    for t in range(4):
        memory.update(frame(t, [detection((0.45, 0.05, 0.019), "button", "grey", key="top#b", **WHOLE)]))
    (button,) = memory.find(cls="button")
    whole = memory.tracks[button].views["top"].n_points
    for t in range(4, 7):
        cap = detection((0.45, 0.05, 0.028), "block", "yellow", size=(0.038, 0.044, 0.016), key="top#cap")
        cap.n_points = whole
        memory.update(frame(t, [cap]))
    assert memory.find(cls="block") == [] and "brightened" in [e["tag"] for e in memory.history(button)]
    assert (memory.graph.nodes[button]["box_min"][2] == pytest.approx(0.002, abs=0.002)) is rule


@pytest.mark.parametrize("rule", [True, False])
def test_height(rule):
    """A block seen whole at rest, then (a camera high above) only its top centimetre, as many points: it
    is as tall as it showed at rest, its bottom on the table. Without the rule its box is the top
    centimetre, floating 3 cm up."""
    memory = _memory("height", rule)
    for t in range(3):
        memory.update(frame(t, [detection((0.4, 0.0, 0.02))]))
    (node,) = memory.find(cls="block")
    top = detection((0.4, 0.0, 0.035), size=(0.04, 0.04, 0.01))
    top.n_points = memory.tracks[node].views["top"].n_points
    for t in range(3, 6):
        memory.update(frame(t, [top]))
    assert memory.graph.nodes[node]["box_max"][2] == pytest.approx(0.04, abs=0.002)
    assert (memory.graph.nodes[node]["box_min"][2] == pytest.approx(0.0, abs=0.002)) is rule


@pytest.mark.parametrize("rule", [True, False])
def test_like_for_like(rule):
    """A button seen whole, then for three frames only a sliver of its dark base (the hand over its cap),
    then whole again: no light went off or on. The sliver shows a tenth of what the camera's reference look
    showed and weighs that share of the evidence. Without the rule the sliver is the light going off."""
    memory = _memory("like_for_like", rule)
    whole = lambda: detection((0.45, -0.05, 0.017), "button", "grey", key="top#a", **WHOLE)  # noqa: E731
    for t in range(4):
        memory.update(frame(t, [whole()]))
    (node,) = memory.find(cls="button")
    base = detection((0.45, -0.05, 0.005), "button", "grey", size=(0.02, 0.02, 0.01), key="top#b")
    base.rgb[:] = 0.1  # the base's dark plastic
    for t in range(4, 7):
        memory.update(frame(t, [base]))
    for t in range(7, 10):
        memory.update(frame(t, [whole()]))
    assert memory.find(cls="button") == [node]
    lights = [e.tag for e in memory.log.of_node(node) if e.tag in ("dimmed", "brightened")]
    assert (lights == []) is rule


@pytest.mark.parametrize("jointed", [True, False])
def test_a_part_on_a_joint_is_never_missing(jointed):
    """A drawer, then a block, seen at their places; then the depth shows through both boxes for ten frames.
    The block has gone (missing); the drawer cannot leave its joint: it moved on it, and is only unseen."""
    label, colour = ("drawer", "orange") if jointed else ("block", "red")
    memory = _memory("sink", True)
    thing = lambda: detection((0.45, 0.0, 0.03), label, colour, size=(0.06, 0.06, 0.06))  # noqa: E731
    for t in range(3):
        memory.update(frame(t, [thing()]))
    (node,) = memory.find(cls=label)
    for t in range(3, 13):
        memory.update(frame(t, []))
    assert (memory.graph.nodes[node]["status"] == "missing") is not jointed


# --- lifecycle --------------------------------------------------------------------------------------
@pytest.mark.parametrize("rule", [True, False])
def test_glimpse(rule):
    """A ball hidden under a cup is glimpsed for one frame 3.5 cm off the cup's middle (its box no longer
    within the cup's footprint), then lost again: it is still in the cup. Without the rule it is merely
    occluded, in nothing."""
    memory = _memory("glimpse", rule)
    ball = lambda y=0.0: detection((0.4, y, 0.016), "ball", "yellow", size=(0.032,) * 3)  # noqa: E731
    cup = lambda z=0.0: detection((0.4, 0.0, 0.0), "cup", "blue", (0.08, 0.08, 0.08), bottom=z)  # noqa: E731
    for t in range(3):
        memory.update(frame(t, [ball()]))
    t = 3
    for z in (0.10, 0.05, 0.0):  # the cup comes down over the ball
        memory.update(frame(t, [cup(z)]))
        t += 1
    (node,), (holder,) = memory.find(cls="ball"), memory.find(cls="cup")
    assert memory.graph.nodes[node]["inside"] == holder
    memory.update(frame(t, [cup(), ball(0.035)]))  # the glimpse
    assert memory.graph.nodes[node]["inside"] == "" and memory.graph.nodes[node]["visible"]
    for k in range(1, 4):
        memory.update(frame(t + k, [cup()]))
    a = memory.graph.nodes[node]
    assert (a["inside"] == holder and a["status"] == "hidden") is rule


@pytest.mark.parametrize("rule", [True, False])
def test_sink(rule):
    """A block lowered into an open drawer is lost on its way down, 6 cm above the tray's floor: it is in
    the drawer, resting on its floor. Without the rule it is in the drawer, floating where last seen."""
    memory = _memory("sink", rule)
    block = lambda z: detection((0.45, 0.0, 0.0), size=(0.04, 0.04, 0.04), bottom=z)  # noqa: E731
    t = 0
    for z in (0.12, 0.09, 0.06):
        memory.update(frame(t, [_cab(), _drawer(out=0.12), block(z)]))
        t += 1
    for _ in range(3):
        memory.update(frame(t, [_cab(), _drawer(out=0.12)]))
        t += 1
    (node,), (drawer,) = memory.find(cls="block"), memory.find(cls="drawer")
    a = memory.graph.nodes[node]
    assert a["inside"] == drawer
    assert (a["box_min"][2] == pytest.approx(memory.graph.nodes[drawer]["box_min"][2], abs=0.002)) is rule
