"""SequenceRecall: buttons light up one after another; press them in that order.

observe  A row of dark push buttons. ``length`` distinct buttons light up one
         at a time (the cue), each for ``flash_steps`` steps with a short dark
         gap between them.
delay    ``delay`` steps with every button dark.
recall   Press the buttons in the order they lit up.

A press is the rising edge of a cap travelling past 6 mm; the cap must come
back above 3 mm before it can count again, so one push never counts twice.
Success: all ``length`` presses in order. Failure: any press out of order.
Chance: 1 / (n * (n-1) * ... * (n-length+1)) ordered picks (1/24 at defaults).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from embodied.envs.scene import SceneBuilder
from embodied.envs.workcell import COLORS, WorkcellEnv

ROW_X = 0.45
SPACING = 0.10  # 7 cm bases with 3 cm between them
CAP_TOP = 0.036  # m: top of a cap at rest (the expert aims its press from here)
PRESSED, RELEASED = 0.006, 0.003  # cap travel in metres
DARK = (0.12, 0.12, 0.14)
LIT_COLOURS = ("yellow", "white", "cyan", "orange")  # bright enough to read as "lit"
LEAD_STEPS, GAP_STEPS = 3, 2
PRESS_BUDGET = 80  # horizon steps per press beyond the default length (the agent needs ~35)


@dataclass
class SequenceRecallOptions:
    PRESETS: ClassVar[dict[str, dict]] = {
        "easy": {},
        "medium": {"n_buttons": 5, "length": 4, "delay": 100},
        "hard": {"n_buttons": 6, "length": 5, "flash_steps": 4, "delay": 400},
        "extreme": {"n_buttons": 6, "length": 6, "flash_steps": 3, "delay": 1000},
    }
    n_buttons: int = 4
    length: int = 3
    flash_steps: int = 5
    delay: int = 20

    def validate(self) -> None:
        if not 2 <= self.n_buttons <= 6:
            raise ValueError(f"n_buttons must be in 2..6, got {self.n_buttons}")
        if not 1 <= self.length <= self.n_buttons:
            raise ValueError(f"length must be in 1..n_buttons ({self.n_buttons}), got {self.length}")
        if self.flash_steps < 1 or self.delay < 0:
            raise ValueError("flash_steps must be >= 1 and delay >= 0")


class SequenceRecall(WorkcellEnv):
    family = "SequenceRecall"
    memory_skill = "temporal order of events"
    Options = SequenceRecallOptions
    chance = "1 / (n_buttons! / (n_buttons - length)!) (4.2% at defaults)"

    @classmethod
    def chance_rate(cls, options: SequenceRecallOptions) -> float:
        return 1.0 / math.perm(options.n_buttons, options.length)

    def _add_props(self, scene: SceneBuilder) -> None:
        for i in range(self.options.n_buttons):
            scene.attach("button", f"button{i}", "button", (*self._button_xy(i), 0.0))
            # The base is welded to the world, so MuJoCo's parent-child filter does
            # not apply: without this the cap would stand on the base and never sink.
            scene.spec.add_exclude(bodyname1=f"button{i}/base", bodyname2=f"button{i}/cap")

    def _button_xy(self, i: int) -> np.ndarray:
        return np.array([ROW_X, (i - (self.options.n_buttons - 1) / 2) * SPACING])

    def _setup(self) -> None:
        super()._setup()
        self._press_adr = np.array([self.joint_qpos_adr(f"button{i}/press") for i in range(self.options.n_buttons)])

    def _phase_lengths(self) -> tuple[int, int]:
        o = self.options
        return LEAD_STEPS + o.length * (o.flash_steps + GAP_STEPS), o.delay

    def extra_steps(self) -> int:
        """A longer show, and ``PRESS_BUDGET`` recall steps per press beyond the default length."""
        o, default = self.options, SequenceRecallOptions()
        show = o.length * (o.flash_steps + GAP_STEPS) - default.length * (default.flash_steps + GAP_STEPS)
        return super().extra_steps() + max(0, show) + max(0, o.length - default.length) * PRESS_BUDGET

    def _sample_layout(self, rng: np.random.Generator) -> None:
        self.lit_colour = LIT_COLOURS[rng.integers(len(LIT_COLOURS))]

    def _sample_cue(self, rng: np.random.Generator) -> tuple[int, ...]:
        return tuple(int(b) for b in rng.permutation(self.options.n_buttons)[: self.options.length])

    def cue_variants(self) -> list[tuple[int, ...]]:
        n, length = self.options.n_buttons, self.options.length
        return [tuple(range(length)), tuple((i + 1) % n for i in range(length))]

    def _reset_scene(self) -> None:
        n, length = self.options.n_buttons, self.options.length
        self.sequence = tuple(int(b) for b in self.cue)
        valid = len(set(self.sequence)) == len(self.sequence) == length and all(0 <= b < n for b in self.sequence)
        if not valid:
            raise ValueError(f"cue must be {length} distinct button indices in 0..{n - 1}, got {self.cue!r}")
        self._clear_presses()
        self.home_robot()
        self._light(0)

    def _clear_presses(self) -> None:
        self.presses: list[int] = []
        self._down = np.zeros(self.options.n_buttons, dtype=bool)

    def _light(self, t: int) -> None:
        """Paint the caps for observe step ``t`` (any other ``t``: all dark)."""
        o = self.options
        j, within = divmod(t - LEAD_STEPS, o.flash_steps + GAP_STEPS)
        lit = self.sequence[j] if t >= LEAD_STEPS and j < o.length and within < o.flash_steps else None
        for i in range(o.n_buttons):
            self.paint(f"button{i}", COLORS[self.lit_colour] if i == lit else DARK, ("cap",))

    def _script(self, phase: str, k: int) -> None:
        self._light(k if phase == "observe" else -1)

    def _recall_state(self) -> None:
        # Caps are back at rest from the data reset; only the paint and the press log remain.
        self._clear_presses()
        self._light(-1)

    def travel(self) -> np.ndarray:
        return -self.data.qpos[self._press_adr]

    def _evaluate(self) -> tuple[bool, bool]:
        rising, self._down = rising_presses(self._down, self.travel())
        for button in rising:
            if int(button) != self.sequence[len(self.presses)]:
                self.presses.append(int(button))
                return False, True
            self.presses.append(int(button))
            if len(self.presses) == len(self.sequence):
                return True, False
        return False, False

    def _instruction(self, phase: str) -> str:
        if phase == "recall":
            return "press the buttons in the order they lit up"
        return "watch the order in which the buttons light up"

    def _target_rgb(self) -> np.ndarray:
        return np.array(COLORS[self.lit_colour], dtype=np.float32)

    def privileged(self) -> dict:
        return {
            "sequence": list(self.sequence),
            "presses": list(self.presses),
            "button_xy": np.array([self._button_xy(i) for i in range(self.options.n_buttons)]),
            "travel": self.travel(),
        }


def rising_presses(down: np.ndarray, travel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(indices of caps pressed this step, the new down flags) from each cap's ``travel`` (m): a press
    counts when a cap passes ``PRESSED`` and again only after it came back above ``RELEASED``."""
    rising = np.flatnonzero(~down & (travel >= PRESSED))
    return rising, (down | (travel >= PRESSED)) & (travel >= RELEASED)
