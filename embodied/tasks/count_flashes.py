"""CountFlashes: a screen flashes some number of times; press a button that many times.

observe  A screen (the cue panel) and one push button stand on the table. The observe phase
         has ``max_count + distractors`` slots of ``flash_steps`` lit steps and a dark gap
         each. The screen flashes in ``count`` of them (the cue, 1..max_count); the button's
         own cap flashes in ``distractors`` others (a light that must not be counted); the
         rest stay dark. The phase lasts as long whatever the count.
delay    ``delay`` steps, everything dark.
recall   Press the button as many times as the screen flashed.

A press is the rising edge of the cap travelling past 6 mm (as in SequenceRecall).
Success: exactly ``count`` presses, then ``QUIET_STEPS`` steps without another.
Failure: a press beyond ``count``. Chance: 1 / max_count (a memoryless agent
guesses the count); 25% at defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from embodied.envs.scene import SceneBuilder
from embodied.envs.workcell import COLORS, NEUTRAL, WorkcellEnv
from embodied.tasks.remember_color import PANEL_XY, PANEL_YAW
from embodied.tasks.sequence_recall import DARK, LIT_COLOURS, PRESS_BUDGET, rising_presses

BUTTON_XY = np.array([0.45, 0.05])
LEAD_STEPS, GAP_STEPS = 3, 3
QUIET_STEPS = 20  # steps without a press after the last one that count as "done"


@dataclass
class CountFlashesOptions:
    PRESETS: ClassVar[dict[str, dict]] = {
        "easy": {},
        "medium": {"max_count": 5, "distractors": 2, "delay": 100},
        "hard": {"max_count": 7, "distractors": 3, "flash_steps": 3, "delay": 400},
        "extreme": {"max_count": 8, "distractors": 4, "flash_steps": 2, "delay": 1000},
    }
    max_count: int = 4  # the screen flashes 1..max_count times
    distractors: int = 1  # flashes of the button's own cap, not to be counted
    flash_steps: int = 4
    delay: int = 20

    def validate(self) -> None:
        if not 2 <= self.max_count <= 8:
            raise ValueError(f"max_count must be in 2..8, got {self.max_count}")
        if not 0 <= self.distractors <= 4:
            raise ValueError(f"distractors must be in 0..4, got {self.distractors}")
        if self.flash_steps < 1 or self.delay < 0:
            raise ValueError("flash_steps must be >= 1 and delay >= 0")


class CountFlashes(WorkcellEnv):
    family = "Counting"
    memory_skill = "counting events of one source among distractor events"
    Options = CountFlashesOptions
    chance = "1 / max_count (25% at defaults)"

    @classmethod
    def chance_rate(cls, options: CountFlashesOptions) -> float:
        return 1.0 / options.max_count

    def _add_props(self, scene: SceneBuilder) -> None:
        scene.attach("cue_panel", "cue_panel", "cue_panel", (*PANEL_XY, 0.0), yaw=PANEL_YAW)
        scene.attach("button", "button0", "button", (*BUTTON_XY, 0.0))
        scene.spec.add_exclude(bodyname1="button0/base", bodyname2="button0/cap")  # see SequenceRecall

    def _setup(self) -> None:
        super()._setup()
        self._press_adr = np.array([self.joint_qpos_adr("button0/press")])

    @property
    def slots(self) -> int:
        return self.options.max_count + self.options.distractors

    def _phase_lengths(self) -> tuple[int, int]:
        return LEAD_STEPS + self.slots * (self.options.flash_steps + GAP_STEPS), self.options.delay

    def extra_steps(self) -> int:
        o, default = self.options, CountFlashesOptions()
        show = (o.max_count + o.distractors - default.max_count - default.distractors) * (o.flash_steps + GAP_STEPS)
        show += (default.max_count + default.distractors) * (o.flash_steps - default.flash_steps)
        return super().extra_steps() + max(0, show) + max(0, o.max_count - default.max_count) * PRESS_BUDGET

    def _sample_layout(self, rng: np.random.Generator) -> None:
        self.lit_colour = LIT_COLOURS[rng.integers(len(LIT_COLOURS))]
        self.slot_order = [int(s) for s in rng.permutation(self.slots)]

    def _sample_cue(self, rng: np.random.Generator) -> int:
        return int(rng.integers(1, self.options.max_count + 1))

    def cue_variants(self) -> list[int]:
        return [1, self.options.max_count]

    def _reset_scene(self) -> None:
        o = self.options
        if not isinstance(self.cue, (int, np.integer)) or not 1 <= self.cue <= o.max_count:
            raise ValueError(f"cue must be a flash count in 1..{o.max_count}, got {self.cue!r}")
        self.count = int(self.cue)
        self.button_slots = set(self.slot_order[: o.distractors])
        self.screen_slots = set(self.slot_order[o.distractors : o.distractors + self.count])
        self._clear_presses()
        self.home_robot()
        self._light(0)

    def _clear_presses(self) -> None:
        self.presses = 0
        self.last_press = -1
        self._down = np.zeros(1, dtype=bool)

    def _light(self, t: int) -> None:
        """Paint the screen and the cap for observe step ``t`` (any other ``t``: both dark)."""
        slot, within = divmod(t - LEAD_STEPS, self.options.flash_steps + GAP_STEPS)
        on = t >= LEAD_STEPS and slot < self.slots and within < self.options.flash_steps
        lit = COLORS[self.lit_colour]
        self.paint("cue_panel", lit if on and slot in self.screen_slots else NEUTRAL, ("screen",))
        self.paint("button0", lit if on and slot in self.button_slots else DARK, ("cap",))

    def _script(self, phase: str, k: int) -> None:
        self._light(k if phase == "observe" else -1)

    def _recall_state(self) -> None:
        self._clear_presses()
        self._light(-1)

    def travel(self) -> np.ndarray:
        return -self.data.qpos[self._press_adr]

    def _evaluate(self) -> tuple[bool, bool]:
        rising, self._down = rising_presses(self._down, self.travel())
        if len(rising):
            self.presses += 1
            self.last_press = self.t
            if self.presses > self.count:
                return False, True
        done = self.presses == self.count and self.t - self.last_press >= QUIET_STEPS
        return done, False

    def _instruction(self, phase: str) -> str:
        if phase == "recall":
            return "press the button as many times as the screen flashed"
        return "watch the screen and count how many times it flashes"

    def _target_rgb(self) -> np.ndarray:
        return np.zeros(3, dtype=np.float32)

    def privileged(self) -> dict:
        return {
            "count": self.count,
            "presses": self.presses,
            "button_xy": BUTTON_XY.copy(),
            "screen_slots": sorted(self.screen_slots),
            "button_slots": sorted(self.button_slots),
            "travel": self.travel(),
        }
