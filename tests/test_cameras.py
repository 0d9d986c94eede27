"""Camera geometry: depth, intrinsics and extrinsics put pixels where the objects are."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest


def back_project(depth: np.ndarray, K: np.ndarray, cam_to_world: np.ndarray, mask: np.ndarray) -> np.ndarray:
    v, u = np.nonzero(mask)
    z = depth[v, u]
    x = (u - K[0, 2]) * z / K[0, 0]
    y = (v - K[1, 2]) * z / K[1, 1]
    points = np.stack([x, y, z, np.ones_like(z)], axis=1)
    return (points @ cam_to_world.T)[:, :3]


@pytest.mark.parametrize("camera", ["scene", "wrist"])
def test_block_pixels_back_project_onto_the_block(camera):
    env = gym.make("embodied/PutBlockBack-v0", image_size=128)
    obs, info = env.reset(seed=2)
    unwrapped = env.unwrapped
    block_id = unwrapped.entity["block"].instance_id
    mask = obs[f"segmentation/{camera}"] == block_id
    assert mask.sum() > 5, f"block not visible in {camera}"
    points = back_project(obs[f"depth/{camera}"], obs[f"intrinsics/{camera}"], obs[f"extrinsics/{camera}"], mask)
    block = info["privileged"]["block_pos"]
    # Every visible surface point lies on the 4 cm cube (half-diagonal 3.5 cm).
    distance = np.linalg.norm(points - block, axis=1)
    assert distance.max() < 0.036, distance.max()
    env.close()


def test_table_is_at_zero_height_and_background_has_no_depth():
    env = gym.make("embodied/PutBlockBack-v0", image_size=96)
    obs, _ = env.reset(seed=0)
    table_id = next(i for i, cls in env.unwrapped.labels.items() if cls == "table")
    mask = obs["segmentation/scene"] == table_id
    points = back_project(obs["depth/scene"], obs["intrinsics/scene"], obs["extrinsics/scene"], mask)
    top = points[points[:, 2] > -0.01]
    assert np.abs(np.median(top[:, 2])) < 0.003
    assert np.all(obs["depth/scene"][obs["segmentation/scene"] == 0] >= 0)
    env.close()


def test_render_every_repeats_images_between_renders():
    env = gym.make("embodied/PutBlockBack-v0", image_size=64, render_every=4)
    obs0, _ = env.reset(seed=0)
    frames = [obs0["rgb/wrist"]]
    for _ in range(8):
        obs, *_ = env.step(np.array([1.0, 0.0, 0.0, 0.0, 1.0]))
        frames.append(obs["rgb/wrist"])
    assert np.array_equal(frames[1], frames[3])  # steps 1..3 repeat the reset image
    assert not np.array_equal(frames[3], frames[4])  # step 4 renders the moved wrist
    env.close()


def test_an_env_dropped_without_close_leaves_the_next_ones_images_intact():
    """Garbage collection of an unclosed env frees its GL objects in its own context, not in the one
    current (before, the next env's textures went with it: the buttons' flashes vanished from view)."""
    import gc

    def frames(env, n=6):
        obs, _ = env.reset(seed=3)
        out = [obs["rgb/scene"].copy()]
        for _ in range(n):
            obs, *_ = env.step(np.zeros(env.action_space.shape, np.float32))
            out.append(obs["rgb/scene"].copy())
        return np.stack(out)

    fresh = gym.make("embodied/SequenceRecall-v0", image_size=64)
    expected = frames(fresh)
    fresh.close()
    old = gym.make("embodied/SequenceRecall-v0", image_size=64)
    frames(old, 1)
    new = gym.make("embodied/SequenceRecall-v0", image_size=64)
    new.reset(seed=3)
    del old
    gc.collect()
    got = frames(new)
    new.close()
    np.testing.assert_array_equal(got, expected)
