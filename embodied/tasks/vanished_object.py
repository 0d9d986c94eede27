"""VanishedObject: during the tour an object disappears while the robot looks away; go where it was.

observe  The tour (env-driven, agent actions ignored). In one room, after the usual full turn,
         the robot faces one object, watches it, turns half way round, and while it looks away
         the object is taken out of the apartment; the robot turns back, looks at the empty spot,
         and turns back to the heading it came in with. Every step count is fixed, so the goal's
         step does not depend on the spot. The cue is the object's spot.
delay    ``delay`` steps at the dock (actions ignored).
recall   "go to where the object that disappeared was". The goal names no object and carries
         no colour; the object is gone and every other one stands where it stood, so the recall
         scene says nothing about which spot emptied. The memory must notice that something it
         expected to see is missing, and keep where it was.

Success: within 0.5 m of the emptied spot (xy) and facing it within 30 degrees, before
``time_limit`` recall steps run out (then the episode fails).
Chance: as MovedObject, a memoryless agent commits to one of the 22 - objects + 1 spots the
emptied one could be: 1/13 = 7.7% at the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from embodied.envs.nav_drive import TourBuilder
from embodied.envs.nav_presets import nav_presets
from embodied.tasks.moved_object import MovedObject, MovedObjectOptions
from embodied.tasks.room_recall import HIDDEN

FACE_STEPS, WATCH_STEPS, AWAY_STEPS, LOOK_STEPS = 30, 5, 20, 15
AWAY = np.pi  # rad the robot turns away while the object goes
GOAL_TEXT = "go to where the object that disappeared was"


@dataclass
class VanishedObjectOptions(MovedObjectOptions):
    PRESETS: ClassVar[dict[str, dict]] = nav_presets()

    def validate(self) -> None:
        super().validate()
        if self.query != "now":
            raise ValueError(f"VanishedObject has no query knob (the object is gone); got query={self.query!r}")


class VanishedObject(MovedObject):
    family = "VanishedObject"
    memory_skill = "change detection: which object went missing, and where it had been"
    Options = VanishedObjectOptions

    def _sample_cue(self, rng: np.random.Generator) -> int:
        return int(rng.choice(self.reserved))

    def cue_variants(self) -> list[int]:
        return self.reserved[:2]

    def _spots(self) -> dict[str, int]:
        if not isinstance(self.cue, (int, np.integer)) or int(self.cue) not in self.reserved:
            raise ValueError(f"cue must be a reserved spot index, one of {self.reserved}; got {self.cue!r}")
        self.first_spot = self.now_spot = int(self.cue)
        return {**self.layout_spots, self.mover: self.first_spot}

    def _tour_in_room(self, tour: TourBuilder, room: int) -> None:
        if room != self.mover_room:
            return
        yaw = float(tour.pose[2])
        spot = self.apartment.slots[self.first_spot, :2]
        tour.face(spot, steps=FACE_STEPS)
        tour.hold(WATCH_STEPS)
        tour.turn(AWAY, steps=AWAY_STEPS)
        tour.mark("vanish")
        tour.hold(WATCH_STEPS)
        tour.face(spot, steps=AWAY_STEPS)
        tour.hold(LOOK_STEPS)  # the empty spot in view: what memory expected is not there
        tour.turn_to(yaw, steps=FACE_STEPS)

    def _script(self, phase: str, k: int) -> None:
        if phase == "observe" and k == self.tour_marks["vanish"]:
            self.put_object(self.mover, HIDDEN)

    def _recall_state(self) -> None:
        self.put_object(self.mover, HIDDEN)

    def _goal(self) -> tuple[np.ndarray, np.ndarray]:
        return self.apartment.slots[self.first_spot, :2].copy(), self.apartment.normals[self.first_spot]

    def _goal_text(self) -> str:
        return GOAL_TEXT

    def _target_rgb(self) -> np.ndarray:
        return np.zeros(3, dtype=np.float32)  # the colour would name the object
