"""Rooms from the robot's own free-space map: free floor cut at doorways (Hydra-style).

Frames and units: world frame, metres; grids are the
:class:`~embodied.mapping.freespace.FreeSpaceMap`'s cells (row i along y,
column j along x).

``segment_rooms(freespace)`` works on the map alone, with no layout knowledge
beyond walls standing square to each other (a Manhattan world):

1. *Floor*: the map's known-free cells that connect (4-neighbours) to where
   the robot has driven, and the unseen holes they enclose (the camera looks
   over the floor right around the robot), minus occupied cells. Islands of
   free floor (seen under a desk) are left out.
2. *Thin walls*: occupied cells with free floor within ``wall_reach`` on
   both sides, across x or across y. A wall between two rooms is thin;
   furniture (30 cm deep and more) and an outer wall (nothing seen behind
   it) are not.
3. *Doorway seals*: a morphological closing of the thin walls along their
   own direction bridges their gaps up to ``door_max``: the doorways. A
   doorway is a gap in a thin wall, while a passage between furniture and a
   wall, however narrow, has no thin wall on both sides of it.
4. *Rooms*: connected components (4-neighbours) of the floor with the seals
   cut out; components smaller than ``min_room_area`` (floor glimpsed
   through a doorway, a nook) are not rooms. The seal cells and the small
   pieces then join the room beside them (labels grow one cell at a time),
   so a room is all its floor up to the middle of its doorways.
5. *Doorways*: two rooms connect where their floor cells touch (only in a
   doorway); the door is those cells' centre, its width their extent.

Each room's centre is its floor cell farthest from anything that is not floor
(a distance transform): a point the robot can drive to. ``room_at(xy,
toward=eyes)`` names the room of a point: on the floor, that cell's room; on
furniture, the first floor cell on the straight line toward where it was seen
from (a line of sight runs through a doorway, never through a wall, so the
floor it meets first lies in front of the furniture, in its own room).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage as ndi

from embodied.mapping.freespace import FreeSpaceMap

FOUR = ndi.generate_binary_structure(2, 1)
EIGHT = ndi.generate_binary_structure(2, 2)


@dataclass
class RoomConfig:
    """Knobs of :func:`segment_rooms` (metres, square metres)."""

    wall_reach: float = 0.15  # m: an occupied cell with free floor this close on both sides is a thin wall
    door_max: float = 1.4  # m: gaps in a thin wall up to this wide are doorways
    min_room_area: float = 2.0  # m^2 of floor a room needs (less: glimpsed through a doorway)
    max_walk: float = 2.5  # m: how far ``room_at`` walks toward the viewer to find floor
    # Room names from the furniture classes a room holds (the first match of the most cues wins;
    # a tie between names, or no cue at all, leaves the room unnamed).
    names: dict[str, frozenset[str]] = field(
        default_factory=lambda: {
            "kitchen": frozenset({"fridge", "counter", "stove", "oven", "sink", "dishwasher"}),
            "bedroom": frozenset({"bed", "nightstand", "dresser", "wardrobe"}),
            "living room": frozenset({"sofa", "couch", "coffee_table", "tv", "television"}),
            "study": frozenset({"desk", "armchair", "office_chair", "bookshelf"}),
            "bathroom": frozenset({"toilet", "bathtub", "shower"}),
        }
    )

    def validate(self) -> None:
        if min(self.wall_reach, self.door_max, self.min_room_area, self.max_walk) <= 0:
            raise ValueError("wall_reach, door_max, min_room_area and max_walk must be > 0")


@dataclass
class Doorway:
    """Where two rooms' floors touch: rooms (a < b, labels), centre (2,) m, width m."""

    rooms: tuple[int, int]
    centre: np.ndarray
    width: float


@dataclass
class RoomSegmentation:
    """The result of :func:`segment_rooms`.

    ``labels`` (H, W) int32 on the map's cells: 0 = not floor, k = room k
    (1-based, in order of area, largest first). ``centres`` (K, 2) m: each
    room's most open floor point (its highest clearance). ``areas`` (K,) m^2
    of floor; ``boxes`` (K, 4) m: x0, y0, x1, y1 of the room's floor.
    """

    labels: np.ndarray
    low: np.ndarray
    res: float
    centres: np.ndarray
    areas: np.ndarray
    boxes: np.ndarray
    doorways: list[Doorway]
    max_walk: float = 2.5

    @property
    def count(self) -> int:
        return len(self.areas)

    def label_at(self, xy) -> int:
        """Room label (1-based) of the cell under ``xy`` (2,) m; 0 off the floor or off the map."""
        j, i = np.floor((np.asarray(xy, dtype=np.float64)[:2] - self.low) / self.res).astype(int)
        if 0 <= i < self.labels.shape[0] and 0 <= j < self.labels.shape[1]:
            return int(self.labels[i, j])
        return 0

    def room_at(self, xy, toward=()) -> int:
        """Room label (1-based) of ``xy`` (2,) m; 0 if none.

        On the floor: that cell's room. Elsewhere (on furniture): the first
        floor cell on the straight line toward each point in ``toward``
        ((2,) m each: where it was seen from), walking at most ``max_walk``;
        the shortest walk wins (a line of sight runs through a doorway, not
        a wall, so the floor it meets first is in front of the furniture).
        With no walk finding floor: the nearest floor cell within ``max_walk``.
        """
        xy = np.asarray(xy, dtype=np.float64)[:2]
        here = self.label_at(xy)
        if here:
            return here
        best, best_s = 0, np.inf
        for eye in toward:
            d = np.asarray(eye, dtype=np.float64)[:2] - xy
            n = float(np.linalg.norm(d))
            for s in np.arange(self.res / 2, min(n, self.max_walk, best_s), self.res / 2):
                lab = self.label_at(xy + d * (s / n))
                if lab:
                    best, best_s = lab, s
                    break
        return best or self._nearest(xy)

    def _nearest(self, xy: np.ndarray) -> int:
        floor = np.argwhere(self.labels > 0)
        if not len(floor):
            return 0
        d = np.linalg.norm(self.low + self.res * (floor[:, ::-1] + 0.5) - xy, axis=1)
        k = int(np.argmin(d))
        return int(self.labels[tuple(floor[k])]) if d[k] <= self.max_walk else 0


def floor_cells(freespace: FreeSpaceMap) -> np.ndarray:
    """(H, W) bool: known-free cells connected (4-neighbours) to cells the robot drove over, with the
    unseen holes they enclose that are not occupied (the ring around a spot where the robot turned on
    the spot, below the camera's view)."""
    free = freespace.known_free | freespace.visited
    parts, _ = ndi.label(free, structure=FOUR)
    keep = np.unique(parts[freespace.visited & (parts > 0)])
    floor = np.isin(parts, keep[keep > 0])
    return ndi.binary_fill_holes(floor) & ~freespace.occupied


def thin_walls(freespace: FreeSpaceMap, reach: float) -> tuple[np.ndarray, np.ndarray]:
    """Occupied cells with free floor within ``reach`` m on both sides: (across x, across y), each (H, W)
    bool. A wall between two rooms is thin; furniture, and a wall with furniture against it, are not."""
    occ = freespace.occupied
    free = freespace.known_free | freespace.visited
    r = max(1, round(reach / freespace.res))
    out = []
    for axis in (1, 0):  # across x (columns), across y (rows)
        before = np.zeros_like(free)
        after = np.zeros_like(free)
        for k in range(1, r + 1):
            before |= _shift(free, k, axis)
            after |= _shift(free, -k, axis)
        out.append(occ & before & after)
    return out[0], out[1]


def doorway_seals(freespace: FreeSpaceMap, cfg: RoomConfig, walls: tuple[np.ndarray, np.ndarray] | None = None
                  ) -> np.ndarray:
    """(H, W) bool: cells that close the gaps (up to ``door_max`` m) in thin walls: the doorways.

    A wall across x runs along y, so its gaps are closed along y, and the other way round.
    """
    across_x, across_y = walls if walls is not None else thin_walls(freespace, cfg.wall_reach)
    n = max(3, round(cfg.door_max / freespace.res))
    along_y = ndi.binary_closing(across_x, structure=np.ones((n, 1), dtype=bool))
    along_x = ndi.binary_closing(across_y, structure=np.ones((1, n), dtype=bool))
    return (along_y & ~across_x) | (along_x & ~across_y)


def segment_rooms(freespace: FreeSpaceMap, config: RoomConfig | None = None) -> RoomSegmentation:
    """Cut the map's floor into rooms at its doorways (see the module docstring)."""
    cfg = config or RoomConfig()
    cfg.validate()
    res = freespace.res
    cell_area = res * res
    floor = floor_cells(freespace)
    across_x, across_y = thin_walls(freespace, cfg.wall_reach)
    seals = doorway_seals(freespace, cfg, (across_x, across_y)) & floor
    parts, n = ndi.label(floor & ~seals, structure=FOUR)
    sizes = ndi.sum_labels(np.ones(floor.shape), parts, index=np.arange(1, n + 1)) * cell_area
    order = [k + 1 for k in np.argsort(-sizes) if sizes[k] >= cfg.min_room_area]
    if not order:
        return _empty(freespace, cfg)
    lut = np.zeros(n + 1, dtype=np.int32)
    lut[order] = np.arange(1, len(order) + 1)
    labels = _grow(lut[parts], floor)
    clear = ndi.distance_transform_edt(floor) * res  # (H, W) m to the nearest cell that is not floor
    centres, areas, boxes = [], [], []
    for k in range(1, len(order) + 1):
        cells = labels == k
        best = np.unravel_index(np.argmax(np.where(cells, clear, -1.0)), clear.shape)
        centres.append(freespace.centre(*best))
        areas.append(float(cells.sum()) * cell_area)
        rows, cols = np.nonzero(cells)
        lo = freespace.low + res * np.array([cols.min(), rows.min()])
        hi = freespace.low + res * np.array([cols.max() + 1, rows.max() + 1])
        boxes.append([lo[0], lo[1], hi[0], hi[1]])
    return RoomSegmentation(labels, freespace.low.copy(), res, np.array(centres).reshape(-1, 2),
                            np.array(areas), np.array(boxes).reshape(-1, 4), _doorways(labels, freespace),
                            cfg.max_walk)


def _shift(a: np.ndarray, k: int, axis: int) -> np.ndarray:
    """``a`` moved by ``k`` cells along ``axis`` (out[i] = a[i - k]), False where nothing moved in."""
    out = np.zeros_like(a)
    src = [slice(None)] * a.ndim
    dst = [slice(None)] * a.ndim
    if k >= 0:
        src[axis], dst[axis] = slice(0, a.shape[axis] - k), slice(k, None)
    else:
        src[axis], dst[axis] = slice(-k, None), slice(0, a.shape[axis] + k)
    out[tuple(dst)] = a[tuple(src)]
    return out


def _grow(labels: np.ndarray, floor: np.ndarray) -> np.ndarray:
    """Labels spread (4-neighbours) over the unlabelled floor cells, nearest room first: the doorways
    and floor pieces too small to be rooms join the room beside them."""
    labels = labels.copy()
    todo = floor & (labels == 0)
    while todo.any():
        grown = ndi.maximum_filter(labels, footprint=FOUR, mode="constant")
        new = todo & (grown > 0)
        if not new.any():
            break
        labels[new] = grown[new]
        todo &= ~new
    return labels


def _doorways(labels: np.ndarray, freespace: FreeSpaceMap) -> list[Doorway]:
    """Pairs of rooms whose floor cells touch (4-neighbours), with where and how wide."""
    touching: dict[tuple[int, int], list[np.ndarray]] = {}
    for a, b, ca, cb in ((labels[:, :-1], labels[:, 1:], (0, 0), (0, 1)), (labels[:-1], labels[1:], (0, 0), (1, 0))):
        cut = (a > 0) & (b > 0) & (a != b)
        for i, j in np.argwhere(cut):
            pair = tuple(sorted((int(a[i, j]), int(b[i, j]))))
            mid = (freespace.centre(i + ca[0], j + ca[1]) + freespace.centre(i + cb[0], j + cb[1])) / 2
            touching.setdefault(pair, []).append(mid)
    out = []
    for pair, pts in sorted(touching.items()):
        pts = np.array(pts)
        span = pts.max(axis=0) - pts.min(axis=0)
        out.append(Doorway(pair, pts.mean(axis=0), float(span.max()) + freespace.res))
    return out


def _empty(freespace: FreeSpaceMap, cfg: RoomConfig) -> RoomSegmentation:
    return RoomSegmentation(np.zeros(freespace.shape, dtype=np.int32), freespace.low.copy(), freespace.res,
                            np.zeros((0, 2)), np.zeros(0), np.zeros((0, 4)), [], cfg.max_walk)
