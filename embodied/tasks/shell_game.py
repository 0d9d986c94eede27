"""ShellGame: follow the cup that hides the ball, then lift it.

observe  The ball rests on the table in view while identical cups hover above
         it; the cups come down, one of them over the ball (the cue), and then
         ``n_swaps`` times two cups trade places, the ball travelling hidden
         inside its cup.
delay    ``delay`` steps with the cups at rest.
recall   Grasp the knob of the cup that covers the ball and lift it.

Success: the right cup stands upright at least 5 cm above the table.
Failure: any other cup rises more than 3 cm. Chance: 1 / n_cups.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import mujoco
import numpy as np

from embodied.envs.scene import SceneBuilder
from embodied.envs.workcell import COLORS, WorkcellEnv

ROW_X = 0.45
SPACING = 0.12  # 8 cm cups with a 4 cm gap: a gripper finger fits between them
BALL_R = 0.016
HOVER = 0.12  # cup rim height before lowering: the ball stays in the scene camera's view
SHOW_STEPS, LOWER_STEPS, SWAP_STEPS, SETTLE_STEPS = 6, 8, 14, 2
# Swapping cups step out of the row by more than a cup width, so they pass the
# cups between them (and each other) without touching.
SIDESTEP = 0.09
LIFTED, DISTURBED = 0.05, 0.03
FOOT_R = 0.0025
CUP_COLOURS = tuple(c for c in COLORS if c != "yellow")  # the ball is yellow


@dataclass
class ShellGameOptions:
    PRESETS: ClassVar[dict[str, dict]] = {
        "easy": {},
        "medium": {"n_cups": 4, "n_swaps": 3, "delay": 100},
        "hard": {"n_cups": 5, "n_swaps": 6, "delay": 400},
        "extreme": {"n_cups": 5, "n_swaps": 10, "delay": 1000},
    }
    n_cups: int = 3
    n_swaps: int = 1
    delay: int = 20

    def validate(self) -> None:
        if not 2 <= self.n_cups <= 5:
            raise ValueError(f"n_cups must be in 2..5, got {self.n_cups}")
        if not 0 <= self.n_swaps <= 10:
            raise ValueError(f"n_swaps must be in 0..10, got {self.n_swaps}")
        if self.delay < 0:
            raise ValueError(f"delay must be >= 0, got {self.delay}")


def _add_feet(scene: SceneBuilder, cup_body: str) -> None:
    """Let a cup touch the table through eight tiny spheres instead of its walls.

    Four thin walls on a box table make 16 box-box contacts per cup, which
    made a step 40% slower; spheres at the rim's corners make four while the
    cup stands. They sit inside the walls and the top plate,
    so they never show, and a cup knocked over still rests on its corners.
    """
    body = scene.spec.body(cup_body)
    feet = body.add_body(name=f"{cup_body}_feet")
    c = 0.04 - FOOT_R
    for z in (FOOT_R, 0.07 - FOOT_R):
        for sx in (-1, 1):
            for sy in (-1, 1):
                pos = [sx * c, sy * c, z]
                feet.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[FOOT_R, 0, 0], pos=pos, mass=1e-4)
    scene.spec.add_exclude(bodyname1="table", bodyname2=cup_body)


def _smooth(s: float) -> float:
    s = min(max(s, 0.0), 1.0)
    return s * s * (3.0 - 2.0 * s)


class ShellGame(WorkcellEnv):
    family = "ShellGame"
    memory_skill = "tracking a hidden object through swaps of identical cups"
    Options = ShellGameOptions
    chance = "1 / n_cups (33% at defaults)"

    @classmethod
    def chance_rate(cls, options: ShellGameOptions) -> float:
        return 1.0 / options.n_cups

    def _add_props(self, scene: SceneBuilder) -> None:
        for i in range(self.options.n_cups):
            entity = scene.attach("cup", f"cup{i}", "cup", (ROW_X, self._slot_y(i), 0.0))
            _add_feet(scene, entity.root_body)
        scene.attach("ball", "ball", "ball", (ROW_X, 0.0, BALL_R))

    def _setup(self) -> None:
        super()._setup()
        # Looked up once: named lookups every step would cost a tenth of a step.
        self._cup_ids = np.array([self.body_id(f"cup{i}") for i in range(self.options.n_cups)])
        self._ball_id = self.body_id("ball")

    def _slot_y(self, slot: int) -> float:
        return (slot - (self.options.n_cups - 1) / 2) * SPACING

    def _phase_lengths(self) -> tuple[int, int]:
        o = self.options
        return SHOW_STEPS + LOWER_STEPS + o.n_swaps * SWAP_STEPS + SETTLE_STEPS, o.delay

    def extra_steps(self) -> int:
        return super().extra_steps() + max(0, self.options.n_swaps - ShellGameOptions().n_swaps) * SWAP_STEPS

    def _sample_layout(self, rng: np.random.Generator) -> None:
        self.colour = CUP_COLOURS[rng.integers(len(CUP_COLOURS))]
        n = self.options.n_cups
        # The swaps belong to the layout, so the cups' final order never depends
        # on the cue; only which cup carries the ball does.
        self.swaps = [tuple(int(s) for s in rng.choice(n, size=2, replace=False)) for _ in range(self.options.n_swaps)]
        self.final_slot = list(range(n))  # final_slot[cup] after every swap
        for a, b in self.swaps:
            for cup, slot in enumerate(self.final_slot):
                self.final_slot[cup] = b if slot == a else a if slot == b else slot

    def _sample_cue(self, rng: np.random.Generator) -> int:
        return int(rng.integers(self.options.n_cups))

    def cue_variants(self) -> list[int]:
        return [0, 1]

    def _reset_scene(self) -> None:
        self.ball_cup = int(self.cue)  # cup i starts over slot i
        if not 0 <= self.ball_cup < self.options.n_cups:
            raise ValueError(f"cue must be a cup index in 0..{self.options.n_cups - 1}, got {self.cue!r}")
        for i in range(self.options.n_cups):
            self.paint(f"cup{i}", COLORS[self.colour])
        self.home_robot()
        self._animate(0)

    def _cup_poses(self, k: int) -> np.ndarray:
        """(n, 3) cup positions at observe step ``k`` of the animation."""
        n = self.options.n_cups
        slots = list(range(n))
        pos = np.array([[ROW_X, self._slot_y(s), 0.0] for s in slots])
        if k < SHOW_STEPS + LOWER_STEPS:
            pos[:, 2] = HOVER * (1.0 - _smooth((k - SHOW_STEPS + 1) / LOWER_STEPS))
            return pos
        k -= SHOW_STEPS + LOWER_STEPS
        for j, (a, b) in enumerate(self.swaps):
            moving = {cup: (slot, b if slot == a else a) for cup, slot in enumerate(slots) if slot in (a, b)}
            if k < (j + 1) * SWAP_STEPS:
                u = (k - j * SWAP_STEPS + 1) / SWAP_STEPS
                # Out of the row (first quarter), along it (middle half), back in (last quarter).
                out = _smooth(4 * u) - _smooth(4 * u - 3)
                along = _smooth(2 * u - 0.5)
                for cup, (src, dst) in moving.items():
                    side = 1.0 if src == a else -1.0
                    y0, y1 = self._slot_y(src), self._slot_y(dst)
                    pos[cup] = [ROW_X + side * SIDESTEP * out, y0 + (y1 - y0) * along, 0.0]
                return pos
            for cup, (_, dst) in moving.items():
                slots[cup] = dst
                pos[cup] = [ROW_X, self._slot_y(dst), 0.0]
        return pos

    def _animate(self, k: int) -> None:
        poses = self._cup_poses(k)
        for i, p in enumerate(poses):
            self.place(f"cup{i}", p)
        self.place("ball", (*poses[self.ball_cup, :2], BALL_R))

    def _script(self, phase: str, k: int) -> None:
        if phase == "observe":
            self._animate(k)

    def _recall_state(self) -> None:
        for cup, slot in enumerate(self.final_slot):
            self.place(f"cup{cup}", (ROW_X, self._slot_y(slot), 0.0))
        self.place("ball", (ROW_X, self._slot_y(self.final_slot[self.ball_cup]), BALL_R))

    def _evaluate(self) -> tuple[bool, bool]:
        heights = self.data.xpos[self._cup_ids, 2]
        disturbed = heights > DISTURBED
        disturbed[self.ball_cup] = False
        if disturbed.any():
            return False, True
        right = heights[self.ball_cup]
        # Upright, so a cup knocked onto its top does not count as lifted.
        upright = self.data.xmat[self._cup_ids[self.ball_cup], 8] > 0.9
        return bool(right >= LIFTED and upright), False

    def _instruction(self, phase: str) -> str:
        if phase == "recall":
            return f"lift the {self.colour} cup that hides the ball"
        return "watch which cup covers the ball"

    def _target_rgb(self) -> np.ndarray:
        return np.array(COLORS[self.colour], dtype=np.float32)

    def privileged(self) -> dict:
        return {
            "ball_cup": self.ball_cup,
            "ball_slot": self.final_slot[self.ball_cup],
            "cup_pos": self.data.xpos[self._cup_ids].copy(),
            "ball_pos": self.data.xpos[self._ball_id].copy(),
            "swaps": list(self.swaps),
        }
