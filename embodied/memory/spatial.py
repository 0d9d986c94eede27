"""Geometry of the memory: voxel-hash overlap, visibility by re-projection, relations.

Overlap (ConceptGraphs' geometric similarity): the fraction of a detection's points with a remembered point
of the object in one of the 27 voxels around it. Sorted int64 voxel keys and ``searchsorted`` replace
KD-trees, so nothing is rebuilt per frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, repeat

import numpy as np

from embodied.memory.affordances import affords
from embodied.memory.config import LifecycleConfig, RelationConfig
from embodied.perception.geometry import project
from embodied.perception.types import CameraView

_BITS = 21
_OFF = 1 << (_BITS - 1)
_D = np.array([-1, 0, 1], dtype=np.int64)
# Key deltas of the 27-neighbourhood: keys are linear in the voxel indices.
NEIGHBOURS = ((_D[:, None, None] << (2 * _BITS)) + (_D[None, :, None] << _BITS) + _D[None, None, :]).ravel()


def voxel_keys(points: np.ndarray, voxel: float, unique: bool = True) -> np.ndarray:
    """int64 voxel keys of points (N,3) m: sorted and unique, or one per point."""
    idx = np.floor(np.asarray(points, dtype=np.float64) / voxel).astype(np.int64) + _OFF
    keys = (idx[:, 0] << (2 * _BITS)) | (idx[:, 1] << _BITS) | idx[:, 2]
    return np.unique(keys) if unique else keys


def neighbour_keys(points: np.ndarray, voxel: float) -> np.ndarray:
    """(M,27) int64 keys of the voxels around a regular subset (M <= 64: as good an estimate) of points (N,3) m."""
    if len(points) > 64:
        points = points[:: -(-len(points) // 64)]
    return voxel_keys(points, voxel, unique=False)[:, None] + NEIGHBOURS[None, :]


def overlap_keys(around: np.ndarray, obj_keys: np.ndarray) -> float:
    """Fraction of a view's points (``neighbour_keys``) with an object point (``voxel_keys``) within one voxel."""
    if len(obj_keys) == 0 or len(around) == 0:
        return 0.0
    pos = np.searchsorted(obj_keys, around)
    pos[pos == len(obj_keys)] = 0
    return float((obj_keys[pos] == around).any(axis=1).mean())


def overlap(points: np.ndarray, obj_keys: np.ndarray, voxel: float) -> float:
    """Fraction of a detection's points (N,3) m with an object point within one voxel (keys: ``voxel_keys``)."""
    return overlap_keys(neighbour_keys(points, voxel), obj_keys)


def outside_view(lo: np.ndarray, hi: np.ndarray, view: CameraView, margin: float = 1e-4) -> np.ndarray:
    """(K,) bool: boxes (K,3) no point of which can project into the image with z > 5 cm (every corner
    behind that, or every corner in front and past one image edge: a box is convex and the
    projection keeps that side of an edge). Conservative: False means it may be seen."""
    m = view.world_to_cam[:3]  # (3,4): rotation | shift
    fx, fy, cx, cy = view.K[0, 0], view.K[1, 1], view.K[0, 2], view.K[1, 2]
    h, w = view.depth.shape
    # Each test is a linear function of a world point: the camera z, and for a point in front (z > 0)
    # the four "past an edge" tests multiplied through by z (u < 0 is fx x + cx z < 0, and so on),
    # written so that past means negative. Over a box its largest and smallest values are at corners:
    # the value at the centre plus or minus |row| . half-size, with no corner projected.
    tests = np.stack([m[2], fx * m[0] + cx * m[2], -(fx * m[0] + (cx - (w - 1)) * m[2]),
                      fy * m[1] + cy * m[2], -(fy * m[1] + (cy - (h - 1)) * m[2])])
    rows, offsets = np.ascontiguousarray(tests[:, :3]), tests[:, 3]
    mid = ((lo + hi) / 2) @ rows.T + offsets
    spread = ((hi - lo) / 2 + margin) @ np.abs(rows).T
    behind = mid[:, 0] + spread[:, 0] <= 0.05
    front = mid[:, 0] - spread[:, 0] > 0.05
    past = (mid[:, 1:] + spread[:, 1:] < 0).any(axis=1)
    return behind | (front & past)


def visibility_many(
    clouds: Sequence[np.ndarray], views: list[CameraView], cfg: LifecycleConfig, k_sigma: float = 3.0,
    boxes: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How the current depth images explain remembered objects' points (clouds of (N,3) m), one projection
    per camera for all of them. Returns per object (K,) int64 counts: points that project into some image
    with a depth return, those the cameras see *through* (the depth reads farther), and those hidden behind
    something nearer. A reading differs from a point by more than ``depth_tol`` + ``depth_tol_rel`` of the
    range (a remembered cloud's own error), or ``k_sigma`` depth noise stds if more. With ``boxes`` (lo, hi)
    (K,3), a camera reads from ``clouds`` (any sequence) only the clouds whose box may be in its image."""
    k = len(clouds)
    total, through, occluded = np.zeros(k, np.int64), np.zeros(k, np.int64), np.zeros(k, np.int64)
    if k == 0:
        return total, np.zeros(0), np.zeros(0)
    everyone = np.arange(k)
    for view in views:
        which = everyone if boxes is None else np.nonzero(~outside_view(boxes[0], boxes[1], view))[0]
        owner = np.repeat(which, [len(clouds[i]) for i in which])
        if not len(owner):
            continue
        points = np.concatenate([clouds[i] for i in which])
        h, w = view.depth.shape
        u, v, z = project(points, view)
        inside = (z > 0.05) & (u >= 0) & (u <= w - 1) & (v >= 0) & (v <= h - 1)
        if not inside.any():
            continue
        # An object with fewer than min_projected points in this image gets no verdict from it.
        inside &= (np.bincount(owner[inside], minlength=k) >= cfg.min_projected)[owner]
        d = view.depth[np.rint(v[inside]).astype(np.int64), np.rint(u[inside]).astype(np.int64)]
        z, who = z[inside], owner[inside]
        ret = d > 0
        tol = np.maximum(cfg.depth_tol + cfg.depth_tol_rel * z, k_sigma * view.depth_std(z))
        total += np.bincount(who[ret], minlength=k)
        through += np.bincount(who[ret & (d > z + tol)], minlength=k)
        occluded += np.bincount(who[ret & (d < z - tol)], minlength=k)
    return total, through, occluded


def near_pairs(lo: np.ndarray, hi: np.ndarray, reach: float, wide: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(i, j), i != j, sorted, of the boxes (K,3) that overlap once both are grown by ``reach``: hashed into
    cells as big as the widest box plus twice the reach, so the cost goes with the pairs, not K^2. Boxes
    wider than ``wide`` (rooms, floors, walls) pair with every box."""
    k = len(lo)
    big = (hi[:, :2] - lo[:, :2]).max(axis=1) > wide
    small = np.flatnonzero(~big)
    pieces_i, pieces_j = [], []
    if len(small):
        side = float((hi[small, :2] - lo[small, :2]).max()) + 2 * reach + 1e-9
        cell = np.floor(lo[small, :2] / side).astype(np.int64) + (1 << 20)
        key = (cell[:, 0] << 21) | cell[:, 1]
        order = np.argsort(key, kind="stable")
        sorted_key = key[order]
        for dx in (-1, 0, 1):
            # The three cells (x + dx, y - 1 .. y + 1) are consecutive keys: one range each.
            column = (cell[:, 0] + dx) << 21
            first = np.searchsorted(sorted_key, column | (cell[:, 1] - 1), side="left")
            count = np.searchsorted(sorted_key, column | (cell[:, 1] + 1), side="right") - first
            rows = np.repeat(small, count)
            pieces_i.append(rows)
            pieces_j.append(small[order[np.repeat(first - np.cumsum(count) + count, count) + np.arange(len(rows))]])
    for b in np.flatnonzero(big):  # a wide box against every box, both ways
        pieces_i += [np.full(k, b), np.arange(k)]
        pieces_j += [np.arange(k), np.full(k, b)]
    if not pieces_i:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    i, j = np.concatenate(pieces_i), np.concatenate(pieces_j)
    grown_lo, grown_hi = lo - reach, hi + reach
    keep = i != j
    for axis in range(3):  # axis by axis, each on the pairs left (one axis's 1-D gathers are cheap)
        i, j = i[keep], j[keep]
        glo, ghi = grown_lo[:, axis], grown_hi[:, axis]
        keep = (glo[j] <= ghi[i]) & (glo[i] <= ghi[j])
    pair = np.sort(i[keep].astype(np.int64) * k + j[keep])
    if len(pair):  # two wide boxes met each other twice
        pair = pair[np.concatenate(([True], pair[1:] != pair[:-1]))]
    return pair // k, pair % k


def relations(nodes: dict[str, dict], cfg: RelationConfig) -> set[tuple[str, str, str]]:
    """Typed edges (u, v, rel) among physical nodes, from their boxes and remembered containment.

    in:       u's centre lies in container v's box, or u is remembered inside v
    on:       u's bottom rests on v's top (within on_tol) over v's footprint (not for parts); failing
              that, on the smallest furniture whose footprint holds u's centre and whose height span
              holds u's bottom (a sofa seat under the back); never for a held node
    near:     object centres closer than near_dist (both directions), if not on/in
    part_of:  an articulated part whose box cuts into a bigger piece of furniture
    in_room:  a node (physical or place) to the room node its ``room`` attribute names
              (set by ``SpatialMemory.update_rooms`` from the robot's free-space map)
    """
    # One pass over the nodes with a box: what the rules below read of each.
    rows = [(n, a["box_min"], a["box_max"], a["kind"], bool(a.get("held")), a.get("cls", ""),
             bool(a.get("articulated")), a.get("inside", "")) for n, a in nodes.items()
            if a["kind"] not in ("place", "agent") and "box_min" in a]
    rooms = {row[0] for row in rows if row[3] == "room"}  # (a room node has its floor's box)
    edges: set[tuple[str, str, str]] = {(n, home, "in_room") for n, a in nodes.items() if (home := a.get("room", ""))
                                        and (home in rooms or home in nodes and nodes[home]["kind"] == "room")}
    if not rows:
        return edges
    ids, box_min, box_max, kind_of, held_of, cls_of, articulated_of, inside_of = zip(*rows)
    lo = np.fromiter(chain.from_iterable(box_min), np.float64, 3 * len(ids)).reshape(-1, 3)
    hi = np.fromiter(chain.from_iterable(box_max), np.float64, 3 * len(ids)).reshape(-1, 3)
    centre = (lo + hi) / 2
    kinds = np.array(kind_of)
    names = np.array(ids, dtype=object)
    volume = np.prod(np.maximum(hi - lo, 1e-3), axis=1)
    m = cfg.contain_margin
    # Every relation joins boxes within reach of each other (near: centres closer than near_dist;
    # the rest: touching, give or take a few cm), so only those pairs are tested: (i, j), sorted.
    i, j = near_pairs(lo, hi, max(m, cfg.on_tol, cfg.near_dist, cfg.part_margin))
    bounds = np.searchsorted(i, np.arange(len(ids) + 1))  # row r's pairs: bounds[r]:bounds[r + 1]
    # The pairs' geometry, gathered once: i's centre within j's box grown by the margin, per axis.
    ci, bottom_i, lo_j, hi_j = centre[i], lo[i, 2], lo[j], hi[j]
    within = (ci >= lo_j - m) & (ci <= hi_j + m)
    over = within[:, 0] & within[:, 1]
    # inside: i's centre in j's grown box, i smaller and no lower than j's bottom (less its sink: a drawer's
    # tray floor stands over the table), so a block on the table beside an open drawer's handle is not in it.
    smaller, articulated = volume[i] < volume[j], np.array(articulated_of)
    sink = np.where(articulated[j], cfg.drawer_sink, cfg.sink)
    inside = over & within[:, 2] & (bottom_i >= lo_j[:, 2] - sink) & smaller
    room, container = kinds == "room", kinds == "container"
    physical = ~room
    is_in = inside & container[j] & physical[i]
    gap = bottom_i - hi_j[:, 2]
    # Something in the gripper rests on nothing and is in nothing, whatever it hovers over.
    held = np.array(held_of)
    is_in &= ~held[i]
    is_on = over & (np.abs(gap) <= cfg.on_tol) & physical[i] & physical[j] & ~is_in
    is_on &= volume[i] < volume[j] * 4  # a table does not rest on a block
    # Furniture whose box top is not where things rest (a sofa's seat, a shelf's lower boards): see "on" above.
    structure = np.array([affords(c).structure for c in cls_of], dtype=bool)
    furnishing = (kinds == "surface") & ~structure
    movable = (kinds == "object") | container
    sunk = over & furnishing[j] & movable[i]
    sunk &= (bottom_i >= lo_j[:, 2] + cfg.on_tol) & (bottom_i <= hi_j[:, 2])
    sunk &= smaller & ~is_in
    for r in np.setdiff1d(i[sunk], i[is_on]):
        row = np.arange(bounds[r], bounds[r + 1])[sunk[bounds[r] : bounds[r + 1]]]
        is_on[row[np.argmin(volume[j[row]])]] = True
    is_on &= ~held[i]
    # Unseen objects keep the container they were last known in (not once in the gripper).
    remembered = {k: holder for k, holder in enumerate(inside_of) if holder and holder in nodes and not held_of[k]}
    in_rows = set(i[is_in])
    joined = [(i[is_in], j[is_in])]  # row pairs joined by in, part_of or on: not also near
    edges.update(zip(names[i[is_in]], names[j[is_in]], repeat("in")))
    if remembered:
        row_of = {n: k for k, n in enumerate(ids)}
    for a, holder in remembered.items():
        edges.add((ids[a], holder, "in"))
        in_rows.add(a)
        if holder in row_of:
            joined.append((np.array([a]), np.array([row_of[holder]])))
    # A moving part belongs to the furniture whose box grown by part_margin overlaps its footprint most.
    furniture = (kinds == "surface") & ~room
    for r in np.flatnonzero(articulated):
        row = np.arange(bounds[r], bounds[r + 1])
        if not len(row):
            continue
        c = j[row]
        w = np.minimum(hi[r, :2], hi[c, :2] + cfg.part_margin) - np.maximum(lo[r, :2], lo[c, :2] - cfg.part_margin)
        area = np.prod(np.clip(w, 0, None), axis=1) * furniture[c] * (volume[c] > volume[r])
        area = area * ((lo[r, 2] < hi[c, 2]) & (hi[r, 2] > lo[c, 2]))
        if area.max() > 0:
            edges.add((ids[r], ids[int(c[np.argmax(area)])], "part_of"))
            in_rows.add(r)
            joined.append((np.array([r]), np.array([c[np.argmax(area)]])))
    # One support per object, the highest top under it (the first pair on a tie: pairs come sorted, the sort
    # is stable); nothing in a container or hanging in its housing (part_of) rests on anything.
    on_i, on_j = i[is_on], j[is_on]
    if in_rows:
        free = ~np.isin(on_i, list(in_rows))
        on_i, on_j = on_i[free], on_j[free]
    if len(on_i):
        order = np.lexsort((-hi[on_j, 2], on_i))
        on_i, on_j = on_i[order], on_j[order]
        first = np.concatenate(([True], on_i[1:] != on_i[:-1]))
        edges.update(zip(names[on_i[first]], names[on_j[first]], repeat("on")))
        joined.append((on_i[first], on_j[first]))
    objectish = movable | (kinds == "articulated")
    apart = ci - centre[j]
    near = (np.sqrt(np.einsum("ij,ij->i", apart, apart)) < cfg.near_dist) & objectish[i] & objectish[j]
    if near.any():
        # Not for a pair already joined by another relation, either way round.
        a, b = np.concatenate([p[0] for p in joined]), np.concatenate([p[1] for p in joined])
        k = len(ids)
        near &= ~np.isin(i * k + j, np.concatenate([a * k + b, b * k + a]))
        edges.update(zip(names[i[near]], names[j[near]], repeat("near")))
    return edges
