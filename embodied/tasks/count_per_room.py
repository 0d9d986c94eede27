"""CountPerRoom: tour the apartment, then go to the room that held the most objects.

observe  The tour (as RoomRecall: every room, a full turn in each). The objects are spread over
         the four rooms so that one room holds more of them than any other, by exactly
         ``margin``; the cue is that room.
delay    ``delay`` steps at the dock (actions ignored).
recall   "go to the room that had the most objects". Every object is gone (taken away while
         the robot waited at the dock), so nothing in the recall scene tells which room it was.

Success: as RoomRecall, the base stands still (``DWELL`` steps) at least 0.3 m inside the room's
walls before ``time_limit`` recall steps run out. Chance: the most-held room is uniform over the
four rooms, and an agent that remembers nothing stops in one of them: 1/4 = 25%.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import ClassVar

import numpy as np

from embodied.envs.nav_layout import ROOMS
from embodied.envs.nav_presets import nav_presets
from embodied.tasks.room_recall import HIDDEN, RoomRecall, RoomRecallOptions

MOST_PER_ROOM = 5  # the smallest room in any layout has five object spots
GOAL_TEXT = "go to the room that had the most objects"


def room_counts(objects: int, margin: int) -> list[tuple[int, ...]]:
    """Every count vector (descending, one per room) that sums to ``objects`` and whose largest
    entry beats the second by exactly ``margin``."""
    return sorted({tuple(sorted(c, reverse=True)) for c in product(range(MOST_PER_ROOM + 1), repeat=len(ROOMS))
                   if sum(c) == objects and sorted(c)[-1] - sorted(c)[-2] == margin})


@dataclass
class CountPerRoomOptions(RoomRecallOptions):
    PRESETS: ClassVar[dict[str, dict]] = nav_presets({"hard": {"margin": 1}, "extreme": {"margin": 1}})
    margin: int = 2  # how many more objects the answer room holds than the next one

    def validate(self) -> None:
        super().validate()
        if self.margin < 1:
            raise ValueError(f"margin must be >= 1, got {self.margin}")
        if not room_counts(self.objects, self.margin):
            raise ValueError(f"no way to spread objects={self.objects} over {len(ROOMS)} rooms (at most "
                             f"{MOST_PER_ROOM} each) with the most-held room ahead by margin={self.margin}")


class CountPerRoom(RoomRecall):
    family = "CountPerRoom"
    memory_skill = "counting per place: which room held the most objects"
    Options = CountPerRoomOptions
    chance = "1 / 4 rooms the most-held one could be (25%)"

    def _sample_task(self, rng: np.random.Generator) -> None:
        choices = room_counts(self.options.objects, self.options.margin)
        self.counts = choices[int(rng.integers(len(choices)))]  # descending: the answer room's first
        self.rank_of_rest = [int(i) for i in rng.permutation(len(ROOMS) - 1)]
        rooms = self.apartment.slot_room
        self.room_spots = [[int(k) for k in rng.permutation(np.flatnonzero(rooms == r))] for r in range(len(ROOMS))]

    def _sample_cue(self, rng: np.random.Generator) -> int:
        return int(rng.integers(len(ROOMS)))

    def cue_variants(self) -> list[int]:
        return [0, 1]

    def per_room(self) -> list[int]:
        """Objects per room (index into ``nav_layout.ROOMS``) for the current cue."""
        rest = [r for r in range(len(ROOMS)) if r != int(self.cue)]
        counts = [0] * len(ROOMS)
        counts[int(self.cue)] = self.counts[0]
        for r, rank in zip(rest, self.rank_of_rest):
            counts[r] = self.counts[1 + rank]
        return counts

    def _spots(self) -> dict[str, int]:
        if not isinstance(self.cue, (int, np.integer)) or not 0 <= int(self.cue) < len(ROOMS):
            raise ValueError(f"cue must be a room index in 0..{len(ROOMS) - 1}; got {self.cue!r}")
        self._restart_dwell()
        spots, objects = {}, iter(self.active)
        for room, n in enumerate(self.per_room()):
            for k in self.room_spots[room][:n]:
                spots[next(objects)] = k
        # The goal names no object; one that stood in the answer room stands for it (tests that every
        # goal's object is seen on the tour and gone at goal time use it).
        self.target = next(c for c, k in spots.items() if self.apartment.slot_room[k] == int(self.cue))
        return spots

    @property
    def target_room(self) -> int:
        return int(self.cue)

    def _recall_state(self) -> None:
        for cls in self.active:
            self.put_object(cls, HIDDEN)

    def _goal_text(self) -> str:
        return GOAL_TEXT

    def _target_rgb(self) -> np.ndarray:
        return np.zeros(3, dtype=np.float32)  # the goal names no object

    def privileged(self) -> dict:
        return {**super().privileged(), "target_spot": None, "per_room": self.per_room(),
                "objects": {c: self.apartment.slots[k, :2].copy() for c, k in self.spot.items()}}
