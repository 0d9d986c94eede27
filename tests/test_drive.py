"""The apartment base: differential drive (no strafing), wheel odometry, camera pose from odometry."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from embodied.agent.skills.navigate import base_pose
from embodied.envs.nav_base import TRACK, WHEEL_RADIUS

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


def docked(env, seed: int):
    """Reset and idle through the tour and delay; returns (obs, info) at the first recall step."""
    obs, info = env.reset(seed=seed)
    while info["phase"] != "recall":
        obs, _, _, _, info = env.step(np.zeros(2, np.float32))
    return obs, info


def push_into_wall(env, seed: int, steps: int = 90):
    """Full speed at the wall the dock faces, then forward + turn along it.

    Returns the largest lateral speeds (m/s): the env's per-substep slip, and an
    independent one from the true pose each step (the chord between two poses
    across the mid-step heading), plus the largest odometry xy error (m).
    """
    obs, info = docked(env, seed)
    prev = info["privileged"]["robot_pose"]
    slip = chord = odom = 0.0
    for t in range(steps):
        obs, _, terminated, _, info = env.step(np.array([1.0, 0.0 if t < 30 else 0.3], np.float32))
        pose = info["privileged"]["robot_pose"]
        d = pose[:2] - prev[:2]
        mid = prev[2] + 0.5 * (np.angle(np.exp(1j * (pose[2] - prev[2]))))
        chord = max(chord, abs(-np.sin(mid) * d[0] + np.cos(mid) * d[1]) / 0.1)
        slip = max(slip, info["privileged"]["lateral_speed"])
        odom = max(odom, float(np.abs(obs["proprio"][:2] - pose[:2]).max()))
        prev = pose
        if terminated:
            break
    return slip, chord, odom


def test_no_strafing_action_space_and_wall_contact():
    env = gym.make(ENV, images=False, time_limit=1000)
    assert env.action_space.shape == (2,)  # [forward, yaw rate]: no sideways component exists
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(2,\).*\(3,\)"):
        env.step(np.zeros(3, np.float32))
    slip, chord, odom = push_into_wall(env, seed=3)
    assert slip < 1e-3 and chord < 5e-3, (slip, chord)  # Euler substeps bend the chord by < 4 mm/s
    assert odom < 1e-3
    # Ablation: without the wheels' lateral grip the same commands skid the base sideways.
    u = env.unwrapped
    u.model.tendon_frictionloss[u.model.tendon("no_slip").id] = 0.0
    slip, chord, _ = push_into_wall(env, seed=3)
    assert slip > 0.05 and chord > 0.05, (slip, chord)
    env.close()


def test_wheels_turn_by_the_rolling_motion():
    env = gym.make(ENV, images=False, time_limit=1000)
    docked(env, seed=4)
    u = env.unwrapped
    wheels = [u.model.joint(j).qposadr[0] for j in ("wheel_left", "wheel_right")]
    before, pose0 = u.data.qpos[wheels].copy(), u.robot_pose()
    for _ in range(8):  # turn in place: the wheels counter-rotate by track/2 * turn / radius
        env.step(np.array([0.0, 0.8], np.float32))
    turn = float(np.angle(np.exp(1j * (u.robot_pose()[2] - pose0[2]))))
    roll = u.data.qpos[wheels] - before
    assert turn > 0.5 and np.allclose(roll, [-TRACK / 2 * turn / WHEEL_RADIUS, TRACK / 2 * turn / WHEEL_RADIUS],
                                      atol=1e-6)
    env.close()


def test_wheel_odometry_exact_without_noise_and_seeded_drift_with_noise():
    errors = {}
    for noise in (0.0, 0.05):
        env = gym.make(ENV, images=False, odom_noise=noise)
        finals = []
        for _ in range(2):
            for obs, info in drive_tour(env, 300, seed=7):
                p = info["privileged"]
                assert np.allclose(obs["proprio"][:3], p["odometry_pose"], atol=1e-5)
            finals.append(p["odometry_pose"])
            errors[noise] = float(np.linalg.norm(p["odometry_pose"][:2] - p["robot_pose"][:2]))
            speed = obs["proprio"][3:]
        assert np.array_equal(finals[0], finals[1])  # same seed, same drift
        env.close()
    assert errors[0.0] < 1e-4
    assert 0.005 < errors[0.05] < 1.5, errors
    assert abs(speed[0]) <= 0.6 and abs(speed[1]) <= 2.0
