"""ObjectRevisit: tour the apartment, then go back to an object named only afterwards.

observe  The tour: the env drives the robot through every room (a full turn
         in each) and docks it facing a blank wall. Agent actions are ignored.
delay    ``delay`` steps at the dock (actions still ignored).
recall   The goal appears: "go to the <colour> <class>". The target is not in
         view from the dock. The cue is the target's spot, so two episodes
         that differ only in the cue look the same until the robot moves.

Success: within 0.5 m of the target (xy) and facing it within 30 degrees,
before ``time_limit`` recall steps run out (then the episode fails).
Chance: a memoryless agent commits to one of the places the target could
be: the spots not taken by another object (22 spots - objects + 1), so
1/13 = 7.7% at the defaults; ``time_limit`` leaves no time to search them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from embodied.envs.apartment import NavigationEnv, NavOptions
from embodied.envs.nav_presets import nav_presets


@dataclass
class ObjectRevisitOptions(NavOptions):
    PRESETS: ClassVar[dict[str, dict]] = nav_presets()


class ObjectRevisit(NavigationEnv):
    family = "ObjectRevisit"
    memory_skill = "where an object seen on a tour is"
    Options = ObjectRevisitOptions
    chance = "1 / (22 spots - objects + 1) places the target could be (7.7% at defaults)"

    @classmethod
    def chance_rate(cls, options: ObjectRevisitOptions) -> float:
        return 1.0 / cls.candidates(options)

    def _sample_task(self, rng: np.random.Generator) -> None:
        self.target = self.active[0]  # ``active`` is already in random order
        self.layout_spots = self._assign_spots(rng, self.active[1:])
        self.free_spots = sorted(set(range(self.SLOTS)) - set(self.layout_spots.values()))

    def _sample_cue(self, rng: np.random.Generator) -> int:
        return int(rng.choice(self.free_spots))

    def cue_variants(self) -> list[int]:
        """Two free spots in different rooms."""
        return self._spots_in_two_rooms(self.free_spots)

    def _spots(self) -> dict[str, int]:
        if not isinstance(self.cue, (int, np.integer)) or self.cue not in self.free_spots:
            raise ValueError(f"cue must be a free spot index, one of {self.free_spots}; got {self.cue!r}")
        return {**self.layout_spots, self.target: int(self.cue)}

    def _goal(self) -> tuple[np.ndarray, np.ndarray]:
        return self.object_xy(self.target), self.apartment.normals[self.spot[self.target]]

    def _evaluate(self) -> tuple[bool, bool]:
        if self.reached(self._goal()[0]):
            return True, False
        return False, self.t - self.recall_start >= self.options.time_limit

    def _goal_object(self) -> str:
        return self.target

    def privileged(self) -> dict:
        return {**super().privileged(), "target": self.target, "target_spot": self.spot[self.target]}
