"""Mapping under a noisy RGB-D camera (``sensor=realistic``: depth std 4 mm at 1 m, growing with range squared).

Synthetic rooms rendered by ray casting (no simulator): exact depth, then the camera's noise. The free-space
map and the localiser read each image's noise from the image itself (``perception.geometry.depth_noise``)
and fit each sampled pixel's depth from the block around it (``registration.smooth_grid_depth``); the
ablations hand them the same noisy images as if they were noiseless (single pixels, the old behaviour).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.ndimage import minimum_filter

import embodied.mapping.freespace as freespace_module
import embodied.mapping.localise as localise_module
from embodied.envs.nav_grid import box_distance
from embodied.mapping.freespace import FreeSpaceMap
from embodied.mapping.localise import DepthLocaliser, LocaliserConfig
from embodied.mapping.registration import (VoxelMap, grid_cloud, planar_about, planar_icp, smooth_grid_depth,
                                           wrap, yaw_of)
from embodied.perception.geometry import depth_noise

REALISTIC = 0.004  # m: depth std at 1 m of the realistic profile (embodied/envs/sensor.py)
SIZE = 128  # px, the apartment head camera's image


def _intrinsics(size: int = SIZE, fov: float = 70.0) -> np.ndarray:
    """Pinhole K (3,3) with pixel centres at integer coordinates, as the env's cameras have them."""
    f = size / 2 / np.tan(np.radians(fov / 2))
    return np.array([[f, 0, (size - 1) / 2], [0, f, (size - 1) / 2], [0, 0, 1.0]])


def _camera(x: float, y: float, yaw: float, pitch: float = np.radians(20), height: float = 1.2) -> np.ndarray:
    """Camera-to-world (4,4), OpenCV axes, of the head camera at (x, y) looking along ``yaw``, pitched down."""
    fwd = np.array([np.cos(yaw), np.sin(yaw), 0.0])
    up = np.array([0.0, 0.0, 1.0])
    T = np.eye(4)
    T[:3, 0] = (np.sin(yaw), -np.cos(yaw), 0.0)
    T[:3, 1] = -(np.cos(pitch) * up + np.sin(pitch) * fwd)
    T[:3, 2] = np.cos(pitch) * fwd - np.sin(pitch) * up
    T[:3, 3] = (x, y, height)
    return T


def _slab(o, d, lo, hi):
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = (lo - o) / d, (hi - o) / d
    return np.nanmax(np.minimum(t1, t2), axis=-1), np.nanmin(np.maximum(t1, t2), axis=-1)


def _render(T: np.ndarray, K: np.ndarray, room: tuple, boxes: tuple = ()) -> np.ndarray:
    """(H,W) float32 z-depth (m) inside ``room`` (x0, x1, y0, y1; walls 2.5 m high, floor z = 0) with
    ``boxes`` (x0, x1, y0, y1, height) standing on the floor."""
    size = int(round(2 * K[0, 2] + 1))
    v, u = np.mgrid[0:size, 0:size].astype(np.float64)
    rays = np.stack([(u - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1], np.ones_like(u)], -1)  # z = 1
    d, o = rays @ T[:3, :3].T, T[:3, 3]
    _, hit = _slab(o, d, np.array([room[0], room[2], 0.0]), np.array([room[1], room[3], 2.5]))
    hit = np.where(hit > 0, hit, np.inf)
    for x0, x1, y0, y1, h in boxes:
        near, far = _slab(o, d, np.array([x0, y0, 0.0]), np.array([x1, y1, h]))
        hit = np.where((near > 0) & (near <= far) & (near < hit), near, hit)
    return np.where(np.isfinite(hit), hit, 0.0).astype(np.float32)


def _noisy(depth: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """The stereo camera's depth: Gaussian noise of std ``sigma * z^2``."""
    z = depth + rng.standard_normal(depth.shape).astype(np.float32) * np.float32(sigma) * depth**2
    return np.where(depth > 0, np.maximum(z, 0.0), 0.0).astype(np.float32)


@pytest.fixture
def as_noiseless(monkeypatch):
    """The ablation: the map and the localiser take every image for a noiseless one (single pixels)."""
    def apply():
        monkeypatch.setattr(freespace_module, "image_noise", lambda depth: 0.0)
        monkeypatch.setattr(localise_module, "image_noise", lambda depth: 0.0)
    return apply


# --- the block fit ----------------------------------------------------------------------------------


def test_block_fit_is_exact_on_a_noiseless_plane_and_cuts_the_noise_fivefold():
    K = _intrinsics()
    T = _camera(1.0, 2.0, 0.0)
    room = (0.0, 5.0, 0.0, 4.0)
    clean = _render(T, K, room)
    v, u = np.mgrid[2:SIZE:4, 2:SIZE:4]
    exact = smooth_grid_depth(clean, v, u, 0.2, 6.0, 1e-9)
    plane = exact > 0
    assert plane.mean() > 0.8  # the blocks across the floor-wall creases aside, every block is a plane
    assert np.abs(exact[plane] - clean[v, u][plane]).max() < 1e-3
    noisy = _noisy(clean, REALISTIC, np.random.default_rng(0))
    sigma = depth_noise(noisy)
    assert sigma == pytest.approx(REALISTIC, rel=0.1)  # read from the image itself
    fitted = smooth_grid_depth(noisy, v, u, 0.2, 6.0, sigma)
    both = (fitted > 0) & plane
    assert both.mean() > 0.6
    z = clean[v, u][both]
    raw_err = (noisy[v, u][both] - z) / z**2
    fit_err = (fitted[both] - z) / z**2
    assert np.std(raw_err) == pytest.approx(REALISTIC, rel=0.15)
    assert np.std(fit_err) < np.std(raw_err) / 4


def _blends(gap: float, monkeypatch=None, k: float | None = None) -> tuple[int, int]:
    """(fitted points in the gap between a box face and the wall ``gap`` m behind it at 3 m, fitted points
    on blocks that lie wholly on the two): a camera facing them level, realistic noise, the grid at every
    offset."""
    import embodied.mapping.registration as registration

    if k is not None:
        monkeypatch.setattr(registration, "SMOOTH_K", k)
    K = _intrinsics()
    front = 3.0 - gap
    clean = _render(_camera(0.0, 0.0, 0.0, pitch=0.0), K, (-1.0, 3.0, -3.0, 3.0), ((front, 3.0, -0.5, 0.3, 1.4),))
    on = (np.abs(clean - front) < 1e-3) | (np.abs(clean - 3.0) < 1e-3)  # box face or wall, not floor
    pure = minimum_filter(on.astype(np.uint8), size=5, mode="constant") > 0
    rng = np.random.default_rng(1)
    between = total = 0
    for offset in range(4):
        v, u = np.mgrid[offset : SIZE - 2 : 4, offset : SIZE - 2 : 4]
        for _ in range(2):
            noisy = _noisy(clean, REALISTIC, rng)
            fitted = smooth_grid_depth(noisy, v, u, 0.2, 6.0, depth_noise(noisy))
            z = fitted[(fitted > 0) & pure[v, u]]  # z-depth: the distance along x, level camera
            total += len(z)
            between += int(((z > front + 0.05) & (z < 3.0 - 0.05)).sum())
    return between, total


def test_block_fit_drops_a_step_rather_than_blending_it(monkeypatch):
    """A block across the edge of a box 25 cm before a wall at 3 m (a step of six noise stds in inverse
    depth) fitted as one plane puts a point in the gap: a phantom obstacle behind the furniture. The fit's
    residual, tested against the noise's own spread (a chi test), drops those blocks; a bound of three noise
    stds on the residual RMS (the ablation) lets hundreds through."""
    between, total = _blends(0.25)
    assert total > 3000 and between <= 3, (between, total)
    loose, _ = _blends(0.25, monkeypatch, k=14.0)  # RMS <= sigma (1 + 14 / sqrt(44)): about 3 sigma
    assert loose > 100, loose


# --- the free-space map -----------------------------------------------------------------------------

ROOM = (0.0, 8.0, 0.0, 4.0)
SOFA = (6.8, 7.6, 1.0, 3.0, 0.5)  # a sofa 40 cm in front of the far wall (x = 8)


def _map(sigma: float, seed: int = 0) -> FreeSpaceMap:
    """The map of a robot looking down the room at the sofa from nine places 4-6 m from it."""
    K = _intrinsics()
    rng = np.random.default_rng(seed)
    fs = FreeSpaceMap(low=(-0.5, -0.5), size=(9.0, 5.0))
    for x in (1.0, 2.0, 3.0):
        for y in (1.0, 2.0, 3.0):
            for yaw in np.radians(np.arange(-40, 41, 20)):
                T = _camera(x, y, yaw)
                depth = _render(T, K, ROOM, (SOFA,))
                fs.integrate(_noisy(depth, sigma, rng) if sigma else depth, K, T)
            fs.mark_visited((x - 0.1, y))
    return fs


def _phantoms(fs: FreeSpaceMap) -> tuple[int, float]:
    """Occupied cells inside the room more than 15 cm from the walls and the sofa, and the share of the
    rows of cells along the sofa's front (the face the robot sees) with an occupied cell within 10 cm of it."""
    jj, ii = np.meshgrid(np.arange(fs.shape[1]), np.arange(fs.shape[0]))
    c = (fs.low + fs.res * (np.stack([jj, ii], axis=-1) + 0.5)).reshape(-1, 2)
    inside = (c[:, 0] > 0.15) & (c[:, 0] < ROOM[1] - 0.15) & (c[:, 1] > 0.15) & (c[:, 1] < ROOM[3] - 0.15)
    sofa = np.array([[(SOFA[0] + SOFA[1]) / 2, (SOFA[2] + SOFA[3]) / 2, (SOFA[1] - SOFA[0]) / 2,
                      (SOFA[3] - SOFA[2]) / 2, 0.0]])
    occ = fs.occupied.ravel()
    face = (np.abs(c[:, 0] - SOFA[0]) < 0.1) & (c[:, 1] > SOFA[2] + 0.1) & (c[:, 1] < SOFA[3] - 0.1)
    rows = (occ & face).reshape(fs.shape).any(axis=1)[face.reshape(fs.shape).any(axis=1)]
    return int((occ & inside & (box_distance(c, sofa) > 0.15)).sum()), float(rows.mean())


def test_free_space_map_from_noisy_depth_has_no_phantom_obstacles(as_noiseless):
    """At 4-8 m a realistic camera's single pixels are 6-25 cm off: a map built from them marks phantom
    obstacles in front of the sofa and in the gap behind it (over a hundred cells); fitted from the block
    around each pixel (the noise read from the image), the noisy map is as clean as the noiseless one and
    keeps the sofa."""
    ideal = _map(0.0)
    assert _phantoms(ideal)[0] == 0 and _phantoms(ideal)[1] > 0.9
    clean, sofa = _phantoms(_map(REALISTIC))
    assert clean <= 3 and sofa > 0.9, (clean, sofa)
    as_noiseless()
    phantoms, _ = _phantoms(_map(REALISTIC))
    assert phantoms > 50, phantoms


def test_free_space_map_of_a_noiseless_camera_is_unchanged(monkeypatch):
    """A noiseless image (noise 0) takes the single-pixel path: the block fit is never asked."""
    def never(*args, **kwargs):
        raise AssertionError("a noiseless image needs no block fit")

    monkeypatch.setattr(freespace_module, "smooth_grid_depth", never)
    fs = _map(0.0)
    assert fs.occupied.sum() > 100


# --- the localiser ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def realistic_tour():
    """(depth, K, odometry extrinsics, movable mask, true camera pose) of every tour step of ObjectRevisit
    seed 3 at ``sensor=realistic`` (exact wheel odometry: only the camera is noisy)."""
    import gymnasium as gym

    from embodied.memory.config import kind_of

    env = gym.make("embodied/ObjectRevisit-v0", sensor="realistic")
    obs, info = env.reset(seed=3)
    movable = [i for i, c in env.unwrapped.labels.items() if kind_of(c) in ("object", "container")]
    frames = []
    while int(obs["goal"]["phase"]) == 0:
        frames.append((obs["depth/head"], obs["intrinsics/head"], obs["extrinsics/head"],
                       np.isin(obs["segmentation/head"], movable), info["privileged"]["camera_pose"]["head"]))
        obs, _, _, _, info = env.step(np.zeros(2, np.float32))
    env.close()
    return frames


def _replay(frames) -> tuple[float, float]:
    """Worst xy (m) and heading (rad) error of the corrected camera pose along the frames."""
    loc = DepthLocaliser(LocaliserConfig())
    xy = heading = 0.0
    for t, (depth, K, odometry, moving, truth) in enumerate(frames):
        pose = loc.correct(depth, K, odometry, t, moving)
        xy = max(xy, float(np.linalg.norm(pose[:2, 3] - truth[:2, 3])))
        heading = max(heading, abs(wrap(yaw_of(pose) - yaw_of(truth))))
    return xy, heading


def test_localiser_keeps_exact_odometry_under_depth_noise_and_the_ablation_does_not(realistic_tour, as_noiseless):
    """With exact wheel odometry every change a fit makes is error. From single noisy pixels the normals
    swing by tens of degrees and floor points pass for walls: the ablation's fits turn the pose off by
    degrees over the tour (13 cm, 0.05 rad). Fitted from blocks, it stays within 4 cm and 0.015 rad."""
    xy, heading = _replay(realistic_tour)
    assert xy < 0.04 and heading < 0.015, (xy, heading)
    as_noiseless()
    xy_single, heading_single = _replay(realistic_tour)
    assert xy_single > 2 * xy and heading_single > 0.03, (xy_single, heading_single)


def test_fit_significance_tells_drift_from_noise():
    """``Fit.significance``: a fit of a noisy scan taken at the true pose moves by a few of its standard
    errors (the localiser leaves the correction alone below ``min_significance``, 4); the same scan 5 cm
    and 0.02 rad off moves by dozens."""
    K = _intrinsics()
    room = (0.0, 6.0, 0.0, 4.0)
    rng = np.random.default_rng(2)
    T = _camera(2.0, 1.5, 0.6)
    target = VoxelMap(0.08, crop=4.5)
    for yaw in (0.3, 0.6, 0.9):
        Tm = _camera(2.0, 1.5, yaw)
        noisy = _noisy(_render(Tm, K, room), REALISTIC, rng)
        p, n = grid_cloud(noisy, K, 4, 0.2, 5.0, sigma=depth_noise(noisy))
        target.add(p @ Tm[:3, :3].T + Tm[:3, 3], n @ Tm[:3, :3].T)
    noisy = _noisy(_render(T, K, room), REALISTIC, rng)
    p, n = grid_cloud(noisy, K, 4, 0.2, 5.0, sigma=depth_noise(noisy))
    pts, normals = p @ T[:3, :3].T + T[:3, 3], n @ T[:3, :3].T
    at_truth = planar_icp(pts, normals, target, T[:3, 3], 0.15)
    off = planar_about((0.04, -0.03, 0.02), T[:3, 3])
    shifted = planar_icp(pts @ off[:3, :3].T + off[:3, 3], normals @ off[:3, :3].T, target, T[:3, 3], 0.15)
    assert at_truth.significance < 10 < 5 * at_truth.significance < shifted.significance, (
        at_truth.significance, shifted.significance)
