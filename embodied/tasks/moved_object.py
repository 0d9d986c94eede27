"""MovedObject: during the tour an object is moved in view; go where it is now, or where it was.

observe  The tour (env-driven, agent actions ignored). In the mover's room,
         after the usual full turn, the robot faces the object, the env
         lifts it and carries it to another spot in that room (4 s) while the
         robot turns to follow it, watches it at the new spot, and turns
         back; every step count is fixed, so the goal's step does not
         depend on the spots.
delay    ``delay`` steps at the dock (actions still ignored).
recall   "go to the <colour> <class>" (``query="now"``) or "go to where the
         <colour> <class> was first seen" (``query="first"``). Nothing is in
         view from the dock. The cue is the (first, now) pair of spots.

Success: within 0.5 m of the asked place (xy) and facing it within 30
degrees, before ``time_limit`` recall steps run out (then the episode fails).
Chance: a memoryless agent commits to one of the 22 - objects + 1 places the
asked spot could be: 1/13 = 7.7% at the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from embodied.envs.apartment import NavigationEnv, NavOptions
from embodied.envs.nav_drive import TourBuilder, heading
from embodied.envs.nav_presets import nav_presets

FACE_STEPS, WATCH_STEPS, GLIDE_STEPS, AFTER_STEPS = 30, 5, 40, 12
MIN_MOVE = 1.0  # metres between the first and the new spot


@dataclass
class MovedObjectOptions(NavOptions):
    PRESETS: ClassVar[dict[str, dict]] = nav_presets({"hard": {"query": "first"}, "extreme": {"query": "first"}})
    query: str = "now"  # "now": where the object is at the end; "first": where it was first seen

    def validate(self) -> None:
        super().validate()
        if self.query not in ("now", "first"):
            raise ValueError(f"query must be 'now' or 'first', got {self.query!r}")


class MovedObject(NavigationEnv):
    family = "MovedObject"
    memory_skill = "an object's latest place, or its first one (history)"
    Options = MovedObjectOptions
    chance = "1 / (22 spots - objects + 1) places the asked spot could be (7.7% at defaults)"

    @classmethod
    def chance_rate(cls, options: MovedObjectOptions) -> float:
        return 1.0 / cls.candidates(options)

    def _sample_task(self, rng: np.random.Generator) -> None:
        self.mover = self.active[0]
        slots, rooms = self.apartment.slots[:, :2], self.apartment.slot_room
        far = [(a, b) for a in range(self.SLOTS) for b in range(a + 1, self.SLOTS)
               if rooms[a] == rooms[b] and np.linalg.norm(slots[a] - slots[b]) >= MIN_MOVE]
        if not far:
            raise RuntimeError("no room has two spots far enough apart for a move")
        self.mover_room = int(rooms[far[int(rng.integers(len(far)))][0]])
        in_room = [k for k in range(self.SLOTS) if rooms[k] == self.mover_room]
        # Keep up to three of the room's spots free for the move, pairwise far enough apart to tell apart.
        self.reserved: list[int] = []
        for _ in range(50):
            pick = [int(k) for k in rng.permutation(in_room)[:3]]
            pairs = [(a, b) for a in pick for b in pick if a < b and np.linalg.norm(slots[a] - slots[b]) >= MIN_MOVE]
            if len(pairs) == 3:
                self.reserved = pick
                break
            if pairs and not self.reserved:
                self.reserved = list(pairs[0])
        if not self.reserved:
            self.reserved = list(next(p for p in far if rooms[p[0]] == self.mover_room))
        self.layout_spots = self._assign_spots(rng, self.active[1:], exclude=self.reserved)

    def _pairs(self) -> list[tuple[int, int]]:
        slots = self.apartment.slots[:, :2]
        return [(a, b) for a in self.reserved for b in self.reserved
                if a != b and np.linalg.norm(slots[a] - slots[b]) >= MIN_MOVE]

    def _sample_cue(self, rng: np.random.Generator) -> tuple[int, int]:
        pairs = self._pairs()
        return pairs[int(rng.integers(len(pairs)))]

    def cue_variants(self) -> list[tuple[int, int]]:
        a, b = self._pairs()[0]
        return [(a, b), (b, a)]

    def _spots(self) -> dict[str, int]:
        cue = tuple(int(k) for k in np.asarray(self.cue).ravel())
        if cue not in self._pairs():
            raise ValueError(f"cue must be a (first, now) pair of spots, one of {self._pairs()}; got {self.cue!r}")
        self.first_spot, self.now_spot = cue
        return {**self.layout_spots, self.mover: self.first_spot}

    def _glide(self, s: float) -> np.ndarray:
        """Object position (3,) at fraction ``s`` of the move: up, across and down."""
        a, b = self.apartment.slots[self.first_spot], self.apartment.slots[self.now_spot]
        u = s * s * (3 - 2 * s)
        return a + u * (b - a) + np.array([0.0, 0.0, 0.3 * np.sin(np.pi * s)])

    def _tour_in_room(self, tour: TourBuilder, room: int) -> None:
        if room != self.mover_room:
            return
        eye, yaw = tour.pose[:2].copy(), float(tour.pose[2])
        tour.face(self._glide(0.0)[:2], steps=FACE_STEPS)
        tour.hold(WATCH_STEPS)
        tour.mark("move")
        for i in range(1, GLIDE_STEPS + 1):
            # Follow the object, no faster than the tour's turning rate.
            want = heading(eye, self._glide(i / GLIDE_STEPS))
            delta = np.clip((want - tour.pose[2] + np.pi) % (2 * np.pi) - np.pi, -0.12, 0.12)
            tour.turn(float(delta), steps=1)
        tour.face(self._glide(1.0)[:2], steps=AFTER_STEPS)
        # Back to the heading the robot came in with, in a fixed number of steps: the rest of the tour,
        # and so the step at which the goal appears, must not depend on where the object went.
        tour.turn_to(yaw, steps=FACE_STEPS)

    def _script(self, phase: str, k: int) -> None:
        if phase == "observe":
            i = k - self.tour_marks["move"]
            if 0 < i <= GLIDE_STEPS:
                self.put_object(self.mover, self._glide(i / GLIDE_STEPS))

    def _recall_state(self) -> None:
        self.put_object(self.mover, self.apartment.slots[self.now_spot])

    def _goal(self) -> tuple[np.ndarray, np.ndarray]:
        spot = self.now_spot if self.options.query == "now" else self.first_spot
        xy = self.object_xy(self.mover) if self.options.query == "now" else self.apartment.slots[spot, :2].copy()
        return xy, self.apartment.normals[spot]

    def _goal_object(self) -> str:
        return self.mover

    def _goal_text(self) -> str:
        name = f"{self.colour[self.mover]} {self.mover}"
        return f"go to the {name}" if self.options.query == "now" else f"go to where the {name} was first seen"

    def _evaluate(self) -> tuple[bool, bool]:
        if self.reached(self._goal()[0]):
            return True, False
        return False, self.t - self.recall_start >= self.options.time_limit

    def privileged(self) -> dict:
        return {**super().privileged(), "mover": self.mover, "first_spot": self.first_spot,
                "now_spot": self.now_spot, "query": self.options.query}
