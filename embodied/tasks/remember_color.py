"""RememberColor: a screen flashes a colour; later touch the block of that colour.

observe  Blocks of distinct colours stand on the table. From step
         ``cue_start`` the cue panel shows one of their colours (the cue) for
         ``cue_steps`` steps, then turns neutral grey.
delay    ``delay`` steps with the screen grey.
recall   Touch the block whose colour the screen showed.

Success: the first block the robot touches has the cue colour; touching any
other block first is a failure. Chance: 1 / n_options.
The blocks' colours and spots come from the layout alone, so at recall the
scene says nothing about which of them was shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from embodied.envs.scene import SceneBuilder
from embodied.envs.workcell import BLOCK_HALF, COLORS, NEUTRAL, WorkcellEnv

# Left of the arm from the scene camera's view, beyond the blocks and clear of
# the arm's path to them; turned to face that camera.
PANEL_XY = np.array([0.18, -0.42])
PANEL_YAW = float(np.arctan2(0.0 - PANEL_XY[1], 1.0 - PANEL_XY[0]))
SPOT_LOW, SPOT_HIGH = np.array([0.32, -0.26]), np.array([0.62, 0.26])
MIN_GAP = 0.08  # centre to centre: two block widths, room for the fingers between
OPTION_COUNTS = (3, 5, 9)


@dataclass
class RememberColorOptions:
    PRESETS: ClassVar[dict[str, dict]] = {
        "easy": {},
        "medium": {"n_options": 5, "delay": 100},
        "hard": {"n_options": 9, "cue_steps": 3, "delay": 400},
        "extreme": {"n_options": 9, "cue_steps": 2, "delay": 1000},
    }
    n_options: int = 3
    cue_start: int = 5
    cue_steps: int = 5
    delay: int = 20

    def validate(self) -> None:
        if self.n_options not in OPTION_COUNTS:
            raise ValueError(f"n_options must be one of {OPTION_COUNTS}, got {self.n_options}")
        if self.cue_start < 0 or self.cue_steps < 1:
            raise ValueError("cue_start must be >= 0 and cue_steps >= 1")
        if self.delay < 0:
            raise ValueError(f"delay must be >= 0, got {self.delay}")


class RememberColor(WorkcellEnv):
    family = "RememberColor"
    memory_skill = "an attribute shown once (a colour)"
    Options = RememberColorOptions
    chance = "1 / n_options (33% at defaults)"

    @classmethod
    def chance_rate(cls, options: RememberColorOptions) -> float:
        return 1.0 / options.n_options

    def _add_props(self, scene: SceneBuilder) -> None:
        scene.attach("cue_panel", "cue_panel", "cue_panel", (*PANEL_XY, 0.0), yaw=PANEL_YAW)
        for i in range(self.options.n_options):
            scene.attach("block", f"block{i}", "block", (0.3 + 0.05 * i, 0.5, BLOCK_HALF))

    def _setup(self) -> None:
        super()._setup()
        # Looked up once: named lookups every step would cost a tenth of a step.
        self._block_ids = np.array([self.body_id(f"block{i}") for i in range(self.options.n_options)])
        self._block_instances = [self.entity[f"block{i}"].instance_id for i in range(self.options.n_options)]

    def _phase_lengths(self) -> tuple[int, int]:
        o = self.options
        return o.cue_start + o.cue_steps, o.delay

    def _sample_layout(self, rng: np.random.Generator) -> None:
        names = list(COLORS)
        self.block_colours = [names[k] for k in rng.choice(len(names), size=self.options.n_options, replace=False)]
        self.block_xy = spread_spots(rng, self.options.n_options)
        self.block_yaw = rng.uniform(-np.pi / 4, np.pi / 4, size=self.options.n_options)

    def _sample_cue(self, rng: np.random.Generator) -> int:
        return int(rng.integers(self.options.n_options))

    def cue_variants(self) -> list[int]:
        return [0, 1]

    def _reset_scene(self) -> None:
        self.target = int(self.cue)
        if not 0 <= self.target < self.options.n_options:
            raise ValueError(f"cue must be a block index in 0..{self.options.n_options - 1}, got {self.cue!r}")
        self.first_touched: int | None = None
        self.home_robot()
        self._place_blocks()
        self._show(0)

    def _place_blocks(self) -> None:
        for i, colour in enumerate(self.block_colours):
            self.paint(f"block{i}", COLORS[colour])
            self.place(f"block{i}", (*self.block_xy[i], BLOCK_HALF), yaw=self.block_yaw[i])

    def _show(self, t: int) -> None:
        o = self.options
        lit = o.cue_start <= t < o.cue_start + o.cue_steps
        self.paint("cue_panel", COLORS[self.block_colours[self.target]] if lit else NEUTRAL, ("screen",))

    def _script(self, phase: str, k: int) -> None:
        self._show(k if phase == "observe" else -1)

    def _recall_state(self) -> None:
        self.first_touched = None
        self._place_blocks()
        self._show(-1)

    def _touched_blocks(self) -> list[int]:
        """Blocks in contact with the robot, from one pass over the contacts."""
        n = self.data.ncon
        if n == 0:
            return []
        owner, geom_body = self._body_owner, self.model.geom_bodyid
        a = owner[geom_body[self.data.contact.geom1[:n]]]
        b = owner[geom_body[self.data.contact.geom2[:n]]]
        robot = self.entity["robot"].instance_id
        partners = set(b[a == robot].tolist()) | set(a[b == robot].tolist())
        return [i for i, instance in enumerate(self._block_instances) if instance in partners]

    def _evaluate(self) -> tuple[bool, bool]:
        touched = self._touched_blocks()
        if not touched:
            return False, False
        # Two blocks at once only happens by sweeping through them: that is a wrong touch too.
        self.first_touched = touched[0] if len(touched) == 1 else -1
        return (True, False) if touched == [self.target] else (False, True)

    def _instruction(self, phase: str) -> str:
        if phase == "recall":
            return "touch the block that has the colour the screen showed"
        return "remember the colour the screen shows"

    def _target_rgb(self) -> np.ndarray:
        # The named object's colour is the answer itself, so the goal never carries it.
        return np.zeros(3, dtype=np.float32)

    def privileged(self) -> dict:
        return {
            "target": self.target,
            "cue_colour": self.block_colours[self.target],
            "block_colours": list(self.block_colours),
            "block_pos": self.data.xpos[self._block_ids].copy(),
            "first_touched": self.first_touched,
        }


def spread_spots(rng: np.random.Generator, n: int, low=SPOT_LOW, high=SPOT_HIGH, attempts: int = 100,
                 draws: int = 200) -> np.ndarray:
    """``n`` spots (n, 2) m in the box [low, high], ``MIN_GAP`` apart, drawn one at a time (up to
    ``draws`` * n draws per attempt)."""
    for _ in range(attempts):
        spots: list[np.ndarray] = []
        for _ in range(draws * n):
            xy = rng.uniform(low, high)
            if all(np.linalg.norm(xy - s) >= MIN_GAP for s in spots):
                spots.append(xy)
                if len(spots) == n:
                    return np.array(spots)
    raise RuntimeError(f"could not place {n} blocks {MIN_GAP} m apart in {low}..{high}")
