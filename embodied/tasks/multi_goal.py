"""MultiGoal: several goals in a row in the same apartment (Memory Maze / ReLIC style).

observe  The tour (env-driven, agent actions ignored); with ``tour="none"``
         just one step at the dock, so the agent must explore by itself.
delay    ``delay`` steps at the dock (actions still ignored).
recall   Goal after goal: "go to the <colour> <class>". Reaching one (within
         0.5 m, facing it within 30 degrees) announces the next at once,
         from wherever the robot stands. ``info["goal_steps"]`` lists the
         steps each reached goal took and ``info["goal_index"]`` the current
         one: an agent that remembers what it saw (on the tour or while
         searching) should need fewer steps for later goals.

Success: all ``goals`` reached, each within ``time_limit`` steps (the first
within 4x that when there is no tour, to leave time to explore); a goal that
runs out of time fails the episode. The cue is the first target's spot.
Chance: committing to one of the 22 - objects + 1 places per goal succeeds
with (1/13)^goals = 0.05% at the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from embodied.envs.apartment import NavigationEnv, NavOptions
from embodied.envs.nav_presets import nav_presets

EXPLORE_FACTOR = 4  # first-goal time budget multiplier without a tour


@dataclass
class MultiGoalOptions(NavOptions):
    PRESETS: ClassVar[dict[str, dict]] = nav_presets({"medium": {"goals": 4}, "hard": {"goals": 5}, "extreme": {"goals": 6}})
    goals: int = 3  # goals in sequence, each a different object
    tour: str = "full"  # "full": the env's tour first; "none": no tour, the agent explores during the first goal

    def validate(self) -> None:
        super().validate()
        if not 1 <= self.goals <= min(6, self.objects):
            raise ValueError(f"goals must be in 1..{min(6, self.objects)} (and <= objects), got {self.goals}")
        if self.tour not in ("full", "none"):
            raise ValueError(f"tour must be 'full' or 'none', got {self.tour!r}")


class MultiGoal(NavigationEnv):
    family = "MultiGoal"
    memory_skill = "several object places in one map, used in a row"
    Options = MultiGoalOptions
    chance = "(1 / (22 spots - objects + 1)) ** goals (0.05% at defaults)"

    @classmethod
    def chance_rate(cls, options: MultiGoalOptions) -> float:
        return (1.0 / cls.candidates(options)) ** options.goals

    @property
    def touring(self) -> bool:
        return self.options.tour == "full"

    def _sample_task(self, rng: np.random.Generator) -> None:
        self.sequence = self.active[: self.options.goals]  # ``active`` is already in random order
        self.layout_spots = self._assign_spots(rng, self.active[1:])
        self.free_spots = sorted(set(range(self.SLOTS)) - set(self.layout_spots.values()))

    def _sample_cue(self, rng: np.random.Generator) -> int:
        return int(rng.choice(self.free_spots))

    def cue_variants(self) -> list[int]:
        """Two free spots in different rooms for the first target."""
        return self._spots_in_two_rooms(self.free_spots)

    def _spots(self) -> dict[str, int]:
        if not isinstance(self.cue, (int, np.integer)) or self.cue not in self.free_spots:
            raise ValueError(f"cue must be a free spot index, one of {self.free_spots}; got {self.cue!r}")
        self.goal_index, self.goal_steps, self.goal_start = 0, [], 0
        return {**self.layout_spots, self.sequence[0]: int(self.cue)}

    def _on_phase(self, phase: str) -> None:
        super()._on_phase(phase)
        if phase == "recall":
            self.goal_start = self.t

    def _goal_object(self) -> str:
        return self.sequence[min(self.goal_index, len(self.sequence) - 1)]

    def _goal(self) -> tuple[np.ndarray, np.ndarray]:
        cls = self._goal_object()
        return self.object_xy(cls), self.apartment.normals[self.spot[cls]]

    def _evaluate(self) -> tuple[bool, bool]:
        if self.reached(self._goal()[0]):
            self.goal_steps.append(self.t - self.goal_start)
            self.goal_index += 1
            self.goal_start = self.t
            return self.goal_index == len(self.sequence), False
        limit = self.options.time_limit
        if self.goal_index == 0 and not self.touring:
            limit *= EXPLORE_FACTOR
        return False, self.t - self.goal_start >= limit

    def extra_steps(self) -> int:
        more = max(0, self.options.goals - type(self).Options().goals)
        return super().extra_steps() + more * self.options.time_limit

    def _task_info(self) -> dict:
        return {"goal_index": self.goal_index, "goal_steps": list(self.goal_steps)}

    def privileged(self) -> dict:
        return {**super().privileged(), "sequence": list(self.sequence), "goal_index": self.goal_index}
