"""View filters: one camera's views made into measurements before association, by what memory knows.

A detector that cuts one thing into pieces, or sees two as one, or takes a neighbour in, gives views that
are no single thing's. Each filter asks whether a view is explained by remembered nodes:

  cut out       a housing's view loses the parts it took in; a part's view the objects before it
  join          views that fit one remembered node's place together are its pieces, joined
  merged        a view of a rigid class as wide as several of its remembered nodes is all of them: left out
  lookalike     a size-class view inside a part's space in its colour is the part (its tray, its top plate)

Which filters run is the detector profile's (``DetectorProfile``): the renderer's masks never cut or join.
"""

from __future__ import annotations

import numpy as np

from embodied.memory.affordances import affords
from embodied.memory.carve import cut_out, drawers_spanned
from embodied.memory.drawers import across, side_vector
from embodied.perception import join_views
from embodied.perception.colour import same_colour


class ViewFilters:
    """Needs the store, the config and the prismatic plugin (slides, widths)."""

    def __init__(self, store, config, drawers):
        self.store, self.config, self.drawers = store, config, drawers

    def __call__(self, dets: list) -> list:
        profile = self.config.detector
        if profile.drawer_pieces:
            dets = self.join_part_pieces(self.cut_objects_from_parts(self.cut_parts_from_housings(dets)))
        dets = self.drop_lookalikes(dets)
        if profile.object_pieces:
            dets = self.join_object_pieces(self.drop_merged(dets))
        return dets

    def cut_parts_from_housings(self, dets: list) -> list:
        """A housing's view covering ``blob_cover`` of a smaller part's footprint loses its points in the part's
        box grown by ``lookalike_slack`` (else a part pulled out, seen with its housing, grows the housing)."""
        cfg, g, tracks, out = self.config.articulation, self.store._graph.nodes, self.store.tracks, []
        parts = [(tracks[n].box_min, tracks[n].box_max) for n in self.drawers.parts()
                 if not affords(g[n]["cls"]).housing]
        for d in dets:
            if affords(d.label).housing and parts:
                view = float(np.prod(np.maximum(d.box_max[:2] - d.box_min[:2], 1e-3)))
                inside = [(lo, hi) for lo, hi in parts if _covers(d, lo, hi, view, cfg.blob_cover)]
                d = cut_out(d, inside, cfg.lookalike_slack) if inside else d
            if d is not None:
                out.append(d)
        return out

    def cut_objects_from_parts(self, dets: list) -> list:
        """A part's view overlapping a remembered plain object (not held, in nothing, not missing) loses the
        points in the object's box grown by ``object_slack`` (else a block before a drawer grows its front)."""
        if not any(affords(d.label).prismatic for d in dets):
            return dets
        g, tracks = self.store._graph.nodes, self.store.tracks
        objects = [(tracks[n].box_min, tracks[n].box_max) for n in self.store.nodes_of(kind="object")
                   if g[n].get("status") != "missing" and not g[n].get("held") and not g[n].get("inside")]
        out = []
        for d in dets:
            if affords(d.label).prismatic:
                near = [(lo, hi) for lo, hi in objects if np.all(np.minimum(d.box_max, hi) > np.maximum(d.box_min, lo))]
                d = cut_out(d, near, self.config.articulation.object_slack) if near else d
            if d is not None:
                out.append(d)
        return out

    def join_part_pieces(self, dets: list) -> list:
        """Views of parts in one remembered part's slide corridor (across the slide within its width and
        ``piece_across``, at its height, along it within ``pull_reach``) are its pieces (the arm hides its
        middle), joined, once views wider than several of the row's parts are gone."""
        cfg = self.config.articulation
        if not any(affords(d.label).prismatic for d in dets):
            return dets
        nodes, widths = self.drawers.widths()
        dets = self._drop_merged_parts(dets, nodes, widths)
        chosen = [i for i, d in enumerate(dets) if affords(d.label).prismatic]
        if len(chosen) < 2:
            return dets
        groups, taken = [], set()
        for (node, side), width in zip(nodes, widths):
            if width > cfg.piece_widest * min(widths):
                continue  # a node grown over two parts (a row's parts are alike): no corridor
            k = across(side)
            lo, hi = self.store.tracks[node].box_min, self.store.tracks[node].box_max
            inside = [i for i in chosen if i not in taken and dets[i].box_min[k] >= lo[k] - cfg.piece_across
                      and dets[i].box_max[k] <= hi[k] + cfg.piece_across and dets[i].box_min[2] <= hi[2]
                      and dets[i].box_max[2] >= lo[2] and dets[i].box_max[1 - k] >= lo[1 - k] - cfg.pull_reach
                      and dets[i].box_min[1 - k] <= hi[1 - k] + cfg.pull_reach]
            if len(inside) > 1:
                groups.append(inside)
                taken.update(inside)
        return _joined(dets, groups)

    def _drop_merged_parts(self, dets: list, nodes: list, widths: list[float]) -> list:
        """Drops views of parts wider across their row's slide than ``merged_width`` times the row's median part,
        or covering ``span_share`` of two whole parts: several parts seen as one."""
        cfg, drop = self.config.articulation, set()
        for i, det in enumerate(dets):
            if not affords(det.label).prismatic:
                continue
            row = [(n, side, w) for (n, side), w in zip(nodes, widths)
                   if np.linalg.norm(self.store.tracks[n].center[:2] - det.center[:2]) < cfg.row_reach]
            if len(row) < 2:
                continue
            typical = float(np.median([w for _, _, w in row]))
            sides = [sd for _, sd, _ in row]
            k = across(max(set(sides), key=sides.count))
            whole = [(self.store.tracks[n].box_min, self.store.tracks[n].box_max) for n, _, w in row
                     if w >= cfg.whole * typical]
            if float(det.box_max[k] - det.box_min[k]) > cfg.merged_width * typical or \
                    drawers_spanned(det.box_min, det.box_max, whole, k, cfg.span_share) >= 2:
                drop.add(i)
        return [d for i, d in enumerate(dets) if i not in drop] if drop else dets

    def join_object_pieces(self, dets: list) -> list:
        """Views of a remembered plain object's class and colour lying, two or more together, within its
        box (grown by ``piece_slack``) are its pieces (a block's lit top and shaded side), joined."""
        if len(dets) < 2:
            return dets
        rows, cfg = self.store.rows(), self.config.association
        groups, taken = [], set()
        for a, track in zip(rows.attrs, rows.tracks):
            if a["kind"] != "object" or a["held"] or track.surface:
                continue
            lo, hi = track.box_min - cfg.piece_slack, track.box_max + cfg.piece_slack
            inside = [i for i, d in enumerate(dets) if i not in taken and d.label == a["cls"]
                      and np.all(d.box_min >= lo) and np.all(d.box_max <= hi)
                      and same_colour(d.colour, d.rgb, a["colour"], np.asarray(a["rgb"]), cfg.colour_tolerance)]
            if len(inside) > 1:
                groups.append(inside)
                taken.update(inside)
        return _joined(dets, groups)

    def drop_merged(self, dets: list) -> list:
        """Drops views of two remembered rigid things as one (cups passing): a rigid class's view wider than
        ``merged_view`` times the widest of the two or more settled nodes of its class it covers or stands
        within their width of, and a plain object's view wider than furniture (with what it stands on)."""
        if not dets:
            return dets
        rows, cfg = self.store.rows(), self.config.association
        boxes: dict[str, list] = {}
        for a, tr in zip(rows.attrs, rows.tracks):
            aff = affords(a["cls"])
            rigid = (a["kind"] in ("object", "container") and not aff.jointed) or aff.pressable
            if rigid and not a["held"] and not tr.surface and a["n_obs"] >= cfg.settled_sightings:
                boxes.setdefault(a["cls"], []).append((tr.box_min, tr.box_max))
        keep = []
        for det in dets:
            wide = det.box_max[:2] - det.box_min[:2]
            aff = affords(det.label)
            if wide.max() > self.config.track.furniture_width and not aff.shape_only and aff.kind == "object":
                continue
            near = [(lo, hi) for lo, hi in boxes.get(det.label, ()) if np.all(det.box_min[:2] - (hi - lo)[:2] <= hi[:2])
                    and np.all(det.box_max[:2] + (hi - lo)[:2] >= lo[:2])]
            if not (len(near) >= 2 and np.any(wide > cfg.merged_view * np.max([hi - lo for lo, hi in near], 0)[:2])):
                keep.append(det)
        return keep

    def drop_lookalikes(self, dets: list) -> list:
        """Drops size-class views (container views too where classes are not strict) that are furniture: in a
        part's space (its box grown by ``lookalike_slack``, and ``pull_reach`` along its slide) in its exact
        colour name, a blob wider than ``blob_wide`` over a fixture's footprint, or a housing's top plate."""
        strict = self.config.detector.strict_class
        looks = [d for d in dets if affords(d.label).shape_only or (not strict and affords(d.label).carries)]
        if not looks:
            return dets
        cfg, g = self.config.articulation, self.store._graph.nodes
        fixtures = [(self.store.tracks[n], affords(g[n]["cls"])) for n in self.store.nodes_of()
                    if affords(g[n]["cls"]).prismatic or affords(g[n]["cls"]).housing]
        spaces = []
        for node, side in self.drawers.widths()[0]:
            tr = self.store.tracks[node]
            along = np.abs(side_vector(side)) * cfg.pull_reach
            spaces.append((tr.box_min[:2] - cfg.lookalike_slack - along, tr.box_max[:2] + cfg.lookalike_slack + along,
                           g[node]["colour"]))

        def furniture(d) -> bool:
            if affords(d.label).shape_only:
                wide = float(np.max(d.box_max[:2] - d.box_min[:2])) > cfg.blob_wide
                for tr, aff in fixtures:
                    lo, hi = tr.box_min, tr.box_max
                    if wide and _covers(d, lo, hi, np.inf, cfg.blob_cover):
                        return True
                    top = float(hi[2])
                    if (aff.housing and np.all(d.box_min[:2] >= lo[:2] - cfg.lookalike_slack)
                            and np.all(d.box_max[:2] <= hi[:2] + cfg.lookalike_slack)
                            and top - cfg.top_plate <= d.box_min[2] and d.box_max[2] <= top + cfg.top_plate / 2):
                        return True
            return any(np.all(d.box_min[:2] >= lo) and np.all(d.box_max[:2] <= hi) and d.colour == colour
                       for lo, hi, colour in spaces)

        return [d for d in dets if d not in looks or not furniture(d)]


def _covers(d, lo: np.ndarray, hi: np.ndarray, view_area: float, share: float) -> bool:
    """Whether view ``d`` covers ``share`` of box (lo, hi)'s footprint, that being under ``view_area`` m^2."""
    foot = float(np.prod(np.maximum(hi[:2] - lo[:2], 1e-3)))
    inner = np.clip(np.minimum(d.box_max[:2], hi[:2]) - np.maximum(d.box_min[:2], lo[:2]), 0, None)
    return foot < view_area and float(np.prod(inner)) >= share * foot


def _joined(dets: list, groups: list[list[int]]) -> list:
    if not groups:
        return dets
    taken = {i for g in groups for i in g}
    joined = {g[0]: join_views([dets[i] for i in g]) for g in groups}
    return [joined.get(i, d) for i, d in enumerate(dets) if i not in taken or i in joined]
