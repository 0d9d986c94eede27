"""TouchAsTold: an instruction is given only at the start; carry it out at the end.

observe  Blocks of distinct colours stand on the table (as in RememberColor; the screen stays
         grey). For ``tell_steps`` steps the goal text reads "remember this instruction: at the
         end, touch the <colour> block" (the cue); then ``distractors`` decoy lines, "look at the
         <colour> block", each name another block for ``tell_steps`` steps.
delay    ``delay`` steps of "wait".
recall   "do what you were told at the start": the colour is never said again.

Success: the first block the robot touches is the one named at the start; touching another
first is a failure. Chance: 1 / n_options (33% at defaults).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from embodied.envs.workcell import NEUTRAL
from embodied.tasks.remember_color import OPTION_COUNTS, RememberColor

TOLD_TEXT = "do what you were told at the start"
GAP_STEPS = 2  # "wait" between two lines


@dataclass
class TouchAsToldOptions:
    PRESETS: ClassVar[dict[str, dict]] = {
        "easy": {},
        "medium": {"n_options": 5, "distractors": 2, "delay": 100},
        "hard": {"n_options": 9, "distractors": 3, "tell_steps": 3, "delay": 400},
        "extreme": {"n_options": 9, "distractors": 4, "tell_steps": 2, "delay": 1000},
    }
    n_options: int = 3
    distractors: int = 1  # decoy lines naming other blocks after the instruction
    tell_steps: int = 5
    delay: int = 20

    def validate(self) -> None:
        if self.n_options not in OPTION_COUNTS:
            raise ValueError(f"n_options must be one of {OPTION_COUNTS}, got {self.n_options}")
        if not 0 <= self.distractors < self.n_options:
            raise ValueError(f"distractors must be in 0..n_options-1 ({self.n_options - 1}), got {self.distractors}")
        if self.tell_steps < 1 or self.delay < 0:
            raise ValueError("tell_steps must be >= 1 and delay >= 0")


class TouchAsTold(RememberColor):
    family = "TouchAsTold"
    memory_skill = "an instruction given only at the start, among decoy lines"
    Options = TouchAsToldOptions
    chance = "1 / n_options (33% at defaults)"

    @classmethod
    def chance_rate(cls, options: TouchAsToldOptions) -> float:
        return 1.0 / options.n_options

    def _phase_lengths(self) -> tuple[int, int]:
        o = self.options
        return (1 + o.distractors) * (o.tell_steps + GAP_STEPS), o.delay

    def extra_steps(self) -> int:
        o, d = self.options, TouchAsToldOptions()
        show = (1 + o.distractors) * (o.tell_steps + GAP_STEPS) - (1 + d.distractors) * (d.tell_steps + GAP_STEPS)
        return super().extra_steps() + max(0, show)

    def _show(self, t: int) -> None:
        self.paint("cue_panel", NEUTRAL, ("screen",))  # the screen plays no part here

    def _named(self, line: int) -> int:
        """The block named by observe line ``line``: 0 the instruction, then the decoys (other blocks)."""
        return (self.target + line) % self.options.n_options

    def _instruction(self, phase: str) -> str:
        if phase == "recall":
            return TOLD_TEXT
        if phase == "delay":
            return "wait"
        line, within = divmod(self.t, self.options.tell_steps + GAP_STEPS)
        if within >= self.options.tell_steps:
            return "wait"
        colour = self.block_colours[self._named(line)]
        if line == 0:
            return f"remember this instruction: at the end, touch the {colour} block"
        return f"look at the {colour} block"

    def privileged(self) -> dict:
        return {**super().privileged(), "decoys": [self._named(k) for k in range(1, 1 + self.options.distractors)]}
