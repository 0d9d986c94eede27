"""What geometric perception's close views of an open drawer must not do to memory.

Synthetic detections and clouds, the shapes geometric mode reports (size classes, the drawer row
seen joined to its housing): the hand reaching into a tray hides its front, the wrist camera sees a
housing's top plate cut off by the hand, the hand cuts a block in two, a block's top face seen from
high up stands off the table like a drawer's front. Each rule is switched off once to show it is
what keeps memory right.
"""

from __future__ import annotations

import numpy as np
import pytest

from embodied.memory import MemoryConfig, SpatialMemory
from embodied.memory.config import DetectorProfile, RelationConfig
from embodied.memory.filters import ViewFilters
from embodied.perception import geometric_shapes
from embodied.perception.geometric_colour import join_cut_pieces
from tests.memory_helpers import box_points, detection, frame, profile, proprio

OPEN = 0.12  # m the drawer sticks out of its housing


def _cab():
    return detection((0.70, 0.0, 0.045), "cabinet", "grey", (0.24, 0.18, 0.09))


def _neighbours():
    """The next housing of the row and its shut drawer (the row's closed travel)."""
    return [detection((0.70, 0.2, 0.045), "cabinet", "grey", (0.24, 0.18, 0.09)), _drawer(0.0, 0.2)]


def _drawer(out: float, y: float = 0.0):
    # Its front and handle, and the tray out to the housing: what a camera sees of it `out` m open.
    return detection((0.55 - out / 2, y, 0.04), "drawer", "orange", (0.06 + out, 0.17, 0.07))


def _block():
    return detection((0.50, 0.0, 0.036), "small", "blue", bottom=0.016)


def _stocked_open_drawer(off: tuple[str, ...] = ()) -> SpatialMemory:
    """Geometric mode's memory (the named rules ``off`` switched off) of a row whose drawer is open with a
    block in it."""
    memory = SpatialMemory(profile(off, strict_class=False))
    for t in range(4):
        memory.update(frame(t, _neighbours() + [_cab(), _drawer(OPEN), _block()], proprio=proprio((0.2, 0.0, 0.3), 0.08)))
    return memory


def _reach_in(memory: SpatialMemory, width: float) -> tuple[str, str]:
    """The fingers come down on the block (``width`` apart) while the arm hides the tray's front: the
    drawer is seen sticking out 6 cm instead of 12, and the block not at all."""
    drawer = min(memory.find(cls="drawer"), key=lambda n: abs(memory.tracks[n].center[1]))
    (block,) = memory.find(cls="small")
    hand = proprio((0.50, 0.0, 0.06), width)
    memory.update(frame(4, _neighbours() + [_cab(), _drawer(OPEN), _block()], proprio=hand))  # the hand arrives
    for t in range(5, 9):
        memory.update(frame(t, _neighbours() + [_cab(), _drawer(0.06)], proprio=hand))
    return drawer, block


def test_a_drawer_the_fingers_reach_into_keeps_its_travel_and_what_it_holds():
    memory = _stocked_open_drawer()
    drawer, block = _reach_in(memory, 0.08)
    assert memory.graph.nodes[drawer]["state"] == "open"
    assert memory.tracks[block].center[0] == pytest.approx(0.50, abs=0.005)

    # Without the rule (``reaching_in``) the cut-short view reads as the drawer sliding 6 cm in, and the
    # block with it.
    memory = _stocked_open_drawer(("reaching_in",))
    drawer, block = _reach_in(memory, 0.08)
    assert memory.tracks[block].center[0] > 0.53


def test_a_hooked_handle_still_slides_the_drawer():
    """Fingers closed on nothing at the drawer are a hook on its handle: the drawer's travel follows the
    views as before, and what it holds slides with it."""
    memory = _stocked_open_drawer()
    (block,) = memory.find(cls="small")
    for t in range(4, 6):  # the fingers close, empty, on the handle
        memory.update(frame(t, _neighbours() + [_cab(), _drawer(OPEN), _block()], proprio=proprio((0.43, 0.0, 0.05), 0.0)))
    assert memory.grip["closed"] and not memory.grip["holding"]
    for t in range(6, 10):  # and push the drawer 6 cm in
        memory.update(frame(t, _neighbours() + [_cab(), _drawer(0.06)], proprio=proprio((0.49, 0.0, 0.05), 0.0)))
    assert memory.tracks[block].center[0] > 0.53


def _top_plate():
    """The housing's top plate as the wrist camera sees it around the hand: a flat grey strip."""
    return detection((0.62, 0.0, 0.088), "flat", "grey", (0.05, 0.12, 0.004))


def test_a_housings_top_plate_seen_alone_is_no_thing(monkeypatch):
    memory = _stocked_open_drawer()
    (block,) = memory.find(cls="small")
    for t in range(4, 8):  # the block is under the hand; the plate shows beside it
        memory.update(frame(t, _neighbours() + [_cab(), _drawer(OPEN), _top_plate()], proprio=proprio((0.2, 0.0, 0.3), 0.08)))
    assert memory.tracks[block].center[0] == pytest.approx(0.50, abs=0.005)
    assert memory.find(cls="flat") == []

    # A block standing on the housing reaches higher than its plate: a thing.
    on_top = detection((0.66, 0.05, 0.11), "small", "red", bottom=0.09)
    memory.update(frame(8, _neighbours() + [_cab(), _drawer(OPEN), on_top], proprio=proprio((0.2, 0.0, 0.3), 0.08)))
    assert any(memory.tracks[n].center[2] > 0.09 for n in memory.graph if n.startswith("small"))

    # The ablation (``ViewFilters.drop_lookalikes`` taken out). The plate also lies beside this frame's
    # view of the grey housing, so the patch rule (``patch_piece``) drops it too: both are taken away.
    monkeypatch.setattr(ViewFilters, "drop_lookalikes", lambda self, dets: dets)
    memory = _stocked_open_drawer(("patch_piece",))
    (block,) = memory.find(cls="small")
    for t in range(4, 8):
        memory.update(frame(t, _neighbours() + [_cab(), _drawer(OPEN), _top_plate()], proprio=proprio((0.2, 0.0, 0.3), 0.08)))
    moved = memory.tracks[block].center[0] > 0.55
    assert moved or memory.find(cls="flat")


def _pink(n: int) -> np.ndarray:
    return np.tile([1.0, 0.55, 0.85], (n, 1))


def test_pieces_of_one_colour_that_fit_in_a_blocks_box_are_one_thing():
    """The hand cuts a block's top away: its near face and its far edge are left, 3 cm apart."""
    near = box_points((0.478, -0.205, 0.02), (0.479, -0.168, 0.04), 0.008)
    far = box_points((0.506, -0.205, 0.05), (0.515, -0.168, 0.056), 0.008)
    other = box_points((0.60, -0.205, 0.0), (0.64, -0.168, 0.04), 0.008)  # a second pink block 9 cm on
    pts = np.concatenate([near, far, other])
    cols = _pink(len(pts))
    cols[: len(near)] = [1.0, 0.45, 0.7]  # the shaded face is deeper pink than the lit edge
    pieces = [np.arange(len(near)), len(near) + np.arange(len(far)), len(near) + len(far) + np.arange(len(other))]
    joined = join_cut_pieces(pts, cols, pieces)
    assert sorted(len(p) for p in joined) == sorted([len(near) + len(far), len(other)])

    red = cols.copy()
    red[len(near): len(near) + len(far)] = [1.0, 0.15, 0.15]  # a red thing beside a pink one: two things
    assert len(join_cut_pieces(pts, red, pieces)) == 3


def _row_and_top_face() -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """A housing (grey, top plate at 9 cm) with three shut drawers' fronts joined to it (cyan; their lower
    part hidden from above), and 15 cm before it the top face of a white block, all the wrist camera sees
    of it from above."""
    housing = box_points((0.57, -0.27, 0.02), (0.73, 0.28, 0.09), 0.008)
    fronts = np.concatenate([box_points((0.513, y0, 0.03), (0.57, y1, 0.081), 0.008)
                             for y0, y1 in ((-0.27, -0.095), (-0.076, 0.094), (0.109, 0.27))])
    face = box_points((0.331, 0.124, 0.032), (0.363, 0.159, 0.04), 0.008)
    face = face[face[:, 2] >= 0.032]
    pts = np.concatenate([housing, fronts, face])
    cols = np.concatenate([np.tile([0.67, 0.67, 0.67], (len(housing), 1)), np.tile([0.1, 0.8, 0.8], (len(fronts), 1)),
                           np.ones((len(face), 3))])
    row = np.arange(len(housing) + len(fronts))
    return pts, cols, [row, len(row) + np.arange(len(face))]


def test_a_blocks_top_face_is_no_drawer_front(monkeypatch):
    pts, cols, clusters = _row_and_top_face()
    parts = geometric_shapes.label_parts(pts, clusters, 0.0, 10, cols)
    face = set(clusters[1].tolist())
    drawers = [p for label, p in parts if label == "drawer"]
    assert drawers and not any(face & set(p.tolist()) for p in drawers)
    assert any(label == "" and set(p.tolist()) == face for label, p in parts)

    # Without the row's colour the raised face joins the drawer in front of which it stands.
    monkeypatch.setattr(geometric_shapes, "_row_coloured", lambda cols, idx, hue: True)
    parts = geometric_shapes.label_parts(pts, clusters, 0.0, 10, cols)
    assert any(face & set(p.tolist()) for label, p in parts if label == "drawer")


def test_a_drawer_row_seen_as_one_blob_is_no_thing(monkeypatch):
    """From close by the wrist camera may see a housing and its drawers as one large cluster: no node of
    its own (it would take the views of whatever lies in the drawers later)."""
    blob = detection((0.60, 0.05, 0.045), "large", "orange", (0.30, 0.40, 0.08))
    memory = _stocked_open_drawer()
    memory.update(frame(4, _neighbours() + [_cab(), _drawer(OPEN), _block(), blob], proprio=proprio((0.2, 0.0, 0.3), 0.08)))
    assert memory.find(cls="large") == []

    # The ablation (``ViewFilters.drop_lookalikes`` taken out). The blob also lies beside this frame's view
    # of the grey housing, so the patch rule (``patch_piece``) drops it too: both are taken away.
    monkeypatch.setattr(ViewFilters, "drop_lookalikes", lambda self, dets: dets)
    memory = _stocked_open_drawer(("patch_piece",))
    memory.update(frame(4, _neighbours() + [_cab(), _drawer(OPEN), _block(), blob], proprio=proprio((0.2, 0.0, 0.3), 0.08)))
    assert memory.find(cls="large")


def test_a_block_whose_box_reaches_the_table_in_an_open_tray_is_in_the_drawer():
    """Geometric views of a block set into a tray from above can leave its box reaching down to the table,
    1.5 cm under the tray: it is in the drawer all the same (so it slides with it when the drawer shuts:
    ``relations.drawer_sink``)."""

    def drawer_contents(relations: RelationConfig) -> list[str]:
        memory = SpatialMemory(MemoryConfig(detector=DetectorProfile(strict_class=False), relations=relations))
        sunk = detection((0.50, 0.0, 0.029), "small", "blue", (0.04, 0.04, 0.056))  # from 1 mm to 5.7 cm
        # The open drawer as seen: its tray's bottom 1.5 cm over the table, its front 8 cm high.
        tray = detection((0.55 - OPEN / 2, 0.0, 0.0), "drawer", "orange", (0.06 + OPEN, 0.17, 0.066), bottom=0.015)
        for t in range(4):
            memory.update(frame(t, _neighbours() + [_cab(), tray, sunk], proprio=proprio((0.2, 0.0, 0.3), 0.08)))
        drawer = min(memory.find(cls="drawer"), key=lambda n: abs(memory.tracks[n].center[1]))
        return memory.objects_in(drawer)

    assert drawer_contents(RelationConfig())
    assert not drawer_contents(RelationConfig(drawer_sink=0.005))


def test_a_drawer_first_seen_pulled_out_apart_from_its_housing_is_open():
    """From the scene camera an open drawer may show only its front and the tray's outer half, 6 cm clear
    of its housing, and stand still so for many frames: it takes its row's slide (voted by a shut
    drawer seen against the housing) and is judged open (``row_slide``, geometric mode's). Without the
    row's vote it was never judged."""

    detached = detection((0.471, -0.18, 0.046), "drawer", "blue", (0.12, 0.17, 0.07))  # x 0.41-0.53
    housing = detection((0.71, 0.0, 0.055), "cabinet", "grey", (0.23, 0.53, 0.07))  # x from 0.595
    shut = detection((0.55, 0.186, 0.054), "drawer", "blue", (0.052, 0.144, 0.054))

    def state(row_slide: bool) -> str:
        memory = SpatialMemory(profile(strict_class=False, row_slide=row_slide))
        for t in range(4):
            memory.update(frame(t, [detached, housing, shut]))
        node = min(memory.find(cls="drawer"), key=lambda n: memory.tracks[n].center[0])
        return memory.graph.nodes[node]["state"]

    assert state(row_slide=True) == "open"
    assert state(row_slide=False) == ""


def _open_row_with_a_block() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One DBSCAN cluster: a grey housing, two shut cyan drawers, the middle one 12 cm out with a blue block
    standing on its tray's floor (touching it, so no gap parts them). The block's indices come last."""
    housing = box_points((0.57, -0.27, 0.02), (0.73, 0.28, 0.09), 0.008)
    shut = [box_points((0.513, y0, 0.03), (0.57, y1, 0.081), 0.008) for y0, y1 in ((-0.27, -0.095), (0.109, 0.27))]
    front = box_points((0.44, -0.076, 0.015), (0.45, 0.094, 0.081), 0.008)
    floor = box_points((0.45, -0.076, 0.015), (0.57, 0.094, 0.02), 0.008)
    walls = [box_points((0.45, y, 0.015), (0.57, y + 0.008, 0.06), 0.008) for y in (-0.076, 0.086)]
    block = box_points((0.49, -0.01, 0.02), (0.53, 0.03, 0.06), 0.008)
    drawers = np.concatenate(shut + [front, floor] + walls)
    pts = np.concatenate([housing, drawers, block])
    cols = np.concatenate([np.tile([0.67, 0.67, 0.67], (len(housing), 1)), np.tile([0.1, 0.8, 0.8], (len(drawers), 1)),
                           np.tile([0.1, 0.2, 0.9], (len(block), 1))])
    return pts, cols, np.arange(len(pts) - len(block), len(pts))


def test_a_block_in_an_open_tray_is_told_from_the_drawer_by_colour(monkeypatch):
    """DBSCAN gives a block standing in an open tray to the drawer's cluster; the drawer is painted one
    colour, so the block's patch of another colour is a thing of its own and no part of the drawer."""
    pts, cols, block = _open_row_with_a_block()
    parts = geometric_shapes.label_parts(pts, [np.arange(len(pts))], 0.0, 10, cols)
    assert any(label == "" and set(p.tolist()) == set(block.tolist()) for label, p in parts)
    assert not any(set(block.tolist()) & set(p.tolist()) for label, p in parts if label == "drawer")

    monkeypatch.setattr(geometric_shapes, "things_in_tray", lambda pts, cols, piece, n: (piece, []))
    parts = geometric_shapes.label_parts(pts, [np.arange(len(pts))], 0.0, 10, cols)
    assert any(set(block.tolist()) <= set(p.tolist()) for label, p in parts if label == "drawer")


def test_two_blocks_side_by_side_are_two_things_not_a_button(monkeypatch):
    """Rearrange's neighbouring spots put two 4 cm blocks 2 cm apart: one DBSCAN cluster with a button's
    footprint (8 x 4.6 cm). Split by colour, each piece block-wide, they are two things; a push button
    (a 7 cm grey base, a lit 4.8 cm cap on it) stays one. Without the rule the pair is a button."""
    blue = box_points((0.298, -0.308, 0.0), (0.338, -0.268, 0.04), 0.005)
    purple = box_points((0.340, -0.295, 0.0), (0.380, -0.255, 0.04), 0.005)
    pts = np.concatenate([blue, purple])
    cols = np.concatenate([np.tile([0.15, 0.3, 0.95], (len(blue), 1)), np.tile([0.6, 0.2, 0.8], (len(purple), 1))])
    parts = geometric_shapes.label_parts(pts, [np.arange(len(pts))], 0.0, 10, cols)
    assert sorted(label for label, _ in parts) == ["", ""]
    assert sorted(len(p) for _, p in parts) == sorted([len(blue), len(purple)])

    base = box_points((0.30, 0.10, 0.0), (0.37, 0.17, 0.012), 0.005)
    cap = box_points((0.311, 0.111, 0.012), (0.359, 0.159, 0.036), 0.005)
    button = np.concatenate([base, cap])
    lit = np.concatenate([np.tile([0.5, 0.5, 0.5], (len(base), 1)), np.tile([0.95, 0.1, 0.1], (len(cap), 1))])
    assert [label for label, _ in geometric_shapes.label_parts(button, [np.arange(len(button))], 0.0, 10, lit)] \
        == ["button"]

    monkeypatch.setattr(geometric_shapes, "_side_by_side", lambda *a: False)
    assert [label for label, _ in geometric_shapes.label_parts(pts, [np.arange(len(pts))], 0.0, 10, cols)] \
        == ["button"]


def _housing_edge_and_ball() -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """A housing seen with no front joined to it (grey), the top edge of its shut drawer as a cluster apart
    (purple, 14 cm long), and 17 cm before it the top of a yellow ball: what the scene camera saw after the
    ball was set down (geometric)."""
    housing = box_points((0.57, -0.27, 0.02), (0.73, 0.28, 0.09), 0.008)
    edge = box_points((0.53, -0.17, 0.075), (0.545, -0.03, 0.081), 0.008)
    ball = box_points((0.372, -0.158, 0.032), (0.39, -0.142, 0.04), 0.006)
    pts = np.concatenate([housing, edge, ball])
    cols = np.concatenate([np.tile([0.67, 0.67, 0.67], (len(housing), 1)), np.tile([0.55, 0.2, 0.75], (len(edge), 1)),
                           np.tile([0.95, 0.8, 0.1], (len(ball), 1))])
    a, b = len(housing), len(housing) + len(edge)
    return pts, cols, [np.arange(a), np.arange(a, b), np.arange(b, len(pts))]


def test_a_ball_before_a_shut_drawer_seen_by_its_edge_is_no_part_of_it(monkeypatch):
    pts, cols, clusters = _housing_edge_and_ball()
    parts = geometric_shapes.label_parts(pts, clusters, 0.0, 3, cols)
    ball = set(clusters[2].tolist())
    drawers = [set(p.tolist()) for label, p in parts if label == "drawer"]
    assert drawers == [set(clusters[1].tolist())], "the edge alone is the drawer"
    assert any(set(p.tolist()) == ball for label, p in parts if label != "drawer")

    # Without the long parts' colour standing for the row's, the ball joins the edge into one drawer view
    # reaching 19 cm out, which took the shut drawer's node to the ball.
    monkeypatch.setattr(geometric_shapes, "_long_parts_hue", lambda *args: None)
    parts = geometric_shapes.label_parts(pts, clusters, 0.0, 3, cols)
    assert any(ball <= set(p.tolist()) for label, p in parts if label == "drawer")
