"""Drift correction: planar ICP on synthetic rooms, and the MemoryAgent's corrected pose on a drifting tour."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from embodied.agent.memory_agent import RECALL, AgentConfig, MemoryAgent
from embodied.mapping.localise import DepthLocaliser, LocaliserConfig
from embodied.mapping.registration import VoxelMap, planar_about, planar_icp
from embodied.perception import PerceptionConfig


def _room(walls=("x0", "x1", "y0", "y1"), spacing: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Points (N,3) and inward normals of a 4 x 3 m room's floor and the named walls (1.5 m high)."""
    pts, normals = [], []
    xs, ys, zs = np.arange(0, 4, spacing), np.arange(0, 3, spacing), np.arange(0.05, 1.5, spacing)
    gx, gy = np.meshgrid(xs, ys)
    pts.append(np.stack([gx.ravel(), gy.ravel(), np.zeros(gx.size)], 1))
    normals.append(np.tile([0.0, 0.0, 1.0], (gx.size, 1)))
    for wall, along, fixed, n in (("x0", ys, 0.0, (1, 0)), ("x1", ys, 4.0, (-1, 0)),
                                  ("y0", xs, 0.0, (0, 1)), ("y1", xs, 3.0, (0, -1))):
        if wall not in walls:
            continue
        a, z = np.meshgrid(along, zs)
        xy = (np.full(a.size, fixed), a.ravel()) if wall.startswith("x") else (a.ravel(), np.full(a.size, fixed))
        pts.append(np.stack([*xy, z.ravel()], 1))
        normals.append(np.tile([*n, 0.0], (a.size, 1)))
    return np.concatenate(pts), np.concatenate(normals).astype(np.float64)


def _shifted(pts, normals, step, pivot):
    D = planar_about(step, pivot)
    return pts @ D[:3, :3].T + D[:3, 3], normals @ D[:3, :3].T


def test_planar_icp_recovers_a_planar_offset_in_a_room():
    pts, normals = _room()
    target = VoxelMap(0.05, crop=6.0)
    target.add(pts, normals)
    pivot = np.array([2.0, 1.5, 1.2])
    src, src_n = _shifted(pts[::3], normals[::3], (0.06, -0.04, 0.03), pivot)
    fit = planar_icp(src, src_n, target, pivot, max_corr=0.15)
    back = fit.delta @ planar_about((0.06, -0.04, 0.03), pivot)
    assert fit.weak == 0 and fit.fitness > 0.95 and fit.rmse < 0.005
    assert np.abs(back[:2, 3] + back[:2, :2] @ pivot[:2] - pivot[:2]).max() < 3e-3  # the pivot is back
    assert abs(np.arctan2(back[1, 0], back[0, 0])) < 1e-3


def test_planar_icp_leaves_the_slide_along_a_lone_wall_to_odometry():
    pts, normals = _room(walls=("x1",))  # floor and one wall facing -x: x and yaw are fixed, y is not
    target = VoxelMap(0.05, crop=6.0)
    target.add(pts, normals)
    pivot = np.array([2.0, 1.5, 1.2])
    src, src_n = _shifted(pts[::3], normals[::3], (0.05, 0.08, 0.0), pivot)
    fit = planar_icp(src, src_n, target, pivot, max_corr=0.15)
    moved = fit.delta[:2, :2] @ pivot[:2] + fit.delta[:2, 3] - pivot[:2]
    assert fit.weak >= 1
    assert abs(moved[0] + 0.05) < 5e-3  # the wall's distance is corrected
    assert abs(moved[1]) < 5e-3  # the slide along it is not invented


def test_far_face_of_a_thin_wall_never_matches_the_near_face():
    near_pts, near_n = _room(walls=("x1",))
    far = near_pts[near_pts[:, 2] > 0.01].copy()
    far[:, 0] += 0.1  # the wall's other face, 10 cm behind, seen from the next room (normal +x)
    target = VoxelMap(0.05, crop=6.0)
    target.add(far, np.tile([1.0, 0.0, 0.0], (len(far), 1)))
    target.add(near_pts[near_pts[:, 2] < 0.01], near_n[near_pts[:, 2] < 0.01])  # the floor
    pivot = np.array([2.0, 1.5, 1.2])
    fit = planar_icp(near_pts[::3], near_n[::3], target, pivot, max_corr=0.15)
    moved = fit.delta[:2, :2] @ pivot[:2] + fit.delta[:2, 3] - pivot[:2]
    assert np.abs(moved).max() < 1e-3  # nothing pulls the near face onto the far one


def _room_depth(pose: np.ndarray, size: int = 128) -> tuple[np.ndarray, np.ndarray]:
    """Depth (H,W) m and K (3,3) of a camera at ``pose`` (4,4 camera-to-world, OpenCV axes) in the 4 x 3 m
    room of ``_room``: walls at x = 0, 4 and y = 0, 3 (1.5 m high), the floor at z = 0."""
    walls = (0.0, 4.0, 0.0, 3.0)
    f = size / 2 / np.tan(np.radians(40))
    K = np.array([[f, 0, size / 2], [0, f, size / 2], [0, 0, 1.0]])
    v, u = np.mgrid[0:size, 0:size] + 0.5
    rays = np.stack([(u - K[0, 2]) / f, (v - K[1, 2]) / f, np.ones_like(u)], -1)  # camera frame, z = 1
    d = rays @ pose[:3, :3].T
    o = pose[:3, 3]
    hit = np.full(u.shape, np.inf)
    for axis, value in ((0, walls[0]), (0, walls[1]), (1, walls[2]), (1, walls[3]), (2, 0.0)):
        with np.errstate(divide="ignore", invalid="ignore"):
            s = (value - o[axis]) / d[..., axis]
        p = o + s[..., None] * d
        inside = (s > 0) & (p[..., 2] >= -1e-9) & (p[..., 2] <= 1.5)
        inside &= (p[..., 0] >= walls[0] - 1e-9) & (p[..., 0] <= walls[1] + 1e-9)
        inside &= (p[..., 1] >= walls[2] - 1e-9) & (p[..., 1] <= walls[3] + 1e-9)
        hit = np.where(inside & (s < hit), s, hit)
    return np.where(np.isfinite(hit), hit, 0.0).astype(np.float32), K


def _looking(x: float, y: float, yaw: float) -> np.ndarray:
    """Camera-to-world (4,4) of a level camera 1.2 m up at (x, y), looking along ``yaw`` (OpenCV axes)."""
    c, s = np.cos(yaw), np.sin(yaw)
    T = np.eye(4)
    T[:3, :3] = np.array([[s, 0, c], [-c, 0, s], [0, -1, 0]])  # columns: camera x (right), y (down), z (forward)
    T[:3, 3] = (x, y, 1.2)
    return T


def test_a_frame_whose_fit_is_refused_adds_nothing_to_the_map():
    """The map keeps what fits placed: a frame whose odometry is off by more than any fit may correct
    (0.4 rad) is refused and leaves the map as it was, so a wrong pose cannot build the ghost walls that
    later fits would lock onto; the next frame still fits tightly, and a frame of new ground (too little
    overlap to judge) still extends the map."""
    loc = DepthLocaliser(LocaliserConfig(every=1, moved=0.0))
    first = _looking(1.0, 1.5, 0.0)
    loc.correct(*_room_depth(first), first, 0)
    near = _looking(1.05, 1.5, 0.0)
    loc.correct(*_room_depth(near), near, 1)
    assert loc.log[-1].accepted and loc.log[-1].rmse < 0.005
    mapped = len(loc.map)
    truth = _looking(1.1, 1.5, 0.0)
    loc.correct(*_room_depth(truth), _looking(1.1, 1.5, 0.4), 2)  # a burst of wheel slip: 0.4 rad off
    assert not loc.log[-1].accepted, loc.log[-1]
    assert len(loc.map) == mapped
    after = _looking(1.12, 1.5, 0.0)
    loc.correct(*_room_depth(after), after, 3)
    assert loc.log[-1].accepted and loc.log[-1].rmse < 0.005
    # Turned round to face the unmapped half of the room: too little overlap to judge, so it joins the map.
    mapped = len(loc.map)
    back = _looking(1.12, 1.5, np.pi)
    loc.correct(*_room_depth(back), back, 4)
    assert loc.log[-1].why == "low overlap" and len(loc.map) > mapped + 100


def test_config_is_checked():
    with pytest.raises(ValueError, match="solver"):
        DepthLocaliser(LocaliserConfig(solver="gicp"))
    with pytest.raises(ValueError, match="every"):
        LocaliserConfig(every=0).validate()
    loc = DepthLocaliser()
    with pytest.raises(ValueError, match="odometry camera pose"):
        loc.correct(np.ones((8, 8), np.float32), np.eye(3), np.full((4, 4), np.nan), 0)


def _agent(env, localise: bool) -> MemoryAgent:
    config = AgentConfig(perception=PerceptionConfig(shuffle_ids=True, seed=0),
                         localise=LocaliserConfig() if localise else None)
    agent = MemoryAgent(env.unwrapped.labels, config)
    agent.reset()
    return agent


def _object_error(memory, truth: dict) -> float:
    errors = []
    for cls, xy in truth.items():
        nodes = memory.find(cls=cls)
        if nodes:
            errors.append(np.linalg.norm(np.asarray(memory.where_is(nodes[0])["position"][:2]) - xy))
    return float(np.median(errors))


def test_agent_corrects_drift_on_a_tour_and_the_ablation_does_not():
    """One drifting tour (odom_noise=0.05) fed to two agents (the env drives; their actions are ignored):
    with correction the pose stays within 5 cm of the truth while odometry drifts 20+ cm, and the
    remembered objects stay within 5 cm; without it the memory is off by more than twice that."""
    env = gym.make("embodied/ObjectRevisit-v0", odom_noise=0.05)
    obs, info = env.reset(seed=5)
    on, off = _agent(env, True), _agent(env, False)
    worst, drift, recall_steps = 0.0, 0.0, 0
    while recall_steps < 15:
        truth = info["privileged"]["camera_pose"]["head"]
        if int(obs["goal"]["phase"]) != RECALL:
            off.act(obs)
            objects = info["privileged"]["objects"]
        else:
            recall_steps += 1
        action = on.act(obs)
        worst = max(worst, float(np.linalg.norm(on.localiser.poses[-1][:2, 3] - truth[:2, 3])))
        drift = max(drift, float(np.linalg.norm(obs["extrinsics/head"][:2, 3] - truth[:2, 3])))
        obs, _, terminated, truncated, info = env.step(action)
        assert not (terminated or truncated)
    env.close()
    assert drift > 0.2, drift
    assert worst < 0.05, worst
    assert on.localiser.reanchors >= 1  # the dock re-zeroed the odometry and the localiser followed
    track = on.localiser.trajectory()
    assert track["corrected"].shape == track["odometry"].shape == (len(track["t"]), 3)
    # Every consumer saw the corrected pose: the memory's agent node sits at the corrected camera.
    assert np.allclose(on.memory.where_is("agent")["position"][:2], on.localiser.poses[-1][:2, 3], atol=0.05)
    assert off.localiser is None
    err_on, err_off = _object_error(on.memory, objects), _object_error(off.memory, objects)
    assert err_on < 0.05, err_on
    assert err_off > 2 * err_on and err_off > 0.08, (err_on, err_off)


def test_bench_drift_rejects_an_empty_run_and_summarises_rows(tmp_path):
    from embodied.cli.drift_cmds import plot, table
    from embodied.cli.main import main
    from embodied.eval.drift import summarise

    assert main(["bench", "drift", "--episodes", "0", "--out", str(tmp_path)]) == 2
    rows = [{"task": "ObjectRevisit-v0", "seed": s, "noise": 0.05, "correct": c, "odom_drift": 0.5,
             "pose_error": 0.01 if c else 0.5, "pose_error_max": 0.02 if c else 0.5,
             "object_errors": [0.01, 0.03] if c else [0.2, 0.4], "objects_missing": 0, "recall": c, "success": c,
             "agent_ms_per_step": 10.0, "localiser": {"median_ms": 3.0, "cpu_ms_per_frame": 1.0}}
            for s in (1, 2) for c in (True, False)]
    summary = summarise(rows)
    on, off = sorted(summary, key=lambda s: not s["correct"])
    assert on["episodes"] == off["episodes"] == 2 and on["object_error_cm"] == pytest.approx(2.0)
    assert on["recall"] == 1.0 and off["recall"] == 0.0 and off["failed_seeds"] == [1, 2]
    assert "| ObjectRevisit-v0 | 0.05 | on | 2 |" in table(summary)
    plot(summary, tmp_path / "drift.png")
    assert (tmp_path / "drift.png").stat().st_size > 1000


def test_memory_rider_corrects_drift_as_the_agent_does():
    """The rider behind `run --record/--overlay` and `eval-memory` takes the same corrected pose: along a
    drifting tour its remembered objects stay within 5 cm of the truth."""
    from embodied.agent.ride import MemoryRider
    from embodied.experts import make_expert

    env = gym.make("embodied/ObjectRevisit-v0", odom_noise=0.05)
    obs, info = env.reset(seed=5)
    rider = MemoryRider(env)
    rider.reset(5, obs, info)
    expert = make_expert(env)
    drift = 0.0
    while int(obs["goal"]["phase"]) != RECALL:
        objects = info["privileged"]["objects"]
        truth = info["privileged"]["camera_pose"]["head"]
        drift = max(drift, float(np.linalg.norm(obs["extrinsics/head"][:2, 3] - truth[:2, 3])))
        obs, _, _, _, info = env.step(expert.act(obs))
        rider.step(obs, info)
    env.close()
    assert drift > 0.2 and rider.drift is not None
    assert _object_error(rider.memory, objects) < 0.05
