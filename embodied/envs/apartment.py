"""The navigation base: a mobile robot touring a four-room apartment.

Robot: a differential-drive base (``scenes/apartment/robot.xml``, driven
through ``embodied.envs.nav_base.DriveBase``): a forward-speed and a yaw-rate
actuator in the body frame and a lateral no-slip constraint, so it rolls
and turns but never moves sideways; it collides with walls and furniture.
Control runs at 10 Hz (10 physics substeps of 10 ms).

Action (2,) float32 in [-1, 1]: ``[forward speed, yaw rate]``, scaled to
0.5 m/s and 1.5 rad/s. There is no sideways component; any other shape is
rejected.

Proprio (5,) float32: wheel odometry ``[x (m), y (m), yaw (rad, wrapped)]``
in the world frame, then the odometry's forward speed (m/s) and yaw rate
(rad/s) over the last step. Odometry integrates the two wheels' encoder
increments (radius 0.06 m, track 0.34 m) every substep; with
``odom_noise=s`` each wheel's increments over a control step are scaled by
``1 + N(0, s)`` (seeded per episode). It is re-zeroed to the dock (home)
pose when the recall phase starts, like a robot re-localising on its
charger.

Camera pose: ``extrinsics/head`` (4,4) float32 camera-to-world (OpenCV axes,
metres) is the *odometry* pose of the base composed with the camera's fixed
mount on it (camera ``head`` relative to body ``base``, read from the model),
so it drifts with ``odom_noise`` exactly as the odometry does; at
``odom_noise=0`` it equals the true camera pose to float precision.
Ground truth is privileged (``info["privileged"]``):

* ``robot_pose`` (3,) float64: true base ``[x m, y m, yaw rad]``, yaw wrapped;
* ``odometry_pose`` (3,) float64: the odometry estimate, same layout;
* ``lateral_speed`` float m/s: the base's largest sideways (body y) speed
  over the last control step's substeps (zero up to solver precision);
* ``camera_pose`` {cam: (4,4) float32}: the true camera-to-world transform,
  OpenCV axes, metres (what ``extrinsics/<cam>`` would be without drift).

Phases: observe is the *tour*: the env drives the base itself, with the same
velocity actuators, through every room (a full turn in each) and ends at the
dock facing a blank outer wall; **the agent's actions are ignored during
the tour and the delay.** At the first recall step the robot is put exactly
on the dock pose (nothing is in view there: only wall and floor) and the
goal text appears.

Camera ``head`` (1.2 m high, pitched 20 degrees down, 70 degree field of
view) gives RGB, depth and instance segmentation. ``env.labels`` maps
instance ids to classes: floor, wall, robot, the furniture (counter, fridge,
table, cabinet, sofa, coffee_table, shelf, bed, nightstand, dresser, desk,
armchair) and twelve small objects (``OBJECT_CLASSES``); each episode shows
``objects`` of them, each in its own colour, on the furniture's 22 spots.
Privileged geometry (the occupancy grid, the A* planner, object spots) is
for the env, experts and tests only.

``render()`` (``render_mode="rgb_array"``): (240, 560, 3) uint8, the head
view (240 x 240) next to a top-down map (240 x 320: walls, furniture,
objects, the robot's path and pose, and the goal once it is given).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import mujoco
import numpy as np
from gymnasium import spaces

from embodied.envs.base import MemoryTaskEnv
from embodied.envs.cameras import CameraRig
from embodied.envs.nav_base import DriveBase
from embodied.envs.nav_drive import TourBuilder, heading, track, wrap
from embodied.envs.nav_layout import FURNITURE, SEGMENTS, SIZE, WALL_HEIGHT
from embodied.envs.nav_map import MapPainter
from embodied.envs.nav_plan import APPROACH, STAGE, Apartment, LayoutSampler
from embodied.envs.scene import Entity, SceneBuilder

TOUR_TEXT = "follow the tour and remember what you see"
DELAY_TEXT = "wait at the dock"
LOOK_TEXT = "get ready at the dock"
MAX_V, MAX_W = 0.5, 1.5  # m/s and rad/s at action 1
REACH = 0.5  # success: within this many metres of the target (xy) ...
FACING = np.pi / 6  # ... and facing it within 30 degrees
OBJECT_CLASSES = (
    "mug", "box", "ball", "cone", "book", "bottle", "plate", "vase", "dumbbell", "teddy", "lamp", "pyramid",
)
COLOURS: dict[str, tuple[float, float, float]] = {
    "red": (0.85, 0.1, 0.1), "green": (0.1, 0.65, 0.2), "blue": (0.1, 0.25, 0.9), "yellow": (0.95, 0.85, 0.1),
    "purple": (0.5, 0.15, 0.7), "orange": (1.0, 0.5, 0.0), "cyan": (0.1, 0.8, 0.85), "pink": (1.0, 0.5, 0.75),
    "white": (0.97, 0.97, 0.97), "black": (0.05, 0.05, 0.05), "lime": (0.6, 0.95, 0.2), "brown": (0.45, 0.25, 0.1),
}


@dataclass
class NavOptions:
    """Knobs shared by the navigation tasks."""

    objects: int = 10  # small objects in the apartment (distinct class and colour)
    delay: int = 10  # control steps between the tour's end and the goal
    time_limit: int = 400  # control steps (10 Hz) allowed per goal
    odom_noise: float = 0.0  # relative std of each wheel's encoder increments per control step

    def validate(self) -> None:
        if not 4 <= self.objects <= len(OBJECT_CLASSES):
            raise ValueError(f"objects must be in 4..{len(OBJECT_CLASSES)}, got {self.objects}")
        if self.delay < 0 or self.time_limit < 50:
            raise ValueError("delay must be >= 0 and time_limit >= 50 steps")
        if not 0.0 <= self.odom_noise <= 0.5:
            raise ValueError(f"odom_noise must be in [0, 0.5], got {self.odom_noise}")


class NavigationEnv(MemoryTaskEnv):
    """Base of the navigation tasks; subclasses pick targets, cues and goals."""

    default_cameras: ClassVar[tuple[str, ...]] = ("head",)
    scenery_classes: ClassVar[tuple[str, ...]] = ("floor", "wall", *sorted({prop for _, prop in FURNITURE}))
    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}
    control_dt = 0.1
    substeps = 10
    Options = NavOptions
    SLOTS: ClassVar[int] = 22  # object spots per layout (sum over the furniture props)

    @classmethod
    def candidates(cls, options) -> int:
        """Places the target could be, as far as a memoryless agent knows: free spots plus its own."""
        return cls.SLOTS - options.objects + 1

    # --- construction --------------------------------------------------------
    def _build(self) -> tuple[mujoco.MjModel, list[Entity]]:
        scene = SceneBuilder("apartment")
        scene.add_entity("floor", "floor", "floor")
        scene.add_entity("walls", "wall", "walls")
        scene.add_entity("robot", "robot", "base")
        walls = scene.spec.body("walls")
        for seg in SEGMENTS:
            for k in range(seg.tiles):
                walls.add_geom(
                    name=f"{seg.name}_{k}", type=mujoco.mjtGeom.mjGEOM_BOX, size=[*seg.tile_half(), WALL_HEIGHT / 2],
                    pos=[*seg.tile_centre(k), WALL_HEIGHT / 2], contype=0, conaffinity=1, condim=1,
                    rgba=[0.86, 0.84, 0.79, 1.0],
                )
        for name, prop in FURNITURE:
            scene.attach(prop, name, prop, (0.0, -5.0, 0.0))
        for cls in OBJECT_CLASSES:
            scene.attach(cls, cls, cls, (0.0, -5.0, -3.0))
        return scene.compile()

    def _setup(self) -> None:
        m = self.model
        self.entity = {e.name: e for e in self.entities}
        self.drive = DriveBase(m, self.data, self.rig.camera_ids)
        self._robot_body = self.drive.body
        self._obj_body = {c: m.body(self.entity[c].root_body).id for c in OBJECT_CLASSES}
        furniture = {name: m.body(self.entity[name].root_body).id for name, _ in FURNITURE}
        self.sampler = LayoutSampler(m, self.data, self._robot_body, furniture, list(self._obj_body.values()))
        assert len(self.sampler.slot_sites) == self.SLOTS, "prop files and SLOTS disagree"
        self._painter = MapPainter(SIZE)
        self._painted_for: object = None
        self.apartment: Apartment | None = None
        self.drive.odometry.noise = self.options.odom_noise

    def odometry_pose(self) -> np.ndarray:
        """(3,) wheel odometry ``[x m, y m, yaw rad]`` (yaw wrapped): where the robot believes it is."""
        odom = self.drive.odometry.pose
        return np.array([odom[0], odom[1], float(wrap(odom[2]))])

    def _action_space(self) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, (2,), np.float32)

    # --- layout --------------------------------------------------------------
    def _sample_layout(self, rng: np.random.Generator) -> None:
        self.apartment = self.sampler.sample(rng)
        picks = rng.choice(len(OBJECT_CLASSES), size=self.options.objects, replace=False)
        self.active = [OBJECT_CLASSES[i] for i in picks]
        names = list(COLOURS)
        self.colour = {c: names[i] for c, i in zip(self.active, rng.choice(len(names), len(picks), replace=False))}
        self.object_yaw = {c: float(rng.uniform(-np.pi, np.pi)) for c in self.active}
        self._sample_task(rng)
        self._odom_seed = int(rng.integers(2**32))

    def _sample_task(self, rng: np.random.Generator) -> None:
        """Choose targets and the spots of every object the cue does not place."""
        raise NotImplementedError

    # --- episode -------------------------------------------------------------
    def _reset_scene(self) -> None:
        apt = self.apartment
        self.drive.recalibrate()
        self.sampler.apply(apt.doors, apt.furniture)
        for cls in self.active:
            for g in self.entity[cls].geom_ids:
                self.model.geom_rgba[g, :3] = COLOURS[self.colour[cls]]
        self._place_objects()
        if self.touring:
            start = np.array([*apt.viewpoints[apt.order[0]], apt.start_yaw])
            tour = TourBuilder(start, self.control_dt)
            for i, room in enumerate(apt.order):
                tour.turn(2 * np.pi)  # a full turn on the spot shows every object spot in the room
                self._tour_in_room(tour, room)
                tour.drive(apt.legs[i][1:])
            tour.turn_to(apt.home[2])
            tour.hold(2)
        else:
            start = apt.home.copy()
            tour = TourBuilder(start, self.control_dt)
            tour.hold(1)
        self.set_robot_pose(start)
        self.tour = tour.array()
        self.tour_marks = dict(tour.marks)
        self.drive.odometry.reset(start, seed=self._odom_seed)
        self._trail: list[np.ndarray] = []

    @property
    def touring(self) -> bool:
        """Whether the observe phase is the full tour (else one step at the dock)."""
        return True

    def _assign_spots(self, rng: np.random.Generator, classes: list[str], exclude=()) -> dict[str, int]:
        """Distinct random spots for ``classes``, avoiding the spot indices in ``exclude``."""
        pool = [k for k in range(self.SLOTS) if k not in set(exclude)]
        return dict(zip(classes, (int(k) for k in rng.choice(pool, size=len(classes), replace=False))))

    def _spots_in_two_rooms(self, spots: list[int]) -> list[int]:
        """The first of ``spots`` and the first one in another room (for ``cue_variants``)."""
        rooms = self.apartment.slot_room
        return [spots[0], next(k for k in spots if rooms[k] != rooms[spots[0]])]

    def _spots(self) -> dict[str, int]:
        """The spot (index into ``apartment.slots``) of every active object when the episode starts."""
        raise NotImplementedError

    def _place_objects(self) -> None:
        """Write every object's pose into the model; inactive objects wait below the floor."""
        for cls in OBJECT_CLASSES:
            self.put_object(cls, (0.0, -5.0, -3.0))
        self.spot = self._spots()
        for cls, k in self.spot.items():
            self.put_object(cls, self.apartment.slots[k])

    def _tour_in_room(self, tour: TourBuilder, room: int) -> None:
        """Extra tour legs after the turn in ``room`` (e.g. watching an object being moved)."""

    def put_object(self, cls: str, xyz, yaw: float | None = None) -> None:
        body = self._obj_body[cls]
        self.model.body_pos[body] = xyz
        yaw = self.object_yaw.get(cls, 0.0) if yaw is None else yaw
        self.model.body_quat[body] = [np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]

    def object_xy(self, cls: str) -> np.ndarray:
        return self.data.xpos[self._obj_body[cls], :2].copy()

    def _phase_lengths(self) -> tuple[int, int]:
        return len(self.tour) - 1, self.options.delay

    def extra_steps(self) -> int:
        """A longer ``time_limit`` per goal lengthens the recall phase by as much."""
        longer = max(0, self.options.time_limit - type(self).Options().time_limit)
        return super().extra_steps() + longer * getattr(self.options, "goals", 1)

    def _on_phase(self, phase: str) -> None:
        if phase == "recall":
            mujoco.mj_resetData(self.model, self.data)
            home = self.apartment.home
            self.set_robot_pose(home)
            self._recall_state()
            mujoco.mj_forward(self.model, self.data)
            self.drive.odometry.reset(home)  # re-localised on the dock; the noise stream goes on
            self.recall_start = self.t

    def _recall_state(self) -> None:
        """Write the cue-free recall-phase arrangement of the objects (the robot is docked)."""

    def set_robot_pose(self, pose) -> None:
        self.drive.set_pose(pose)

    def robot_pose(self) -> np.ndarray:
        """True (x, y, yaw) of the base; yaw wrapped to [-pi, pi)."""
        x, y, yaw = self.drive.pose()
        return np.array([x, y, float(wrap(yaw))])

    def _apply_action(self, action: np.ndarray) -> None:
        pose = self.drive.pose()
        if self.phase == "observe":
            v, w = track(pose, self.tour[self.t], self.tour[self.t + 1], self.control_dt)
        elif self.phase == "delay":
            v = w = 0.0
        else:
            v, w = float(action[0]) * MAX_V, float(action[1]) * MAX_W
        self.drive.command(float(np.clip(v, -MAX_V, MAX_V)), float(np.clip(w, -MAX_W, MAX_W)))

    def _simulate(self) -> None:
        self.drive.simulate(self.substeps, self.model.opt.timestep)

    # --- observations --------------------------------------------------------
    def _observation(self, force_render: bool = False) -> dict:
        self._trail.append(self.drive.pose()[:2])
        return super()._observation(force_render)

    def _camera_poses(self) -> dict[str, np.ndarray]:
        if self.apartment is None:
            return super()._camera_poses()
        # Cameras on the base are placed by odometry, as on a real robot; the true pose is privileged.
        return self.drive.camera_poses(self.drive.odometry.pose)

    def _proprio(self) -> np.ndarray:
        if self.apartment is None:  # called once before any reset, to size the space
            return np.zeros(5, dtype=np.float32)
        return np.array([*self.odometry_pose(), *self.drive.odometry.velocity], dtype=np.float32)

    def _info(self) -> dict:
        info = super()._info()
        info.update(self._task_info())
        return info

    def _task_info(self) -> dict:
        return {}

    # --- success -------------------------------------------------------------
    def reached(self, xy) -> bool:
        """Within ``REACH`` metres of ``xy`` and facing it within ``FACING``."""
        pose = self.robot_pose()
        near = np.linalg.norm(np.asarray(xy)[:2] - pose[:2]) <= REACH
        return bool(near and abs(float(wrap(heading(pose, xy) - pose[2]))) <= FACING)

    def _goal(self) -> tuple[np.ndarray, np.ndarray]:
        """(xy, normal): where the current goal is and the way its furniture faces."""
        raise NotImplementedError

    def _goal_object(self) -> str:
        """Class of the object the current goal names."""
        raise NotImplementedError

    def _goal_text(self) -> str:
        cls = self._goal_object()
        return f"go to the {self.colour[cls]} {cls}"

    def _instruction(self, phase: str) -> str:
        if phase == "recall":
            return self._goal_text()
        if phase == "delay":
            return DELAY_TEXT
        return TOUR_TEXT if self.touring else LOOK_TEXT

    def _target_rgb(self) -> np.ndarray:
        """The named object's colour once the goal is given; zeros before (the goal comes after the tour)."""
        if self.phase != "recall":
            return np.zeros(3, dtype=np.float32)
        return np.array(COLOURS[self.colour[self._goal_object()]], dtype=np.float32)

    def privileged(self) -> dict:
        xy, normal = self._goal()
        return {
            "robot_pose": self.robot_pose(),
            "odometry_pose": self.odometry_pose(),
            "camera_pose": self.rig.extrinsics(self.data),
            "lateral_speed": self.drive.slip,
            "home": self.apartment.home.copy(),
            "objects": {c: self.object_xy(c) for c in self.active},
            "goal": {"xy": xy, "approach": xy + APPROACH * normal, "stage": xy + STAGE * normal},
        }

    # --- rendering -----------------------------------------------------------

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        if self.apartment is None:  # nothing laid out before the first reset
            return np.zeros((240, 240 + self._painter.shape[1], 3), np.uint8)
        if self._video_rig is None:
            self._video_rig = CameraRig(self.model, ("head",), 240, self._video_geoms)
        if self._painted_for is not self.apartment:
            self._painter.set_layout(*self._split_boxes())
            self._painted_for = self.apartment
        head = self._video_rig.render(self.data, depth=False, seg=False)["rgb/head"]
        objects = [(self.object_xy(c), COLOURS[self.colour[c]]) for c in self.active]
        goal = self._goal()[0] if self.phase == "recall" else None
        panel = self._painter.draw(objects, np.array(self._trail), self.robot_pose(), goal)
        return np.concatenate([head, panel], axis=1)

    def _split_boxes(self) -> tuple[np.ndarray, np.ndarray]:
        """(walls, furniture) footprints for the map."""
        wall_geoms = set(self.entity["walls"].geom_ids)
        rows = {True: [], False: []}
        for g in range(self.model.ngeom):
            if self.model.geom_type[g] != mujoco.mjtGeom.mjGEOM_BOX or not self.model.geom_conaffinity[g] & 1:
                continue
            if self.data.geom_xpos[g, 2] + self.model.geom_size[g, 2] < 0.05:
                continue
            mat = self.data.geom_xmat[g]
            rows[g in wall_geoms].append([*self.data.geom_xpos[g, :2], *self.model.geom_size[g, :2],
                                          np.arctan2(mat[3], mat[0])])
        return np.array(rows[True]).reshape(-1, 5), np.array(rows[False]).reshape(-1, 5)
