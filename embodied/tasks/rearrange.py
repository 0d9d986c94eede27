"""Rearrange: watch several objects being displaced, then put everything back.

Places: ten table spots (a 2 x 5 grid, seeded jitter), two drawers and two
cups (an object "under a cup" stands on the table at the cup's spot, covered).
Each place holds at most one object. Objects: ``n_objects - 1`` blocks of
distinct colours and one yellow ball (the ball never goes into a drawer: it
would roll about the tray when the drawer moves).

Layout vs cue (the repo's phase rules): the layout draws every object's
*final* place, the one the scene leaves it in; the cue is the set of ``k``
*original* placements: which objects started elsewhere and where. Origins are
drawn among the places no object ends in, so the recall state (robot home,
every object at its final place, drawers shut, cups down) never depends on
the cue, and restoring one object never waits on another.

observe  ``SHOW`` steps of the start scene, then one ``SLOT`` per moved
         object: drawers it leaves or enters slide open and cups it leaves or
         goes under lift aside (prep), the object is carried lift-travel-lower
         (carry), then the drawers shut and the cups come back down (finish).
delay    ``delay`` steps, everything at rest in its final place.
         Goal text: "watch where everything goes"; no target colour.
recall   "put everything back where it was".

Success: every object within ``tolerance`` (xy) of its original place and
resting on the table there (or, for one that started in a drawer, resting
inside that drawer), none touching the robot. Failure: an object or a cup
falls off the table. Chance: see ``chance_rate``. Knobs: ``n_objects``
(4..6), ``k`` (1..6, at most ``n_objects``), ``delay``, ``tolerance``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar
from math import comb, perm

import numpy as np

from embodied.envs.scene import SceneBuilder
from embodied.envs.workcell import BLOCK_HALF, COLORS, WorkcellEnv
from embodied.tasks.hidden_object import IN_DRAWER_X, TRAY_TOP, arc
from embodied.tasks.reopen_drawer import JITTER, DrawerRow
from embodied.tasks.shell_game import BALL_R, _add_feet

# Rows: nearer the base (x < ~0.29 on the robot's axis) the arm folds to its
# elbow limit at carry height. The drawer row stands 3 cm further out than in
# ReopenDrawer so that an opened drawer's handle stays clear of the outer row
# (a block put down under the bar would land on it).
SPOT_X, SPOT_Y = (0.30, 0.36), (-0.28, -0.14, 0.0, 0.14, 0.28)
ROW_BACK = np.array([0.03, 0.0])
# Seeded jitter along the rows only: spots stay >= 6 cm apart, so the 3 cm
# tolerance discs of two places never overlap (the chance formula relies on it).
SPOT_JITTER = np.array([0.0, 0.01])
N_SPOTS, N_DRAWERS, N_CUPS = len(SPOT_X) * len(SPOT_Y), 2, 2
N_PLACES = N_SPOTS + N_DRAWERS + N_CUPS
# Cups stand beside the drawer row (lanes |y| < 0.19) and beyond the spots' reach
# of the hand; a lifted cup is set down further out, at its park spot.
CUP_XY = np.array([[0.46, -0.27], [0.46, 0.27]])
PARK_XY = np.array([[0.46, -0.39], [0.46, 0.39]])
HOVER = 0.12  # a cup lifted aside in the observe phase hangs this high (rim), in view
SHOW_OPEN = 0.14  # how far the env opens a drawer to move an object in or out
CARRY_Z = 0.14  # object centre while carried: clear of cups, drawer fronts and housings
# Steps per displacement: prep (drawers open, cups lift aside), carry (half of
# it travelling: at most ~6 cm a step across the table), finish (shut, cups down).
SHOW, PREP, CARRY, FINISH = 6, 5, 20, 5
SLOT = PREP + CARRY + FINISH
MOVE_BUDGET = 700  # horizon steps per move put back beyond the default k
BLOCK_COLOURS = tuple(c for c in COLORS if c != "yellow")  # the ball is yellow
REST_SLACK = 0.006  # how far above its resting height an object may be and still count as resting


@dataclass
class RearrangeOptions:
    PRESETS: ClassVar[dict[str, dict]] = {
        "easy": {},
        "medium": {"k": 4, "delay": 100},
        "hard": {"n_objects": 6, "k": 5, "delay": 400},
        "extreme": {"n_objects": 6, "k": 6, "delay": 1000},
    }
    n_objects: int = 5
    k: int = 3
    delay: int = 20
    tolerance: float = 0.03

    def validate(self) -> None:
        if not 4 <= self.n_objects <= 6:
            raise ValueError(f"n_objects must be in 4..6, got {self.n_objects}")
        if not 1 <= self.k <= min(6, self.n_objects):
            raise ValueError(f"k must be in 1..n_objects ({self.n_objects}), got {self.k}")
        if self.delay < 0:
            raise ValueError(f"delay must be >= 0, got {self.delay}")
        if not 0.005 <= self.tolerance <= 0.03:
            raise ValueError(f"tolerance must be in [0.005, 0.03] metres, got {self.tolerance}")


def place_name(p: int) -> str:
    if p < N_SPOTS:
        return f"spot{p}"
    if p < N_SPOTS + N_DRAWERS:
        return f"drawer{p - N_SPOTS}"
    return f"cup{p - N_SPOTS - N_DRAWERS}"


def place_index(name: str) -> int:
    for p in range(N_PLACES):
        if place_name(p) == name:
            return p
    raise ValueError(f"unknown place {name!r}; places: spot0..spot{N_SPOTS - 1}, drawer0..1, cup0..1")


def is_drawer(p: int) -> bool:
    return N_SPOTS <= p < N_SPOTS + N_DRAWERS


def is_cup(p: int) -> bool:
    return p >= N_SPOTS + N_DRAWERS


def _n_cues(n: int, k: int, free_drawers: int) -> int:
    """Valid cues for one layout: which k objects moved, and an origin each (ball not in a drawer)."""
    free = N_PLACES - n
    without_ball = comb(n - 1, k) * perm(free, k)
    with_ball = comb(n - 1, k - 1) * (free - free_drawers) * perm(free - 1, k - 1)
    return without_ball + with_ball


class Rearrange(DrawerRow, WorkcellEnv):
    family = "Rearrange"
    memory_skill = "many object-place bindings at once (table, drawers, cups)"
    Options = RearrangeOptions
    chance = (
        "E_layout[1 / #cues]: #cues = C(n-1,k)·P(F,k) + C(n-1,k-1)·(F-Df)·P(F-1,k-1), "
        "F = 14-n free places, Df free drawers (0.022% at defaults)"
    )

    @classmethod
    def chance_rate(cls, options: RearrangeOptions) -> float:
        """An agent that knows the layout but not the cue can only commit to one cue.

        Cues are uniform over the valid ones and a final arrangement matches at
        most one (tolerance discs of distinct places never overlap), so its best
        is 1 / #cues, averaged over how many drawers the blocks' final places fill
        (hypergeometric: n-1 blocks over the 13 places the ball leaves, 2 drawers).
        """
        n, k = options.n_objects, options.k
        rest = N_PLACES - 1
        total = 0.0
        for taken in range(N_DRAWERS + 1):
            p = comb(N_DRAWERS, taken) * comb(rest - N_DRAWERS, n - 1 - taken) / comb(rest, n - 1)
            if p > 0:
                total += p / _n_cues(n, k, N_DRAWERS - taken)
        return total

    # --- construction --------------------------------------------------------
    def _add_props(self, scene: SceneBuilder) -> None:
        self._attach_drawers(scene, N_DRAWERS)
        for c in range(N_CUPS):
            entity = scene.attach("cup", f"cup{c}", "cup", (*PARK_XY[c], 0.0))
            _add_feet(scene, entity.root_body)
        self.object_names = [f"block{i}" for i in range(self.options.n_objects - 1)] + ["ball"]
        for i, name in enumerate(self.object_names[:-1]):
            scene.attach("block", name, "block", (0.2 + 0.05 * i, 0.5, BLOCK_HALF))
        scene.attach("ball", "ball", "ball", (0.2, -0.5, BALL_R))

    def _setup(self) -> None:
        super()._setup()
        self._setup_drawers()
        # Looked up once: named lookups every step cost a noticeable share of a step.
        self._obj_ids = np.array([self.body_id(name) for name in self.object_names])
        self._cup_ids = np.array([self.body_id(f"cup{c}") for c in range(N_CUPS)])
        self._half = np.array([BLOCK_HALF] * (len(self.object_names) - 1) + [BALL_R])

    def _phase_lengths(self) -> tuple[int, int]:
        return SHOW + SLOT * self.options.k + 1, self.options.delay

    def extra_steps(self) -> int:
        """Each move beyond the default ``k`` adds its slot to the show and ``MOVE_BUDGET`` to the recall."""
        more = max(0, self.options.k - RearrangeOptions().k)
        return super().extra_steps() + more * (SLOT + MOVE_BUDGET)

    # --- layout and cue ------------------------------------------------------
    def _sample_layout(self, rng: np.random.Generator) -> None:
        n = self.options.n_objects
        picks = rng.permutation(len(BLOCK_COLOURS))
        self.colours = [BLOCK_COLOURS[p] for p in picks[: n - 1]] + ["yellow"]
        # Drawers and cups get colours no block has, so a colour name picks out one thing.
        self.drawer_colour, self.cup_colour = BLOCK_COLOURS[picks[n - 1]], BLOCK_COLOURS[picks[n]]
        self.layout_shift = rng.uniform(-JITTER, JITTER, size=2)
        grid = np.array([[x, y] for x in SPOT_X for y in SPOT_Y])
        self.spot_xy = grid + rng.uniform(-SPOT_JITTER, SPOT_JITTER, size=grid.shape)
        ball_places = [p for p in range(N_PLACES) if not is_drawer(p)]
        ball_final = int(rng.choice(ball_places))
        others = [p for p in range(N_PLACES) if p != ball_final]
        self.final = [int(p) for p in rng.choice(others, size=n - 1, replace=False)] + [ball_final]

    def free_places(self) -> list[int]:
        return [p for p in range(N_PLACES) if p not in self.final]

    def _sample_cue(self, rng: np.random.Generator) -> tuple[tuple[int, int], ...]:
        n, k, ball = self.options.n_objects, self.options.k, self.options.n_objects - 1
        free = self.free_places()
        # Rejection keeps the draw uniform over the valid cues (the chance formula relies on it).
        while True:
            movers = rng.choice(n, size=k, replace=False)
            origins = rng.choice(free, size=k, replace=False)
            cue = tuple(sorted((int(o), int(p)) for o, p in zip(movers, origins)))
            if not any(o == ball and is_drawer(p) for o, p in cue):
                return cue

    def cue_variants(self) -> list[tuple[tuple[int, int], ...]]:
        rng = np.random.default_rng(0)
        first = self._sample_cue(rng)
        second = first
        while second == first:
            second = self._sample_cue(rng)
        return [first, second]

    def _check_cue(self, cue) -> tuple[tuple[int, int], ...]:
        n, free = self.options.n_objects, set(self.free_places())
        try:
            cue = tuple(sorted((int(o), int(p)) for o, p in cue))
        except (TypeError, ValueError):
            raise ValueError(f"cue must be ((object, origin place), ...), got {cue!r}") from None
        objects, origins = [o for o, _ in cue], [p for _, p in cue]
        ok = (
            len(cue) == self.options.k
            and len(set(objects)) == len(objects)
            and all(0 <= o < n for o in objects)
            and len(set(origins)) == len(origins)
            and set(origins) <= free
            and not any(o == n - 1 and is_drawer(p) for o, p in cue)
        )
        if not ok:
            raise ValueError(
                f"cue must give {self.options.k} distinct objects in 0..{n - 1} distinct origins among the "
                f"free places {sorted(free)} (the ball, object {n - 1}, in no drawer); got {cue!r}"
            )
        return cue

    # --- poses ---------------------------------------------------------------
    def rest_pose(self, p: int, obj: int) -> np.ndarray:
        """Where object ``obj`` rests in place ``p`` (a drawer at its current opening)."""
        h = self._half[obj]
        if p < N_SPOTS:
            return np.array([*self.spot_xy[p], h])
        if is_drawer(p):
            d = p - N_SPOTS
            x, y = self.unit_xy(d)
            return np.array([x + IN_DRAWER_X - self.opening(d), y, TRAY_TOP + h])
        return np.array([*CUP_XY[p - N_SPOTS - N_DRAWERS], h])

    def _reset_scene(self) -> None:
        self.cue = self._check_cue(self.cue)
        self.start = list(self.final)
        for o, p in self.cue:
            self.start[o] = p
        self.moves = [(o, p, self.final[o]) for o, p in self.cue]  # (object, from, to), in object order
        self.shift_row(self.layout_shift + ROW_BACK)
        self.paint_drawers(COLORS[self.drawer_colour])
        for c in range(N_CUPS):
            self.paint(f"cup{c}", COLORS[self.cup_colour])
        for name, colour in zip(self.object_names[:-1], self.colours):
            self.paint(name, COLORS[colour])
        self.home_robot()
        self._settle(self.start)

    def _settle(self, places: list[int]) -> None:
        self.close_all()
        for c in range(N_CUPS):
            self.place(f"cup{c}", (*CUP_XY[c], 0.0))
        for o, p in enumerate(places):
            self.place(self.object_names[o], self.rest_pose(p, o))

    def _recall_state(self) -> None:
        # Drawers shut and cups down hide whatever went into them.
        self._settle(self.final)

    # --- observe: the displacements, in view --------------------------------
    def _script(self, phase: str, k: int) -> None:
        if phase != "observe":
            return
        m, j = divmod(k - SHOW, SLOT)
        if k < SHOW or m >= len(self.moves):
            return
        o, src, dst = self.moves[m]
        prep = min(max((j + 1) / PREP, 0.0), 1.0)
        carry = min(max((j + 1 - PREP) / CARRY, 0.0), 1.0)
        finish = min(max((j + 1 - PREP - CARRY) / FINISH, 0.0), 1.0)
        for p in (src, dst):
            if is_drawer(p):
                self.set_opening(p - N_SPOTS, SHOW_OPEN * (prep - finish))
            elif is_cup(p):
                c = p - N_SPOTS - N_DRAWERS
                down, up = np.array([*CUP_XY[c], 0.0]), np.array([*PARK_XY[c], HOVER])
                pose = arc(down, up, prep, HOVER) if finish == 0 else arc(up, down, finish, HOVER)
                self.place(f"cup{c}", pose)
        if j < PREP:
            pose = self.rest_pose(src, o)  # rides in its drawer as it opens
        elif j < PREP + CARRY:
            pose = arc(self.rest_pose(src, o), self.rest_pose(dst, o), carry, CARRY_Z)
        else:
            pose = self.rest_pose(dst, o)  # rides in its drawer as it shuts
        self.place(self.object_names[o], pose)

    # --- outcome -------------------------------------------------------------
    def in_drawer(self, pos: np.ndarray, d: int) -> bool:
        """Whether ``pos`` lies in drawer ``d``'s tray (at its current opening)."""
        x, y = self.unit_xy(d)
        depth = pos[0] - (x - self.opening(d))
        return bool(0.0 < depth < 0.215 and abs(pos[1] - y) < 0.075 and pos[2] < TRAY_TOP + 0.03)

    def placed(self, o: int, pos: np.ndarray) -> bool:
        p = self.start[o]
        if is_drawer(p):
            return self.in_drawer(pos, p - N_SPOTS)
        goal = self.rest_pose(p, o)
        near = np.linalg.norm(pos[:2] - goal[:2]) <= self.options.tolerance
        return bool(near and pos[2] < goal[2] + REST_SLACK)

    def _evaluate(self) -> tuple[bool, bool]:
        pos = self.data.xpos[self._obj_ids]
        cups = self.data.xpos[self._cup_ids]
        if pos[:, 2].min() < -0.05 or cups[:, 2].min() < -0.05:
            return False, True
        if not all(self.placed(o, pos[o]) for o in range(len(pos))):
            return False, False
        # Velocity and contact checks only once every object is in place: contacts are the costly part.
        still = np.abs(self.data.cvel[self._obj_ids]).max() < 0.05
        held = any(self.touching(name) for name in self.object_names)
        return bool(still and not held), False

    def _instruction(self, phase: str) -> str:
        if phase == "recall":
            return "put everything back where it was"
        return "watch where everything goes"

    def privileged(self) -> dict:
        pos = self.data.xpos[self._obj_ids]
        objects = []
        for o, name in enumerate(self.object_names):
            start = self.start[o]
            objects.append(
                {
                    "name": name,
                    "cls": "ball" if name == "ball" else "block",
                    "colour": self.colours[o],
                    "start_place": place_name(start),
                    "start_container": "" if start < N_SPOTS else place_name(start),
                    "start_pos": self.rest_pose(start, o) if not is_drawer(start) else self._shut_pose(start, o),
                    "place": place_name(self.final[o]),  # where the scene left it
                    "pos": pos[o].copy(),
                    "moved": start != self.final[o],
                }
            )
        return {
            "objects": objects,
            "openings": self.openings(),
            "unit_xy": np.array([self.unit_xy(d) for d in range(N_DRAWERS)]),
            "cup_pos": self.data.xpos[self._cup_ids].copy(),
            "cup_xy": CUP_XY.copy(),
            "park_xy": PARK_XY.copy(),
            "spot_xy": self.spot_xy.copy(),
        }

    def _shut_pose(self, p: int, o: int) -> np.ndarray:
        x, y = self.unit_xy(p - N_SPOTS)
        return np.array([x + IN_DRAWER_X, y, TRAY_TOP + self._half[o]])
