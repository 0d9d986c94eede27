"""The apartment robot's base: differential-drive actuation, wheel odometry, camera mounts.

Actuation (``scenes/apartment/robot.xml``): a forward-speed actuator along the
base's own x axis and a yaw-rate actuator, both in the body frame, plus the
``no_slip`` tendon: a fixed tendon whose coefficients are set every substep
to ``(-sin yaw, cos yaw)`` on the x/y slides, so its velocity is the base's
sideways (body y) velocity, which its friction loss holds at zero inside the
constraint solver, together with the contacts. The base rolls forward/back
and turns but never moves sideways. Commands are ``(v, w)``: forward speed
(m/s) and yaw rate (rad/s).

Wheels: radius ``WHEEL_RADIUS`` (0.06 m), track ``TRACK`` (0.34 m). After every
physics substep the wheels' hinge angles advance by the base's rolling motion
(``d_left = (ds - TRACK/2 * dyaw) / r`` and ``d_right = (ds + TRACK/2 * dyaw) / r``
rad, with ``ds`` the forward displacement in m and ``dyaw`` the turn in rad),
so they spin in renders and serve as the encoders.

``WheelOdometry`` integrates the encoder increments into ``(x m, y m, yaw
rad)`` at the substep rate (100 Hz), the same forward-Euler rule the simulator
integrates with, so at zero noise it reproduces the true pose up to the
(sub-millimetre) lateral slip. With ``noise=s`` each wheel's increments over
a control step are scaled by ``1 + N(0, s)``, one draw per wheel per step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mujoco
import numpy as np

from embodied.envs.cameras import GL_TO_CV

WHEEL_RADIUS = 0.06  # m, matches the wheel geoms in robot.xml
TRACK = 0.34  # m, distance between the wheels' contact lines


@dataclass
class WheelOdometry:
    """Dead reckoning from left/right wheel angle increments (rad)."""

    noise: float = 0.0  # relative std of each wheel's increments, one draw per control step
    radius: float = WHEEL_RADIUS
    track: float = TRACK
    pose: np.ndarray = field(default_factory=lambda: np.zeros(3))  # (x m, y m, yaw rad unwrapped)
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(2))  # (forward m/s, yaw rate rad/s) last step
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    _gains: np.ndarray = field(default_factory=lambda: np.ones(2), init=False, repr=False)  # this step's per wheel
    _step: np.ndarray = field(default_factory=lambda: np.zeros(2), init=False, repr=False)  # (m, rad) this step

    def reset(self, pose, seed: int | None = None) -> None:
        self.pose = np.asarray(pose, dtype=np.float64).copy()
        self.velocity = np.zeros(2)
        self._gains = np.ones(2)
        self._step = np.zeros(2)
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def begin_step(self) -> None:
        """A new control step: draw this step's wheel gains."""
        self._gains = np.ones(2)
        if self.noise > 0:
            self._gains = 1.0 + self.noise * self.rng.standard_normal(2)
        self._step = np.zeros(2)

    def update(self, d_left: float, d_right: float) -> None:
        """Fold in one substep's wheel increments (rad): Euler along the heading before the move."""
        left, right = self.radius * d_left * self._gains[0], self.radius * d_right * self._gains[1]
        ds, dyaw = 0.5 * (left + right), (right - left) / self.track
        yaw = self.pose[2]
        self.pose = self.pose + np.array([ds * np.cos(yaw), ds * np.sin(yaw), dyaw])
        self._step += (ds, dyaw)

    def end_step(self, dt: float) -> None:
        """Close a control step of ``dt`` s: the reported speeds are its mean rates."""
        self.velocity = self._step / dt


class DriveBase:
    """The base's MuJoCo interface: pose joints, body-frame actuators, wheels and camera mounts."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, camera_ids: dict[str, int]):
        self.model, self.data = model, data
        self.body = model.body("base").id
        self.qadr = [int(model.joint(j).qposadr[0]) for j in ("base_x", "base_y", "base_yaw")]
        self.dadr = [int(model.joint(j).dofadr[0]) for j in ("base_x", "base_y", "base_yaw")]
        self.act = [model.actuator(a).id for a in ("drive", "drive_yaw")]
        tendon = model.tendon("no_slip").id
        wraps = range(model.tendon_adr[tendon], model.tendon_adr[tendon] + model.tendon_num[tendon])
        by_joint = {int(model.wrap_objid[k]): k for k in wraps}
        self.slip_wrap = [by_joint[model.joint(j).id] for j in ("base_x", "base_y")]
        self.wheel_qadr = [int(model.joint(j).qposadr[0]) for j in ("wheel_left", "wheel_right")]
        self.wheel_dadr = [int(model.joint(j).dofadr[0]) for j in ("wheel_left", "wheel_right")]
        self._camera_ids = dict(camera_ids)
        self.mounts = self._camera_mounts(camera_ids)
        self.odometry = WheelOdometry()
        self.slip = 0.0  # m/s: the largest lateral (body y) speed over the last control step

    def recalibrate(self) -> None:
        """Read the camera mounts again (after ``visual="randomized"`` moved them: the robot knows its
        own calibration)."""
        self.mounts = self._camera_mounts(self._camera_ids)

    def _camera_mounts(self, camera_ids: dict[str, int]) -> dict[str, np.ndarray]:
        """(4,4) camera-to-base transform (OpenCV axes, m) of every camera fixed on the base."""
        m = self.model
        mounts = {}
        for cam, cam_id in camera_ids.items():
            if m.cam_bodyid[cam_id] != self.body:
                continue  # a world-fixed camera keeps its calibrated pose
            if m.cam_mode[cam_id] != mujoco.mjtCamLight.mjCAMLIGHT_FIXED:
                raise ValueError(f"camera {cam!r} on the base must be fixed to it (mode 'fixed')")
            rot = np.zeros(9)
            mujoco.mju_quat2Mat(rot, m.cam_quat[cam_id])
            mount = np.eye(4)
            mount[:3, :3] = rot.reshape(3, 3) @ GL_TO_CV
            mount[:3, 3] = m.cam_pos[cam_id]
            mounts[cam] = mount
        return mounts

    def matrix(self, pose) -> np.ndarray:
        """(4,4) base-to-world transform of the planar pose ``(x m, y m, yaw rad)``.

        The body's rest frame (``body_pos``/``body_quat``) composed with its
        joints: slide x, slide y, then the yaw hinge.
        """
        m, b = self.model, self.body
        rest = np.eye(4)
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, m.body_quat[b])
        rest[:3, :3], rest[:3, 3] = rot.reshape(3, 3), m.body_pos[b]
        c, s = np.cos(pose[2]), np.sin(pose[2])
        planar = np.array([[c, -s, 0.0, pose[0]], [s, c, 0.0, pose[1]], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
        return rest @ planar

    def camera_poses(self, pose) -> dict[str, np.ndarray]:
        """{cam: (4,4) float32 camera-to-world} for the cameras on the base, placed at ``pose``."""
        base = self.matrix(pose)
        return {cam: (base @ mount).astype(np.float32) for cam, mount in self.mounts.items()}

    def set_pose(self, pose) -> None:
        """Put the base at ``pose`` at rest, with nothing commanded."""
        self.data.qpos[self.qadr] = pose
        self.data.qvel[self.dadr] = 0.0
        self.data.qvel[self.wheel_dadr] = 0.0
        self.data.ctrl[self.act] = 0.0

    def pose(self) -> np.ndarray:
        """True (x, y, yaw) with yaw as integrated (unwrapped)."""
        return self.data.qpos[self.qadr].copy()

    def command(self, v: float, w: float) -> None:
        """Forward speed ``v`` (m/s) and yaw rate ``w`` (rad/s); the lateral damper always holds 0."""
        self.data.ctrl[self.act] = [v, w]

    def simulate(self, substeps: int, dt: float) -> None:
        """Run ``substeps`` physics steps of ``dt`` s, rolling the wheels and integrating odometry."""
        odo = self.odometry
        odo.begin_step()
        self.slip = 0.0
        r, half = WHEEL_RADIUS, TRACK / 2
        for _ in range(substeps):
            before = self.data.qpos[self.qadr].copy()
            # The no-slip tendon's velocity is the body-frame lateral velocity at this substep's heading.
            self.model.wrap_prm[self.slip_wrap] = [-np.sin(before[2]), np.cos(before[2])]
            mujoco.mj_step(self.model, self.data)
            move = self.data.qpos[self.qadr] - before
            c, s = np.cos(before[2]), np.sin(before[2])
            ds, lateral = c * move[0] + s * move[1], -s * move[0] + c * move[1]
            self.slip = max(self.slip, abs(lateral) / dt)
            encoders = self.data.qpos[self.wheel_qadr].copy()
            self.data.qpos[self.wheel_qadr] += [(ds - half * move[2]) / r, (ds + half * move[2]) / r]
            self.data.qvel[self.wheel_dadr] = 0.0  # the wheels are kinematic: only their angle matters
            odo.update(*(self.data.qpos[self.wheel_qadr] - encoders))
        odo.end_step(substeps * dt)
