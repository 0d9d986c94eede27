"""Colour rules of the geometric detector (see ``geometric_shapes.py`` for the shapes): pads found in the
support plane by colour, things told from a drawer's tray by chroma, things side by side told apart by
chroma, and bits of a drawer in its own colour.

Chroma is a point's colour over its brightest channel: shading changes brightness, not chroma, so a
block's lit top and shaded side, or a tray's walls, keep theirs.

All lengths in metres, world frame, z up; colours (N,3) in [0, 1].
"""

from __future__ import annotations

import numpy as np

PAD_SIDE = (0.06, 0.11)  # m, a pad's long side seen (9 cm square, lying flat; its short side foreshortened ...
PAD_SHORT = 0.02  # m ... or half hidden by the block on it is at least this)
PAD_TOP = 0.004  # m above the support: a pad's points (it is 2 mm thick)
PAD_COLOUR_STEP = 0.2  # RGB distance (0-1 channels) from the support's median colour: not the table
PAD_LINK = 0.03  # m between a pad's points (a far camera sees rows of the table 2-3 cm apart) ...
PAD_HUE = 0.15  # ... of one colour (RGB distance): the pads of a row stand 2 cm apart, in distinct colours
PAD_MAX_POINTS = 1500  # odd-coloured plane points past which the table is patterned: no pads told (and
# the pairwise linking below stays small)
PAD_COVERED = 0.6  # share of a patch's footprint an object cluster's footprint may cover (a cup's rim)
TRAY_COLOUR_STEP = 0.25  # chroma distance (RGB over its largest channel) from a drawer's median: in its tray ...
TRAY_HUE = 0.35  # ... linked within PAD_LINK and this colour step (a block's lit top and shaded side) ...
TRAY_THING = 0.08  # ... at most this across (m; a block is 4 cm) ...
TRAY_RISE = 0.02  # ... whose top stands this far above the tray's floor (m): not a shadow or a stain
TRAY_MAX_POINTS = 400  # odd-coloured points past which the drawer is not one colour: nothing told
MIXED_NARROWEST = 0.05  # m: a cluster of no recognised shape wider than a block (4 cm) ...
MIXED_WIDEST = 0.2  # m ... and at most this wide may be things side by side (see split_by_colour) ...
MIXED_TOP = 0.06  # m ... if no taller than this above the support (blocks, a ball; not a screen)
PIECE_SPAN = 0.05  # m: pieces of one chroma (within TRAY_HUE) that fit in a box this wide are one thing
BIT_REACH = 0.03  # m: a piece of no recognised shape this close to a drawer part, in its chroma, is a bit of it


def find_pads(pts: np.ndarray, cols: np.ndarray, plane: np.ndarray, support: float,
              clusters: list[np.ndarray], min_points: int) -> list[np.ndarray]:
    """Pads: patches of the support plane's points (``plane``: indices into ``pts`` (N,3) m and ``cols``
    (N,3) in [0, 1]) lying within ``PAD_TOP`` of the support, coloured at least ``PAD_COLOUR_STEP`` away
    from the support's median colour, one colour linked within ``PAD_LINK``, its long side ``PAD_SIDE``
    and its short side at least ``PAD_SHORT`` (a far camera foreshortens it, the block on it hides
    part); none on a patterned table (``PAD_MAX_POINTS``). A pad lies in the support plane, so
    no cluster above it holds it; a patch mostly under an object cluster's footprint is that object's
    lowest rim (a cup's), not a pad."""
    low = plane[pts[plane, 2] <= support + PAD_TOP]
    if len(low) < min_points:
        return []
    table = np.median(cols[plane], axis=0)
    odd = low[np.linalg.norm(cols[low] - table, axis=1) > PAD_COLOUR_STEP]
    if not min_points <= len(odd) <= PAD_MAX_POINTS:
        return []
    boxes = [(pts[c, :2].min(axis=0), pts[c, :2].max(axis=0)) for c in clusters]
    pads = []
    for comp in components(pts[odd, :2], PAD_LINK, cols[odd], PAD_HUE):
        idx = odd[comp]
        lo, hi = pts[idx, :2].min(axis=0), pts[idx, :2].max(axis=0)
        side = hi - lo
        if len(idx) < min_points or not (PAD_SIDE[0] <= side.max() <= PAD_SIDE[1] and side.min() >= PAD_SHORT):
            continue
        area = float(np.prod(side))
        covered = max((float(np.prod(np.clip(np.minimum(hi, b_hi) - np.maximum(lo, b_lo), 0, None)))
                       for b_lo, b_hi in boxes), default=0.0)
        if covered <= PAD_COVERED * area:
            pads.append(idx)
    return pads


def things_in_tray(pts: np.ndarray, cols: np.ndarray, piece: np.ndarray,
                   min_points: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """A drawer part's points (``piece``, indices into ``pts`` (N,3) m and ``cols`` (N,3) in [0, 1]) less
    the things lying in its tray, and those things: patches whose chroma (colour over its brightest
    channel) lies at least ``TRAY_COLOUR_STEP`` from the drawer's median (the drawer is painted one
    colour), linked within ``PAD_LINK`` and ``TRAY_HUE`` of chroma, at most ``TRAY_THING`` across,
    standing ``TRAY_RISE`` or more above the tray's floor. A block shut in a drawer touches the tray, so
    DBSCAN gives it to the drawer's cluster."""
    # Hue and saturation, not brightness: the tray's walls in their own shade are the drawer still.
    hue = np.zeros_like(cols)
    hue[piece] = chroma(cols[piece])
    odd = piece[np.linalg.norm(hue[piece] - np.median(hue[piece], axis=0), axis=1) > TRAY_COLOUR_STEP]
    if not min_points <= len(odd) <= TRAY_MAX_POINTS:
        return piece, []
    floor = float(np.percentile(pts[piece, 2], 5))
    things = []
    for comp in components(pts[odd, :2], PAD_LINK, hue[odd], TRAY_HUE):
        idx = odd[comp]
        cp = pts[idx]
        if (len(idx) >= min_points and np.ptp(cp[:, :2], axis=0).max() <= TRAY_THING
                and cp[:, 2].max() >= floor + TRAY_RISE):
            things.append(idx)
    if not things:
        return piece, []
    return np.setdiff1d(piece, np.concatenate(things)), things


def split_by_colour(pts: np.ndarray, cols: np.ndarray, idx: np.ndarray, min_points: int,
                    support: float) -> list[np.ndarray]:
    """A cluster of no recognised shape (``idx`` into ``pts`` (N,3) m, ``cols`` (N,3) in [0, 1]) split into
    its patches of one chroma (linked within ``PAD_LINK`` and ``TRAY_HUE``) of ``min_points`` or more, the
    other points going to the nearest: two blocks 2 cm apart are one DBSCAN cluster, whose box and colour
    are neither block's. Only clusters wider than a block, no wider than ``MIXED_WIDEST`` and no taller
    than ``MIXED_TOP`` above the ``support`` (m): a screen in its frame is one thing of two colours."""
    width = float(np.ptp(pts[idx, :2], axis=0).max())
    if not MIXED_NARROWEST < width <= MIXED_WIDEST or pts[idx, 2].max() > support + MIXED_TOP:
        return [idx]
    comps = components(pts[idx, :2], PAD_LINK, chroma(cols[idx]), TRAY_HUE)
    big = [c for c in comps if len(c) >= min_points]
    if len(big) < 2:
        return [idx]
    owner = np.full(len(idx), -1)
    for k, c in enumerate(big):
        owner[c] = k
    loose = np.flatnonzero(owner < 0)
    if len(loose):
        anchored = np.flatnonzero(owner >= 0)
        gap = np.linalg.norm(pts[idx[loose], None, :2] - pts[idx[anchored], :2][None], axis=2)
        owner[loose] = owner[anchored[gap.argmin(axis=1)]]
    return [idx[owner == k] for k in range(len(big))]


def join_cut_pieces(pts: np.ndarray, cols: np.ndarray, pieces: list[np.ndarray]) -> list[np.ndarray]:
    """``pieces`` (index arrays into ``pts`` (N,3) m and ``cols``, of no recognised shape) with those of one
    chroma that fit together in a box ``PIECE_SPAN`` wide joined: one thing the hand cut apart (its points
    under the fingers go), whose near face and far side would be two blocks, memory keeping the old node
    on one and the grasp going there. Two blocks never fit in one such box."""
    pieces = list(pieces)
    hues = [np.median(chroma(cols[p]), axis=0) for p in pieces]
    k = 0
    while k < len(pieces):
        for j in range(k + 1, len(pieces)):
            both = np.concatenate([pieces[k], pieces[j]])
            if np.ptp(pts[both], axis=0).max() <= PIECE_SPAN and np.linalg.norm(hues[k] - hues[j]) <= TRAY_HUE:
                pieces[k], hues[k] = both, np.median(chroma(cols[both]), axis=0)
                del pieces[j], hues[j]
                break
        else:
            k += 1
    return pieces


def components(xy: np.ndarray, reach: float, colours: np.ndarray | None = None,
                hue: float = 0.0) -> list[np.ndarray]:
    """Connected components (index arrays) of a few points (N,2) linked within ``reach`` m (and, with
    ``colours`` (N,3), within ``hue`` of each other's colour)."""
    near = np.linalg.norm(xy[:, None] - xy[None], axis=2) <= reach
    if colours is not None:
        near &= np.linalg.norm(colours[:, None] - colours[None], axis=2) <= hue
    label = -np.ones(len(xy), dtype=np.int64)
    for start in range(len(xy)):
        if label[start] >= 0:
            continue
        label[start], todo = start, [start]
        while todo:
            i = todo.pop()
            for j in np.flatnonzero(near[i] & (label < 0)):
                label[j] = start
                todo.append(int(j))
    return [np.flatnonzero(label == k) for k in np.unique(label)]


def chroma(cols: np.ndarray) -> np.ndarray:
    """(N,3) colours over their brightest channel: hue and saturation, not brightness."""
    return cols / np.maximum(cols.max(axis=1, keepdims=True), 0.05)


def drawer_bits(pts: np.ndarray, cols: np.ndarray, drawers: list[np.ndarray], pieces: list[np.ndarray]) -> list[bool]:
    """Which of ``pieces`` (index arrays into ``pts`` (N,3) m and ``cols``, of no recognised shape) are bits
    of a drawer: within ``BIT_REACH`` of one of this frame's drawer parts (``drawers``), their median chroma
    within ``TRAY_COLOUR_STEP`` of its. A camera close to an open drawer sees its tray's floor or its
    front's lower edge apart from the rest, and memory had made things of them that the plan then moved.
    A thing in the drawer's own colour lying against it goes with them: ``things_in_tray`` cannot tell it
    from the tray either."""
    if not drawers or not pieces:
        return [False] * len(pieces)
    looks = [(pts[d].min(axis=0) - BIT_REACH, pts[d].max(axis=0) + BIT_REACH, np.median(chroma(cols[d]), axis=0))
             for d in drawers]
    bits = []
    for p in pieces:
        lo, hi, hue = pts[p].min(axis=0), pts[p].max(axis=0), np.median(chroma(cols[p]), axis=0)
        bits.append(any(np.all(lo <= d_hi) and np.all(hi >= d_lo)
                        and np.linalg.norm(hue - d_hue) <= TRAY_COLOUR_STEP for d_lo, d_hi, d_hue in looks))
    return bits
