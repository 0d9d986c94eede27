"""The apartment's floor plan and the seeded sampling of doorways and furniture.

Plan (metres, z up): the floor is x in [0, 8], y in [0, 6]. Inner walls at
x = 4 and y = 3 split it into four 4 m x 3 m rooms::

    room 2 (NW) | room 3 (NE)          y = 6
    ------------+------------          y = 3
    room 0 (SW) | room 1 (SE)          y = 0
    x = 0       x = 4       x = 8

Each of the four inner wall segments is a row of 0.5 m tiles; a doorway is
two adjacent tiles removed (1.0 m wide), never at a segment's ends. A layout
opens doorways in three or all four segments (the rooms stay connected
either way), gives each room a theme (kitchen, living room, bedroom, study)
and stands that theme's furniture against the room's walls, clear of the
doorways. Everything here is plain geometry; the env checks the result
against the simulator (reachability, visibility) and resamples if needed.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

SIZE = np.array([8.0, 6.0])
SPLIT = np.array([4.0, 3.0])
WALL_HALF = 0.05  # half thickness of every wall
WALL_HEIGHT = 2.4
TILE = 0.5
DOOR_TILES = 2

# Rooms as (x0, y0, x1, y1) between wall centre lines.
ROOMS = np.array([[0, 0, 4, 3], [4, 0, 8, 3], [0, 3, 4, 6], [4, 3, 8, 6]], dtype=np.float64)


@dataclass(frozen=True)
class Segment:
    """An inner wall segment: ``axis`` 0 runs along x (at y = ``at``), 1 along y (at x = ``at``)."""

    name: str
    axis: int
    at: float
    start: float
    length: float
    rooms: tuple[int, int]

    @property
    def tiles(self) -> int:
        return int(round(self.length / TILE))

    def tile_centre(self, k: int) -> np.ndarray:
        u = self.start + (k + 0.5) * TILE
        return np.array([u, self.at]) if self.axis == 0 else np.array([self.at, u])

    def tile_half(self) -> np.ndarray:
        return np.array([TILE / 2, WALL_HALF]) if self.axis == 0 else np.array([WALL_HALF, TILE / 2])


SEGMENTS = (
    Segment("v_south", 1, 4.0, 0.0, 3.0, (0, 1)),
    Segment("v_north", 1, 4.0, 3.0, 3.0, (2, 3)),
    Segment("h_west", 0, 3.0, 0.0, 4.0, (0, 2)),
    Segment("h_east", 0, 3.0, 4.0, 4.0, (1, 3)),
)

# Furniture entities per room theme: (entity name, prop file). Every layout uses all of them.
THEMES: dict[str, tuple[tuple[str, str], ...]] = {
    "kitchen": (("counter", "counter"), ("fridge", "fridge"), ("table", "table"), ("cabinet", "cabinet")),
    "living room": (("sofa", "sofa"), ("coffee_table", "coffee_table"), ("shelf_living", "shelf")),
    "bedroom": (("bed", "bed"), ("nightstand", "nightstand"), ("dresser", "dresser")),
    "study": (("desk", "desk"), ("shelf_study", "shelf"), ("armchair", "armchair")),
}
FURNITURE = tuple(item for items in THEMES.values() for item in items)

ACCESS_DEPTH = 0.8  # free floor kept in front of every piece, so its object spots can be reached
END_GAP = 0.1  # between a piece's end and the wall beside it
DOOR_CLEAR = 1.0  # free floor kept on both sides of a doorway
WALL_GAP = 0.02  # furniture stands this far off its wall


@dataclass
class Door:
    segment: Segment
    first_tile: int

    @property
    def span(self) -> tuple[float, float]:
        lo = self.segment.start + self.first_tile * TILE
        return lo, lo + DOOR_TILES * TILE

    @property
    def centre(self) -> np.ndarray:
        u = sum(self.span) / 2
        return np.array([u, self.segment.at]) if self.segment.axis == 0 else np.array([self.segment.at, u])


def sample_doors(rng: np.random.Generator) -> list[Door]:
    """Doorways in all four inner segments (half the layouts) or in three of them."""
    keep = list(range(len(SEGMENTS)))
    if rng.random() < 0.5:
        keep.pop(int(rng.integers(len(keep))))
    return [Door(SEGMENTS[i], int(rng.integers(1, SEGMENTS[i].tiles - DOOR_TILES))) for i in keep]


def room_of(xy) -> int:
    """Index of the room containing ``xy``."""
    col = int(xy[0] >= SPLIT[0])
    row = int(xy[1] >= SPLIT[1])
    return 2 * row + col


def tour_orders(doors: list[Door]) -> list[tuple[int, ...]]:
    """Every order of the four rooms in which consecutive rooms share a doorway."""
    links = {frozenset(d.segment.rooms) for d in doors}
    return [p for p in itertools.permutations(range(4)) if all(frozenset(p[i : i + 2]) in links for i in range(3))]


@dataclass
class Placement:
    """A furniture piece against a wall: centre (x, y) on the floor and yaw (local +y faces the room)."""

    x: float
    y: float
    yaw: float
    hx: float  # world-axis half extents (pieces stand square to the walls)
    hy: float
    nx: float  # unit vector from the piece into the room
    ny: float

    @property
    def normal(self) -> np.ndarray:
        return np.array([self.nx, self.ny])

    def rect(self, grow: float = 0.0) -> tuple[float, float, float, float]:
        return (self.x - self.hx - grow, self.y - self.hy - grow, self.x + self.hx + grow, self.y + self.hy + grow)

    def access(self) -> tuple[float, float, float, float]:
        """The strip of floor in front of the piece (x0, y0, x1, y1)."""
        x0, y0, x1, y1 = self.rect()
        if self.nx > 0:
            return (x1, y0, x1 + ACCESS_DEPTH, y1)
        if self.nx < 0:
            return (x0 - ACCESS_DEPTH, y0, x0, y1)
        if self.ny > 0:
            return (x0, y1, x1, y1 + ACCESS_DEPTH)
        return (x0, y0 - ACCESS_DEPTH, x1, y0)


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _door_zones(room: int, doors: list[Door]) -> list[tuple[float, float, float, float]]:
    """Rectangles inside ``room`` that must stay clear in front of its doorways."""
    zones = []
    for door in doors:
        if room not in door.segment.rooms:
            continue
        lo, hi = door.span
        lo, hi = lo - 0.2, hi + 0.2
        at, axis = door.segment.at, door.segment.axis
        centre = (ROOMS[room, :2] + ROOMS[room, 2:]) / 2
        side = 1.0 if centre[1 - axis] > at else -1.0
        a, b = sorted((at, at + side * DOOR_CLEAR))
        zones.append((lo, a, hi, b) if axis == 0 else (a, lo, b, hi))
    return zones


def _walls(room: int) -> list[tuple[float, float, float, float, float]]:
    """The room's four walls as (normal x, normal y, inner face coordinate, span start, span end)."""
    x0, y0, x1, y1 = (float(v) for v in ROOMS[room] + np.array([WALL_HALF, WALL_HALF, -WALL_HALF, -WALL_HALF]))
    return [(0.0, 1.0, y0, x0, x1), (0.0, -1.0, y1, x0, x1), (1.0, 0.0, x0, y0, y1), (-1.0, 0.0, x1, y0, y1)]


def place_room(
    rng: np.random.Generator, room: int, pieces: list[tuple[str, np.ndarray]], doors: list[Door], tries: int = 60
) -> dict[str, Placement] | None:
    """Stand ``pieces`` (name, (width, depth)) against the walls of ``room``; None if they do not fit.

    Pieces do not overlap each other, their access strips or the doorway
    zones, and keep ``END_GAP`` from the walls beside them (room for the
    robot to stand in front of their end spots). Larger pieces go first.
    """
    zones = _door_zones(room, doors)
    walls = _walls(room)
    lengths = np.array([w[4] - w[3] for w in walls])
    order = sorted(pieces, key=lambda p: -p[1][0] * p[1][1])
    for _ in range(tries):
        placed: dict[str, Placement] = {}
        picks = iter(rng.choice(4, size=40 * len(order), p=lengths / lengths.sum()).tolist())
        spots = iter(rng.random(40 * len(order)).tolist())
        for name, (width, depth) in order:
            width, depth = float(width), float(depth)
            for _ in range(40):
                nx, ny, face, lo, hi = walls[next(picks)]
                u = lo + END_GAP + width / 2 + next(spots) * (hi - lo - 2 * END_GAP - width)
                off = face + (nx + ny) * (depth / 2 + WALL_GAP)
                x, y = (u, off) if nx == 0 else (off, u)
                hx, hy = (width / 2, depth / 2) if nx == 0 else (depth / 2, width / 2)
                cand = Placement(x, y, float(np.arctan2(ny, nx) - np.pi / 2), hx, hy, nx, ny)
                body, front = cand.rect(0.03), cand.access()
                if hi - lo - 2 * END_GAP < width or any(_overlap(body, z) for z in zones):
                    continue
                if any(_overlap(body, p.rect(0.03)) or _overlap(body, p.access()) or _overlap(front, p.rect())
                       for p in placed.values()):
                    continue
                placed[name] = cand
                break
            else:
                break
        if len(placed) == len(pieces):
            return placed
    return None
