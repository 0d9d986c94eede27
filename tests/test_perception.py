"""Perception: object observations from RGB-D + masks (or geometry alone), bad input, robustness."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from embodied.perception import Perceiver, PerceptionConfig, colour_name
from embodied.perception.clouds import grid_inliers

SIZE = 96


@pytest.fixture(scope="module")
def scene():
    env = gym.make("embodied/PutBlockBack-v0", image_size=SIZE, distractors=2)
    obs, info = env.reset(seed=3)
    yield env, obs, info
    env.close()


def _blocks(frame, camera="scene"):
    return [o for o in frame.objects if o.label == "block" and o.camera == camera]


def test_masks_mode_finds_the_block_where_it_is(scene):
    env, obs, info = scene
    frame = Perceiver(env.unwrapped.labels)(obs, t=0)
    colour = env.unwrapped.colour
    block = next(o for o in _blocks(frame) if o.colour == colour)
    truth = info["privileged"]["block_pos"]
    assert np.linalg.norm(block.center - truth) < 0.01
    # Every point lies on the 4 cm cube; the box is about its size.
    assert np.all(np.abs(block.points - truth) < 0.03)
    assert np.all(np.abs(block.extent[:2] - 0.04) < 0.01)
    assert block.n_points >= len(block.points) > 5 and block.t == 0 and block.camera == "scene"
    # The robot is the agent's own body: not an object observation.
    assert all(o.label != "robot" for o in frame.objects)
    labels = {o.label for o in frame.objects}
    assert {"table", "pad", "block"} <= labels


def test_colour_names_of_the_palette():
    rendered = {
        "red": (0.8, 0.12, 0.12),
        "green": (0.15, 0.7, 0.2),
        "blue": (0.15, 0.3, 0.82),
        "yellow": (0.84, 0.8, 0.1),
        "purple": (0.55, 0.2, 0.75),
        "orange": (0.85, 0.5, 0.05),
        "cyan": (0.1, 0.79, 0.8),
        "pink": (0.85, 0.45, 0.7),
        "white": (0.86, 0.86, 0.86),
        "grey": (0.5, 0.5, 0.5),
        "brown": (0.7, 0.6, 0.46),
        "black": (0.1, 0.1, 0.11),
    }
    for name, rgb in rendered.items():
        assert colour_name(np.array(rgb)) == name


def test_shuffled_ids_change_every_frame_but_labels_follow(scene):
    env, obs, _ = scene
    perceive = Perceiver(env.unwrapped.labels, shuffle_ids=True, seed=1)
    keys = []
    for t in range(3):
        frame = perceive(obs, t)
        keys.append({o.key for o in frame.objects if o.camera == "scene"})
        assert sorted(o.label for o in _blocks(frame)) == ["block"] * 3
    assert keys[0] != keys[1] != keys[2]


def test_bad_input_gives_clear_errors(scene):
    env, obs, _ = scene
    perceive = Perceiver(env.unwrapped.labels)
    missing = {k: v for k, v in obs.items() if k != "intrinsics/wrist"}
    with pytest.raises(ValueError, match="intrinsics/wrist"):
        perceive(missing, 0)
    short = dict(obs, **{"rgb/scene": obs["rgb/scene"][:-4]})
    with pytest.raises(ValueError, match="rgb/scene"):
        perceive(short, 0)
    with pytest.raises(ValueError, match="depth"):
        perceive({"proprio": obs["proprio"]}, 0)
    with pytest.raises(ValueError, match="label map"):
        Perceiver({}, mode="masks")
    with pytest.raises(ValueError, match="mode"):
        Perceiver(env.unwrapped.labels, mode="sonar")


def test_nan_depth_pixels_are_ignored(scene):
    env, obs, info = scene
    nan_obs = dict(obs)
    depth = obs["depth/scene"].copy()
    depth[::2] = np.nan  # every other row reads NaN
    nan_obs["depth/scene"] = depth
    frame = Perceiver(env.unwrapped.labels)(nan_obs, 0)
    block = next(o for o in _blocks(frame) if o.colour == env.unwrapped.colour)
    assert np.all(np.isfinite(block.points)) and np.isfinite(block.center).all()
    assert np.linalg.norm(block.center - info["privileged"]["block_pos"]) < 0.015
    assert not np.isnan(obs["depth/scene"]).any()  # the caller's array is untouched


@pytest.mark.parametrize(
    "knobs", [{"depth_noise": 0.004}, {"dropout": 0.3}, {"mask_erosion": 1}, {"outlier_impl": "open3d"}]
)
def test_corruptions_keep_the_block_within_2cm(scene, knobs):
    env, obs, info = scene
    frame = Perceiver(env.unwrapped.labels, seed=2, **knobs)(obs, 0)
    block = next(o for o in _blocks(frame) if o.colour == env.unwrapped.colour)
    assert np.linalg.norm(block.center - info["privileged"]["block_pos"]) < 0.02


def test_outlier_filter_drops_flying_points():
    rng = np.random.default_rng(0)
    cube = np.stack(np.meshgrid(*[np.arange(6.0)] * 3), -1).reshape(-1, 3)
    flying = rng.uniform(20, 30, (4, 3))
    pts = np.concatenate([cube, flying])
    keep = grid_inliers(pts, np.zeros(len(pts), dtype=np.int64), 1, 2.0)
    assert keep[: len(cube)].all() and not keep[len(cube) :].any()


def test_geometric_mode_finds_blocks_by_colour_without_masks(scene):
    env, obs, info = scene
    no_masks = {k: v for k, v in obs.items() if not k.startswith("segmentation/")}
    frame = Perceiver(config=PerceptionConfig(mode="geometric"))(no_masks, 0)
    u = env.unwrapped
    truth = {u.colour: info["privileged"]["block_pos"]}
    for i, colour in enumerate(u.distractor_colours):
        truth[colour] = u.body_pos(f"distractor{i}")
    scene_objs = [o for o in frame.objects if o.camera == "scene"]
    for colour, pos in truth.items():
        found = [o for o in scene_objs if o.colour == colour]
        assert found, f"no {colour} cluster"
        assert min(np.linalg.norm(o.center[:2] - pos[:2]) for o in found) < 0.02
        assert all(o.label == "small" for o in found)  # shape class of a 4 cm cube
    assert any(o.label == "surface" for o in scene_objs)  # the table plane
    # No cluster is the arm: nothing tall, nothing at the arm's base.
    assert all(o.box_max[2] < 0.3 for o in frame.objects)
    assert "support_planes" in frame.extras and abs(frame.extras["support_planes"]["scene"][0]) < 0.005



def test_geometric_planes_are_the_same_every_run():
    """The support plane is fitted over all of RANSAC's samples, so one cloud gives one plane every time.
    open3d's early stop, timed by its threads, gave two planes a point apart now and then on a loaded
    host (the whole agent's episode then another outcome: StashAndFetch 930030, geometric); an idle host
    rarely shows it, so the call's arguments are checked as well. The table's points are the inliers."""
    import open3d as o3d

    from embodied.perception.geometric import fit_plane

    rng = np.random.default_rng(0)
    table = np.c_[rng.uniform(-0.5, 0.5, (3000, 2)), rng.normal(0.0, 0.002, 3000)]
    clutter = rng.uniform((-0.3, -0.3, 0.03), (0.3, 0.3, 0.2), (1500, 3))
    wall = np.c_[rng.uniform(-0.5, 0.5, 800), np.full(800, 0.5), rng.uniform(0.0, 0.4, 800)]
    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(np.r_[table, clutter, wall]))
    results = set()
    for _ in range(100):
        o3d.utility.random.seed(7)
        plane, inliers = fit_plane(cloud, 0.01)
        results.add((plane.round(12).tobytes(), tuple(inliers)))
    assert len(results) == 1
    inliers = np.asarray(inliers)
    assert abs(plane[2]) > 0.99 and (inliers < 3000).mean() > 0.99 and len(inliers) > 2900

    class Recorder:
        def segment_plane(self, *args, **kwargs):
            self.call = (args, kwargs)
            return [0.0, 0.0, 1.0, 0.0], []

    recorder = Recorder()
    fit_plane(recorder, 0.01)
    args, kwargs = recorder.call
    assert args[2] == 100 and kwargs["probability"] == 1.0  # every sample drawn: no early stop


def test_depth_noise_is_read_from_the_image_itself():
    """A tilted plane and a box at 0.5-3 m, with noise of std s*z^2: the estimate is s, whatever the
    scene; a noiseless image reads 0."""
    from embodied.perception.geometry import depth_noise

    v, u = np.mgrid[0:128, 0:128].astype(np.float64)
    inverse = 0.4 + 0.004 * u + 0.006 * v  # a plane: inverse depth affine in the pixel
    inverse[40:70, 50:90] = 1.8  # a box face nearer
    depth = (1.0 / inverse).astype(np.float32)
    assert depth_noise(depth) == pytest.approx(0.0, abs=1e-5)
    rng = np.random.default_rng(0)
    for s in (0.002, 0.004, 0.008):
        noisy = depth + rng.normal(size=depth.shape).astype(np.float32) * s * depth**2
        assert depth_noise(noisy) == pytest.approx(s, rel=0.08)


def test_box_faces_are_not_pushed_out_by_depth_noise():
    """A 4 cm block top seen from 0.9 m with realistic noise: the outermost point lies about 2 noise stds
    above the top; the robust face within a third of one. Without noise the faces are the extremes."""
    from embodied.perception.clouds import point_noise, robust_faces

    rng = np.random.default_rng(1)
    top = np.c_[rng.uniform(0.4, 0.44, (40, 2)), np.full(40, 0.04)]
    side = np.c_[rng.uniform(0.4, 0.44, 40), np.full(40, 0.4), rng.uniform(0.0, 0.04, 40)]
    clean = np.vstack([top, side])
    eye = np.array([1.0, 0.0, 0.7])
    noise = point_noise(clean.mean(axis=0)[None], eye, 0.004)
    assert 0.002 < noise[0, 2] < 0.003  # 2-3 mm along z at the table
    lo, hi = clean.min(axis=0)[None], clean.max(axis=0)[None]
    owner = np.zeros(len(clean), dtype=np.int64)
    same = robust_faces(clean, owner, 1, lo, hi, np.zeros((1, 3)))
    np.testing.assert_array_equal(same[1], hi)
    errors_max, errors_robust = [], []
    for _ in range(50):
        noisy = clean + rng.normal(size=clean.shape) * noise
        _, robust_hi = robust_faces(noisy, owner, 1, noisy.min(axis=0)[None], noisy.max(axis=0)[None], noise)
        errors_max.append(noisy[:, 2].max() - 0.04)
        errors_robust.append(robust_hi[0, 2] - 0.04)
    assert np.mean(errors_max) > 1.5 * noise[0, 2]
    assert abs(np.mean(errors_robust)) < 0.5 * noise[0, 2]


def test_a_box_face_is_not_taken_away_by_one_outlying_point(monkeypatch):
    """The scene camera's view of a block under realistic noise: a dozen points on its top face among its
    side's, and one point 4 noise stds above the top (RememberColor, the yellow block: its top read 4.9 mm
    high and the touch stopped above it). The band below the outermost point left most of the face's own
    points behind; anchored one point in (``FACE_ANCHOR``) and re-centred on the face's points
    (``FACE_STEPS``), the face lies within half a std of the top on average (2.7 stds out before), and a
    cloud without the outlier keeps its face."""
    import embodied.perception.clouds as clouds

    rng = np.random.default_rng(3)
    sigma = 0.0025
    new = (clouds.FACE_ANCHOR, clouds.FACE_STEPS)
    errors = {(new, True): [], (new, False): [], ((0, 0), True): []}
    for _ in range(100):
        top = np.c_[rng.uniform(0.4, 0.44, (12, 2)), 0.04 + rng.normal(0, sigma, 12)]
        side = np.c_[rng.uniform(0.4, 0.44, 20), np.full(20, 0.4), rng.uniform(0.0, 0.038, 20)]
        noise = np.array([[0.002, 0.0005, sigma]])
        for ((anchor, steps), outlier), found in errors.items():
            points = np.vstack([top, side] + ([[[0.42, 0.42, 0.04 + 4 * sigma]]] if outlier else []))
            monkeypatch.setattr(clouds, "FACE_ANCHOR", anchor)
            monkeypatch.setattr(clouds, "FACE_STEPS", steps)
            _, hi = clouds.robust_faces(points, np.zeros(len(points), np.int64), 1, points.min(axis=0)[None],
                                        points.max(axis=0)[None], noise)
            found.append((hi[0, 2] - 0.04) / sigma)
    assert abs(np.mean(errors[new, True])) < 0.5 and abs(np.mean(errors[new, False])) < 0.5
    assert np.mean(errors[(0, 0), True]) > 2.0  # the ablation: anchored at the outlier, the face follows it


def test_a_mask_bordered_by_a_nearer_surface_is_marked_occluded():
    """A block at 0.9 m whose mask an arm at 0.7 m cuts into is occluded; the arm in front is not, nor is a
    block resting on the table (its edge steps a few millimetres, never 2 cm), nor one beside pixels with
    no depth return (no reading is no evidence of a surface in front)."""
    from embodied.perception.masks import occluded_ids

    seg = np.zeros((20, 30), dtype=np.int32)
    depth = np.full(seg.shape, 0.92, dtype=np.float32)  # the table
    seg[5:12, 3:10], depth[5:12, 3:10] = 1, 0.9  # block 1, cut by the arm on its right
    seg[5:12, 10:14], depth[5:12, 10:14] = 2, 0.7  # the arm
    seg[5:12, 18:25], depth[5:12, 18:25] = 3, 0.9  # block 3, on the table, in the open
    seg[2:5, 3:10], depth[2:5, 3:10] = 4, 0.9  # block 4 ...
    depth[1, 3:10] = 0.0  # ... beside a row of pixels with no return
    assert occluded_ids(seg, depth, 0.02) == {1}
    depth[5:12, 10:14] = 0.89  # the arm 1 cm nearer only: a step of one surface, not an occluder
    assert occluded_ids(seg, depth, 0.02) == set()

