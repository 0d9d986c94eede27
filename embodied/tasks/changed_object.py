"""ChangedObject: during the tour one object is moved in view; go to the one that moved.

As MovedObject (the same tour, the same move, the same spots), but the goal never names the
object: "go to the object that was moved" (``query="now"``) or "go to where the object that was
moved was first seen" (``query="first"``), and the goal carries no colour. The memory must tell
which of the objects changed, and where it went (or came from).

Success and chance as MovedObject: within 0.5 m of the asked place and facing it, before
``time_limit`` recall steps; a memoryless agent commits to one of the 22 - objects + 1 places the
asked spot could be (7.7% at defaults).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from embodied.envs.nav_presets import nav_presets
from embodied.tasks.moved_object import MovedObject, MovedObjectOptions


@dataclass
class ChangedObjectOptions(MovedObjectOptions):
    PRESETS: ClassVar[dict[str, dict]] = nav_presets({"hard": {"query": "first"}, "extreme": {"query": "first"}})


class ChangedObject(MovedObject):
    family = "ChangedObject"
    memory_skill = "change detection: which object moved, and where it is (or was)"
    Options = ChangedObjectOptions

    def _goal_text(self) -> str:
        if self.options.query == "now":
            return "go to the object that was moved"
        return "go to where the object that was moved was first seen"

    def _target_rgb(self) -> np.ndarray:
        return np.zeros(3, dtype=np.float32)  # the colour would name the object
