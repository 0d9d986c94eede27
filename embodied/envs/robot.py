"""The Panda arm: state readout and the two action spaces.

``ee_delta`` (default): action (5,) float32 in [-1, 1]
    [dx, dy, dz, dyaw, gripper]; one unit moves the tool centre point (TCP)
    by ``pos_step`` metres and turns it by ``yaw_step`` radians per control
    step. The gripper command maps -1 -> closed, +1 -> open (8 cm), linearly.
    The tool stays pointing down; damped least squares on MuJoCo's site
    Jacobian turns the 6-D pose error into joint targets, with a null-space
    pull toward the home posture.
``joint_pos``: action (8,) float32: seven absolute joint targets in radians
    (within the Panda's limits) and the gripper command as above.

Joint targets drive position servos on gravity-compensated links, so the arm
moves by simulated torques, not by writing joint positions.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

ARM_JOINTS = tuple(f"joint{i}" for i in range(1, 8))
FINGER_JOINTS = ("finger_left", "finger_right")
HOME_QPOS = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
MAX_FINGER = 0.04  # metres per finger
PROPRIO_DIM = 22  # qpos 7, qvel 7, tcp pos 3, tcp quat (w,x,y,z) 4, gripper width 1


@dataclass
class ControlConfig:
    mode: str = "ee_delta"
    pos_step: float = 0.02  # metres per control step at action 1
    yaw_step: float = 0.15  # radians per control step at action 1
    damping: float = 0.05  # damped least-squares lambda
    nullspace_gain: float = 0.3
    workspace_low: tuple[float, float, float] = (0.15, -0.55, 0.005)
    workspace_high: tuple[float, float, float] = (0.85, 0.55, 0.6)


def yaw_of(rotation: np.ndarray) -> float:
    """Yaw of the tool: the heading of the hand's x axis in the world xy plane."""
    return float(np.arctan2(rotation[1, 0], rotation[0, 0]))


class Arm:
    """Reads the arm's state and turns actions into actuator targets."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, config: ControlConfig):
        if config.mode not in ("ee_delta", "joint_pos"):
            raise ValueError(f"unknown control mode {config.mode!r}; use 'ee_delta' or 'joint_pos'")
        self.model, self.data, self.config = model, data, config
        self.qpos_adr = np.array([model.joint(n).qposadr[0] for n in ARM_JOINTS])
        self.dof_adr = np.array([model.joint(n).dofadr[0] for n in ARM_JOINTS])
        self.finger_qpos_adr = np.array([model.joint(n).qposadr[0] for n in FINGER_JOINTS])
        self.finger_dof_adr = np.array([model.joint(n).dofadr[0] for n in FINGER_JOINTS])
        self.arm_actuators = np.array([model.actuator(n).id for n in ARM_JOINTS])
        self.finger_actuators = np.array([model.actuator(n).id for n in FINGER_JOINTS])
        self.joint_low = model.jnt_range[[model.joint(n).id for n in ARM_JOINTS], 0].copy()
        self.joint_high = model.jnt_range[[model.joint(n).id for n in ARM_JOINTS], 1].copy()
        self.tcp = model.site("tcp").id
        self._jacp = np.zeros((3, model.nv))
        self._jacr = np.zeros((3, model.nv))
        self._jac = np.zeros((6, 7))
        self._ws_low = np.array(config.workspace_low)
        self._ws_high = np.array(config.workspace_high)
        self._lambda_eye = config.damping**2 * np.eye(6)
        self._quat_now, self._quat_goal = np.zeros(4), np.zeros(4)
        self.action_dim = 5 if config.mode == "ee_delta" else 8

    # --- state -----------------------------------------------------------
    def qpos(self) -> np.ndarray:
        return self.data.qpos[self.qpos_adr]

    def tcp_pos(self) -> np.ndarray:
        return self.data.site_xpos[self.tcp].copy()

    def tcp_rot(self) -> np.ndarray:
        return self.data.site_xmat[self.tcp].reshape(3, 3).copy()

    def tcp_yaw(self) -> float:
        return yaw_of(self.tcp_rot())

    def gripper_width(self) -> float:
        return float(self.data.qpos[self.finger_qpos_adr].sum())

    def proprio(self, data: mujoco.MjData | None = None) -> np.ndarray:
        """(22,) float32: qpos 7 [rad], qvel 7 [rad/s], TCP pos 3 [m], TCP quat 4, width 1 [m], read from
        ``data`` (default: the simulator's; or a copy holding the joint readings, kinematics done)."""
        d = self.data if data is None else data
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, d.site_xmat[self.tcp])
        return np.concatenate(
            [d.qpos[self.qpos_adr], d.qvel[self.dof_adr], d.site_xpos[self.tcp], quat,
             [float(d.qpos[self.finger_qpos_adr].sum())]]
        ).astype(np.float32)

    # --- commands --------------------------------------------------------
    def set_home(self, qpos: np.ndarray = HOME_QPOS, width: float = 2 * MAX_FINGER) -> None:
        """Place the arm at rest at ``qpos`` with servos holding it (no dynamics)."""
        self.data.qpos[self.qpos_adr] = qpos
        self.data.qvel[self.dof_adr] = 0.0
        self.data.qpos[self.finger_qpos_adr] = width / 2
        self.data.qvel[self.finger_dof_adr] = 0.0
        self.data.ctrl[self.arm_actuators] = qpos
        self.data.ctrl[self.finger_actuators] = width / 2

    def apply(self, action: np.ndarray) -> None:
        """Set actuator targets from a validated, clipped action."""
        if self.config.mode == "ee_delta":
            targets = self._ee_delta_targets(action[:3], float(action[3]))
        else:
            targets = np.clip(action[:7], self.joint_low, self.joint_high)
        self.data.ctrl[self.arm_actuators] = targets
        self.data.ctrl[self.finger_actuators] = (float(action[-1]) + 1.0) / 2.0 * MAX_FINGER

    def _ee_delta_targets(self, dpos: np.ndarray, dyaw: float) -> np.ndarray:
        cfg = self.config
        pos = self.data.site_xpos[self.tcp]
        rot = self.data.site_xmat[self.tcp]
        target_pos = np.minimum(np.maximum(pos + dpos * cfg.pos_step, self._ws_low), self._ws_high)
        yaw = np.arctan2(rot[3], rot[0]) + dyaw * cfg.yaw_step
        c, s = np.cos(yaw), np.sin(yaw)
        # Tool pointing down with heading ``yaw``: columns x=(c,s,0), y=(s,-c,0), z=(0,0,-1).
        target_rot = np.array([c, s, 0.0, s, -c, 0.0, 0.0, 0.0, -1.0])
        error = np.empty(6)
        error[:3] = target_pos - pos
        # Rotation error as an axis-angle vector in the world frame.
        quat_now, quat_goal = self._quat_now, self._quat_goal
        mujoco.mju_mat2Quat(quat_now, rot)
        mujoco.mju_mat2Quat(quat_goal, target_rot)
        mujoco.mju_negQuat(quat_now, quat_now)
        mujoco.mju_mulQuat(quat_goal, quat_goal, quat_now)
        mujoco.mju_quat2Vel(error[3:], quat_goal, 1.0)

        mujoco.mj_jacSite(self.model, self.data, self._jacp, self._jacr, self.tcp)
        jac = self._jac
        jac[:3] = self._jacp[:, self.dof_adr]
        jac[3:] = self._jacr[:, self.dof_adr]
        jjt = jac @ jac.T + self._lambda_eye
        # One solve gives both the task step and the null-space projector.
        solved = np.linalg.solve(jjt, np.column_stack([error, jac]))
        q = self.data.qpos[self.qpos_adr]
        dq = jac.T @ solved[:, 0]
        # Null-space posture term keeps the redundant elbow near home.
        posture = cfg.nullspace_gain * (HOME_QPOS - q)
        dq += posture - jac.T @ (solved[:, 1:] @ posture)
        return np.minimum(np.maximum(q + dq, self.joint_low), self.joint_high)
