"""The learned detector under a real camera's noise (``sensor=realistic``): the frame is cleaned before the
detector reads it (``embodied.perception.learned.denoise``), and each cleaning step is checked against
what it fixes, with the step left out as the ablation."""

from __future__ import annotations

import numpy as np
import pytest

from embodied.perception.geometry import depth_noise
from embodied.perception.learned.denoise import (
    COLOUR_FLOOR,
    DEPTH_FLOOR,
    Cleaned,
    clean_frame,
    colour_noise,
    fill_holes,
)
from embodied.perception.learned.regions import colour_depth_regions

# The realistic sensor's figures (embodied/envs/sensor.py): colour noise about 4/255 at mid grey, depth
# noise 4 mm at 1 m growing with range squared, 0.5 % of pixels without a return.
COLOUR_STD, DEPTH_STD, DROPOUT = 4.4, 0.004, 0.005


def _corner(rng: np.random.Generator, h: int = 96, w: int = 96, noisy: bool = True):
    """A floor meeting a wall 2 m away, as the apartment's head camera sees it: depth continuous across the
    corner, the two colours (170, 150, 120) and (190, 176, 146) apart by 20-26 per channel (just over the
    regions' step of 20), each shaded a little across the image; with the realistic sensor's noise."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    wall = xx >= w // 2
    rgb = np.where(wall[..., None], [190, 176, 146], [170, 150, 120]).astype(np.float32) + 0.05 * yy[..., None]
    depth = 2.0 + 0.002 * xx + 0.001 * yy
    if noisy:
        rgb = rgb + rng.normal(0.0, COLOUR_STD, rgb.shape)
        depth = depth + rng.normal(0.0, DEPTH_STD, depth.shape) * depth ** 2
        depth[rng.random(depth.shape) < DROPOUT] = 0.0
    return np.clip(np.rint(rgb), 0, 255).astype(np.uint8), depth.astype(np.float32), wall


def _two_surfaces(regions: np.ndarray, wall: np.ndarray) -> tuple[float, float]:
    """(share of the floor's pixels in the floor's largest region, share of that region's pixels on the
    wall): 1 and 0 when the regions keep the two apart."""
    ids, counts = np.unique(regions[~wall], return_counts=True)
    floor = ids[counts.argmax()]
    mine = regions == floor
    return float(counts.max() / (~wall).sum()), float((mine & wall).sum() / mine.sum())


def test_the_noise_is_read_from_the_image_and_a_noiseless_frame_passes_untouched():
    rng = np.random.default_rng(0)
    rgb, depth, _ = _corner(rng)
    assert colour_noise(rgb) == pytest.approx(COLOUR_STD, rel=0.2)
    assert depth_noise(depth) == pytest.approx(DEPTH_STD, rel=0.2)
    clean_rgb, clean_depth, _ = _corner(rng, noisy=False)
    assert colour_noise(clean_rgb) < COLOUR_FLOOR and depth_noise(clean_depth) < DEPTH_FLOOR
    same = clean_frame(clean_rgb, clean_depth)
    assert same.rgb is clean_rgb and same.depth is clean_depth  # not a copy: nothing done
    assert (same.colour_sigma, same.depth_sigma) == (0.0, 0.0)
    assert Cleaned(clean_rgb, clean_depth).region_steps() == {"colour_step": 20, "depth_noise": 0.0}


def test_colour_noise_no_longer_leaks_the_floor_into_the_wall():
    """Two pixels join when no channel differs by more than 20: along a boundary of a hundred pixel pairs
    whose colours differ by 20-26, noise of 4/255 brings some pair under the step, and the floor and the
    wall become one region (the realistic sensor's held-out frames: floor IoU 0.99 -> 0.79). Cleaned
    (colour smoothed within surfaces, the step made stricter by the noise left), they stay apart."""
    leaks = 0
    for seed in range(4):
        rgb, depth, wall = _corner(np.random.default_rng(seed))
        raw, _ = colour_depth_regions(rgb, fill_holes(rgb, depth))  # holes filled: only the colour test differs
        leaks += _two_surfaces(raw, wall)[1] > 0.3
        frame = clean_frame(rgb, depth)
        regions, _ = colour_depth_regions(frame.rgb, frame.depth, **frame.region_steps())
        kept, leaked = _two_surfaces(regions, wall)
        assert kept > 0.95 and leaked < 0.01, f"seed {seed}: floor kept {kept:.2f}, leaked {leaked:.2f}"
    assert leaks >= 3  # the ablation: without cleaning the two surfaces merge


def test_no_return_pixels_are_filled_from_their_own_surface():
    """A pixel without a return used to be a region of its own (500 regions a realistic frame instead of
    36); filled from the neighbour of nearest colour it joins its surface, and on an edge, where half the
    pixels drop out, the side it belongs to."""
    rgb = np.zeros((5, 6, 3), np.uint8)
    rgb[:, :3] = (200, 30, 30)  # a red block 0.5 m away ...
    rgb[:, 3:] = (30, 30, 200)  # ... in front of a blue wall at 2 m
    depth = np.where(np.arange(6) < 3, 0.5, 2.0).astype(np.float32)[None].repeat(5, 0)
    depth[2, 2] = depth[2, 3] = 0.0  # the edge's two pixels drop out
    depth[0:2, 4:6] = 0.0  # and a patch of the wall
    filled = fill_holes(rgb, depth)
    assert filled[2, 2] == 0.5 and filled[2, 3] == 2.0 and (filled[0:2, 4:6] == 2.0).all()
    assert (fill_holes(rgb, depth, rounds=0) == depth).all()
    rng = np.random.default_rng(1)
    rgb, depth, wall = _corner(rng)
    raw_n = colour_depth_regions(rgb, depth)[1]
    frame = clean_frame(rgb, depth)
    assert (frame.depth > 0).all()
    assert colour_depth_regions(frame.rgb, frame.depth, **frame.region_steps())[1] < 0.1 * raw_n


def _first_observation(sensor: str):
    """The first observation of a PutBlockBack episode under ``sensor`` (its masks are the truth) and the
    label map."""
    import gymnasium as gym

    import embodied  # noqa: F401  (registers the tasks)

    env = gym.make("embodied/PutBlockBack-v0", sensor=sensor)
    obs, _ = env.reset(seed=123)
    labels = dict(env.unwrapped.labels)
    env.close()
    return obs, labels


@pytest.fixture(scope="module")
def realistic_block():
    return _first_observation("realistic")


def test_a_noiseless_camera_gets_exactly_what_it_got_before():
    """At ``sensor=ideal`` cleaning does nothing: the segmenter's instances and classes are those without
    it, pixel for pixel."""
    from embodied.perception.learned import LearnedSegmenter

    obs, _ = _first_observation("ideal")
    segment = LearnedSegmenter()
    for cam in ("scene", "wrist"):
        args = (obs[f"rgb/{cam}"], obs[f"depth/{cam}"], obs[f"intrinsics/{cam}"], obs[f"extrinsics/{cam}"], cam)
        segment.denoise = True
        ids, labels = segment(*args)
        segment.denoise = False
        plain_ids, plain_labels = segment(*args)
        assert np.array_equal(ids, plain_ids) and labels == plain_labels


def test_learned_perception_names_the_blocks_under_the_realistic_sensor(realistic_block):
    """Under the realistic sensor the shipped detector named PutBlockBack's block a button or a cup in most
    frames (the agent put 1 block in 6 back); with the frame cleaned first it names every block the
    renderer's masks show, within 2 cm. Without cleaning (``denoise=False``) it misses some."""
    from embodied.perception import Perceiver, PerceptionConfig

    obs, labels = realistic_block
    truth = [o for o in Perceiver(labels, PerceptionConfig(mode="masks"))(obs, 0).objects
             if o.label == "block" and o.n_points >= 20]
    assert truth
    blind = {k: v for k, v in obs.items() if not k.startswith("segmentation/")}
    perceive = Perceiver(None, PerceptionConfig(mode="learned"))

    def found(denoise: bool) -> int:
        perceive.segmenter.denoise = denoise
        seen = perceive(blind, 0).objects
        return sum(any(o.label == "block" and o.camera == t.camera and np.linalg.norm(o.center - t.center) < 0.02
                       for o in seen) for t in truth)

    try:
        assert found(True) == len(truth)
        assert found(False) < len(truth)
    finally:
        perceive.segmenter.denoise = True


def _table_scene():
    """A camera 0.86 m from the table's centre, looking down at it as the workcell's scene camera does:
    K (3,3), cam_to_world (4,4) and the table's depth (H,W) (z = 0 everywhere)."""
    h = w = 128
    f = 115.0
    K = np.array([[f, 0.0, 64.0], [0.0, f, 64.0], [0.0, 0.0, 1.0]])
    eye, target = np.array([0.0, -0.5, 0.7]), np.array([0.0, 0.1, 0.0])
    forward = (target - eye) / np.linalg.norm(target - eye)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    pose = np.eye(4)
    pose[:3, :3] = np.stack([right, np.cross(forward, right), forward], 1)
    pose[:3, 3] = eye
    u, v = np.meshgrid(np.arange(w), np.arange(h))
    rays = np.stack([(u - 64) / f, (v - 64) / f, np.ones((h, w))], -1) @ pose[:3, :3].T
    return K, pose, (-eye[2] / rays[..., 2]).astype(np.float32)


def test_patches_of_the_table_and_lines_are_left_out_under_depth_noise():
    """Learned mode leaves out a flat view level with the table (a patch of it the segmenter named a block)
    and a view thinner than 5 mm along two axes (a line). Under the realistic sensor's depth noise a 6-pixel
    patch's top strays by a mm or two and its height grows: at the fixed 1 mm it was left out about half the
    time; with the figures grown by two stds of the view's point noise (``filter_noise_stds``), nearly
    always. Without noise the rule is the fixed one."""
    from embodied.perception.flush import surface_patches
    from embodied.perception.masks import detect_masks
    from embodied.perception.pieces import is_line
    from embodied.perception.types import PerceptionConfig

    K, pose, table = _table_scene()
    cfg = PerceptionConfig(mode="learned")
    rng = np.random.default_rng(0)
    runs = 60
    for sigma in (0.0, DEPTH_STD):
        left_out = {0.0: [0, 0], cfg.filter_noise_stds: [0, 0]}
        for _ in range(runs):
            seg = np.ones(table.shape, np.int32)
            y, x = rng.integers(30, 90, 2)
            seg[y:y + 2, x:x + 3] = 2  # six pixels of the table, named a block
            seg[y + 10, x:x + 30] = 3  # a one-pixel line, named a block
            depth = table + rng.normal(size=table.shape).astype(np.float32) * sigma * table ** 2
            arrays = {"rgb": np.full(table.shape + (3,), 128, np.uint8), "depth": depth, "segmentation": seg,
                      "intrinsics": K, "extrinsics": pose}
            views = detect_masks(arrays, {1: "table", 2: "block", 3: "block"}, "scene", 0, cfg, depth_noise(depth))
            line = next(o for o in views if o.key == "scene#3")
            for k, counts in left_out.items():
                counts[0] += "scene#2" in surface_patches(views, cfg.line_width, cfg.flush_tolerance, cfg.flush_kept,
                                                          noise_stds=k)
                counts[1] += is_line(line, cfg.line_width, k)
        fixed, grown = left_out[0.0], left_out[cfg.filter_noise_stds]
        assert grown[0] >= 0.95 * runs and grown[1] == runs, (sigma, grown)
        if sigma:
            assert fixed[0] <= 0.75 * runs  # the ablation: at the fixed 1 mm many patches stay
        else:
            assert fixed == grown == [runs, runs]
