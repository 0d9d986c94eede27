"""Lifelong-v0's knobs (:class:`LifelongOptions`, with its presets) and the apartment's object spots
the knobs are checked against. The task itself: :mod:`embodied.tasks.lifelong`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from embodied.envs.nav_layout import FURNITURE
from embodied.envs.nav_presets import nav_presets
from embodied.tasks.lifelong_show import show_budget

# Object spots along each piece's front edge (local x, m); y and z are the piece's own slot row.
SPOT_X: dict[str, tuple[float, ...]] = {
    "counter": (-0.75, -0.45, -0.15, 0.15, 0.45, 0.75),
    "table": (-0.45, -0.15, 0.15, 0.45),
    "cabinet": (-0.27, 0.0, 0.27),
    "fridge": (),
    "sofa": (-0.6, -0.3, 0.0, 0.3, 0.6),
    "coffee_table": (-0.45, -0.15, 0.15, 0.45),
    "shelf": (-0.45, -0.15, 0.15, 0.45),
    "bed": (-0.45, -0.15, 0.15, 0.45),
    "nightstand": (0.0,),
    "dresser": (-0.45, -0.15, 0.15, 0.45),
    "desk": (-0.6, -0.3, 0.0, 0.3, 0.6),
    "armchair": (0.0,),
}
SPOTS = sum(len(SPOT_X[prop]) for _, prop in FURNITURE)  # 45
MAX_OBJECTS = SPOTS - 3  # a few spots stay free for moves and additions
# Colours the namer (embodied.perception.colour) may call by one name share a group; the instances
# of one class take colours of different groups, so "the <colour> <class>" names exactly one.
COLOUR_GROUPS = (("red",), ("orange", "brown"), ("yellow",), ("green", "lime"), ("cyan",), ("blue",), ("purple",),
                 ("pink",), ("white",), ("black",))
KINDS = ("object", "first", "was", "room")
SUCCESS_SHARE = 0.9  # an episode succeeds with at least this share of its goals reached

SHOW_TEXT = "watch the apartment"
WAIT_TEXT = "wait for the next goal"


@dataclass
class LifelongOptions:
    PRESETS: ClassVar[dict[str, dict]] = nav_presets({
        "easy": {},
        "medium": {"objects": 40, "goals": 24, "changes": 4, "period": 1150},
        "hard": {"objects": 42, "goals": 28, "changes": 5, "watched": 0.35, "period": 1200},
        "extreme": {"objects": 42, "goals": 32, "changes": 6, "watched": 0.25, "period": 1300},
    })
    objects: int = 40  # objects in the apartment at the start (up to 42 on 45 spots)
    goals: int = 20  # goals in the episode
    period: int = 1050  # steps from one goal to the next: the goal, the show, then the wait
    changes: int = 3  # moves, removals and additions between two goals
    watched: float = 0.5  # share of the changes made in view of the robot
    kinds: str = "object,first,was,room"  # goal kinds to draw from (comma-separated)
    delay: int = 10  # steps at the dock between the tour and the first goal
    time_limit: int = 400  # steps allowed per goal
    odom_noise: float = 0.0  # relative std of each wheel's encoder increments per control step

    @property
    def kind_list(self) -> tuple[str, ...]:
        return tuple(k.strip() for k in self.kinds.split(",") if k.strip())

    def validate(self) -> None:
        if not 4 <= self.objects <= MAX_OBJECTS:
            raise ValueError(f"objects must be in 4..{MAX_OBJECTS} ({SPOTS} spots, some kept free), got {self.objects}")
        if not 1 <= self.goals <= 1000:
            raise ValueError(f"goals must be in 1..1000, got {self.goals}")
        if not 0 <= self.changes <= 10:
            raise ValueError(f"changes must be in 0..10, got {self.changes}")
        if not 0.0 <= self.watched <= 1.0:
            raise ValueError(f"watched must be in [0, 1], got {self.watched}")
        kinds = self.kind_list
        if not kinds or any(k not in KINDS for k in kinds) or len(set(kinds)) != len(kinds):
            raise ValueError(f"kinds must name some of {', '.join(KINDS)} (comma-separated), got {self.kinds!r}")
        if self.delay < 0 or self.time_limit < 50:
            raise ValueError("delay must be >= 0 and time_limit >= 50 steps")
        if not 0.0 <= self.odom_noise <= 0.5:
            raise ValueError(f"odom_noise must be in [0, 0.5], got {self.odom_noise}")
        need = self.time_limit + show_budget(self.changes)
        if self.period < need:
            raise ValueError(f"period must be at least time_limit + the show ({need} steps for time_limit="
                             f"{self.time_limit}, changes={self.changes}), got {self.period}")
