"""Which remembered node each of one camera's views is: one cost of named terms, one global assignment.

Every (view, node) pair the gates allow gets a cost (lower is better), every view a spawn option at
``spawn_cost``, and ``scipy.optimize.linear_sum_assignment`` picks the cheapest one-to-one assignment. The
terms (``AssociationConfig``'s ``*_cost`` knobs say what each prices):

  on its points   1 - the share of the view's points on the node's (ConceptGraphs) + ``near_weight`` x
                  distance / gate, plus ``other_colour_cost``, ``other_label_cost`` or ``still_cost``
  nearness alone  ``motion_cost`` + distance / gate: the node's class and colour near its predicted centre
  found again     ``reid_cost`` + ``reid_rank_cost`` x rank + distance share: an unseen node, known gone first
  last look       ``settled_cost`` (the camera's last look of the node), ``lit_cap_cost`` (a lit face)

Gates come from the affordances (a part on a joint moves only along it; a pressable cap never moves), the
detector profile (class votes, size classes) and the track states.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from embodied.memory.affordances import affords
from embodied.memory.gating import (
    as_last_seen,
    brightness_ratio_matrix,
    centred_over,
    colour_distance_matrix,
    footprint_overlap,
    looks_as_before,
)
from embodied.memory.noise import shift_tolerances
from embodied.memory.spatial import neighbour_keys, overlap_keys
from embodied.perception import lines
from embodied.perception.types import ObjectObservation

BLOCKED = 1e6  # cost of a pair the gates refuse
REID_RANK = {"missing": 0, "hidden": 0, "out_of_view": 1}  # known gone before merely out of view


def _camera_views(views: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One camera's last views of N nodes (None: none): centres (N,3) m (inf: none), counts (N,), rgb (N,3) (NaN)."""
    last = np.array([v.center if v is not None else (np.inf,) * 3 for v in views], dtype=np.float64).reshape(-1, 3)
    size = np.array([v.n_points if v is not None else 0 for v in views], dtype=np.float64)
    seen = np.array([v.rgb if v is not None and v.rgb is not None else (np.nan,) * 3 for v in views],
                    dtype=np.float64).reshape(-1, 3)
    return last, size, seen


@dataclass
class _Nodes:
    """The physical nodes as arrays (N rows), built once per camera's match."""
    cls: np.ndarray  # (N,) object
    colour: np.ndarray  # (N,) object: colour names
    rgb: np.ndarray  # (N,3) float64
    surface: np.ndarray  # (N,) bool: furniture, seen in pieces
    hidden: np.ndarray  # (N,) bool
    centres: np.ndarray  # (N,3) m: where each should be now (its velocity over the steps since, up to lookahead)

    @classmethod
    def of(cls, rows, t: int, lookahead: int) -> _Nodes:
        attrs = rows.attrs
        ahead = np.array([min(t - tr.t_obs, lookahead) for tr in rows.tracks], dtype=np.float64)
        return cls(*(np.array([a[k] for a in attrs], dtype=object) for k in ("cls", "colour")),
                   np.array([a["rgb"] for a in attrs], dtype=np.float64).reshape(-1, 3),
                   np.array([tr.surface for tr in rows.tracks], dtype=bool),
                   np.array([a["status"] == "hidden" for a in attrs], dtype=bool),
                   (rows.lo + rows.hi) / 2 + rows.velocity * ahead[:, None])


@dataclass
class _Views:
    """One camera's D views as arrays: boxes and centres (D,3) m, rgb (D,3), labels and colour names (D,)."""
    lo: np.ndarray
    hi: np.ndarray
    c: np.ndarray
    rgb: np.ndarray
    labels: np.ndarray
    colours: np.ndarray

    @classmethod
    def of(cls, dets: list[ObjectObservation]) -> _Views:
        lo = np.array([d.box_min for d in dets], dtype=np.float64).reshape(-1, 3)
        hi = np.array([d.box_max for d in dets], dtype=np.float64).reshape(-1, 3)
        return cls(lo, hi, (lo + hi) / 2, np.array([d.rgb for d in dets], dtype=np.float64).reshape(-1, 3),
                   np.array([d.label for d in dets], dtype=object), np.array([d.colour for d in dets], dtype=object))


@dataclass
class Match:
    node: str | None  # None: no node; the view may make one
    overlap: float = 0.0
    settled: bool = False


class Associator:
    """Needs the store, the config and the memory's hooks (slide gates, looked-at ground)."""

    def __init__(self, store, config, hooks):
        self.store, self.config, self.hooks = store, config, hooks

    def match(self, dets: list[ObjectObservation], frame: dict[str, list[ObjectObservation]], t: int) -> list[Match]:
        """One camera's views (``dets``) against memory; ``frame``: every camera's views this frame."""
        if not dets:
            return []
        cfg, rows = self.config.association, self.store.rows()
        nodes = rows.nodes
        costs = np.full((len(dets), len(nodes)), BLOCKED)
        overlaps, settled = np.zeros(costs.shape), np.zeros(costs.shape, dtype=bool)
        if nodes:
            table, views = _Nodes.of(rows, t, cfg.lookahead), _Views.of(dets)
            self._local(dets, views, rows, table, frame, costs, overlaps, settled)
            if cfg.reid_any_distance:
                self._found_again(dets, views, rows, table, t, costs)
        used = np.flatnonzero((costs < BLOCKED).any(axis=0))
        spawn = np.full((len(dets), len(dets)), BLOCKED)
        np.fill_diagonal(spawn, cfg.spawn_cost)
        matrix = np.concatenate([costs[:, used], spawn], axis=1)
        rows_i, cols = linear_sum_assignment(matrix)
        out = [Match(None) for _ in dets]
        for i, c in zip(rows_i, cols):
            if c < len(used) and matrix[i, c] < BLOCKED:
                j = used[c]
                out[i] = Match(nodes[j], float(overlaps[i, j]), bool(settled[i, j]))
        return out

    # --- pairs near where a node is -------------------------------------------------------------
    def _local(self, dets, views, rows, table, frame, costs, overlaps, settled) -> None:
        cfg, profile = self.config.association, self.config.detector
        camera, attrs, tracks = dets[0].camera, rows.attrs, rows.tracks
        cls, colour, rgb, surface, centres, hidden = (table.cls, table.colour, table.rgb, table.surface,
                                                      table.centres, table.hidden)
        aff = [affords(c) for c in cls]
        fixed, emissive, anchored, shape_only = (np.array([getattr(f, k) for f in aff], dtype=bool)
                                                 for k in ("fixed", "emissive", "anchored", "shape_only"))
        fixed = fixed | surface
        last, size, seen_rgb = _camera_views([tr.views.get(camera) for tr in tracks])
        gate = cfg.move_gate + 1.5 * np.sqrt((rows.velocity ** 2).sum(axis=1))
        d_lo, d_hi, d_c, d_rgb = views.lo, views.hi, views.c, views.rgb
        big = np.max(d_hi[:, :2] - d_lo[:, :2], axis=1) > 0.3
        gap = np.maximum(rows.lo[None] - d_hi[:, None], d_lo[:, None] - rows.hi[None]).max(axis=2)
        dist = np.sqrt(((centres[None] - d_c[:, None]) ** 2).sum(axis=2))
        same_cls = views.labels[:, None] == cls[None]
        d_aff = [affords(d.label) for d in dets]
        thing = np.array([f.kind in ("object", "container") for f in d_aff], dtype=bool)
        loose = np.array([f.shape_only for f in d_aff], dtype=bool)
        over = centred_over(d_c, rows.lo, rows.hi, cfg.beside)
        # The class gate: exact classes; a size class may continue any movable node; with class votes any
        # class may, save a thing's view on a fixed node (unless it lights up: its lit face named otherwise).
        if profile.class_votes:
            ok = same_cls | ~(thing[:, None] & fixed[None]) | (thing[:, None] & emissive[None])
        elif profile.strict_class:
            ok = same_cls.copy()
        else:
            ok = same_cls | (loose[:, None] & ~fixed[None])
        # An anchored thing (not furniture, which is seen in pieces) never moves: a view of it is centred over it.
        if self.config.on("anchored_footprint"):
            ok &= over | ~(anchored & ~surface)[None]
        as_before = looks_as_before(d_rgb, seen_rgb, cfg.colour_tolerance, cfg.brightness_ratio)
        col_ok = (views.colours[:, None] == colour[None]) | (
            colour_distance_matrix(d_rgb, rgb) < cfg.colour_tolerance) | as_before
        touching = gap < cfg.touch
        patch = np.array([self._patch(d) for d in dets], dtype=bool)
        still = self._standing_still(attrs, tracks)
        shift = shift_tolerances(dets, self.config.sensor, cfg.settle_shift)
        same = ok & as_last_seen(dets, d_c, last, size, colour, seen_rgb, as_before, shift, cfg.settle_size)
        settled[:] = same
        costs[same] = cfg.settled_cost
        if profile.class_votes and self.config.on("lit_face"):
            caps = thing[:, None] & emissive[None] & ~same_cls & centred_over(d_c, rows.lo, rows.hi)
            costs[caps] = np.minimum(costs[caps], cfg.lit_cap_cost)
            overlaps[caps] = 1.0
        near = np.minimum(dist / cfg.move_gate, 1.0)
        keys: dict[int, np.ndarray] = {}  # view -> its neighbour keys, made once

        def around(i: int) -> np.ndarray:
            if i not in keys:
                keys[i] = neighbour_keys(dets[i].points, cfg.voxel)
            return keys[i]

        elsewhere: list[np.ndarray] = []  # _unmoved_elsewhere's answer, asked at most once a call

        def unmoved(j: int) -> bool:
            if not elsewhere:
                elsewhere.append(self._unmoved_elsewhere(rows, camera, frame, cls, colour))
            return bool(elsewhere[0][j])

        for i, j in zip(*np.nonzero(ok & (touching | (dist < gate[None])) & ~same.any(axis=1)[:, None])):
            det, node = dets[i], rows.nodes[j]
            if self.config.on("slide_gate") and self.hooks.off_slide(node, det, centres[j]):
                continue
            ov = 0.0
            if touching[i, j]:
                ov = footprint_overlap(det, rows.lo[j], rows.hi[j]) if surface[j] or big[i] else \
                    overlap_keys(around(i), tracks[j].keys)
            cost = BLOCKED
            if not same_cls[i, j] and profile.class_votes:
                if ov >= 0.5 and (col_ok[i, j] or emissive[j]):
                    cost = 1.0 - ov + cfg.other_label_cost
            elif ov >= cfg.min_overlap and col_ok[i, j]:
                cost = 1.0 - ov + cfg.near_weight * near[i, j] + (cfg.still_cost if still[j] and not over[i, j] else 0)
            elif ov >= 0.5 and (same_cls[i, j] or shape_only[j]):
                cost = 1.0 - ov + cfg.near_weight * near[i, j] + cfg.other_colour_cost
            elif (col_ok[i, j] and dist[i, j] < gate[j] and not surface[j] and not anchored[j]
                  and (same_cls[i, j] or shape_only[j] or profile.class_votes)
                  and not (self.config.on("patch_not_hidden") and (patch[i] or (loose[i] and not same_cls[i, j]))
                           and hidden[j])
                  and not (self.config.on("unmoved_elsewhere") and unmoved(j))):
                cost = cfg.motion_cost + dist[i, j] / gate[j] + (cfg.still_cost / 2 if still[j] else 0.0)
            if cost < costs[i, j]:
                costs[i, j], overlaps[i, j] = cost, ov

    def _patch(self, det: ObjectObservation) -> bool:
        """A size class's view with no height: a patch of a surface, never a thing hidden in a container."""
        return affords(det.label).shape_only and float(det.box_max[2] - det.box_min[2]) < self.config.association.patch

    def _standing_still(self, attrs: list[dict], tracks: list) -> np.ndarray:
        """(N,) bool: containers lost at rest whose place the depth shows filled, where merged views are left
        out (``object_pieces``): a passing look-alike lost in the merge beside one has the better claim."""
        if not (self.config.detector.object_pieces and self.config.on("standing_still")):
            return np.zeros(len(attrs), dtype=bool)
        moving = self.config.track.moving
        return np.array([a["status"] == "unseen" and affords(a["cls"]).carries
                         and float(np.abs(tr.velocity).max()) <= moving for a, tr in zip(attrs, tracks)], dtype=bool)

    def _unmoved_elsewhere(self, rows, camera: str, frame: dict, cls: np.ndarray, colour: np.ndarray) -> np.ndarray:
        """(N,) bool: another camera of this frame has a view of node j's class just as it last saw the node:
        then the node has not moved, and no view of ``camera`` takes it by nearness alone."""
        cfg = self.config.association
        out = np.zeros(len(rows.nodes), dtype=bool)
        for other, dets in frame.items():
            if other == camera or not dets:
                continue
            last, size, seen = _camera_views([tr.views.get(other) for tr in rows.tracks])
            views = _Views.of(dets)
            before = looks_as_before(views.rgb, seen, cfg.colour_tolerance, cfg.brightness_ratio)
            shift = shift_tolerances(dets, self.config.sensor, cfg.settle_shift)
            same = as_last_seen(dets, views.c, last, size, colour, seen, before, shift, cfg.settle_size)
            same &= views.labels[:, None] == cls[None]
            out |= same.any(axis=0)
        return out

    # --- nodes found again, anywhere -----------------------------------------------------------
    def _found_again(self, dets, views, rows, table, t: int, costs) -> None:
        """Pairs of views with unseen nodes of their class and colour, at any distance; not for a view on
        ground no camera looked at before (a discovery), nor a line, nor while a look-alike lost a moment ago
        is close by (the hand-off merges them), nor a part on a joint; a node merely out of view, lost at
        rest, only within the profile's reach. All views at once, as (T, N) arrays."""
        cfg, profile, on = self.config.association, self.config.detector, self.config.on
        attrs, cls, colour, rgb, surface, centres = rows.attrs, table.cls, table.colour, table.rgb, table.surface, \
            table.centres
        rank = np.array([REID_RANK.get(a["status"], -1) for a in attrs])
        jointed = np.array([bool(a.get("articulated")) for a in attrs], dtype=bool)
        free = (rank >= 0) & ~surface & ~jointed
        last = np.array([a["last_seen"] for a in attrs])
        recent = (last < t) & (last >= t - cfg.handoff_steps) & ~surface
        if not (free | recent).any():
            return
        wanted = self.hooks.looked_at_many(views.c) if on("looked_at_ground") else np.ones(len(dets), dtype=bool)
        if on("no_lines"):
            wanted &= ~lines(views.lo, views.hi, cfg.line)
        todo = np.flatnonzero(wanted)
        if not len(todo):
            return
        sized, hidden = np.array([affords(c).shape_only for c in cls], dtype=bool), table.hidden
        in_motion = np.abs(rows.velocity).max(axis=1) > self.config.track.moving
        labels, d_rgb, d_c = views.labels[todo], views.rgb[todo], views.c[todo]
        loose = np.array([not profile.strict_class and affords(c).shape_only for c in labels], dtype=bool)
        ok = (labels[:, None] == cls[None]) | (loose[:, None] & (sized & ~hidden)[None])
        if on("patch_not_hidden"):
            ok &= ~(np.array([self._patch(dets[i]) for i in todo], dtype=bool)[:, None] & hidden[None])
        near_colour = (colour_distance_matrix(d_rgb, rgb) < cfg.colour_tolerance) & (
            brightness_ratio_matrix(d_rgb, rgb) < cfg.reid_brightness_ratio)
        ok &= (views.colours[todo][:, None] == colour[None]) | near_colour
        dist = np.sqrt(((centres[None] - d_c[:, None]) ** 2).sum(axis=2))
        if on("handoff"):
            handed = (recent[None] & ok & (dist < cfg.handoff_gate)).any(axis=1)
            ok &= ~handed[:, None]
        ok &= free[None]
        if profile.reid_out_of_view_reach is not None:
            ok &= (rank == 0)[None] | (dist <= profile.reid_out_of_view_reach) | in_motion[None]
        cost = np.where(ok, cfg.reid_cost + cfg.reid_rank_cost * rank[None] + dist / (dist + 1.0), BLOCKED)
        costs[todo] = np.minimum(costs[todo], cost)
