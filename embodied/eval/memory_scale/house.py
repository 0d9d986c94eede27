"""The synthetic house: many look-alike objects on many shelves, and the frames a robot patrolling it sees.

    stream = HouseStream(objects=500, seed=0)
    memory = SpatialMemory()
    for t in range(10_000):
        memory.update(stream.frame(t))
    stream.seen            # objects detected at least once (what the memory should hold)
    stream.last_seen_at    # object -> where it was last detected (what where_is should answer)

The house is a grid of shelves 1.2 m apart, each with 10 slots (2 rows of 5,
9 cm apart), about 70% full at the start. Objects come in 8 classes x 10
colours, so with 1,000 objects about 12 share each look (many white mugs):
only their place tells them apart. The robot patrols the shelves along a
serpentine route, looking down at one shelf at a time from 0.7 m with a
128 x 128 depth camera (a 60 degree view: its neighbours are out of view),
dwelling a few steps at each.

The world changes while the robot looks or looks away, at fixed rates (so a
run of N steps is the first N steps of any longer run): every ``move_every``
steps an object moves, in turn to another slot of the shelf the robot is
looking at (it sees the jump) and to a free slot of another shelf it has
looked at before (mostly while it looks elsewhere); every ``remove_every``
steps an object leaves the house for good (up to 10%); with ``late`` > 0,
that fraction of the objects arrives later, one every ``arrive_every`` steps.
Arrivals are off by default, and nothing is carried to a shelf the robot has
never looked at: a look-alike arriving while another is missing, or a thing
found on new ground, cannot be told from the missing one moved there, so the
count of objects would be a guess, not a measure (the memory takes the first
for the moved one and the second for a new one).

Detections are what the perceiver (``embodied.perception.clouds``) hands the
memory: an :class:`ObjectObservation` per object in view, with the class, a
mean RGB and its colour name, a downsampled cloud (1 cm grid over the
object's box surface, at most 96 points), its box, the pixel count at that
range, and a sub-millimetre jitter of the whole cloud from frame to frame.
The depth image shows each object's top where it stands and the shelf
elsewhere, so a remembered object that is gone is seen through (missing).
"""

from __future__ import annotations

import math

import numpy as np

from embodied.perception.colour import colour_name
from embodied.perception.types import CameraView, Frame, ObjectObservation

# Class -> box size (x, y, z) m. cup and bowl are containers in memory (see embodied.memory.config).
CLASSES = {
    "mug": (0.05, 0.05, 0.06),
    "book": (0.06, 0.04, 0.025),
    "bottle": (0.04, 0.04, 0.08),
    "can": (0.035, 0.035, 0.05),
    "toy": (0.05, 0.04, 0.04),
    "plate": (0.07, 0.07, 0.015),
    "cup": (0.05, 0.05, 0.05),
    "bowl": (0.07, 0.07, 0.04),
}
COLOURS = {
    "red": (0.8, 0.12, 0.12),
    "green": (0.15, 0.7, 0.2),
    "blue": (0.15, 0.3, 0.82),
    "yellow": (0.84, 0.8, 0.1),
    "purple": (0.55, 0.2, 0.75),
    "orange": (0.85, 0.5, 0.05),
    "cyan": (0.1, 0.79, 0.8),
    "pink": (0.85, 0.45, 0.7),
    "white": (0.86, 0.86, 0.86),
    "black": (0.1, 0.1, 0.1),
}
LOOKS = len(CLASSES) * len(COLOURS)
SHELF_PITCH = 1.2  # m between shelf centres
SLOTS = [(dx, dy) for dy in (-0.05, 0.05) for dx in (-0.18, -0.09, 0.0, 0.09, 0.18)]
EYE = 0.7  # m, camera above the shelf top
IMAGE = 128
FOCAL = 110.0  # px: a 60 degree view, 0.8 m across at the shelf


def _cloud(size: tuple[float, float, float], cap: int = 96) -> np.ndarray:
    """(N,3) float32 points on a 1 cm grid over a box's surface, centred on the origin."""
    axes = [np.linspace(-s / 2, s / 2, max(2, int(round(s / 0.01)) + 1)) for s in size]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    half = np.asarray(size) / 2
    shell = grid[np.any(np.abs(np.abs(grid) - half) < 1e-6, axis=1)]
    if len(shell) > cap:
        shell = shell[:: -(-len(shell) // cap)]
    return shell.astype(np.float32)


class HouseStream:
    """Frames of a robot patrolling a house of ``objects`` look-alike objects; see the module doc."""

    def __init__(
        self,
        objects: int = 500,
        seed: int = 0,
        *,
        dwell: int = 8,
        move_every: int = 40,
        arrive_every: int = 100,
        remove_every: int = 250,
        late: float = 0.0,
        removed: float = 0.1,
        jitter: float = 0.0005,
        fill: float = 0.7,
    ):
        if objects < 1:
            raise ValueError(f"objects must be >= 1, got {objects}")
        self.rng = np.random.default_rng(seed)
        self.n = int(objects)
        self.dwell, self.move_every, self.jitter = int(dwell), int(move_every), float(jitter)
        self.arrive_every, self.remove_every = int(arrive_every), int(remove_every)
        n_shelves = max(2, math.ceil(objects / (len(SLOTS) * fill)))
        cols = math.ceil(math.sqrt(n_shelves))
        heights = self.rng.choice([0.45, 0.75, 0.9], size=n_shelves)
        self.shelves = np.array(
            [[SHELF_PITCH * (i % cols + 0.5), SHELF_PITCH * (i // cols + 0.5), heights[i]] for i in range(n_shelves)]
        )
        # Serpentine patrol route over the shelf grid (rows alternate direction).
        rows: dict[int, list[int]] = {}
        for i in range(n_shelves):
            rows.setdefault(i // cols, []).append(i)
        self.route = [i for r, row in sorted(rows.items()) for i in (row if r % 2 == 0 else row[::-1])]
        # Looks: every class x colour pair in turn, shuffled, so look-alikes are spread over the house.
        looks = [(c, k) for k in COLOURS for c in CLASSES]
        order = self.rng.permutation(self.n)
        self.cls = [looks[order[i] % LOOKS][0] for i in range(self.n)]
        self.colour = [looks[order[i] % LOOKS][1] for i in range(self.n)]
        self.rgb = []
        for i in range(self.n):
            rgb = np.clip(np.array(COLOURS[self.colour[i]]) + self.rng.uniform(-0.02, 0.02, 3), 0, 1).astype(np.float32)
            if colour_name(rgb) != self.colour[i]:
                rgb = np.array(COLOURS[self.colour[i]], np.float32)
            self.rgb.append(rgb)
        self._clouds = {c: _cloud(s) for c, s in CLASSES.items()}
        self.late = list(range(self.n - int(round(late * self.n)), self.n)) if self.n > 1 else []
        self.max_removed = int(round(removed * self.n))
        self.removed: list[int] = []
        self.moves = self.moved_unseen = 0
        self.moved: set[int] = set()  # objects moved at least once
        # Where each object is: (shelf, slot), or None (not arrived yet / gone).
        self.at: list[tuple[int, int] | None] = [None] * self.n
        self.occupant: dict[tuple[int, int], int] = {}
        for i in range(self.n):
            if i not in self.late:
                self._put(i, self._free_slot())
        self.seen: set[int] = set()
        self.last_seen_at: dict[int, np.ndarray] = {}  # object -> box centre (3,) where last detected
        self.route_pos, self.direction, self.t = 0, 1, -1
        self.visited: set[int] = set()  # shelves the robot has looked at
        pose = np.eye(4)
        pose[:3, :3] = np.array([[0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])  # looking straight down
        self._pose = pose
        self.K = np.array([[FOCAL, 0.0, (IMAGE - 1) / 2], [0.0, FOCAL, (IMAGE - 1) / 2], [0.0, 0.0, 1.0]])

    # --- the world ---------------------------------------------------------
    def _free_slot(self, avoid: int = -1, shelves: list[int] | None = None) -> tuple[int, int]:
        """A random free slot, on one of ``shelves`` (default: any) other than ``avoid``."""
        for _ in range(1000):
            shelf = int(self.rng.integers(len(self.shelves))) if shelves is None else shelves[
                int(self.rng.integers(len(shelves)))]
            spot = (shelf, int(self.rng.integers(len(SLOTS))))
            if spot not in self.occupant and spot[0] != avoid:
                return spot
        raise RuntimeError("the house is full")

    def _put(self, obj: int, spot: tuple[int, int] | None) -> None:
        if self.at[obj] is not None:
            del self.occupant[self.at[obj]]
        self.at[obj] = spot
        if spot is not None:
            self.occupant[spot] = obj

    def position(self, obj: int) -> np.ndarray | None:
        """Box centre (3,) m of an object now (None: not in the house)."""
        if self.at[obj] is None:
            return None
        shelf, slot = self.at[obj]
        x, y, z = self.shelves[shelf]
        dx, dy = SLOTS[slot]
        return np.array([x + dx, y + dy, z + CLASSES[self.cls[obj]][2] / 2])

    def present(self) -> list[int]:
        return [i for i in range(self.n) if self.at[i] is not None]

    def _world(self, t: int) -> None:
        """The changes due at step t (rates, not a schedule over the run's length)."""
        if t > 0 and t % self.arrive_every == 0 and self.late:
            self._put(self.late.pop(0), self._free_slot())
        if t > 0 and t % self.remove_every == 0 and len(self.removed) < self.max_removed:
            here = self.present()
            gone = here[int(self.rng.integers(len(here)))]
            self._put(gone, None)
            self.removed.append(gone)
        if t % self.move_every == self.dwell // 2:  # half way through a look at a shelf
            self.moves += 1
            shelf = self.shelf_now()
            watched = [o for (s, _), o in self.occupant.items() if s == shelf]
            free = [k for k in range(len(SLOTS)) if (shelf, k) not in self.occupant]
            if self.moves % 2 == 0 and watched and free:
                # Moved on the shelf the robot is looking at (it sees the object jump).
                obj = watched[int(self.rng.integers(len(watched)))]
                self._put(obj, (shelf, free[int(self.rng.integers(len(free)))]))
                self.moved.add(obj)
            else:
                # Carried to another shelf the robot has looked at, most likely while it looks elsewhere
                # (carried to ground it never saw, a thing is found there as a new one: see the doc).
                here = self.present()
                obj = here[int(self.rng.integers(len(here)))]
                visited = sorted(self.visited - {self.at[obj][0]})
                if not visited:
                    return
                self._put(obj, self._free_slot(avoid=self.at[obj][0], shelves=visited))
                self.moved_unseen += 1
                self.moved.add(obj)

    def _walk(self, t: int) -> None:
        if t > 0 and t % self.dwell == 0 and len(self.route) > 1:
            nxt = self.route_pos + self.direction
            if not 0 <= nxt < len(self.route):
                self.direction = -self.direction
                nxt = self.route_pos + self.direction
            self.route_pos = nxt

    # --- what the robot sees ---------------------------------------------------
    def shelf_now(self) -> int:
        return self.route[self.route_pos]

    def frame(self, t: int) -> Frame:
        """The perception frame of step t (steps must come in order, each once)."""
        if t != self.t + 1:
            raise ValueError(f"frames come in order: expected step {self.t + 1}, got {t}")
        self.t = t
        self._walk(t)
        self._world(t)
        shelf = self.shelf_now()
        self.visited.add(shelf)
        sx, sy, sz = self.shelves[shelf]
        pose = self._pose.copy()
        pose[:3, 3] = (sx, sy, sz + EYE)
        depth = np.full((IMAGE, IMAGE), EYE, np.float32)
        dets = []
        c = (IMAGE - 1) / 2
        for slot in range(len(SLOTS)):
            obj = self.occupant.get((shelf, slot))
            if obj is None:
                continue
            size = CLASSES[self.cls[obj]]
            centre = self.position(obj) + self.rng.normal(0.0, self.jitter, 3)
            lo, hi = centre - np.asarray(size) / 2, centre + np.asarray(size) / 2
            z_top = EYE - size[2]
            # Image axes: u runs along -y, v along -x (the camera's pose above).
            u0, u1 = c + FOCAL * (sy - hi[1]) / z_top, c + FOCAL * (sy - lo[1]) / z_top
            v0, v1 = c + FOCAL * (sx - hi[0]) / z_top, c + FOCAL * (sx - lo[0]) / z_top
            depth[max(int(v0), 0) : int(math.ceil(v1)) + 1, max(int(u0), 0) : int(math.ceil(u1)) + 1] = z_top
            pixels = int(FOCAL**2 * size[0] * size[1] / z_top**2 * self.rng.uniform(0.95, 1.05))
            rgb = self.rgb[obj]
            dets.append(
                ObjectObservation(
                    f"head#{slot}", self.cls[obj], rgb, colour_name(rgb), centre.copy(), lo, hi,
                    self._clouds[self.cls[obj]] + centre.astype(np.float32), pixels, "head", t,
                )
            )
            self.seen.add(obj)
            self.last_seen_at[obj] = self.position(obj)
        view = CameraView("head", depth, self.K, pose, np.linalg.inv(pose))
        return Frame(t, dets, [view])
