"""StashAndFetch: the robot itself puts a block into a drawer, and fetches it back much later.

observe  Blocks stand on the table, the drawers shut. One drawer (the cue) slides open and the
         goal reads "put the <colour> block in the open drawer": the robot has ``STASH`` steps to
         pick the block up and set it down in that drawer. Then the goal turns to "wait", the arm
         is put back at its home pose, and the drawer shuts with whatever it holds (a block not
         stashed in time is put there by the env, so every later phase is the same whatever the
         robot did). Then ``distractor_moves`` times a distractor block is carried to a new spot.
delay    ``delay`` steps, every drawer closed.
recall   "retrieve the <colour> block": as HiddenObject, open the drawer it is in and lift it out.

Success: the robot stashed the block (it rested in the cued drawer's tray, out of the hand, when
the time to stash ran out) and then retrieves it as in HiddenObject; opening another drawer by
more than 0.04 m ends the episode. Chance: 1 / n_drawers (33% at defaults) for an agent that
stashes the block and then forgets where; one that does not stash it never succeeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from embodied.envs.workcell import BLOCK_HALF
from embodied.tasks.hidden_object import (
    CLOSE_STEPS, MOVE, OPEN_STEPS, SHOW, SHOW_OPEN, TRAY_TOP, HiddenObject, HiddenObjectOptions,
)

STASH = 150  # steps the robot has to put the block in the drawer
RESTED = 0.012  # m: a block this close above its resting height in the tray lies in it
TRAY_HALF_Y = 0.07  # m: half the tray's inner width


@dataclass
class StashAndFetchOptions(HiddenObjectOptions):
    PRESETS: ClassVar[dict[str, dict]] = HiddenObjectOptions.PRESETS


class StashAndFetch(HiddenObject):
    family = "OwnActions"
    memory_skill = "the robot's own actions: where it put something itself"
    Options = StashAndFetchOptions
    chance = "1 / n_drawers (33% at defaults), for an agent that stashes the block"
    # Blocks start no nearer the arm's base than 0.3 m: right in front of the base the arm is slow to
    # reach down over a block and carry it away.
    spot_low: ClassVar[np.ndarray] = np.array([0.3, -0.3])

    def _phase_lengths(self) -> tuple[int, int]:
        return SHOW + OPEN_STEPS + STASH + CLOSE_STEPS + MOVE * self.n_moves + 1, self.options.delay

    def _reset_scene(self) -> None:
        super()._reset_scene()
        self.stashed = False

    def _script(self, phase: str, k: int) -> None:
        k -= SHOW
        if phase != "observe" or k < 0:
            return
        if k < OPEN_STEPS:
            self.set_opening(self.cue, SHOW_OPEN * (k + 1) / OPEN_STEPS)
            return
        k -= OPEN_STEPS
        if k < STASH:
            self.set_opening(self.cue, SHOW_OPEN)  # held open (on its own it slides back a little)
            return  # the robot's turn
        if k == STASH:
            self.stashed = self.in_cued_tray()
            self.home_robot()
        self._shut_and_move(k - STASH)  # a block not stashed is put in the drawer here

    def in_cued_tray(self) -> bool:
        """Whether the target rests in the cued drawer's tray, out of the hand."""
        pos = self.body_pos("target")
        x, y = self.unit_xy(self.cue)
        front = x - self.opening(self.cue)
        inside = front < pos[0] < x + 0.1 and abs(pos[1] - y) < TRAY_HALF_Y
        resting = pos[2] < TRAY_TOP + BLOCK_HALF + RESTED
        return bool(inside and resting and not self.touching("target", "robot"))

    def _evaluate(self) -> tuple[bool, bool]:
        success, failure = super()._evaluate()
        return success and self.stashed, failure

    def _instruction(self, phase: str) -> str:
        if phase == "recall":
            return f"retrieve the {self.colour} block"
        if phase == "observe" and SHOW + OPEN_STEPS <= self.t < SHOW + OPEN_STEPS + STASH:
            return f"put the {self.colour} block in the open drawer"
        return "wait"

    def privileged(self) -> dict:
        return {**super().privileged(), "stashed": self.stashed}
