"""Pieces of one object an occluder cut apart become one observation (learned mode's join_pieces)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from embodied.perception import PerceptionConfig
from embodied.perception.pieces import join_pieces
from tests.memory_helpers import detection


def piece(centre, size, pixels, colour="blue", label="block"):
    return dataclasses.replace(detection(centre, label, colour, size), n_points=pixels)


def test_a_block_cut_by_a_handle_is_one_observation():
    """A far block behind a drawer's handle: its top (10 px) and a sliver of its side (4 px) lie 1.2 cm apart."""
    top = piece((0.35, -0.165, 0.040), (0.011, 0.032, 0.001), 10)
    side = piece((0.358, -0.1455, 0.016), (0.035, 0.003, 0.024), 4)
    other = piece((0.35, 0.10, 0.02), (0.04, 0.04, 0.04), 40, colour="red")
    (block, red) = join_pieces([top, side, other], max_pixels=12, gap=0.02)
    assert red is other
    assert block.n_points == 14 and block.key == top.key
    assert block.box_min == pytest.approx(np.minimum(top.box_min, side.box_min))
    assert block.box_max == pytest.approx(np.maximum(top.box_max, side.box_max))
    assert len(block.points) == len(top.points) + len(side.points)


def test_what_is_not_a_piece_of_it_stays_apart():
    blue = piece((0.35, 0.0, 0.02), (0.04, 0.04, 0.04), 40)
    cases = [
        piece((0.35, 0.035, 0.02), (0.02, 0.02, 0.02), 5, colour="red"),  # touching, another colour
        piece((0.35, 0.035, 0.02), (0.02, 0.02, 0.02), 5, label="cup"),  # touching, another class
        piece((0.35, 0.08, 0.02), (0.02, 0.02, 0.02), 5),  # its colour, 5 cm away
        piece((0.35, 0.05, 0.02), (0.04, 0.04, 0.04), 30),  # touching, but a whole object's worth of pixels
    ]
    for other in cases:
        assert join_pieces([blue, other], max_pixels=12, gap=0.02) == [blue, other]
    assert join_pieces([blue, cases[2]], max_pixels=0, gap=1.0) == [blue, cases[2]]  # 0: off


def test_a_chain_of_pieces_ends_in_the_biggest():
    big = piece((0.35, 0.0, 0.02), (0.04, 0.04, 0.04), 11)
    mid = piece((0.35, 0.03, 0.02), (0.01, 0.01, 0.01), 6)
    small = piece((0.35, 0.045, 0.02), (0.01, 0.01, 0.01), 3)  # touches mid only
    (one,) = join_pieces([small, big, mid], max_pixels=12, gap=0.01)
    assert one.key == big.key and one.n_points == 20


def test_a_dumbbell_s_weights_and_bar_are_one_observation_for_a_class_that_never_touches_itself():
    """A dumbbell across a bed (VanishedObject 920007): its weights (18 and 21 px) and its bar (13 px) come
    out as three pieces with bed between them in the image, the bar's ends lost to the bed, so each
    weight's box lies 4 cm from the bar's and 12 cm from the other weight's. A class whose objects never
    touch one another joins them whatever their size, within 6 cm; a block (blocks stand side by side)
    keeps whole-sized pieces apart, and so does another colour."""
    near = piece((0.265, 0.0, 0.02), (0.03, 0.03, 0.03), 18, colour="yellow", label="dumbbell")
    bar = piece((0.345, 0.0, 0.02), (0.05, 0.01, 0.01), 13, colour="yellow", label="dumbbell")
    far = piece((0.425, 0.0, 0.02), (0.03, 0.03, 0.03), 21, colour="yellow", label="dumbbell")
    singular = lambda label: label != "block"  # noqa: E731
    (one,) = join_pieces([near, bar, far], max_pixels=12, gap=0.02, singular=singular, singular_gap=0.06)
    assert one.key == far.key and one.n_points == 52
    assert one.box_min[0] == pytest.approx(0.25) and one.box_max[0] == pytest.approx(0.44)
    assert join_pieces([near, bar, far], max_pixels=12, gap=0.02, singular=singular) == [near, bar, far]
    assert join_pieces([near, bar, far], max_pixels=12, gap=0.02, singular_gap=0.06) == [near, bar, far]
    blocks = [dataclasses.replace(p, label="block") for p in (near, bar, far)]
    assert join_pieces(blocks, max_pixels=12, gap=0.02, singular=singular, singular_gap=0.06) == blocks
    other = dataclasses.replace(far, colour="red")
    assert len(join_pieces([near, bar, other], max_pixels=12, gap=0.02, singular=singular, singular_gap=0.06)) == 2


def test_a_flat_view_level_with_the_table_is_a_patch_of_it():
    """The randomized look's table in a block's colour: five pixels of it, seen between the arm and a cup,
    came out as that block, flat at the table's height (memory completed it 4 cm down, into the table). Such a view is
    left out; a block's top face, a pad (2 mm) and what lies beyond the table's box are kept."""
    from embodied.perception.flush import surface_patches

    table = piece((0.37, -0.01, 0.0), (1.0, 1.25, 0.0), 9000, colour="red", label="table")
    patch = piece((0.33, -0.333, 0.0), (0.036, 0.017, 0.0), 5, colour="red")
    top_face = piece((0.46, 0.27, 0.04), (0.04, 0.04, 0.0), 60, colour="red")
    pad = piece((0.30, 0.10, 0.002), (0.06, 0.06, 0.0), 80, colour="red", label="pad")
    sunk_pad = piece((0.30, -0.10, 0.0), (0.06, 0.06, 0.0), 80, colour="red", label="pad")
    beyond = piece((0.37, 0.70, 0.0), (0.03, 0.03, 0.0), 9, colour="red")
    tall = piece((0.20, 0.0, 0.02), (0.04, 0.04, 0.04), 60, colour="red")
    views = [table, patch, top_face, pad, sunk_pad, beyond, tall]
    kept = ("pad", "button", "drawer")
    assert surface_patches(views, flat=0.005, tol=0.001, kept=kept) == {patch.key}
    assert surface_patches(views, flat=0.005, tol=0.0, kept=kept) == set()  # the knob off: all kept
    assert surface_patches(views[1:], flat=0.005, tol=0.001, kept=kept) == set()  # no surface seen
    assert surface_patches(views, flat=0.005, tol=0.001, kept=()) == {patch.key, sunk_pad.key}
    with pytest.raises(ValueError, match="flush_tolerance"):
        PerceptionConfig(mode="learned", flush_tolerance=-0.001).validate()
