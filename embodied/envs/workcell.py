"""The table-top workcell: the Panda arm, a table and two RGB-D cameras.

World frame: the table top is z = 0, the arm's base is at the origin and the
arm faces +x. Control runs at 20 Hz (10 physics substeps of 5 ms).
Cameras: ``scene`` (fixed, in front of the table, looking back at the robot)
and ``wrist`` (on the hand, looking along the fingers).
"""

from __future__ import annotations

from typing import ClassVar

import mujoco
import numpy as np
from gymnasium import spaces

from embodied.envs.base import MemoryTaskEnv
from embodied.envs.robot import ARM_JOINTS, Arm, ControlConfig, HOME_QPOS, MAX_FINGER
from embodied.envs.scene import Entity, SceneBuilder

COLORS: dict[str, tuple[float, float, float]] = {
    "red": (0.85, 0.12, 0.12),
    "green": (0.15, 0.7, 0.2),
    "blue": (0.15, 0.3, 0.9),
    "yellow": (0.95, 0.85, 0.1),
    "purple": (0.55, 0.2, 0.75),
    "orange": (0.98, 0.5, 0.05),
    "cyan": (0.1, 0.8, 0.85),
    "pink": (0.98, 0.45, 0.7),
    "white": (0.95, 0.95, 0.95),
}
NEUTRAL = (0.5, 0.5, 0.5)
BLOCK_HALF = 0.02


class WorkcellEnv(MemoryTaskEnv):
    """Base of the manipulation tasks. Subclasses add props in ``_add_props``."""

    default_cameras: ClassVar[tuple[str, ...]] = ("scene", "wrist")
    scenery_classes: ClassVar[tuple[str, ...]] = ("table",)

    def __init__(self, *args, control_mode: str = "ee_delta", **kwargs):
        self.control = ControlConfig(mode=control_mode)
        super().__init__(*args, **kwargs)

    # --- construction --------------------------------------------------------
    def _build(self) -> tuple[mujoco.MjModel, list[Entity]]:
        scene = SceneBuilder("workcell")
        scene.add_entity("robot", "robot", "link0")
        scene.add_entity("table", "table", "table")
        scene.add_camera("scene", eye=(1.0, 0.0, 0.7), target=(0.42, 0.0, 0.0), fovy=58)
        self._add_props(scene)
        return scene.compile()

    def _add_props(self, scene: SceneBuilder) -> None:
        raise NotImplementedError

    def _setup(self) -> None:
        self.arm = Arm(self.model, self.data, self.control)
        # What the robot reads of itself: the joint readings (the sensor model's) and their forward
        # kinematics, which place the wrist camera and give the proprioceptive TCP.
        self._reading = mujoco.MjData(self.model)
        self.entity = {e.name: e for e in self.entities}
        self._body_owner = np.zeros(self.model.nbody, dtype=np.int32)
        for e in self.entities:
            self._body_owner[e.body_ids] = e.instance_id

    def _action_space(self) -> spaces.Box:
        if self.control.mode == "ee_delta":
            return spaces.Box(-1.0, 1.0, (5,), np.float32)
        low = np.append(self.arm.joint_low, -1.0).astype(np.float32)
        high = np.append(self.arm.joint_high, 1.0).astype(np.float32)
        return spaces.Box(low, high, (8,), np.float32)

    joint_count: ClassVar[int] = len(ARM_JOINTS)

    def _observation(self, force_render: bool = False) -> dict:
        if not self.sensor.ideal:
            self._read_joints()
        return super()._observation(force_render)

    def _read_joints(self) -> None:
        """This step's joint readings (true angles through the sensor model) and their kinematics."""
        r = self._reading
        r.qpos[:], r.qvel[:] = self.data.qpos, self.data.qvel
        r.qpos[self.arm.qpos_adr] = self.sensor.joints(self.data.qpos[self.arm.qpos_adr])
        mujoco.mj_kinematics(self.model, r)
        mujoco.mj_comPos(self.model, r)
        mujoco.mj_camlight(self.model, r)

    def _camera_poses(self) -> dict[str, np.ndarray]:
        return self.rig.extrinsics(self.data if self.sensor.ideal else self._reading)

    def _proprio(self) -> np.ndarray:
        return self.arm.proprio(None if self.sensor.ideal else self._reading)

    def _apply_action(self, action: np.ndarray) -> None:
        self.arm.apply(action)

    # --- helpers for tasks ---------------------------------------------------
    def body_id(self, entity: str) -> int:
        return self.model.body(self.entity[entity].root_body).id

    def body_pos(self, entity: str) -> np.ndarray:
        return self.data.xpos[self.body_id(entity)].copy()

    def free_qpos_adr(self, entity: str) -> int:
        joint = self.model.body_jntadr[self.body_id(entity)]
        return int(self.model.jnt_qposadr[joint])

    def place(self, entity: str, pos, yaw: float = 0.0) -> None:
        """Put a free body at rest at ``pos`` (kinematic, used by the env's own scripting)."""
        adr = self.free_qpos_adr(entity)
        self.data.qpos[adr : adr + 3] = pos
        self.data.qpos[adr + 3 : adr + 7] = [np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]
        dof = self.model.jnt_dofadr[self.model.body_jntadr[self.body_id(entity)]]
        self.data.qvel[dof : dof + 6] = 0.0

    def joint_qpos_adr(self, joint: str) -> int:
        return int(self.model.joint(joint).qposadr[0])

    def paint(self, entity: str, rgb, geom_names: tuple[str, ...] | None = None) -> None:
        for geom in self.entity[entity].geom_ids:
            if geom_names is None or self.model.geom(geom).name.split("/")[-1] in geom_names:
                self.model.geom_rgba[geom, :3] = rgb

    def home_robot(self) -> None:
        self.arm.set_home(HOME_QPOS, 2 * MAX_FINGER)

    def _on_phase(self, phase: str) -> None:
        if phase == "recall":
            self.restore_canonical()

    def restore_canonical(self) -> None:
        """Reset all dynamics, then let the task write its cue-free recall state."""
        mujoco.mj_resetData(self.model, self.data)
        self.home_robot()
        self._recall_state()
        mujoco.mj_forward(self.model, self.data)

    def _recall_state(self) -> None:
        """Write the recall-phase start state (props only; robot is homed)."""
        raise NotImplementedError

    def touching(self, entity: str, other: str = "robot") -> bool:
        """Whether any geom of ``entity`` is in contact with any geom of ``other``."""
        n = self.data.ncon
        if n == 0:
            return False
        owner = self._body_owner
        b1 = owner[self.model.geom_bodyid[self.data.contact.geom1[:n]]]
        b2 = owner[self.model.geom_bodyid[self.data.contact.geom2[:n]]]
        a, b = self.entity[entity].instance_id, self.entity[other].instance_id
        return bool(np.any(((b1 == a) & (b2 == b)) | ((b1 == b) & (b2 == a))))

    def sample_spots(self, rng: np.random.Generator, n: int, low, high, min_dist: float) -> np.ndarray:
        """``n`` xy points in the box [low, high] at least ``min_dist`` apart."""
        for _ in range(1000):
            pts = rng.uniform(low, high, size=(n, 2))
            if n < 2:
                return pts
            d = np.linalg.norm(pts[:, None] - pts[None], axis=-1) + np.eye(n) * 1e3
            if d.min() >= min_dist:
                return pts
        raise RuntimeError(f"could not place {n} objects {min_dist} m apart in {low}..{high}")
