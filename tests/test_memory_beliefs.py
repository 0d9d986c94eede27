"""Beliefs under sensor noise: pressed, open, lit, colour and existence are decided on evidence gathered over
frames, with tolerances from each view's noise. Each belief has its case under noise, and the same case with
every decision made on one frame alone (``BeliefConfig(single_frame=True)``, the thresholds memory used to
apply), which must get it wrong."""

from __future__ import annotations

import numpy as np
import pytest

from embodied.memory import MemoryConfig, SpatialMemory
from embodied.memory.beliefs import Belief, side_llr
from embodied.memory.config import BeliefConfig
from tests.memory_helpers import RGB, cabinet_frame, detection, down_camera, frame, view

NOISE = np.array([0.002, 0.002, 0.002])  # m: a point's std at a D435-class camera's table range
SINGLE = BeliefConfig(single_frame=True)


def _memory(single: bool) -> SpatialMemory:
    return SpatialMemory(MemoryConfig(beliefs=SINGLE if single else BeliefConfig()))


def _noisy(det, rng, shift_z: float = 0.0):
    """``det`` moved by depth noise (its box shifts by a fraction of a point's std) and ``shift_z`` m."""
    delta = np.array([0.0, 0.0, shift_z]) + rng.normal(0.0, 0.0006, 3)
    det.points = (det.points + delta).astype(np.float32)
    det.box_min, det.box_max, det.centroid = det.box_min + delta, det.box_max + delta, det.centroid + delta
    det.noise = NOISE.copy()
    return det


def _button(rng, shift_z: float = 0.0):
    return _noisy(detection((0.45, 0.0, 0.019), "button", "grey", size=(0.05, 0.06, 0.034), key="top#b"), rng, shift_z)


@pytest.mark.parametrize("single", [False, True])
def test_a_cap_seen_lower_in_one_noisy_frame_is_not_pressed(single):
    """A frame's view sits 7 mm low (the click is 6 mm): noise, as the frames around it show. The belief
    needs a view three stds past the click, or two frames; one frame alone calls it pressed."""
    rng = np.random.default_rng(0)
    memory = _memory(single)
    for t in range(6):
        memory.update(frame(t, [_button(rng)]))
    memory.update(frame(6, [_button(rng, -0.007)]))
    for t in range(7, 10):
        memory.update(frame(t, [_button(rng)]))
    pressed = memory.when("pressed")
    assert (pressed == []) is not single


@pytest.mark.parametrize("single", [False, True])
def test_a_cap_pushed_past_its_click_is_pressed_at_once(single):
    rng = np.random.default_rng(1)
    memory = _memory(single)
    for t in range(6):
        memory.update(frame(t, [_button(rng)]))
    for t in range(6, 8):
        memory.update(frame(t, [_button(rng, -0.010)]))
    assert memory.when("pressed") == [6]


@pytest.mark.parametrize("single", [False, True])
def test_a_drawer_whose_view_jitters_out_in_one_frame_stays_shut(single):
    """Belief: a shut drawer's views jitter by noise; one frame shows it 4.5 cm out (its view met the arm's),
    then it is shut again. Open needs the travel past the open threshold by three stds, or two frames."""
    memory = _memory(single)
    outs = [0.0] * 4 + [0.045] + [0.0] * 3
    for t, out in enumerate(outs):
        memory.update(cabinet_frame(t, out, noise=NOISE, seed=t))
    drawer = memory.find(cls="drawer")[0]
    assert (memory.when("opened", drawer) == []) is not single


def _flash(rng, brightness: float):
    det = _noisy(detection((0.4, 0.1, 0.019), "button", "grey", size=(0.05, 0.06, 0.034), key="top#f"), rng)
    det.rgb = np.clip(np.asarray(RGB["grey"], np.float32) * brightness * rng.normal(1.0, 0.03), 0, 1).astype(np.float32)
    return det


@pytest.mark.parametrize("single", [False, True])
def test_a_one_frame_glint_is_no_flash_but_a_light_is(single):
    """Exposure noise (3 %) and a one-frame glint 1.6 times brighter: no flash; a light 2.2 times brighter is
    one, logged in its first frame. One frame alone (a step of 1.4 times) counts the glint too."""
    rng = np.random.default_rng(2)
    memory = _memory(single)
    looks = [1.0] * 5 + [1.6] + [1.0] * 4 + [2.2] * 3 + [1.0] * 3
    for t, b in enumerate(looks):
        memory.update(frame(t, [_flash(rng, b)]))
    node = memory.find(cls="button")[0]
    flashes = memory.when("brightened", node)
    assert flashes == ([5, 10] if single else [10])


def _block(rng, colour: str):
    return _noisy(detection((0.4, 0.0, 0.02), "block", colour, key="top#k"), rng)


@pytest.mark.parametrize("single", [False, True])
def test_a_colour_seen_once_is_no_change_but_one_seen_twice_is(single):
    """An orange block read yellow in one frame (a highlight) keeps its colour; painted blue for good (two
    frames of a colour a tolerance and a half away) it is recoloured."""
    rng = np.random.default_rng(3)
    memory = _memory(single)
    for t, colour in enumerate(["orange"] * 4 + ["yellow"] + ["orange"] * 3):
        memory.update(frame(t, [_block(rng, colour)]))
    node = memory.find(cls="block")[0]
    assert (memory.when("recoloured", node) == []) is not single


def _depth_frame(t: int, dets: list, rng, gone: bool):
    """A frame seen from 1 m with depth noise; ``gone``: the block's place shows the table (a hand passed)."""
    pose = down_camera()
    pts = [] if gone else [d.points.astype(float) for d in dets]
    v = view(pose, pts)
    v.depth = (v.depth + rng.normal(0.0, 0.004, v.depth.shape)).astype(np.float32)
    v.depth_sigma = 0.004
    from embodied.perception.types import Frame
    return Frame(t, [] if gone else dets, [v])


@pytest.mark.parametrize("single", [False, True])
def test_one_frame_that_sees_through_a_block_does_not_make_it_missing(single):
    """Noise on the depth (4 mm at 1 m): the block is not detected for five frames, and in one of them its
    place reads as the table behind it (a hand passing lifted nothing). It stays where it is, unseen; a
    second frame of evidence makes it missing."""
    rng = np.random.default_rng(4)
    memory = _memory(single)
    block = detection((0.4, 0.0, 0.02), "block", "red", key="top#m")
    for t in range(3):
        memory.update(_depth_frame(t, [block], rng, gone=False))
    memory.update(_depth_frame(3, [block], rng, gone=True))
    for t in range(4, 7):
        f = _depth_frame(t, [block], rng, gone=False)
        f.objects = []  # not detected: the depth still shows it
        memory.update(f)
    node = memory.find(cls="block")[0]
    assert (memory.graph.nodes[node]["status"] != "missing" and memory.when("missing", node) == []) is not single
    memory.update(_depth_frame(7, [block], rng, gone=True))
    memory.update(_depth_frame(8, [block], rng, gone=True))
    assert memory.graph.nodes[node]["status"] == "missing"


def test_evidence_adds_up_and_a_clear_frame_decides():
    cfg = BeliefConfig()
    b = Belief()
    b.reset(False, cfg)
    assert not b.add(side_llr(0.0072, 0.006, 0.001, cfg.cap), cfg)  # 1.2 stds past: not yet
    assert b.add(side_llr(0.0072, 0.006, 0.001, cfg.cap), cfg) is False
    assert b.add(side_llr(0.0072, 0.006, 0.001, cfg.cap), cfg)  # the third such frame decides
    b.reset(False, cfg)
    assert b.add(side_llr(0.0095, 0.006, 0.001, cfg.cap), cfg)  # 3.5 stds past: at once
