"""HiddenObject: remember which drawer a block was hidden in and retrieve it.

observe  Env-scripted: the blocks stand on the table, then one drawer (the
         cue) slides open, the target block is carried into it and the drawer
         shuts; then ``distractor_moves`` times a distractor block is carried
         to a new spot in view.
delay    ``delay`` steps, every drawer closed.
recall   Robot at home, drawers closed, the target hidden in the cued drawer:
         open that drawer, grasp the block and lift it out.

Success: the target block is >= 0.05 m above the tray bottom and touches
neither drawer nor housing, or it is held above z = 0.12. Failure (ends the
episode): any other drawer opens by more than 0.04 m.
Chance: a memoryless agent that opens one drawer at random succeeds with
probability 1 / n_drawers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from embodied.envs.scene import SceneBuilder
from embodied.envs.workcell import BLOCK_HALF, COLORS, WorkcellEnv
from embodied.tasks.reopen_drawer import JITTER, WRONG_OPEN, DrawerRow

# Blocks stay nearer the robot than x = 0.38 because a drawer opened 15 cm
# sweeps the table up to x ~0.42 in its lane.
SPOT_LOW, SPOT_HIGH = np.array([0.24, -0.3]), np.array([0.36, 0.3])
SPOT_GAP = 0.065
TRAY_TOP = 0.0165  # top face of the tray bottom (drawer body z 0.0105 + 6 mm plate)
IN_DRAWER_X = 0.06  # block centre behind the drawer front, so an opened drawer exposes it
SHOW_OPEN = 0.14  # how far the env opens the drawer to put the block in
LIFT_CLEAR = 0.05
HELD_Z = 0.12
CARRY_Z = 0.14  # block centre while carried: clear of drawer fronts and handles
SHOW, OPEN_STEPS, CARRY, CLOSE_STEPS, MOVE = 6, 8, 16, 8, 12


@dataclass
class HiddenObjectOptions:
    PRESETS: ClassVar[dict[str, dict]] = {
        "easy": {},
        "medium": {"n_drawers": 4, "distractors": 3, "distractor_moves": 3, "delay": 100},
        "hard": {"n_drawers": 5, "distractors": 4, "distractor_moves": 4, "delay": 400},
        "extreme": {"n_drawers": 5, "distractors": 4, "distractor_moves": 4, "delay": 1000},
    }
    n_drawers: int = 3
    distractors: int = 2
    distractor_moves: int = 2
    delay: int = 20

    def validate(self) -> None:
        if not 2 <= self.n_drawers <= 5:
            raise ValueError(f"n_drawers must be in 2..5, got {self.n_drawers}")
        if not 0 <= self.distractors <= 4:
            raise ValueError(f"distractors must be in 0..4, got {self.distractors}")
        if not 0 <= self.distractor_moves <= 4:
            raise ValueError(f"distractor_moves must be in 0..4, got {self.distractor_moves}")
        if self.delay < 0:
            raise ValueError(f"delay must be >= 0, got {self.delay}")


def arc(start: np.ndarray, end: np.ndarray, s: float, high: float) -> np.ndarray:
    """Lift, travel, lower: ``s`` in [0, 1] along a pick-and-place path at height ``high``."""
    lift, lower = np.clip(s / 0.25, 0, 1), np.clip((s - 0.75) / 0.25, 0, 1)
    travel = np.clip((s - 0.25) / 0.5, 0, 1)
    xy = start[:2] + (end[:2] - start[:2]) * travel
    z = start[2] + (high - start[2]) * lift if s < 0.5 else high + (end[2] - high) * lower
    return np.array([*xy, z])


def free_spot(rng: np.random.Generator, taken: np.ndarray) -> np.ndarray:
    """A table spot at least SPOT_GAP from every point in ``taken``."""
    for _ in range(1000):
        xy = rng.uniform(SPOT_LOW, SPOT_HIGH)
        if np.all(np.linalg.norm(taken - xy, axis=1) >= SPOT_GAP):
            return xy
    raise RuntimeError(f"no free spot {SPOT_GAP} m clear of {len(taken)} blocks")


class HiddenObject(DrawerRow, WorkcellEnv):
    family = "HiddenObject"
    memory_skill = "containment: what went into which closed drawer, through distractor moves"
    Options = HiddenObjectOptions
    chance = "1 / n_drawers (33% at defaults)"
    spot_low: ClassVar[np.ndarray] = SPOT_LOW  # the near corner of where the blocks start

    @classmethod
    def chance_rate(cls, options: HiddenObjectOptions) -> float:
        return 1.0 / options.n_drawers

    def _add_props(self, scene: SceneBuilder) -> None:
        self._attach_drawers(scene, self.options.n_drawers)
        scene.attach("block", "target", "block", (0.3, 0.0, BLOCK_HALF))
        for i in range(self.options.distractors):
            scene.attach("block", f"distractor{i}", "block", (0.3, 0.1 * (i + 1), BLOCK_HALF))

    def _setup(self) -> None:
        super()._setup()
        self._setup_drawers()
        self._distractor_ids = [self.body_id(f"distractor{i}") for i in range(self.options.distractors)]

    @property
    def n_moves(self) -> int:
        return self.options.distractor_moves if self.options.distractors else 0

    def extra_steps(self) -> int:
        default = HiddenObjectOptions()
        more = max(0, self.n_moves - (default.distractor_moves if default.distractors else 0))
        return super().extra_steps() + more * MOVE

    def _phase_lengths(self) -> tuple[int, int]:
        return SHOW + OPEN_STEPS + CARRY + CLOSE_STEPS + MOVE * self.n_moves + 1, self.options.delay

    def _sample_layout(self, rng: np.random.Generator) -> None:
        names = list(COLORS)
        picks = rng.permutation(len(names))
        d = self.options.distractors
        self.colour = names[picks[0]]
        self.distractor_colours = [names[p] for p in picks[1 : 1 + d]]
        # The drawers get a colour no block has, so a colour name picks out one thing.
        self.drawer_colour = names[picks[1 + d]]
        self.layout_shift = rng.uniform(-JITTER, JITTER, size=2)
        spots = self.sample_spots(rng, 1 + d, self.spot_low, SPOT_HIGH, SPOT_GAP)
        self.target_start, self.distractor_start = spots[0], list(spots[1:])
        current = list(self.distractor_start)
        self.moves: list[tuple[int, np.ndarray, np.ndarray]] = []  # (distractor, from, to)
        for m in range(self.n_moves):
            i = m % d
            # Clear of every distractor where it stands then, its own old spot included.
            goal = free_spot(rng, np.array(current))
            self.moves.append((i, current[i], goal))
            current[i] = goal
        self.distractor_final = current

    def _sample_cue(self, rng: np.random.Generator) -> int:
        return int(rng.integers(self.options.n_drawers))

    def cue_variants(self) -> list[int]:
        return [0, self.options.n_drawers - 1]

    def _reset_scene(self) -> None:
        self.cue = int(self.cue)
        if not 0 <= self.cue < self.options.n_drawers:
            raise ValueError(f"cue must be a drawer index in 0..{self.options.n_drawers - 1}, got {self.cue}")
        self.shift_row(self.layout_shift)
        self.paint_drawers(COLORS[self.drawer_colour])
        self.paint("target", COLORS[self.colour])
        for i, colour in enumerate(self.distractor_colours):
            self.paint(f"distractor{i}", COLORS[colour])
        self.home_robot()
        self.close_all()
        self.place("target", (*self.target_start, BLOCK_HALF))
        for i, xy in enumerate(self.distractor_start):
            self.place(f"distractor{i}", (*xy, BLOCK_HALF))

    def in_drawer(self, k: int) -> np.ndarray:
        """Resting pose of the target in drawer ``k`` at its current opening."""
        x, y = self.unit_xy(k)
        return np.array([x + IN_DRAWER_X - self.opening(k), y, TRAY_TOP + BLOCK_HALF])

    def _script(self, phase: str, k: int) -> None:
        if phase != "observe":
            return
        k -= SHOW
        if 0 <= k < OPEN_STEPS:
            self.set_opening(self.cue, SHOW_OPEN * (k + 1) / OPEN_STEPS)
            return
        k -= OPEN_STEPS
        if 0 <= k < CARRY:
            start = np.array([*self.target_start, BLOCK_HALF])
            self.place("target", arc(start, self.in_drawer(self.cue), (k + 1) / CARRY, CARRY_Z))
            return
        self._shut_and_move(k - CARRY)

    def _shut_and_move(self, k: int) -> None:
        """Step ``k`` after the block went in: the drawer shuts (the block rides in it), then the
        distractor moves."""
        if 0 <= k < CLOSE_STEPS:
            self.set_opening(self.cue, SHOW_OPEN * (1 - (k + 1) / CLOSE_STEPS))
            self.place("target", self.in_drawer(self.cue))
            return
        m, k = divmod(k - CLOSE_STEPS, MOVE)
        if 0 <= m < len(self.moves):
            i, start, goal = self.moves[m]
            path = arc(np.array([*start, BLOCK_HALF]), np.array([*goal, BLOCK_HALF]), (k + 1) / MOVE, 0.1)
            self.place(f"distractor{i}", path)

    def _recall_state(self) -> None:
        self.close_all()
        # Hidden in a shut drawer the target is out of every camera's view.
        self.place("target", self.in_drawer(self.cue))
        for i, xy in enumerate(self.distractor_final):
            self.place(f"distractor{i}", (*xy, BLOCK_HALF))

    def _evaluate(self) -> tuple[bool, bool]:
        pos = self.body_pos("target")
        others = np.delete(self.openings(), self.cue)
        failure = bool(np.any(others > WRONG_OPEN) or pos[2] < -0.05)
        if pos[2] >= HELD_Z:
            return True, failure
        if pos[2] - BLOCK_HALF < TRAY_TOP + LIFT_CLEAR:
            return False, failure
        # Contact checks only once the block is high enough: they dominate the step time.
        clear = not (self.touching("target", f"drawer{self.cue}") or self.touching("target", f"cabinet{self.cue}"))
        return clear, failure

    def _instruction(self, phase: str) -> str:
        if phase == "recall":
            return f"retrieve the {self.colour} block"
        return f"watch the {self.colour} block"

    def _target_rgb(self) -> np.ndarray:
        return np.array(COLORS[self.colour], dtype=np.float32)

    def privileged(self) -> dict:
        return {
            "cue_drawer": self.cue,
            "target_pos": self.body_pos("target"),
            "openings": self.openings(),
            "unit_xy": np.array([self.unit_xy(k) for k in range(self.n_units)]),
            "distractor_pos": self.data.xpos[self._distractor_ids].copy(),
        }
