"""StoodOn: blocks stand on coloured pads, then all move off; touch the one that stood on a named pad.

observe  ``n_blocks`` coloured pads lie in a row at the back of the table, each with a block of
         its own colour-distinct set standing on it; ``distractors`` more blocks stand off the
         pads. Then every block, one after another (``SLOT`` steps each), is lifted, carried and
         set down at a spot of its own in front of the pads. Which block stood on which pad is the
         cue; the pads' colours and places, the blocks' colours and where each one ends up come
         from the layout alone. With ``same_colour`` (at ``extreme``) every block has one colour,
         so nothing but following each block through its move tells them apart.
delay    ``delay`` steps.
recall   "touch the block that stood on the <colour> pad". Every block stands where it ended and
         every pad is bare, whatever the cue, so the scene does not tell.

Success: the first block the robot touches is the one that stood on the named pad; touching
another first is a failure. Chance: 1 / n_blocks (33% at defaults), an upper bound: even knowing
which blocks stood on pads, which pad is a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from embodied.envs.scene import SceneBuilder
from embodied.envs.workcell import BLOCK_HALF, COLORS
from embodied.tasks.hidden_object import arc
from embodied.tasks.remember_color import RememberColor, spread_spots

SHOW, SLOT, CARRY_Z = 8, 20, 0.12  # steps before the first move, steps per move, carry height (m)
PAD_X, PAD_GAP = 0.6, 0.11  # the pads' row (m from the robot base) and centre-to-centre spacing
PAD_SHIFT = 0.03  # m of random sideways shift of the whole row
END_LOW, END_HIGH = np.array([0.3, -0.26]), np.array([0.47, 0.26])  # where blocks end (and distractors start)
PAD_COLOURS = [c for c in COLORS if c != "white"]  # a white pad would barely stand out from the table
PAD_HIDDEN = (0.0, 0.0, -1.0)  # pads not in play wait under the table


@dataclass
class StoodOnOptions:
    PRESETS: ClassVar[dict[str, dict]] = {
        "easy": {},
        "medium": {"n_blocks": 4, "distractors": 1, "delay": 100},
        "hard": {"n_blocks": 5, "distractors": 2, "delay": 400},
        "extreme": {"n_blocks": 5, "distractors": 2, "delay": 1000, "same_colour": True},
    }
    n_blocks: int = 3  # pads, each with a block on it at the start
    distractors: int = 0  # blocks that never stood on a pad (they move too)
    delay: int = 20
    same_colour: bool = False  # every block one colour: only following each one through its move tells

    def validate(self) -> None:
        if not 2 <= self.n_blocks <= 5:
            raise ValueError(f"n_blocks must be in 2..5, got {self.n_blocks}")
        if not 0 <= self.distractors <= 2:
            raise ValueError(f"distractors must be in 0..2, got {self.distractors}")
        if self.delay < 0:
            raise ValueError(f"delay must be >= 0, got {self.delay}")

    @property
    def n_options(self) -> int:  # RememberColor's name for the number of blocks
        return self.n_blocks + self.distractors


class StoodOn(RememberColor):
    family = "Relations"
    memory_skill = "a past relation: which block stood on which pad"
    Options = StoodOnOptions
    chance = "1 / n_blocks (33% at defaults)"

    @classmethod
    def chance_rate(cls, options: StoodOnOptions) -> float:
        return 1.0 / options.n_blocks

    def _add_props(self, scene: SceneBuilder) -> None:
        for i in range(5):
            scene.attach("pad", f"pad{i}", "pad", PAD_HIDDEN)
        for i in range(self.options.n_options):
            scene.attach("block", f"block{i}", "block", (0.3 + 0.05 * i, 0.5, BLOCK_HALF))

    def _phase_lengths(self) -> tuple[int, int]:
        return SHOW + SLOT * self.options.n_options + 2, self.options.delay

    def extra_steps(self) -> int:
        return super().extra_steps() + max(0, self.options.n_options - StoodOnOptions().n_options) * SLOT

    def _sample_layout(self, rng: np.random.Generator) -> None:
        o = self.options
        names = list(COLORS)
        self.block_colours = [names[k] for k in rng.choice(len(names), size=o.n_options, replace=False)]
        if o.same_colour:
            self.block_colours = [self.block_colours[0]] * o.n_options
        self.pad_colours = [PAD_COLOURS[k] for k in rng.choice(len(PAD_COLOURS), size=o.n_blocks, replace=False)]
        row = (np.arange(o.n_blocks) - (o.n_blocks - 1) / 2) * PAD_GAP + rng.uniform(-PAD_SHIFT, PAD_SHIFT)
        self.pad_xy = np.stack([np.full(o.n_blocks, PAD_X), rng.permutation(row)], axis=1)
        spots = spread_spots(rng, o.n_options + o.distractors, END_LOW, END_HIGH, attempts=200, draws=100)
        self.final_xy, self.distractor_start = spots[: o.n_options], spots[o.n_options :]
        self.block_yaw = rng.uniform(-np.pi / 4, np.pi / 4, size=o.n_options)
        self.move_order = [int(i) for i in rng.permutation(o.n_options)]
        self.rest_order = [int(i) for i in rng.permutation(o.n_blocks - 1)]  # pads 1.. for the other blocks

    def _sample_cue(self, rng: np.random.Generator) -> int:
        return int(rng.integers(self.options.n_blocks))

    def cue_variants(self) -> list[int]:
        return [0, 1]

    @property
    def asked_pad(self) -> int:
        return 0  # the pad the goal names; the layout shuffled the row, so its place is random

    def _reset_scene(self) -> None:
        o = self.options
        self.target = int(self.cue) if isinstance(self.cue, (int, np.integer)) else -1
        if not 0 <= self.target < o.n_blocks:
            raise ValueError(f"cue must be a block index in 0..{o.n_blocks - 1} (one that stands on a pad), "
                             f"got {self.cue!r}")
        others = [i for i in range(o.n_blocks) if i != self.target]
        self.pad_of = {self.target: self.asked_pad, **{i: 1 + r for i, r in zip(others, self.rest_order)}}
        self.start_xy = np.array([self.pad_xy[self.pad_of[i]] for i in range(o.n_blocks)]
                                 + list(self.distractor_start)).reshape(-1, 2)
        for k in range(5):
            pad = self.body_id(f"pad{k}")
            self.model.body_pos[pad] = (*self.pad_xy[k], 0.0) if k < o.n_blocks else PAD_HIDDEN
            if k < o.n_blocks:
                self.paint(f"pad{k}", COLORS[self.pad_colours[k]])
        self.first_touched = None
        self.home_robot()
        self.block_xy = self.start_xy
        self._place_blocks()

    def _show(self, t: int) -> None:
        pass  # no screen in this task's scene

    def _script(self, phase: str, k: int) -> None:
        if phase != "observe" or k < SHOW:
            return
        m, j = divmod(k - SHOW, SLOT)
        if m >= len(self.move_order):
            return
        i = self.move_order[m]
        start, end = (np.array([*xy[i], BLOCK_HALF]) for xy in (self.start_xy, self.final_xy))
        self.place(f"block{i}", arc(start, end, min((j + 1) / SLOT, 1.0), CARRY_Z), yaw=self.block_yaw[i])

    def _recall_state(self) -> None:
        self.first_touched = None
        for i in range(self.options.n_options):
            self.place(f"block{i}", (*self.final_xy[i], BLOCK_HALF), yaw=self.block_yaw[i])

    def _instruction(self, phase: str) -> str:
        if phase == "recall":
            return f"touch the block that stood on the {self.pad_colours[self.asked_pad]} pad"
        return "watch the blocks on the pads"

    def privileged(self) -> dict:
        return {**super().privileged(), "pad_of": dict(self.pad_of), "pad_xy": self.pad_xy.copy(),
                "pad_colours": list(self.pad_colours)}
