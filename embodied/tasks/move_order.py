"""MoveOrder: blocks are moved one after another; touch the one moved first (or last).

observe  Blocks of distinct colours stand on the table. ``k`` of them are lifted, carried
         and set down at new spots, one after another (``SLOT`` steps each). Which blocks move
         and where they go come from the layout; the cue is the order they move in.
delay    ``delay`` steps.
recall   "touch the block that was moved first" (``query="first"``) or "... last". Every block
         stands where it ended, whatever the order, so the scene does not tell.

Success: the first block the robot touches is the one moved first (last); touching another
first is a failure. Chance: 1 / k (even knowing which blocks moved, the order is a guess):
33% at defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from embodied.envs.workcell import BLOCK_HALF
from embodied.tasks.hidden_object import arc
from embodied.tasks.remember_color import MIN_GAP, SPOT_HIGH, SPOT_LOW, RememberColor

SHOW, SLOT, CARRY_Z = 5, 20, 0.12  # steps before the first move, steps per move, carry height (m)


@dataclass
class MoveOrderOptions:
    PRESETS: ClassVar[dict[str, dict]] = {
        "easy": {},
        "medium": {"n_blocks": 5, "k": 4, "delay": 100},
        "hard": {"n_blocks": 6, "k": 5, "delay": 400, "query": "last"},
        "extreme": {"n_blocks": 6, "k": 6, "delay": 1000, "query": "last"},
    }
    n_blocks: int = 4  # blocks on the table; those that do not move are distractors
    k: int = 3  # blocks moved, one after another
    delay: int = 20
    query: str = "first"  # "first" or "last"

    def validate(self) -> None:
        if not 2 <= self.n_blocks <= 6:
            raise ValueError(f"n_blocks must be in 2..6, got {self.n_blocks}")
        if not 2 <= self.k <= self.n_blocks:
            raise ValueError(f"k must be in 2..n_blocks ({self.n_blocks}), got {self.k}")
        if self.delay < 0:
            raise ValueError(f"delay must be >= 0, got {self.delay}")
        if self.query not in ("first", "last"):
            raise ValueError(f"query must be 'first' or 'last', got {self.query!r}")

    @property
    def n_options(self) -> int:  # RememberColor's name for the number of blocks
        return self.n_blocks


class MoveOrder(RememberColor):
    family = "MoveOrder"
    memory_skill = "temporal order: which object was moved first (or last)"
    Options = MoveOrderOptions
    chance = "1 / k (33% at defaults)"

    @classmethod
    def chance_rate(cls, options: MoveOrderOptions) -> float:
        return 1.0 / options.k

    def _phase_lengths(self) -> tuple[int, int]:
        return SHOW + SLOT * self.options.k + 2, self.options.delay

    def extra_steps(self) -> int:
        return super().extra_steps() + max(0, self.options.k - MoveOrderOptions().k) * SLOT

    def _sample_layout(self, rng: np.random.Generator) -> None:
        super()._sample_layout(rng)
        self.movers = [int(i) for i in rng.permutation(self.options.n_blocks)[: self.options.k]]
        self.final_xy = self.block_xy.copy()
        for i in self.movers:  # each to a spot clear of every start and every end so far
            taken = np.concatenate([self.block_xy, self.final_xy[self.movers]])
            for _ in range(1000):
                xy = rng.uniform(SPOT_LOW, SPOT_HIGH)
                if np.all(np.linalg.norm(taken - xy, axis=1) >= MIN_GAP):
                    break
            else:
                raise RuntimeError("no free spot for a moved block")
            self.final_xy[i] = xy

    def _sample_cue(self, rng: np.random.Generator) -> tuple[int, ...]:
        return tuple(int(i) for i in rng.permutation(self.movers))

    def cue_variants(self) -> list[tuple[int, ...]]:
        order = tuple(self.movers)
        return [order, order[::-1]]

    def _reset_scene(self) -> None:
        order = tuple(int(i) for i in np.asarray(self.cue).ravel())
        if sorted(order) != sorted(self.movers):
            raise ValueError(f"cue must be an order of the moved blocks {sorted(self.movers)}, got {self.cue!r}")
        self.order = order
        self.target = order[0] if self.options.query == "first" else order[-1]
        self.first_touched = None
        self.home_robot()
        self._place_blocks()
        self._show(0)

    def _show(self, t: int) -> None:
        pass  # no screen in this task's scene

    def _add_props(self, scene) -> None:
        for i in range(self.options.n_blocks):
            scene.attach("block", f"block{i}", "block", (0.3 + 0.05 * i, 0.5, BLOCK_HALF))

    def _script(self, phase: str, k: int) -> None:
        if phase != "observe" or k < SHOW:
            return
        m, j = divmod(k - SHOW, SLOT)
        if m >= len(self.order):
            return
        i = self.order[m]
        start, end = (np.array([*xy[i], BLOCK_HALF]) for xy in (self.block_xy, self.final_xy))
        self.place(f"block{i}", arc(start, end, min((j + 1) / SLOT, 1.0), CARRY_Z), yaw=self.block_yaw[i])

    def _recall_state(self) -> None:
        self.first_touched = None
        for i in range(self.options.n_blocks):
            self.place(f"block{i}", (*self.final_xy[i], BLOCK_HALF), yaw=self.block_yaw[i])

    def _instruction(self, phase: str) -> str:
        if phase == "recall":
            return f"touch the block that was moved {self.options.query}"
        return "watch the blocks move"

    def privileged(self) -> dict:
        return {**super().privileged(), "order": list(self.order), "movers": list(self.movers)}
