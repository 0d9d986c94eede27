"""Object permanence and duplicate merging (mixed into :class:`SpatialMemory`).

Permanence: nodes not matched in a frame stay in memory; re-projecting their
remembered points into the current depth images says why they were not
seen: ``out_of_view`` (outside every image), ``occluded`` (something nearer
covers them), ``missing`` (the camera sees through where they should be:
expected but absent) or ``unseen`` (the depth agrees but no detection).
Objects that vanish inside a container's box (a ball under a cup, a block in
a shutting drawer) are recorded ``inside`` it, status ``hidden``.

Duplicates: a node seen this frame is merged into an older one of its class
when both describe one thing and no camera ever saw both at once: their
points overlap, or the old track was lost just before the new one started,
close by (a hand-off).
"""

from __future__ import annotations

import numpy as np

from embodied.memory.spatial import overlap, visibility
from embodied.memory.tracker import _confidence, _vec
from embodied.perception.colour import same_colour
from embodied.perception.types import CameraView


class Permanence:
    """Needs the SpatialMemory fields (_graph, tracks, config, together, changed, _set, delete, _physical)."""

    # --- duplicates ----------------------------------------------------------------
    def _note_together(self, nodes: set) -> None:
        """Nodes matched in one camera frame are distinct things: they may never be merged.

        Only pairs with a node that changed this frame are new: two unchanged
        nodes were already recorded together when one of them last changed.
        """
        fresh = nodes & self.changed
        if not fresh:
            return
        by_cls: dict[str, list[str]] = {}
        for n in nodes:
            by_cls.setdefault(self._graph.nodes[n]["cls"], []).append(n)
        for u in fresh:
            for v in by_cls[self._graph.nodes[u]["cls"]]:
                if v != u:
                    self.together.add((u, v) if u < v else (v, u))

    def _merge_duplicates(self, t: int, touched: set) -> None:
        """Merge a node seen this frame with another of its class when they describe one thing.

        Same thing: their boxes overlap by half the smaller one (supports and
        furniture, seen in pieces) or their points do (objects), their colours
        agree, and no camera ever saw both at once.
        """
        cfg = self.config
        nodes = self._physical()
        by_cls: dict[str, list[str]] = {}
        for n in nodes:
            by_cls.setdefault(self._graph.nodes[n]["cls"], []).append(n)
        for new in sorted(touched & self.changed):
            if new not in self._graph or len(by_cls.get(self._graph.nodes[new]["cls"], ())) < 2:
                continue
            a = self._graph.nodes[new]
            tn = self.tracks[new]
            for old in by_cls[a["cls"]]:
                if old == new or old not in self._graph or (min(old, new), max(old, new)) in self.together:
                    continue
                b = self._graph.nodes[old]
                to = self.tracks[old]
                g = 0.02 if (tn.surface or to.surface) else 0.0  # pieces of furniture may only touch
                w = np.clip(
                    np.minimum(tn.box_max + g, to.box_max + g) - np.maximum(tn.box_min - g, to.box_min - g), 0, None
                )
                small = min(
                    np.prod(np.maximum(tn.box_max - tn.box_min, 0.005)),
                    np.prod(np.maximum(to.box_max - to.box_min, 0.005)),
                )
                if tn.surface or to.surface:
                    same = np.prod(w) >= 0.5 * small
                else:
                    same = same_colour(
                        a["colour"], np.asarray(a["rgb"]), b["colour"], np.asarray(b["rgb"]), cfg.colour_tolerance
                    ) and (overlap(tn.points, to.keys, cfg.assoc_voxel) >= 0.5 or self._handoff(old, new, touched))
                if same:
                    keep, drop = (old, new) if b["first_seen"] <= a["first_seen"] else (new, old)
                    self._merge(keep, drop, t)
                    if drop == new:
                        break
                    a, tn = self._graph.nodes[new], self.tracks[new]

    def _handoff(self, old: str, new: str, touched: set) -> bool:
        """A track lost and picked up again as a new node: ``old`` stopped being seen just before
        ``new`` first was (a bad view moved it off, or a mask was cut at the image edge), close by."""
        cfg = self.config
        a, b = self._graph.nodes[new], self._graph.nodes[old]
        gap = a["first_seen"] - b["last_seen"]
        near = np.linalg.norm(self.tracks[new].center - self.tracks[old].center) < cfg.handoff_gate
        return old not in touched and 0 < gap <= cfg.handoff_steps and bool(near)

    def _merge(self, keep: str, drop: str, t: int) -> None:
        """Fold ``drop`` into ``keep`` (the older node keeps its history) and delete ``drop``."""
        cfg = self.config
        tk, td = self.tracks[keep], self.tracks[drop]
        a, b = self._graph.nodes[keep], self._graph.nodes[drop]
        if tk.surface:
            tk.grow_surface(td.points, td.box_min, td.box_max, cfg.max_object_points, cfg.assoc_voxel)
        elif b["last_seen"] >= a["last_seen"]:
            tk.views = td.views  # the newer node has the current look
        tk.refresh(cfg.assoc_voxel, cfg.max_object_points)
        a["n_obs"] += b["n_obs"]
        changes = {
            "position": _vec(tk.center),
            "box_min": _vec(tk.box_min),
            "box_max": _vec(tk.box_max),
            "n_obs": a["n_obs"],
        }
        if b["last_seen"] >= a["last_seen"]:
            changes.update({k: b[k] for k in ("visible", "status", "unseen_since", "last_seen")})
        self._set(keep, t, "merged", changes)
        self.together = {p for p in self.together if drop not in p}
        self.delete(drop, t, "merged")

    # --- permanence -------------------------------------------------------------
    def _permanence(self, views: list[CameraView], seen: set, t: int) -> None:
        """Unmatched nodes stay; their status says why they were not seen."""
        cfg = self.config
        lost = [n for n in self._physical() if n not in seen]
        if not lost or not views:
            return
        containers = [n for n in self._physical() if self._graph.nodes[n]["kind"] == "container"]
        for node in lost:
            a = self._graph.nodes[node]
            track = self.tracks[node]
            if a["held"]:
                status = "held"
            elif a["inside"]:
                status = "hidden"
            else:
                total, through, occluded = visibility(track.samples, views, cfg)
                if total == 0:
                    status = "out_of_view"
                elif through >= cfg.missing_fraction:
                    status = "missing"  # it should be visible there and it is not
                elif occluded >= 0.5:
                    status = "occluded"
                else:
                    status = "unseen"
            changes: dict = {}
            tag = status
            if status not in ("held", "hidden") and a["kind"] == "object":
                holder = self._container_of(track.center, containers, node)
                if holder:
                    status, tag = "hidden", "contained"
                    changes["inside"] = holder
                    rest = self.tracks[holder].rest
                    if rest.get("slid_t") == t:
                        # Shut in by a drawer that slid this frame: it slid along.
                        track.shift(np.array([rest["slid_x"], rest["slid_y"], 0.0]))
                        changes.update(
                            position=_vec(track.center), box_min=_vec(track.box_min), box_max=_vec(track.box_max)
                        )
            if status != a["status"]:
                changes.update(status=status)
                if a["visible"]:
                    changes.update(visible=False, unseen_since=t, last_seen=a["last_seen"])
                changes["confidence"] = _confidence(a["n_obs"], status)
                self._set(node, t, tag, changes)

    def _container_of(self, centre: np.ndarray, containers: list[str], node: str) -> str:
        """The container whose box (now or a frame ago) holds the object, smallest first.

        As the ``in`` edge (centre inside the grown box, bottom no lower than
        the container's bottom, smaller volume), and the object's whole
        footprint inside the grown box: a block lost from view beside an open
        drawer's handle bar has its centre within a centimetre of the bar's
        box but is not in the drawer.
        """
        m = self.config.contain_margin
        best, best_vol = "", np.inf
        own = self.tracks[node]
        own_vol = float(np.prod(np.maximum(own.box_max - own.box_min, 1e-3)))
        for c in containers:
            if c == node:
                continue
            tr = self.tracks[c]
            for lo, hi in [(tr.box_min, tr.box_max)] + ([tr.prev_box] if tr.prev_box is not None else []):
                vol = float(np.prod(np.maximum(hi - lo, 1e-3)))
                if (
                    vol > own_vol
                    and vol < best_vol
                    and own.box_min[2] >= lo[2] - 0.005
                    and np.all(centre >= lo - m)
                    and np.all(centre <= hi + m)
                    and np.all(own.box_min[:2] >= lo[:2] - m)
                    and np.all(own.box_max[:2] <= hi[:2] + m)
                ):
                    best, best_vol = c, vol
        return best
