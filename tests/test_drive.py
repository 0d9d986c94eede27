"""The apartment base: camera pose from odometry, true pose only in privileged info."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from embodied.agent.skills.navigate import base_pose

ENV = "embodied/ObjectRevisit-v0"


def drive_tour(env, steps: int, seed: int = 1):
    """Reset and step ``steps`` tour steps (the env drives); yields (obs, info) per step."""
    obs, info = env.reset(seed=seed)
    yield obs, info
    for _ in range(steps):
        obs, _, terminated, truncated, info = env.step(np.zeros(2, np.float32))
        assert not (terminated or truncated)
        yield obs, info


def test_head_extrinsics_follow_odometry_exactly_without_noise():
    env = gym.make(ENV, image_size=16, odom_noise=0.0)
    worst = 0.0
    for obs, info in drive_tour(env, 250):
        truth = info["privileged"]["camera_pose"]["head"]
        assert truth.shape == (4, 4) and obs["extrinsics/head"].dtype == np.float32
        worst = max(worst, float(np.abs(obs["extrinsics/head"] - truth).max()))
        # The agent's own base pose (extrinsics + mount) is the true base pose.
        assert np.allclose(base_pose(obs), info["privileged"]["robot_pose"], atol=1e-5)
    assert worst < 1e-5
    # The true camera pose is the simulator's camera.
    u = env.unwrapped
    cam = u.model.camera("head").id
    assert np.allclose(truth[:3, 3], u.data.cam_xpos[cam], atol=1e-6)
    env.close()


def test_head_extrinsics_drift_with_odometry_noise_and_truth_stays_privileged():
    env = gym.make(ENV, image_size=16, odom_noise=0.05)
    runs = []
    for _ in range(2):
        trace = [(obs["extrinsics/head"], info["privileged"]) for obs, info in drive_tour(env, 250)]
        runs.append(trace)
    obs_pose, priv = runs[0][-1]
    error = float(np.linalg.norm(obs_pose[:3, 3] - priv["camera_pose"]["head"][:3, 3]))
    assert 1e-3 < error < 1.0, error
    # The extrinsics are the odometry pose composed with the mount, not the true pose.
    odom = priv["odometry_pose"]
    assert np.allclose(base_pose({"extrinsics/head": obs_pose}), odom, atol=1e-4)
    assert not np.allclose(odom, priv["robot_pose"], atol=1e-3)
    # Seeded: the same seed drifts the same way.
    assert np.array_equal(runs[0][-1][0], runs[1][-1][0])
    env.close()
