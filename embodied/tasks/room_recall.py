"""RoomRecall: tour the apartment, then go to the room where an object was seen.

observe  The tour (env-driven, agent actions ignored): every room, a full
         turn in each; the target stands on one of the furniture spots.
delay    ``delay`` steps at the dock (actions still ignored).
recall   "go to the room where you saw the <colour> <class>". The target is
         gone (taken away while the robot waited at the dock); every other
         object stays where it was, so nothing in the recall scene tells
         which room it was in. The cue is the target's spot. One spot per
         room is kept free of the other objects and the cue is one of
         those four, so the target's room is uniform over the rooms.

Success: the robot's base stands inside the target's room, at least
``MARGIN`` m inside its walls, and has stood still (under 5 mm and 0.01 rad
per step) for ``DWELL`` consecutive steps, before ``time_limit`` recall
steps run out (then the episode fails). A robot that drives through the
room without stopping there does not succeed.
Chance: an agent that remembers nothing stops in one of the four rooms, and
the target's room is uniform over them: 1/4 = 25% (waiting at the dock
succeeds exactly when the target was in the dock's room).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from embodied.envs.apartment import NavigationEnv, NavOptions
from embodied.envs.nav_presets import nav_presets
from embodied.envs.nav_layout import ROOMS, room_of

MARGIN = 0.3  # m inside the room's wall centre lines
DWELL = 5  # still steps that count as stopping
STILL_MOVE, STILL_TURN = 0.005, 0.01  # m and rad per step
HIDDEN = (0.0, -5.0, -3.0)  # where an object out of the scene waits, below the floor


@dataclass
class RoomRecallOptions(NavOptions):
    PRESETS: ClassVar[dict[str, dict]] = nav_presets()


class RoomRecall(NavigationEnv):
    family = "RoomRecall"
    memory_skill = "which room an object (now gone) stood in"
    Options = RoomRecallOptions
    chance = "1 / 4 rooms the target could have been in (25%)"

    @classmethod
    def chance_rate(cls, options: RoomRecallOptions) -> float:
        return 1.0 / len(ROOMS)

    def _sample_task(self, rng: np.random.Generator) -> None:
        self.target = self.active[0]  # ``active`` is already in random order
        rooms = self.apartment.slot_room
        # One reserved spot per room, so the target's room is uniform whatever the other objects take.
        self.reserved = [int(rng.choice(np.flatnonzero(rooms == r))) for r in range(len(ROOMS))]
        self.layout_spots = self._assign_spots(rng, self.active[1:], exclude=self.reserved)

    def _sample_cue(self, rng: np.random.Generator) -> int:
        return int(rng.choice(self.reserved))

    def cue_variants(self) -> list[int]:
        """Two reserved spots, in different rooms."""
        return self.reserved[:2]

    def _spots(self) -> dict[str, int]:
        if not isinstance(self.cue, (int, np.integer)) or int(self.cue) not in self.reserved:
            raise ValueError(f"cue must be a reserved spot index, one of {self.reserved}; got {self.cue!r}")
        self._restart_dwell()
        return {**self.layout_spots, self.target: int(self.cue)}

    def _restart_dwell(self) -> None:
        """Forget the stillness count (a new episode starts moving)."""
        self._still = 0
        self._last_pose: np.ndarray | None = None

    @property
    def target_room(self) -> int:
        """Index (nav_layout.ROOMS) of the room the target stood in."""
        return int(self.apartment.slot_room[int(self.cue)])

    def _recall_state(self) -> None:
        self.put_object(self.target, HIDDEN)

    def _goal(self) -> tuple[np.ndarray, np.ndarray]:
        """The target room's tour viewpoint (a free spot near its middle); no furniture to face."""
        return self.apartment.viewpoints[self.target_room].copy(), np.zeros(2)

    def _goal_object(self) -> str:
        return self.target

    def _goal_text(self) -> str:
        return f"go to the room where you saw the {self.colour[self.target]} {self.target}"

    def inside_target_room(self, pose=None) -> bool:
        """Whether the base's centre is at least ``MARGIN`` m inside the target room's walls."""
        xy = self.robot_pose()[:2] if pose is None else np.asarray(pose)[:2]
        x0, y0, x1, y1 = ROOMS[self.target_room]
        return bool(room_of(xy) == self.target_room and x0 + MARGIN <= xy[0] <= x1 - MARGIN
                    and y0 + MARGIN <= xy[1] <= y1 - MARGIN)

    def _evaluate(self) -> tuple[bool, bool]:
        pose = self.robot_pose()
        last, self._last_pose = self._last_pose, pose
        if last is not None:
            turn = abs(float((pose[2] - last[2] + np.pi) % (2 * np.pi) - np.pi))
            still = float(np.linalg.norm(pose[:2] - last[:2])) < STILL_MOVE and turn < STILL_TURN
            self._still = self._still + 1 if still else 0
        if self._still >= DWELL and self.inside_target_room(pose):
            return True, False
        return False, self.t - self.recall_start >= self.options.time_limit

    def privileged(self) -> dict:
        x0, y0, x1, y1 = ROOMS[self.target_room]
        return {**super().privileged(), "target": self.target, "target_spot": int(self.cue),
                "target_room": self.target_room, "room_box": [float(v) for v in (x0, y0, x1, y1)],
                "room_theme": self.apartment.themes[self.target_room]}
