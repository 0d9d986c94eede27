"""The sensor model (``sensor=ideal|realistic|harsh``): its statistics, its seeding, and that it leaves the
task alone. Figures are checked against embodied/envs/sensor.py's profiles, within the sampling error of
one or a few 128 px frames."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import embodied  # noqa: F401  (registers the tasks)
from embodied.cli.options import task_knobs
from embodied.envs.sensor import DARK_LUMINANCE, PROFILES, REALISTIC, SensorModel, _edges

SEED = 123


def _pair(sensor: str, task: str = "SequenceRecall-v0", seed: int = SEED):
    """The first observation of one episode without and with the sensor model (same layout)."""
    clean = gym.make(f"embodied/{task}")
    noisy = gym.make(f"embodied/{task}", sensor=sensor)
    try:
        return clean.reset(seed=seed)[0], noisy.reset(seed=seed)[0], clean.unwrapped, noisy.unwrapped
    finally:
        clean.close()
        noisy.close()


def test_ideal_is_the_renderer_untouched():
    clean, ideal, _, _ = _pair("ideal")
    for key, value in clean.items():
        if key != "goal":
            np.testing.assert_array_equal(value, ideal[key], err_msg=key)


def test_depth_noise_grows_with_range_squared_and_harsh_doubles_it():
    stds = {}
    for sensor in ("realistic", "harsh"):
        clean, noisy, _, _ = _pair(sensor)
        d0, d = clean["depth/scene"], noisy["depth/scene"]
        both = (d0 > 0) & (d > 0) & (_edges(d0) == 0)
        scaled = (d - d0)[both] / d0[both] ** 2  # the noise at 1 m, if it grows with z^2
        assert abs(float(np.mean(scaled))) < 3e-4, sensor
        stds[sensor] = float(np.std(scaled))
        # Near and far pixels share one figure at 1 m: the z^2 law, not one sigma for all.
        near, far = both & (d0 < 0.9), both & (d0 > 1.2)
        for part in (near, far):
            assert np.std((d - d0)[part] / d0[part] ** 2) == pytest.approx(stds[sensor], rel=0.15)
    assert stds["realistic"] == pytest.approx(REALISTIC.depth_sigma_1m, rel=0.1)
    assert stds["harsh"] / stds["realistic"] == pytest.approx(2.0, rel=0.1)


def test_invalid_depth_at_random_on_edges_and_on_dark_surfaces():
    clean, noisy, _, _ = _pair("realistic")
    d0, d = clean["depth/scene"], noisy["depth/scene"]
    rgb = clean["rgb/scene"].astype(np.float32) / 255
    dark = rgb @ np.array([0.299, 0.587, 0.114], np.float32) < DARK_LUMINANCE
    edge = _edges(d0) > 0
    plain = (d0 > 0) & ~edge & ~dark & (rgb.max(axis=-1) < 0.98)
    assert (d[plain] == 0).mean() == pytest.approx(REALISTIC.depth_dropout, abs=0.004)
    assert edge.sum() > 100
    assert (d[edge] == 0).mean() == pytest.approx(REALISTIC.edge_dropout, abs=0.08)
    # The renderer's masks stay exact: only depth and colour change.
    np.testing.assert_array_equal(clean["segmentation/scene"], noisy["segmentation/scene"])


def test_rgb_noise_and_exposure_follow_the_profile():
    model = SensorModel("realistic")
    model.reset(np.random.default_rng(0), ("cam",))
    flat = np.full((128, 128, 3), 128, np.uint8)
    gains, stds = [], []
    for _ in range(200):
        out = model.images({"rgb/cam": flat})["rgb/cam"].astype(np.float64)
        gains.append(out.mean() / 128)
        stds.append(out.std())
    want = 255 * np.sqrt(REALISTIC.rgb_read**2 + REALISTIC.rgb_shot**2 * 128 / 255)
    assert np.mean(stds) == pytest.approx(want, rel=0.1)
    # The exposure gain wanders (log-normal, 4 %), slowly: neighbouring frames are alike.
    log_gain = np.log(gains)
    assert np.std(log_gain) == pytest.approx(REALISTIC.exposure_sigma, rel=0.5)
    assert np.corrcoef(log_gain[:-1], log_gain[1:])[0, 1] > 0.8


def test_calibration_error_is_fixed_per_episode_with_the_profiles_size():
    shifts, tilts = [], []
    env = gym.make("embodied/SequenceRecall-v0", sensor="realistic").unwrapped
    try:
        for seed in range(40):
            obs, _ = env.reset(seed=seed)
            truth = env.rig.extrinsics(env.data)["scene"]
            error = np.linalg.inv(truth.astype(np.float64)) @ obs["extrinsics/scene"]
            shifts.append(np.linalg.norm(error[:3, 3]))
            tilts.append(np.degrees(np.arccos(np.clip((np.trace(error[:3, :3]) - 1) / 2, -1, 1))))
            if seed == 0:
                later = env.step(np.zeros(5, np.float32))[0]["extrinsics/scene"]
                np.testing.assert_allclose(later, obs["extrinsics/scene"], atol=1e-6)  # the same all episode
    finally:
        env.close()
    assert np.sqrt(np.mean(np.square(shifts))) == pytest.approx(REALISTIC.extrinsic_shift, rel=0.3)
    assert np.sqrt(np.mean(np.square(tilts))) == pytest.approx(REALISTIC.extrinsic_tilt, rel=0.3)


def test_wrist_camera_and_tcp_come_from_the_noisy_joint_readings():
    clean, noisy, env0, env = _pair("realistic")
    q_true, q_read = clean["proprio"][:7], noisy["proprio"][:7]
    error = q_read - q_true
    assert 0 < np.abs(error).max() < 6 * np.hypot(REALISTIC.joint_offset, REALISTIC.joint_noise)
    # The TCP reported is the forward kinematics of the readings, not the truth: millimetres off, and
    # the same kinematics place the wrist camera (its calibration error on top).
    tcp_off = np.linalg.norm(noisy["proprio"][14:17] - clean["proprio"][14:17])
    assert 1e-5 < tcp_off < 0.01
    wrist_off = np.linalg.norm(noisy["extrinsics/wrist"][:3, 3] - clean["extrinsics/wrist"][:3, 3])
    assert 1e-5 < wrist_off < 0.02
    # The simulator itself is untouched.
    np.testing.assert_array_equal(env.data.qpos, env0.data.qpos)


def test_the_sensor_is_seeded_per_episode():
    a = _pair("realistic", seed=7)[1]
    b = _pair("realistic", seed=7)[1]
    c = _pair("realistic", seed=8)[1]
    np.testing.assert_array_equal(a["depth/scene"], b["depth/scene"])
    np.testing.assert_array_equal(a["rgb/wrist"], b["rgb/wrist"])
    assert not np.array_equal(a["extrinsics/scene"], c["extrinsics/scene"])


def test_the_apartment_keeps_its_odometry_and_adds_calibration():
    clean, noisy, _, _ = _pair("realistic", task="ObjectRevisit-v0")
    np.testing.assert_array_equal(clean["proprio"], noisy["proprio"])  # odometry: the task's own odom_noise
    shift = np.linalg.norm(noisy["extrinsics/head"][:3, 3] - clean["extrinsics/head"][:3, 3])
    assert 0 < shift < 0.02


def test_harsh_doubles_every_figure():
    for name in ("depth_sigma_1m", "rgb_read", "extrinsic_tilt", "joint_noise", "depth_dropout"):
        assert getattr(PROFILES["harsh"], name) == pytest.approx(2 * getattr(PROFILES["realistic"], name))
    assert PROFILES["ideal"].ideal and not PROFILES["realistic"].ideal


def test_sensor_is_an_env_knob_with_a_clear_error():
    assert task_knobs({"sensor": "realistic", "delay": "60"}, ["ShellGame-v0"]) == {"sensor": "realistic",
                                                                                  "delay": 60}
    with pytest.raises(ValueError, match="sensor must be one of"):
        task_knobs({"sensor": "noisy"}, ["ShellGame-v0"])
    with pytest.raises(ValueError, match="sensor must be one of"):
        gym.make("embodied/ShellGame-v0", sensor="noisy")
