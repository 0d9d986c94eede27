"""Shape classes for the geometric detector: drawer units and cups, without masks.

Input is the clusters DBSCAN found above the support (see ``geometric.py``);
output is the same points regrouped into parts with class words from the
memory's vocabulary (``cabinet``, ``drawer``, ``cup``, ``button``; ``pad`` from the
support plane's points, ``geometric_colour.find_pads``) or "" (the
caller then uses the coarse size class).

Drawer unit (a housing with drawers sliding out of it):
  * a cluster with a wide flat top: the points within ``TOP_BAND`` of its
    highest point span at least ``HOUSING_MIN`` in x and in y, at a height
    of ``HOUSING_HEIGHT`` above the support. That top's footprint is the
    housing; the cluster's points inside it are the ``cabinet``;
  * points sticking out of the footprint by more than ``OUT_TOL`` (a shut
    drawer's front, posts and handle bar, or an open drawer's tray) and
    clusters of their own just outside it, raised off the support (a handle
    bar the camera sees apart from the rest), are drawer parts;
  * drawer parts are split into drawers along the footprint edge they stick
    out of, at gaps wider than ``SPLIT_GAP`` (neighbouring fronts stand a
    centimetre or more apart; one front is continuous).
  The memory then finds which drawer slides (``part_of`` + travel out of the
  housing): the part that moves is the drawer, the part that stays is the
  housing.

Cup (upside down, open at the bottom): a cluster whose footprint is
``CUP_SIDE`` wide both ways and whose height is ``CUP_HEIGHT``: bigger than a
block, far smaller than a housing. Tall narrow clusters (an arm link) and
flat ones (a handle bar) fail the test.

All lengths in metres, world frame, z up.
"""

from __future__ import annotations

import numpy as np

from embodied.perception.geometric_colour import (MIXED_NARROWEST, TRAY_COLOUR_STEP, chroma, components,
                                                 drawer_bits, join_cut_pieces, split_by_colour, things_in_tray)

TOP_BAND = 0.007  # m below the highest point: the housing's top plate (a shut drawer's front is 1 cm lower)
HOUSING_MIN = 0.1  # m, smallest long side of a housing's top plate ...
HOUSING_MIN_SIDE = 0.1  # m ... and short side (seen from close by, part of the top may be out of view)
HOUSING_HEIGHT = (0.04, 0.25)  # m above the support
PLATE_CELL = 0.02  # m, grid cell of the top plate fill test ...
PLATE_FILL = 0.5  # ... and the fraction of cells the plate's points must reach
OUT_TOL = 0.004  # m outside the top plate's footprint: a drawer part
NEAR_OUT = 0.25  # m: a separate cluster within this outside a housing may be a drawer part ...
RAISED = 0.012  # m ... if its lowest point is this far above the support (not a block on the table)
FRONT_RAISED = 0.012  # m: a drawer scrap (shorter than LONG_PART) whose lowest point is this far above the
# support is a bit of a drawer's front (its bottom edge stands 1.6 cm up), not a block standing before it
LONG_PART = 0.09  # m ... or it runs this far along the housing edge (an open drawer; a block is 4 cm)
PART_TOP = 0.03  # m above the support: a drawer part reaches this high (not a scrap of table)
PART_OUT = 0.025  # m: a drawer part sticks this far out of the footprint (its handle bar, 5-6 cm when shut);
# a face that stands just outside the top plate's footprint (the housing's back seen from behind) is housing
SPLIT_GAP = 0.011  # m along the housing edge between two drawers' parts
WIDEST_FRONT = 0.22  # m along the housing edge: a cluster of its own this long is one drawer's part, longer
# is several (open drawers side by side, linked by DBSCAN) and is split at SPLIT_GAP
CUP_SIDE = (0.055, 0.11)  # m, footprint side range of a cup
CUP_HEIGHT = (0.05, 0.13)  # m, vertical extent of a cup (with its knob)
BUTTON_SIDE = (0.048, 0.085)  # m, footprint side range of a push button (base 7 cm, cap 4.8 cm)
BUTTON_TOP = 0.045  # m above the support, at most (the cap's top stands at 3.6 cm)
BUTTON_SHOWING = 0.012  # m of height seen, at least
SLIVER_DROP = 0.04  # m: a cluster this far below a cup, inside its footprint, is a piece of its wall
KNOB_BAND = 0.012  # m below a cluster's top: the knobs of cups standing side by side


def _housing_footprint(cp: np.ndarray, support: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(lo, hi) xy of the top plate of a housing-like cluster (N,3), or None."""
    top = float(cp[:, 2].max())
    if not HOUSING_HEIGHT[0] <= top - support <= HOUSING_HEIGHT[1]:
        return None
    plate = cp[cp[:, 2] >= top - TOP_BAND, :2]
    if len(plate) < 12:
        return None
    lo, hi = np.percentile(plate, 1, axis=0), np.percentile(plate, 99, axis=0)
    if np.max(hi - lo) < HOUSING_MIN or np.min(hi - lo) < HOUSING_MIN_SIDE:
        return None
    # A plate, not a rim: its points cover most of its footprint (2 cm cells).
    cells = np.unique(np.floor((plate - lo) / PLATE_CELL).astype(np.int64), axis=0)
    if len(cells) < PLATE_FILL * np.prod(np.floor((hi - lo) / PLATE_CELL) + 1):
        return None
    return lo, hi


def _outside(xy: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """How far each point (N,2) lies outside the rectangle, and which side (0: -x, 1: -y, 2: +x, 3: +y)."""
    out = np.stack([lo[0] - xy[:, 0], lo[1] - xy[:, 1], xy[:, 0] - hi[0], xy[:, 1] - hi[1]], axis=1)
    side = np.argmax(out, axis=1)
    return out[np.arange(len(xy)), side], side


def _split_along(idx: np.ndarray, coord: np.ndarray, min_points: int, source: np.ndarray) -> list[np.ndarray]:
    """Pieces of ``idx`` split where sorted ``coord`` jumps by more than ``SPLIT_GAP``, except between two
    points of one cluster of their own (``source`` > 0: a handle bar a far camera sees as a dotted line,
    linked by DBSCAN; 0: points sticking out of the housing's cluster)."""
    order = np.argsort(coord, kind="stable")
    src = source[order]
    cut = (np.diff(coord[order]) > SPLIT_GAP) & ~((src[1:] == src[:-1]) & (src[1:] > 0))
    cuts = np.flatnonzero(cut) + 1
    return [idx[order[p]] for p in np.split(np.arange(len(order)), cuts) if len(p) >= min_points]


def is_cup(cp: np.ndarray, support: float) -> bool:
    """Whether a cluster (N,3) m has a cup's size: a 5.5-11 cm square footprint and a top 6 cm or more
    above the support, with at least 2 cm of height showing (seen from straight above, its top and knob)."""
    ext = cp.max(axis=0) - cp.min(axis=0)
    return bool(
        CUP_SIDE[0] <= ext[0] <= CUP_SIDE[1]
        and CUP_SIDE[0] <= ext[1] <= CUP_SIDE[1]
        and CUP_HEIGHT[0] <= ext[2] + 0.03 and ext[2] <= CUP_HEIGHT[1]
        and cp[:, 2].max() - support >= CUP_HEIGHT[0]
    )


def footprint_sides(xy: np.ndarray, step_deg: float = 5.0) -> np.ndarray:
    """(2,) m: the sides of the smallest-area rectangle, turned in ``step_deg`` steps, around points (N,2) m.
    A box's axis-aligned extent grows with its yaw (a 4 cm block turned 20 degrees spans 5.1 cm); its
    smallest rectangle does not."""
    angles = np.deg2rad(np.arange(0.0, 90.0, step_deg))
    axes = np.stack([np.cos(angles), np.sin(angles)], axis=1)  # (A,2): each rectangle's first side
    along, across = xy @ axes.T, xy @ np.stack([-axes[:, 1], axes[:, 0]], axis=1).T
    sides = np.stack([np.ptp(along, axis=0), np.ptp(across, axis=0)], axis=1)  # (A,2)
    return sides[int(np.argmin(sides[:, 0] * sides[:, 1]))]


def is_button(cp: np.ndarray, support: float) -> bool:
    """Whether a cluster (N,3) m has a push button's size: a 5-8.5 cm square footprint (its 7 cm base;
    a 4 cm block is narrower, seen from any side, turned or not: ``footprint_sides``) and a top at most
    4.5 cm above the support, at least 1.5 cm of it showing (a cup stands 6 cm tall, a pad lies in the
    support plane). Measured along x and y, a 4 cm block turned on the table spans up to 5.7 cm: named a
    button, its node can keep a view of the block from in flight, too tall, and a touch meant for it then
    stops above it."""
    sides = footprint_sides(cp[:, :2])
    return bool(
        np.all((BUTTON_SIDE[0] <= sides) & (sides <= BUTTON_SIDE[1]))
        and np.ptp(cp[:, 2]) >= BUTTON_SHOWING
        and cp[:, 2].max() - support <= BUTTON_TOP
    )


def _side_by_side(pts: np.ndarray, pieces: list[np.ndarray]) -> bool:
    """Whether a button-sized cluster's colour pieces (``split_by_colour``) are two or more things each no
    wider than a block (``MIXED_NARROWEST``): two blocks 2 cm apart (Rearrange's neighbouring spots), whose
    joint footprint is a button's. A button's 7 cm base is one piece wider than a block, whatever its cap's
    colour. Taken for a button, the pair is never split: the block just placed there goes missing and its
    place is judged failed."""
    return len(pieces) >= 2 and all(np.ptp(pts[p, :2], axis=0).max() <= MIXED_NARROWEST for p in pieces)


def _split_cups(pts: np.ndarray, idx: np.ndarray, support: float) -> list[np.ndarray] | None:
    """Cups standing side by side in one cluster, split by their knobs: the top band of the cluster
    falls apart into knob-sized pieces a cup width apart, and every point goes to the nearest knob.
    None if the cluster is not a row of cups."""
    cp = pts[idx]
    ext = cp.max(axis=0) - cp.min(axis=0)
    if max(ext[0], ext[1]) <= CUP_SIDE[1] or max(ext[0], ext[1]) > 5 * CUP_SIDE[1]:
        return None
    band = np.flatnonzero(cp[:, 2] >= cp[:, 2].max() - KNOB_BAND)
    knobs = [c for c in components(cp[band, :2], 0.02) if len(c) >= 2]
    if len(knobs) < 2:
        return None
    centres = np.array([cp[band[c], :2].mean(axis=0) for c in knobs])
    if any(np.ptp(cp[band[c], :2], axis=0).max() > 0.04 for c in knobs):
        return None
    owner = np.argmin(np.linalg.norm(cp[:, None, :2] - centres[None], axis=2), axis=1)
    pieces = [idx[owner == k] for k in range(len(knobs))]
    if not all(is_cup(pts[p], support) for p in pieces):
        return None
    return pieces


def _merge_knobs(pts: np.ndarray, clusters: list[np.ndarray], support: float) -> list[np.ndarray]:
    """Small clusters just above a bigger one (knobs seen apart from their cups' tops) join it; a
    cluster under several knobs is split among them (cups side by side seen from above)."""
    boxes = [(pts[c].min(axis=0), pts[c].max(axis=0)) for c in clusters]
    knobs_of: dict[int, list[int]] = {}
    for k, (lo, hi) in enumerate(boxes):
        if np.max(hi[:2] - lo[:2]) > 0.035:
            continue
        centre = (lo[:2] + hi[:2]) / 2
        for j, (lo2, hi2) in enumerate(boxes):
            if j == k or np.max(hi2[:2] - lo2[:2]) < CUP_SIDE[0]:
                continue
            if np.all(centre >= lo2[:2]) and np.all(centre <= hi2[:2]) and -0.01 <= lo[2] - hi2[2] <= 0.035:
                knobs_of.setdefault(j, []).append(k)
                break
    out, gone = [], set()
    for j, knobs in knobs_of.items():
        merged = np.concatenate([clusters[j]] + [clusters[k] for k in knobs])
        pieces = [merged] if is_cup(pts[merged], support) else _split_cups(pts, merged, support)
        if pieces is not None:
            out += pieces
            gone |= {j, *knobs}
    return out + [c for k, c in enumerate(clusters) if k not in gone]


def label_parts(
    pts: np.ndarray, clusters: list[np.ndarray], support: float, min_points: int, cols: np.ndarray | None = None
) -> list[tuple[str, np.ndarray]]:
    """Regroup clusters (index arrays into ``pts`` (N,3) m) into labelled parts.

    Returns (label, indices) pairs; label is ``cabinet``, ``drawer``, ``cup``,
    ``button`` or "" (no shape class recognised). ``support``: the support plane height (m). ``cols``
    (N,3) in [0, 1]: with them, a thing lying in an open drawer's tray is told from the drawer
    (:func:`things_in_tray`).
    """
    clusters = _merge_knobs(pts, clusters, support)
    housings: list[tuple[int, np.ndarray, np.ndarray]] = []
    for k, idx in enumerate(clusters):
        found = _housing_footprint(pts[idx], support)
        if found is not None:
            housings.append((k, *found))
    used: set[int] = {k for k, _, _ in housings}
    parts: list[tuple[str, np.ndarray]] = []
    for k, lo, hi in housings:
        idx = clusters[k]
        top = float(pts[idx, 2].max())
        dist, side = _outside(pts[idx, :2], lo, hi)
        out = dist > OUT_TOL
        housing_idx = [idx[~out]]
        drawer_idx, drawer_side, drawer_dist = [idx[out]], [side[out]], [dist[out]]
        drawer_src = [np.zeros(int(out.sum()), dtype=np.int64)]
        # The row's colour, from the fronts seen joined to the housing (one colour per row).
        row_hue = np.median(chroma(cols[idx[out]]), axis=0) if cols is not None and out.sum() >= min_points else None
        if row_hue is None and cols is not None:
            row_hue = _long_parts_hue(pts, cols, [c for j, c in enumerate(clusters) if j not in used], lo, hi,
                                      top, min_points)
        for j, other in enumerate(clusters):
            if j in used:
                continue
            cp = pts[other]
            d, s = _outside(cp[:, :2], lo, hi)
            outside = d > OUT_TOL
            if not outside.any():
                continue
            # An open drawer's tray still reaches in under the top plate: a part too, on its outer side.
            tucked = d.max() >= PART_OUT and bool(np.all(outside | (cp[:, 2] < top - TOP_BAND)))
            s = np.full_like(s, np.bincount(s[outside]).argmax()) if tucked else s
            along = np.ptp(cp[:, 1 if s[0] % 2 == 0 else 0])
            if (
                (outside.all() or tucked)
                and d.max() < NEAR_OUT
                and ((cp[:, 2].min() > support + RAISED and _row_coloured(cols, other, row_hue)) or along >= LONG_PART)
                and cp[:, 2].max() <= top + 0.005
                and len(set(s[outside].tolist())) == 1
            ):
                used.add(j)
                drawer_idx.append(other)
                drawer_side.append(s)
                drawer_dist.append(d)
                drawer_src.append(np.full(len(other), j + 1 if along <= WIDEST_FRONT else 0))
        di, ds, dsrc = np.concatenate(drawer_idx), np.concatenate(drawer_side), np.concatenate(drawer_src)
        far = np.zeros(len(pts))
        far[di] = np.concatenate(drawer_dist)
        for s in range(4):
            on_side = di[ds == s]
            if len(on_side) < min_points:
                continue
            tangent = pts[on_side, 1 if s % 2 == 0 else 0]
            for piece in _split_along(on_side, tangent, min_points, dsrc[ds == s]):
                if far[piece].max() < PART_OUT:
                    housing_idx.append(piece)
                    continue
                # A drawer shows its handle bar or its front along the edge; a scrap on the table (a
                # block before the drawer, a corner of table) keeps a size class, one off it is dropped.
                axis = 1 if s % 2 == 0 else 0
                whole = np.ptp(pts[piece, axis]) >= LONG_PART
                if np.ptp(pts[piece, axis]) > WIDEST_FRONT:
                    continue  # two open drawers' trays seen as one, with no gap between: neither is told
                mid = float(np.median(pts[piece, axis]))
                if not lo[axis] <= mid <= hi[axis] or pts[piece, 2].max() > top + 0.005:
                    continue  # not in front of this housing, or reaching over it: the arm
                if pts[piece, 2].max() < support + PART_TOP:
                    continue
                if not whole and pts[piece, 2].min() > support + FRONT_RAISED:
                    continue  # a bit of a drawer's front, which hangs off the table: no thing of its own
                if whole and cols is not None:
                    piece, things = things_in_tray(pts, cols, piece, min_points)
                    parts += [("", thing) for thing in things]
                parts.append(("drawer" if whole else "", piece))
        parts.append(("cabinet", np.concatenate(housing_idx)))
    cups: list[np.ndarray] = []
    rest: list[np.ndarray] = []
    for k, idx in enumerate(clusters):
        if k in used:
            continue
        split = [idx] if is_cup(pts[idx], support) else _split_cups(pts, idx, support)
        if split is None:
            rest.append(idx)
        else:
            cups += split
    cups = _absorb_slivers(pts, cups, rest)
    if cols is not None:
        buttons, pieces = [], []
        for c in rest:
            split = split_by_colour(pts, cols, c, min_points, support)
            if is_button(pts[c], support) and not _side_by_side(pts, split):
                buttons.append(c)
            else:
                pieces += split
        rest = buttons + join_cut_pieces(pts, cols, pieces)
        drawers = [p for label, p in parts if label == "drawer"]
        bits = drawer_bits(pts, cols, drawers, [p for _, p in parts])
        parts = [(label, p) for (label, p), bit in zip(parts, bits) if label or not bit]
        bits = drawer_bits(pts, cols, drawers, rest)
        rest = [c for c, bit in zip(rest, bits) if not bit or is_button(pts[c], support)]
    return parts + [("cup", c) for c in cups] + [("button" if is_button(pts[c], support) else "", c) for c in rest]


def _long_parts_hue(pts: np.ndarray, cols: np.ndarray, clusters: list[np.ndarray], lo: np.ndarray, hi: np.ndarray,
                    top: float, min_points: int) -> np.ndarray | None:
    """The median chroma of the clusters that are a drawer's part by their length alone (wholly outside the
    housing's footprint ``lo``..``hi`` on one side, within NEAR_OUT, no higher than its top ``top``, at least
    LONG_PART along its edge), or None where there are none. Where the housing's own cluster shows no front,
    this is its row's colour: where the scene camera sees only a shut drawer's top edge as a cluster apart,
    a ball set down before it, its top as raised as a front and no row colour to refuse it, would join that
    edge into one drawer view reaching out to the ball."""
    long_parts = []
    for idx in clusters:
        d, side = _outside(pts[idx, :2], lo, hi)
        if not (d > OUT_TOL).all() or d.max() >= NEAR_OUT or len(set(side.tolist())) != 1:
            continue
        if pts[idx, 2].max() <= top + 0.005 and np.ptp(pts[idx, 1 if side[0] % 2 == 0 else 0]) >= LONG_PART:
            long_parts.append(idx)
    if not long_parts or sum(len(c) for c in long_parts) < min_points:
        return None
    return np.median(chroma(cols[np.concatenate(long_parts)]), axis=0)


def _row_coloured(cols: np.ndarray | None, idx: np.ndarray, row_hue: np.ndarray | None) -> bool:
    """Whether a short piece off the table is in its drawer row's chroma (within TRAY_COLOUR_STEP), or no
    row colour is known. A block's top face, all the wrist camera sees of it from high up, is as raised
    as a drawer's front; taken for one it stretches a shut drawer out to the block."""
    return row_hue is None or bool(np.linalg.norm(np.median(chroma(cols[idx]), axis=0) - row_hue) <= TRAY_COLOUR_STEP)


def _absorb_slivers(pts: np.ndarray, cups: list[np.ndarray], rest: list[np.ndarray]) -> list[np.ndarray]:
    """Clusters within a cup's footprint (grown 1 cm), at most ``SLIVER_DROP`` below its lowest point
    seen (a wall seen apart from the top), join that cup; they are removed from ``rest`` in place.
    A ball under a hovering cup is farther below and stays apart."""
    if not cups:
        return cups
    boxes = [(pts[c].min(axis=0) - 0.01, pts[c].max(axis=0) + 0.01) for c in cups]
    out, keep = list(cups), []
    for r in rest:
        lo, hi = pts[r].min(axis=0), pts[r].max(axis=0)
        for k, (clo, chi) in enumerate(boxes):
            # Inside the footprint, and no more than a wall's height below the top seen.
            if np.all(lo[:2] >= clo[:2]) and np.all(hi[:2] <= chi[:2]) and clo[2] - hi[2] <= SLIVER_DROP:
                out[k] = np.concatenate([out[k], r])
                break
        else:
            keep.append(r)
    rest[:] = keep
    return out

