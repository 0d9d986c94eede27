"""PutBlockBack: remember where a block started and put it back there.

observe  The block rests at its start pose (the cue) for ``show_steps``; then
         the env carries it to the centre pad in view.
delay    ``delay`` steps with the block on the pad.
recall   Pick the block off the pad and place it back at its start.

Success: the block rests within ``tolerance`` of its start (xy), released.
Chance: a memoryless agent that places the block at a random spot in the
start region succeeds with probability pi*tol^2 / area(start region).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from embodied.envs.workcell import BLOCK_HALF, COLORS, WorkcellEnv

CENTRE = np.array([0.45, 0.0])
START_LOW, START_HIGH = np.array([0.32, -0.26]), np.array([0.58, 0.26])
CLEAR_OF_CENTRE = 0.11
CARRY_STEPS = 16


@dataclass
class PutBlockBackOptions:
    PRESETS: ClassVar[dict[str, dict]] = {
        "easy": {},
        "medium": {"delay": 100, "distractors": 2},
        "hard": {"delay": 400, "distractors": 4},
        "extreme": {"delay": 1000, "distractors": 4, "show_steps": 3},
    }
    delay: int = 20
    distractors: int = 0
    tolerance: float = 0.03
    show_steps: int = 10

    def validate(self) -> None:
        if not 0 <= self.distractors <= 4:
            raise ValueError(f"distractors must be in 0..4, got {self.distractors}")
        if self.delay < 0 or self.show_steps < 1:
            raise ValueError("delay must be >= 0 and show_steps >= 1")
        if not 0.005 <= self.tolerance <= 0.1:
            raise ValueError(f"tolerance must be in [0.005, 0.1] metres, got {self.tolerance}")


class PutBlockBack(WorkcellEnv):
    family = "PutBlockBack"
    memory_skill = "a metric pose: where an object stood"
    Options = PutBlockBackOptions
    chance = "pi*tolerance^2 / start-region area (2.9% at defaults)"

    @classmethod
    def chance_rate(cls, options: PutBlockBackOptions) -> float:
        area = np.prod(START_HIGH - START_LOW) - np.pi * CLEAR_OF_CENTRE**2
        return float(np.pi * options.tolerance**2 / area)

    def _add_props(self, scene) -> None:
        scene.attach("pad", "centre_pad", "pad", (*CENTRE, 0.0))
        scene.attach("block", "block", "block", (0.4, 0.0, BLOCK_HALF))
        for i in range(self.options.distractors):
            scene.attach("block", f"distractor{i}", "block", (0.3 + 0.05 * i, 0.4, BLOCK_HALF))

    def _phase_lengths(self) -> tuple[int, int]:
        return self.options.show_steps + CARRY_STEPS, self.options.delay

    def _sample_layout(self, rng: np.random.Generator) -> None:
        names = list(COLORS)
        picks = rng.choice(len(names), size=1 + self.options.distractors, replace=False)
        self.colour = names[picks[0]]
        self.distractor_colours = [names[p] for p in picks[1:]]
        # Distractors stand at seeded spots along the table's sides.
        spots = [np.array([0.25 + 0.1 * k, side * 0.4]) for k in range(4) for side in (-1, 1)]
        order = rng.permutation(len(spots))[: self.options.distractors]
        self.distractor_xy = [spots[k] for k in order]

    def _sample_cue(self, rng: np.random.Generator) -> np.ndarray:
        for _ in range(1000):
            xy = rng.uniform(START_LOW, START_HIGH)
            if np.linalg.norm(xy - CENTRE) > CLEAR_OF_CENTRE:
                return xy
        raise RuntimeError("no free start pose")

    def cue_variants(self) -> list[np.ndarray]:
        return [np.array([0.35, -0.2]), np.array([0.55, 0.2])]

    def _reset_scene(self) -> None:
        self.paint("block", COLORS[self.colour])
        for i, colour in enumerate(self.distractor_colours):
            self.paint(f"distractor{i}", COLORS[colour])
        self.home_robot()
        self.start_xy = np.asarray(self.cue, dtype=float)
        self.place("block", (*self.start_xy, BLOCK_HALF))
        for i, xy in enumerate(self.distractor_xy):
            self.place(f"distractor{i}", (*xy, BLOCK_HALF))

    def _script(self, phase: str, k: int) -> None:
        carry = k - self.options.show_steps
        if phase == "observe" and carry >= 0:
            # Lift, carry over and set down on the centre pad.
            s = (carry + 1) / CARRY_STEPS
            xy = self.start_xy + (CENTRE - self.start_xy) * np.clip((s - 0.2) / 0.6, 0, 1)
            z = BLOCK_HALF + 0.1 * np.sin(np.pi * s)
            self.place("block", (*xy, z))

    def _recall_state(self) -> None:
        self.place("block", (*CENTRE, BLOCK_HALF))
        for i, xy in enumerate(self.distractor_xy):
            self.place(f"distractor{i}", (*xy, BLOCK_HALF))

    def _evaluate(self) -> tuple[bool, bool]:
        pos = self.body_pos("block")
        if pos[2] < -0.05:
            return False, True
        resting = pos[2] < BLOCK_HALF + 0.005 and np.linalg.norm(self.data.cvel[self.body_id("block")]) < 0.05
        placed = np.linalg.norm(pos[:2] - self.start_xy) <= self.options.tolerance
        return bool(placed and resting and not self.touching("block")), False

    def _instruction(self, phase: str) -> str:
        if phase == "recall":
            return f"put the {self.colour} block back where it started"
        return f"watch the {self.colour} block"

    def _target_rgb(self) -> np.ndarray:
        return np.array(COLORS[self.colour], dtype=np.float32)

    def privileged(self) -> dict:
        return {
            "start_xy": self.start_xy.copy(),
            "block_pos": self.body_pos("block"),
            "centre_xy": CENTRE.copy(),
        }
