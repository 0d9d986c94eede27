"""Shared machinery of the memory tasks: a gymnasium env over a MuJoCo scene.

Every task runs in phases, by control step:
    observe  [0, observe_steps)                  the cue is shown
    delay    [observe_steps, +delay)             the env removes the cue
    recall   [observe_steps + delay, horizon)    the robot must act on memory

At the first recall step the env restores a canonical state that does not
depend on the cue (robot at home, props at rest, the cue erased), so two
episodes that differ only in the cue look identical from then on.

Observation dict (S = image size, per camera <cam>):
    rgb/<cam>           (S,S,3) uint8
    depth/<cam>         (S,S)   float32 metres (z-depth)
    segmentation/<cam>  (S,S)   int32 instance id, 0 = background
    intrinsics/<cam>    (3,3)   float32 pinhole K
    extrinsics/<cam>    (4,4)   float32 camera-to-world, OpenCV axes
    proprio             (P,)    float32, layout given by the robot module
    goal                {"phase": int 0/1/2, "text": str, "target_rgb": (3,) float32}
Privileged simulator state appears only in ``info["privileged"]``.
"""

from __future__ import annotations

import dataclasses
import math
import string
from typing import Any, ClassVar

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium import spaces

from embodied.envs.cameras import CameraRig
from embodied.envs.scene import Entity
from embodied.envs.sensor import SensorModel
from embodied.envs.visual import VisualRandomizer, check_visual

PHASES = ("observe", "delay", "recall")
TEXT_CHARSET = string.ascii_letters + string.digits + " .,;:'-_()/#?!"


_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}
MAX_INT_KNOB = 10**9  # counts and steps: a billion steps is 18 months of simulated time at 20 Hz


def _coerce(value: Any, kind: type) -> Any:
    """Command-line strings to the knob's type; ``bool("False")`` would be True, so bools are parsed.
    Numbers must be finite, integers at most :data:`MAX_INT_KNOB` in size, and a flag is no number."""
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE | _FALSE:
            return text in _TRUE
        raise ValueError(value)
    if kind in (int, float) and isinstance(value, bool) or kind is str and not isinstance(value, str):
        raise ValueError(value)  # True is not a count, nor [1] a name
    if kind is int and isinstance(value, float) and not value.is_integer():
        raise ValueError(value)
    if kind is int and isinstance(value, str):
        value = value.strip()
    try:
        value = value if isinstance(value, kind) else kind(value)
    except OverflowError:
        raise ValueError(value) from None
    if kind is int and abs(value) > MAX_INT_KNOB or kind is float and not math.isfinite(value):
        raise ValueError(value)
    return value


PRESET_NAMES = ("easy", "medium", "hard", "extreme")


def preset_knobs(cls: type, preset: str, task: str) -> dict[str, Any]:
    """The knob set of difficulty ``preset`` for the knob dataclass ``cls`` (its ``PRESETS``)."""
    presets = getattr(cls, "PRESETS", {})
    if preset not in presets:
        known = ", ".join(presets) or "none"
        raise ValueError(f"unknown preset {preset!r} for {task}; presets: {known}")
    return dict(presets[preset])


def options_from(cls: type, knobs: dict[str, Any], task: str):
    """Build the knob dataclass ``cls``; an unknown knob names the valid ones. ``preset=P`` starts from
    that difficulty preset's knobs; any knob given beside it overrides the preset's value."""
    knobs = dict(knobs)
    preset = knobs.pop("preset", None)
    if preset is not None:
        knobs = {**preset_knobs(cls, str(preset).strip(), task), **knobs}
    valid = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(knobs) - set(valid))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for {task}; valid options: {sorted(valid)}")
    typed = {}
    for name, value in knobs.items():
        kind = type(valid[name].default)
        try:
            typed[name] = _coerce(value, kind)
        except (TypeError, ValueError):
            raise ValueError(f"option {name}={value!r} for {task} must be {kind.__name__}"
                             + (f" of at most {MAX_INT_KNOB:.0e} in size" if kind is int else "")) from None
    opts = cls(**typed)
    if hasattr(opts, "validate"):
        opts.validate()
    return opts


class MemoryTaskEnv(gym.Env):
    """Base class: subclasses build the scene and script the phases."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}
    family: ClassVar[str] = ""
    memory_skill: ClassVar[str] = ""  # what the family asks memory for, in a few words
    Options: ClassVar[type]
    chance: ClassVar[str] = ""  # how the chance rate follows from the knobs

    @classmethod
    def chance_rate(cls, options) -> float:
        """Success rate of an agent that acts right but has no memory of the cue."""
        raise NotImplementedError

    @classmethod
    def default_chance_rate(cls) -> float:
        return cls.chance_rate(cls.Options())

    control_dt: float = 0.05
    substeps: int = 10

    def __init__(
        self,
        render_mode: str | None = None,
        image_size: int = 128,
        cameras: tuple[str, ...] = (),
        render_every: int = 1,
        images: bool = True,
        base_horizon: int | None = None,
        visual: str = "default",
        sensor: str = "ideal",
        **knobs: Any,
    ):
        self.options = options_from(self.Options, knobs, type(self).__name__)
        self.visual = check_visual(visual)
        self.sensor = SensorModel(sensor)  # checks the name
        # The episode's step limit: the registered horizon at default knobs, plus whatever a longer
        # delay adds (a 10x delay must not eat the recall phase). None: no limit.
        self.horizon = None if base_horizon is None else int(base_horizon) + self.extra_steps()
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if render_every < 1:
            raise ValueError(f"render_every must be >= 1, got {render_every}")
        self.render_mode = render_mode
        self.image_size = int(image_size)
        self.render_every = int(render_every)
        self.images = bool(images)
        self.model, self.entities = self._build()
        self.model.opt.timestep = self.control_dt / self.substeps
        self.data = mujoco.MjData(self.model)
        self.cameras = tuple(cameras) or self.default_cameras
        instance_of_geom = np.zeros(self.model.ngeom, dtype=np.int32)
        for entity in self.entities:
            instance_of_geom[entity.geom_ids] = entity.instance_id
        self.rig = CameraRig(self.model, self.cameras, self.image_size, instance_of_geom)
        self._video_rig: CameraRig | None = None
        self._video_geoms = instance_of_geom
        self.labels = {e.instance_id: e.cls for e in self.entities}
        scenery = np.flatnonzero(np.isin(instance_of_geom, [0] + [e.instance_id for e in self.entities
                                                                 if e.cls in self.scenery_classes]))
        self._visual = VisualRandomizer(self.model, scenery, self.cameras)
        self.t = 0
        self._images: dict[str, np.ndarray] = {}
        self._setup()
        self.action_space = self._action_space()
        self.observation_space = self._observation_space()

    # --- hooks for subclasses ------------------------------------------------
    default_cameras: ClassVar[tuple[str, ...]] = ()
    joint_count: ClassVar[int] = 0  # joints whose readings place a camera (the sensor model's offsets)
    scenery_classes: ClassVar[tuple[str, ...]] = ()  # entities visual="randomized" may recolour (not cues)

    def _build(self) -> tuple[mujoco.MjModel, list[Entity]]:
        raise NotImplementedError

    def _setup(self) -> None:
        """After compile: look up ids, create the robot interface."""

    def _action_space(self) -> spaces.Box:
        raise NotImplementedError

    def _proprio(self) -> np.ndarray:
        raise NotImplementedError

    def _apply_action(self, action: np.ndarray) -> None:
        raise NotImplementedError

    def _sample_layout(self, rng: np.random.Generator) -> None:
        """Draw everything about the episode except the cue (positions, colours)."""
        raise NotImplementedError

    def _sample_cue(self, rng: np.random.Generator) -> Any:
        """Draw the cue: the one thing the agent must remember."""
        raise NotImplementedError

    def cue_variants(self) -> list[Any]:
        """At least two valid cues for the current layout (for cue-erasure tests)."""
        raise NotImplementedError

    def _reset_scene(self) -> None:
        """Place everything for the drawn layout and cue (data already reset)."""
        raise NotImplementedError

    def _phase_lengths(self) -> tuple[int, int]:
        """(observe_steps, delay_steps)."""
        raise NotImplementedError

    def _simulate(self) -> None:
        """Advance the physics by one control step (``substeps`` MuJoCo steps)."""
        mujoco.mj_step(self.model, self.data, nstep=self.substeps)

    def _on_phase(self, phase: str) -> None:
        """Called once when ``phase`` starts (after the reset for 'observe')."""

    def _script(self, phase: str, k: int) -> None:
        """Env-driven motion for step ``k`` of ``phase`` (after physics)."""

    def _evaluate(self) -> tuple[bool, bool]:
        """(success, failure) from simulator state."""
        raise NotImplementedError

    def _instruction(self, phase: str) -> str:
        raise NotImplementedError

    def _target_rgb(self) -> np.ndarray:
        return np.zeros(3, dtype=np.float32)

    def privileged(self) -> dict:
        """Simulator ground truth for experts, success checks and tests only."""
        raise NotImplementedError

    def extra_delay(self) -> int:
        """Steps the ``delay`` knob adds over its default (0 for tasks without one)."""
        default = getattr(type(self).Options(), "delay", None)
        return max(0, int(getattr(self.options, "delay", 0)) - int(default)) if default is not None else 0

    def extra_steps(self) -> int:
        """Steps these knobs add to the registered horizon (set for the default knobs): a longer delay,
        and in tasks whose observe or recall phase grows with a knob (more swaps, a longer sequence,
        more goals) that growth too. Computed from the knobs alone, before any layout is drawn."""
        return self.extra_delay()

    @property
    def max_steps(self) -> int:
        return self.horizon if self.horizon is not None else 10**9

    # --- gymnasium API -------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        layout_seed, cue_seed = self.np_random.integers(0, 2**63 - 1, size=2)
        cue = options.pop("cue", None)
        if options:
            raise ValueError(f"unknown reset option(s) {sorted(options)}; valid: ['cue']")
        self._sample_layout(np.random.default_rng(layout_seed))
        self.cue = self._sample_cue(np.random.default_rng(cue_seed)) if cue is None else cue
        mujoco.mj_resetData(self.model, self.data)
        if self.visual == "randomized":  # its own generator: the layout and the cue do not change
            self._visual.apply(np.random.default_rng([int(layout_seed), 1]))
        # The sensor's errors have their own generator too: the same episode under every sensor.
        self.sensor.reset(np.random.default_rng([int(layout_seed), 2]), self.cameras, self.joint_count)
        self._reset_scene()
        mujoco.mj_forward(self.model, self.data)
        self.t = 0
        self.phase = "observe"
        self.success = self.failure = False
        self._on_phase("observe")
        mujoco.mj_forward(self.model, self.data)
        self._images = {}
        return self._observation(force_render=True), self._info()

    def step(self, action):
        action = self._validate(action)
        self._apply_action(action)
        self._simulate()
        self.t += 1
        observe, delay = self._phase_lengths()
        phase = PHASES[int(self.t >= observe) + int(self.t >= observe + delay)]
        if phase != self.phase:
            self.phase = phase
            self._on_phase(phase)
        if phase == "observe":
            self._script(phase, self.t)
        elif phase == "delay":
            self._script(phase, self.t - observe)
        mujoco.mj_forward(self.model, self.data)
        if self.phase == "recall" and not (self.success or self.failure):
            self.success, self.failure = self._evaluate()
        terminated = bool(self.success or self.failure)
        truncated = not terminated and self.horizon is not None and self.t >= self.horizon
        reward = 1.0 if self.success else 0.0
        return self._observation(), reward, terminated, truncated, self._info()

    def _validate(self, action) -> np.ndarray:
        expected = self.action_space.shape
        try:
            arr = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"action must be a numeric array of shape {expected}, got {action!r}") from None
        if arr.shape != expected:
            raise ValueError(f"action must have shape {expected}, got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"action of shape {expected} contains NaN or infinite values: {arr}")
        return np.minimum(np.maximum(arr, self.action_space.low), self.action_space.high)

    # --- observations --------------------------------------------------------
    def _observation_space(self) -> spaces.Dict:
        s = self.image_size
        entries: dict[str, spaces.Space] = {}
        if self.images:
            for cam in self.cameras:
                entries[f"rgb/{cam}"] = spaces.Box(0, 255, (s, s, 3), np.uint8)
                entries[f"depth/{cam}"] = spaces.Box(0.0, np.inf, (s, s), np.float32)
                entries[f"segmentation/{cam}"] = spaces.Box(0, len(self.entities), (s, s), np.int32)
                entries[f"intrinsics/{cam}"] = spaces.Box(-np.inf, np.inf, (3, 3), np.float32)
                entries[f"extrinsics/{cam}"] = spaces.Box(-np.inf, np.inf, (4, 4), np.float32)
        dim = self._proprio().shape[0]
        entries["proprio"] = spaces.Box(-np.inf, np.inf, (dim,), np.float32)
        entries["goal"] = spaces.Dict(
            {
                "phase": spaces.Discrete(len(PHASES)),
                "text": spaces.Text(max_length=200, charset=TEXT_CHARSET),
                "target_rgb": spaces.Box(0.0, 1.0, (3,), np.float32),
            }
        )
        return spaces.Dict(entries)

    def _observation(self, force_render: bool = False) -> dict:
        obs: dict[str, Any] = {}
        if self.images:
            if force_render or not self._images or self.t % self.render_every == 0:
                self._images = self.sensor.images(self.rig.render(self.data))
                obs.update(self._images)
            else:
                # Between renders the last images repeat; copies keep observations independent.
                obs.update({key: image.copy() for key, image in self._images.items()})
            for cam, pose in self._camera_poses().items():
                obs[f"intrinsics/{cam}"] = self.rig.K[cam].copy()
                obs[f"extrinsics/{cam}"] = self.sensor.extrinsic(cam, pose)
        obs["proprio"] = self._proprio()
        obs["goal"] = {
            "phase": PHASES.index(self.phase),
            "text": self._instruction(self.phase),
            "target_rgb": self._target_rgb(),
        }
        return obs

    def _camera_poses(self) -> dict[str, np.ndarray]:
        """{camera: (4,4) float32 camera-to-world} as the robot knows them before calibration error: the
        true poses here; a robot that places a camera by its own readings (joints, odometry) overrides."""
        return self.rig.extrinsics(self.data)

    def _info(self) -> dict:
        return {
            "phase": self.phase,
            "step": self.t,
            "is_success": bool(self.success),
            "is_failure": bool(self.failure),
            "privileged": self.privileged(),
        }

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        if self._video_rig is None:
            self._video_rig = CameraRig(self.model, self.cameras, 240, self._video_geoms)
        frames = self._video_rig.render(self.data, depth=False, seg=False)
        return np.concatenate([frames[f"rgb/{cam}"] for cam in self.cameras], axis=1)

    def close(self):
        self.rig.close()
        if self._video_rig is not None:
            self._video_rig.close()
