"""The ``sensor=ideal|realistic|harsh`` knob: what an RGB-D camera and the robot's encoders get wrong.

``ideal`` (the default) hands out the renderer's images and the simulator's poses untouched.
``realistic`` corrupts them as a D435-class stereo depth camera and an arm's joint encoders would;
``harsh`` doubles every figure. The instance masks stay exact (they stand for a perfect detector):
only the depth and colour under them are noisy. Every draw comes from the episode's own generator
(seeded by its layout seed), so an episode is reproducible and the layout and cue do not change.

What ``realistic`` does, with where its figures come from:

* **Depth noise growing with range.** Stereo depth error is ``sigma_z = z^2 * s / (f * B)``; a D435
  (baseline B = 50 mm, focal f ~ 380 px, sub-pixel s ~ 0.08) gives about 4 mm at 1 m, so 2-3 mm at the
  workcell's table (0.7-0.9 m) and under 1 mm at the wrist camera's 0.1-0.4 m. Per pixel, Gaussian.
* **Invalid (zero) depth.** At random (0.5% of pixels: speckle the matcher finds no match for); on
  depth edges (half the pixels whose neighbour differs by more than 2 cm and 2% of the range: the
  left-right check drops the band one view occludes); on dark surfaces (luminance under 0.12: the
  pattern projector's dots are absorbed, up to half the pixels at black); on surfaces bright enough to
  clip the imager (a lit screen's glossy face: a third of them). The renderer has no specular
  highlights, so clipping is where glossy returns show.
* **RGB noise and exposure.** Read noise 2/255 plus shot noise growing with the square root of the
  intensity (5/255 at full scale, so about 4/255 in all at mid grey), on an auto-exposure gain that wanders as a log-normal AR(1) process
  (4% stationary, correlation time 20 frames).
* **Extrinsic calibration error, fixed per episode.** Each camera's reported pose is off by a
  translation of 3 mm RMS and a rotation of 0.3 degrees RMS about a random axis (a good hand-eye or
  checkerboard calibration).
* **The wrist camera and the TCP from noisy joint readings.** Each joint reads off by a calibration
  offset (0.5 mrad RMS, fixed per episode) plus encoder noise (0.2 mrad per reading); the arm's
  forward kinematics of those readings place the wrist camera and give the proprioceptive TCP.
* **The apartment's odometry** is the task's own ``odom_noise`` knob, as before.

Units: metres, radians, intensities in [0, 1]; one draw per rendered frame.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from embodied.envs.env_knobs import check_env_knob



def check_sensor(sensor: str) -> str:
    return check_env_knob("sensor", sensor)


@dataclass(frozen=True)
class SensorNoise:
    """The figures of one sensor profile (all zero: ideal). Doubling every field gives ``harsh``."""

    depth_sigma_1m: float = 0.0  # m, std of depth at 1 m range; grows with range squared (stereo)
    depth_dropout: float = 0.0  # fraction of pixels with no return, at random
    edge_dropout: float = 0.0  # probability that a pixel on a depth edge has no return
    dark_dropout: float = 0.0  # probability of no return on a black surface, falling to 0 at DARK_LUMINANCE
    clipped_dropout: float = 0.0  # probability of no return where the colour clips (CLIPPED)
    rgb_read: float = 0.0  # std of read noise, intensity units
    rgb_shot: float = 0.0  # std of shot noise at full intensity; it grows with the square root of the intensity
    exposure_sigma: float = 0.0  # stationary std of the log exposure gain
    extrinsic_shift: float = 0.0  # m, RMS length of each camera's calibration translation error
    extrinsic_tilt: float = 0.0  # degrees, RMS angle of each camera's calibration rotation error
    joint_offset: float = 0.0  # rad, RMS of each joint's calibration offset (per episode)
    joint_noise: float = 0.0  # rad, std of each joint's encoder noise (per reading)

    def scaled(self, factor: float) -> SensorNoise:
        """Every figure times ``factor``, probabilities capped at 1."""
        out = {f.name: getattr(self, f.name) * factor for f in fields(self)}
        for name in ("depth_dropout", "edge_dropout", "dark_dropout", "clipped_dropout"):
            out[name] = min(out[name], 1.0)
        return replace(self, **out)

    @property
    def ideal(self) -> bool:
        return not any(getattr(self, f.name) for f in fields(self))


REALISTIC = SensorNoise(
    depth_sigma_1m=0.004,
    depth_dropout=0.005,
    edge_dropout=0.5,
    dark_dropout=0.5,
    clipped_dropout=0.3,
    rgb_read=2 / 255,
    rgb_shot=5 / 255,
    exposure_sigma=0.04,
    extrinsic_shift=0.003,
    extrinsic_tilt=0.3,
    joint_offset=0.0005,
    joint_noise=0.0002,
)
PROFILES = {"ideal": SensorNoise(), "realistic": REALISTIC, "harsh": REALISTIC.scaled(2.0)}

# Definitions rather than figures (harsh keeps them):
EDGE_JUMP = 0.02  # m: a neighbour this much nearer or farther (and EDGE_JUMP_REL of the range) makes a depth edge
EDGE_JUMP_REL = 0.02
DARK_LUMINANCE = 0.12  # luminance under which the projector's pattern starts to be absorbed
CLIPPED = 0.98  # a colour channel this bright clips the imager
EXPOSURE_FRAMES = 20.0  # correlation time of the auto-exposure gain, frames
LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def _rotation(axis_angle: np.ndarray) -> np.ndarray:
    """(3,3) rotation of the rotation vector ``axis_angle`` (rad), by Rodrigues' formula."""
    angle = float(np.linalg.norm(axis_angle))
    if angle < 1e-12:
        return np.eye(3)
    k = axis_angle / angle
    cross = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle) * cross + (1.0 - np.cos(angle)) * cross @ cross


BANK = 1 << 20  # draws in each noise bank (4 MB of float32)


class _Bank:
    """A fixed pool of standard normal and uniform draws; each frame reads a slice at an offset drawn from
    the episode's generator. Drawing 65k normals a frame costs more than rendering it; a slice at a random
    offset into a million draws is as good noise at a tenth of the cost."""

    def __init__(self):
        rng = np.random.default_rng(20261207)
        self.normal = rng.standard_normal(BANK, dtype=np.float32)
        self.uniform = rng.random(BANK, dtype=np.float32)

    @staticmethod
    def _take(pool: np.ndarray, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        n = int(np.prod(shape))
        if n > len(pool):
            raise ValueError(f"an image of {n} values is larger than the sensor's noise bank ({len(pool)})")
        start = int(rng.integers(0, len(pool) - n + 1))
        return pool[start : start + n].reshape(shape)

    def normal_like(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        return self._take(self.normal, rng, shape)

    def uniform_like(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        return self._take(self.uniform, rng, shape)


_BANK: _Bank | None = None


def _bank() -> _Bank:
    global _BANK
    if _BANK is None:
        _BANK = _Bank()
    return _BANK


class SensorModel:
    """Corrupts one env's images, camera poses and joint readings under a profile.

    env side:  model = SensorModel("realistic"); model.reset(rng, cameras, n_joints)
               images = model.images(images)          # after every render
               pose = model.extrinsic(cam, pose)       # every reported camera pose
               q = model.joints(q)                     # every joint reading
    """

    def __init__(self, sensor: str = "ideal"):
        self.name = check_sensor(sensor)
        self.noise = PROFILES[self.name]
        self.ideal = self.noise.ideal
        self.rng = np.random.default_rng(0)
        self._calibration: dict[str, np.ndarray] = {}
        self._joint_offset = np.zeros(0)
        self._log_gain = 0.0

    def reset(self, rng: np.random.Generator, cameras: tuple[str, ...], n_joints: int = 0) -> None:
        """Draw the episode's fixed errors (calibration, joint offsets, starting exposure)."""
        self.rng = rng
        n = self.noise
        self._calibration = {}
        for cam in cameras:
            error = np.eye(4)
            axis = rng.normal(size=3)
            axis /= max(np.linalg.norm(axis), 1e-12)
            error[:3, :3] = _rotation(axis * np.deg2rad(rng.normal(0.0, n.extrinsic_tilt)))
            error[:3, 3] = rng.normal(0.0, n.extrinsic_shift / np.sqrt(3.0), size=3)
            self._calibration[cam] = error
        self._joint_offset = rng.normal(0.0, n.joint_offset, size=n_joints)
        self._log_gain = float(rng.normal(0.0, n.exposure_sigma))

    # --- poses ------------------------------------------------------------------------
    def extrinsic(self, camera: str, pose: np.ndarray) -> np.ndarray:
        """(4,4) float32 camera-to-world as the calibration reports it: the true pose times the
        episode's error (in the camera's own frame, as a hand-eye or mount calibration is)."""
        error = self._calibration.get(camera)
        if self.ideal or error is None:
            return pose
        return (np.asarray(pose, dtype=np.float64) @ error).astype(np.float32)

    def joints(self, q: np.ndarray) -> np.ndarray:
        """(J,) rad joint readings of the true angles ``q``: offset plus encoder noise."""
        if self.ideal:
            return q
        offset = self._joint_offset if len(self._joint_offset) == len(q) else 0.0
        return q + offset + self.rng.normal(0.0, self.noise.joint_noise, size=len(q))

    # --- images -----------------------------------------------------------------------
    def images(self, images: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``{"rgb/<cam>", "depth/<cam>", ...}`` as the camera delivers them (new arrays; the
        segmentation untouched). Depth invalidity is judged on the clean colour and depth."""
        if self.ideal:
            return images
        n = self.noise
        # One exposure step per frame: AR(1) in log gain with a stationary std of exposure_sigma.
        keep = np.exp(-1.0 / EXPOSURE_FRAMES)
        self._log_gain = keep * self._log_gain + np.sqrt(1 - keep**2) * float(self.rng.normal(0.0, n.exposure_sigma))
        out = dict(images)
        for key, depth in images.items():
            if not key.startswith("depth/"):
                continue
            rgb = images.get("rgb/" + key[len("depth/"):])
            out[key] = self._depth(depth, None if rgb is None else rgb.astype(np.float32) / 255.0)
        for key, rgb in images.items():
            if key.startswith("rgb/"):
                out[key] = self._rgb(rgb)
        return out

    def _depth(self, depth: np.ndarray, rgb: np.ndarray | None) -> np.ndarray:
        n, rng = self.noise, self.rng
        z = depth.astype(np.float32, copy=True)
        valid = z > 0
        p = np.full(z.shape, n.depth_dropout, dtype=np.float32)
        if n.edge_dropout:
            p = np.maximum(p, n.edge_dropout * _edges(z))
        if rgb is not None:
            if n.dark_dropout:
                p = np.maximum(p, n.dark_dropout * np.clip(1.0 - (rgb @ LUMA) / DARK_LUMINANCE, 0.0, 1.0))
            if n.clipped_dropout:
                brightest = np.maximum(np.maximum(rgb[..., 0], rgb[..., 1]), rgb[..., 2])  # (max over axis -1 is slow)
                p = np.maximum(p, n.clipped_dropout * (brightest >= CLIPPED))
        bank = _bank()
        drop = bank.uniform_like(rng, z.shape) < p
        z += bank.normal_like(rng, z.shape) * (np.float32(n.depth_sigma_1m) * z * z)
        z[drop | ~valid | (z <= 0)] = 0.0
        return z

    def _rgb(self, rgb: np.ndarray) -> np.ndarray:
        n = self.noise
        # In 0-255 units: gain, then read and shot noise (variance read^2 + shot^2 * intensity).
        x = rgb.astype(np.float32)
        x *= np.float32(np.exp(self._log_gain))
        sigma = np.sqrt(np.float32((255 * n.rgb_read) ** 2) + np.float32(255 * n.rgb_shot**2) * x)
        x += _bank().normal_like(self.rng, x.shape) * sigma
        np.clip(x, 0, 255, out=x)
        return np.rint(x).astype(np.uint8)


def _edges(z: np.ndarray) -> np.ndarray:
    """(H,W) float32 1 where a 4-neighbour's depth differs by more than EDGE_JUMP and EDGE_JUMP_REL of
    the range (or has no return), else 0."""
    jump = np.zeros_like(z)
    for a, b in ((np.s_[1:, :], np.s_[:-1, :]), (np.s_[:, 1:], np.s_[:, :-1])):
        d = np.abs(z[a] - z[b])
        jump[a] = np.maximum(jump[a], d)
        jump[b] = np.maximum(jump[b], d)
    return (jump > np.maximum(EDGE_JUMP, EDGE_JUMP_REL * z)).astype(np.float32)
