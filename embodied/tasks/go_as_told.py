"""GoAsTold: the goal is given only at the start of the tour; carry it out after.

observe  For ``tell_steps`` steps the goal text reads "remember this instruction: after the
         tour, go to the <colour> <class>" (the cue: which object); then the tour as in
         ObjectRevisit, during which ``distractors`` decoy lines "look at the <colour> <class>"
         name other objects, each for ``tell_steps`` steps, ``DECOY_GAP`` steps apart.
delay    ``delay`` steps at the dock.
recall   "do what you were told at the start": the object is never named again, and the
         goal carries no colour. Every object stays on its spot, so the scene at recall is the
         same whichever object was named.

Success: within 0.5 m of the named object (xy) and facing it within 30 degrees, before
``time_limit`` recall steps run out. Chance: 1 / objects (a memoryless agent, even one that
knows where everything is, picks one of them): 10% at defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from embodied.envs.apartment import DELAY_TEXT, TOUR_TEXT, NavigationEnv, NavOptions
from embodied.envs.nav_presets import nav_presets
from embodied.tasks.touch_as_told import TOLD_TEXT

DECOY_GAP = 60  # tour steps between the starts of two lines


@dataclass
class GoAsToldOptions(NavOptions):
    PRESETS: ClassVar[dict[str, dict]] = nav_presets({"medium": {"distractors": 2},
                                                      "hard": {"distractors": 3, "tell_steps": 5},
                                                      "extreme": {"distractors": 4, "tell_steps": 3}})
    distractors: int = 1  # decoy lines naming other objects during the tour
    tell_steps: int = 10

    def validate(self) -> None:
        super().validate()
        if not 0 <= self.distractors <= 4:
            raise ValueError(f"distractors must be in 0..4, got {self.distractors}")
        if not 1 <= self.tell_steps < DECOY_GAP:
            raise ValueError(f"tell_steps must be in 1..{DECOY_GAP - 1}, got {self.tell_steps}")


class GoAsTold(NavigationEnv):
    family = "GoAsTold"
    memory_skill = "an instruction given only at the start, and where its object is"
    Options = GoAsToldOptions
    chance = "1 / objects (10% at defaults)"

    @classmethod
    def chance_rate(cls, options: GoAsToldOptions) -> float:
        return 1.0 / options.objects

    def _sample_task(self, rng: np.random.Generator) -> None:
        self.layout_spots = self._assign_spots(rng, self.active)

    def _sample_cue(self, rng: np.random.Generator) -> int:
        return int(rng.integers(len(self.active)))

    def cue_variants(self) -> list[int]:
        """Two objects in different rooms."""
        spots = [self.layout_spots[cls] for cls in self.active]
        first, other = self._spots_in_two_rooms(spots)
        return [spots.index(first), spots.index(other)]

    def _spots(self) -> dict[str, int]:
        if not isinstance(self.cue, (int, np.integer)) or not 0 <= self.cue < len(self.active):
            raise ValueError(f"cue must be an object index in 0..{len(self.active) - 1}, got {self.cue!r}")
        self.target = self.active[int(self.cue)]
        return dict(self.layout_spots)

    def _named(self, line: int) -> str:
        """The object named by observe line ``line``: 0 the instruction, then the decoys (other objects)."""
        return self.active[(int(self.cue) + line) % len(self.active)]

    def _goal(self) -> tuple[np.ndarray, np.ndarray]:
        return self.object_xy(self.target), self.apartment.normals[self.spot[self.target]]

    def _goal_object(self) -> str:
        return self.target

    def _instruction(self, phase: str) -> str:
        if phase == "recall":
            return TOLD_TEXT
        if phase == "delay":
            return DELAY_TEXT
        line, within = divmod(self.t, DECOY_GAP)
        if within < self.options.tell_steps and line <= self.options.distractors:
            cls = self._named(line)
            if line == 0:
                return f"remember this instruction: after the tour, go to the {self.colour[cls]} {cls}"
            return f"look at the {self.colour[cls]} {cls}"
        return TOUR_TEXT

    def _target_rgb(self) -> np.ndarray:
        return np.zeros(3, dtype=np.float32)  # the colour would name the object

    def _evaluate(self) -> tuple[bool, bool]:
        if self.reached(self._goal()[0]):
            return True, False
        return False, self.t - self.recall_start >= self.options.time_limit

    def privileged(self) -> dict:
        return {**super().privileged(), "target": self.target, "target_spot": self.spot[self.target],
                "decoys": [self._named(k) for k in range(1, 1 + self.options.distractors)]}
