"""ReopenDrawer: remember which drawer was open and open it again.

observe  One of ``n_drawers`` drawers stands open (the cue) and the robot
         pushes it shut within ``close_steps``; at the end of the phase the
         env shuts any drawer that is still open.
delay    ``delay`` steps with every drawer closed.
recall   Robot at home, every drawer closed: reopen the drawer that was open.

Success: the cued drawer is open by >= 0.08 m. Failure (ends the episode):
any other drawer opens by more than 0.04 m.
Chance: a memoryless agent that opens one drawer at random succeeds with
probability 1 / n_drawers.

The drawer row helpers (``DrawerRow``) are shared with HiddenObject and
Rearrange; the expert and its hook-and-pull waypoints are in
:mod:`embodied.experts.reopen_drawer`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from embodied.envs.scene import SceneBuilder
from embodied.envs.workcell import COLORS, NEUTRAL, WorkcellEnv

FRONT_X = 0.58  # drawer fronts (housing front edge) when the row is not jittered
SPACING = 0.19  # housings are 18 cm wide: 1 cm between neighbours
JITTER = 0.01  # seeded shift of the whole row: layouts differ in more than colour
CUE_OPEN = 0.12
SUCCESS_OPEN = 0.08
WRONG_OPEN = 0.04
# Closed fingers sit in the 4 cm gap between the handle bar and the drawer
# front: 3 cm in front of the front face, low enough for the pads to catch the
# bar (z 0.05-0.06) while the hand (4.8 cm above the TCP) clears the housing top.
# The arm settles ~5 mm above low targets, so aim a little below the bar's middle.
HOOK_DX, HOOK_Z = -0.03, 0.046


class DrawerRow:
    """Mixin for WorkcellEnv tasks with a row of drawer units facing the robot.

    Each unit is two entities: the housing ``cabinet<k>`` (class "cabinet")
    and its moving drawer ``drawer<k>`` (class "drawer").
    """

    n_units: int

    def _attach_drawers(self, scene: SceneBuilder, n: int) -> None:
        self.n_units = n
        for k, y in enumerate(row_offsets(n)):
            scene.attach("drawer_unit", f"cabinet{k}", "cabinet", (FRONT_X, y, 0.0))
            # The drawer body becomes its own entity, so segmentation tells drawer from housing.
            scene.add_entity(f"drawer{k}", "drawer", f"cabinet{k}/drawer")
            # A housing without joints counts as the world, so MuJoCo's parent filter
            # misses it: the shut drawer front would rest in 12 contacts with the
            # housing edges (the slide's range already stops it).
            scene.spec.add_exclude(bodyname1=f"cabinet{k}/housing", bodyname2=f"cabinet{k}/drawer")

    def _setup_drawers(self) -> None:
        n = self.n_units
        self._slide_qpos = np.array([self.joint_qpos_adr(f"cabinet{k}/slide") for k in range(n)])
        self._slide_dof = np.array([self.model.joint(f"cabinet{k}/slide").dofadr[0] for k in range(n)])
        self._housing = np.array([self.body_id(f"cabinet{k}") for k in range(n)])
        self._housing_pos0 = self.model.body_pos[self._housing].copy()
        self.row_shift = np.zeros(2)

    def shift_row(self, shift: np.ndarray) -> None:
        """Move every housing by ``shift`` (xy) from its built position."""
        self.row_shift = np.asarray(shift, dtype=float)
        self.model.body_pos[self._housing] = self._housing_pos0
        self.model.body_pos[self._housing, :2] += self.row_shift

    def unit_xy(self, k: int) -> np.ndarray:
        """Middle of unit ``k``'s front edge (where the closed drawer front sits)."""
        return self._housing_pos0[k, :2] + self.row_shift

    def opening(self, k: int) -> float:
        return float(self.data.qpos[self._slide_qpos[k]])

    def openings(self) -> np.ndarray:
        return self.data.qpos[self._slide_qpos].copy()

    def set_opening(self, k: int, amount: float) -> None:
        self.data.qpos[self._slide_qpos[k]] = amount
        self.data.qvel[self._slide_dof[k]] = 0.0

    def close_all(self) -> None:
        for k in range(self.n_units):
            self.set_opening(k, 0.0)

    def paint_drawers(self, rgb) -> None:
        for k in range(self.n_units):
            self.paint(f"drawer{k}", rgb)
            self.paint(f"cabinet{k}", NEUTRAL)

    def hook_point(self, k: int) -> np.ndarray:
        """TCP position with the closed fingers behind unit ``k``'s handle bar."""
        x, y = self.unit_xy(k)
        return np.array([x - self.opening(k) + HOOK_DX, y, HOOK_Z])


def row_offsets(n: int) -> np.ndarray:
    """y of ``n`` units side by side, centred on the robot's axis."""
    return (np.arange(n) - (n - 1) / 2) * SPACING


@dataclass
class ReopenDrawerOptions:
    PRESETS: ClassVar[dict[str, dict]] = {
        "easy": {},
        "medium": {"n_drawers": 4, "delay": 100},
        "hard": {"n_drawers": 5, "delay": 400},
        "extreme": {"n_drawers": 5, "delay": 1000, "close_steps": 30},
    }
    n_drawers: int = 3
    delay: int = 20
    close_steps: int = 60

    def validate(self) -> None:
        if not 2 <= self.n_drawers <= 5:
            raise ValueError(f"n_drawers must be in 2..5, got {self.n_drawers}")
        if self.delay < 0:
            raise ValueError(f"delay must be >= 0, got {self.delay}")
        if self.close_steps < 1:
            raise ValueError(f"close_steps must be >= 1, got {self.close_steps}")


class ReopenDrawer(DrawerRow, WorkcellEnv):
    family = "ReopenDrawer"
    memory_skill = "which of identical containers was used"
    Options = ReopenDrawerOptions
    chance = "1 / n_drawers (33% at defaults)"

    @classmethod
    def chance_rate(cls, options: ReopenDrawerOptions) -> float:
        return 1.0 / options.n_drawers

    def _add_props(self, scene: SceneBuilder) -> None:
        self._attach_drawers(scene, self.options.n_drawers)

    def _setup(self) -> None:
        super()._setup()
        self._setup_drawers()

    def _phase_lengths(self) -> tuple[int, int]:
        return self.options.close_steps, self.options.delay

    def _sample_layout(self, rng: np.random.Generator) -> None:
        # One colour for every drawer: colour must not single out the cue.
        self.colour = list(COLORS)[rng.integers(len(COLORS))]
        self.layout_shift = rng.uniform(-JITTER, JITTER, size=2)

    def _sample_cue(self, rng: np.random.Generator) -> int:
        return int(rng.integers(self.options.n_drawers))

    def cue_variants(self) -> list[int]:
        return [0, self.options.n_drawers - 1]

    def _reset_scene(self) -> None:
        self.cue = int(self.cue)
        if not 0 <= self.cue < self.options.n_drawers:
            raise ValueError(f"cue must be a drawer index in 0..{self.options.n_drawers - 1}, got {self.cue}")
        self.shift_row(self.layout_shift)
        self.paint_drawers(COLORS[self.colour])
        self.home_robot()
        self.close_all()
        self.set_opening(self.cue, CUE_OPEN)

    def _on_phase(self, phase: str) -> None:
        if phase == "delay":
            # Whatever the agent did, the delay shows every drawer shut.
            self.close_all()
        super()._on_phase(phase)

    def _recall_state(self) -> None:
        self.close_all()

    def _evaluate(self) -> tuple[bool, bool]:
        open_by = self.openings()
        others = np.delete(open_by, self.cue)
        return bool(open_by[self.cue] >= SUCCESS_OPEN), bool(np.any(others > WRONG_OPEN))

    def _instruction(self, phase: str) -> str:
        if phase == "recall":
            return "open the drawer that was open before"
        return "close the open drawer"

    def _target_rgb(self) -> np.ndarray:
        return np.array(COLORS[self.colour], dtype=np.float32)

    def privileged(self) -> dict:
        return {
            "cue_drawer": self.cue,
            "openings": self.openings(),
            "unit_xy": np.array([self.unit_xy(k) for k in range(self.n_units)]),
        }
