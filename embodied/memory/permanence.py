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

from embodied.memory.spatial import overlap, visibility_many
from embodied.memory.tracker import _confidence, _vec
from embodied.perception.colour import same_colour
from embodied.perception.types import CameraView

GLIMPSE = 5  # steps: an object hidden in a container, seen again for at most this long, is still in it
FLOATING = 0.015  # m: an object shut in a container with its bottom this far above the container's has sunk to it


class _Samples:
    """The sample clouds (N,3) m of some tracks, by position in ``rows``: read only when asked, as
    ``visibility_many`` asks only for the boxes a camera may see (in a house, a few of hundreds)."""

    __slots__ = ("rows", "tracks")

    def __init__(self, tracks: list, rows: list[int]):
        self.tracks, self.rows = tracks, rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.tracks[self.rows[i]].samples


class Permanence:
    """Needs the SpatialMemory fields (_graph, tracks, config, together, changed, _set, delete, _physical,
    _node_rows)."""

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
            by_cls.setdefault(self._alike(self._graph.nodes[n]), []).append(n)
        for u in fresh:
            for v in by_cls[self._alike(self._graph.nodes[u])]:
                if v != u:
                    self.together.add((u, v) if u < v else (v, u))

    def _alike(self, a: dict) -> str:
        """What a node may be merged with: nodes of its class, or with class votes any plain object (one
        object whose label flickered has a node under each label)."""
        return "object:" if self.config.class_votes and a["kind"] == "object" else a["cls"]

    def _merge_duplicates(self, t: int, touched: set) -> None:
        """Merge a node seen this frame with another of its class when they describe one thing.

        Same thing: their boxes overlap by half the smaller one (supports and
        furniture, seen in pieces) or the points of either lie on the other's
        (objects), their colours agree, and no camera ever saw both at once.
        """
        cfg = self.config
        fresh = sorted(touched & self.changed)
        if not fresh:
            return
        by_cls: dict[str, list[str]] = {}
        rows = self._node_rows()
        for n, a in zip(rows.nodes, rows.attrs):
            by_cls.setdefault(self._alike(a), []).append(n)
        for new in fresh:
            if new not in self._graph or len(by_cls.get(self._alike(self._graph.nodes[new]), ())) < 2:
                continue
            a = self._graph.nodes[new]
            tn = self.tracks[new]
            same_cls = by_cls[self._alike(a)]
            olds, k = self._within_reach(tn, same_cls), 0
            while k < len(olds):
                old = olds[k]
                k += 1
                if old == new or old not in self._graph or (min(old, new), max(old, new)) in self.together:
                    continue
                b = self._graph.nodes[old]
                to = self.tracks[old]
                if self._off_slide(old, tn.center, to.center) or self._off_slide(new, to.center, tn.center):
                    continue  # a drawer and a piece across its slide: two things (see Association)
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
                    # Either node's points lying on the other's: a far first glimpse of one piece of an
                    # object (a dumbbell's weight) is as much a duplicate of the whole seen later as the
                    # other way round.
                    same = same_colour(
                        a["colour"], np.asarray(a["rgb"]), b["colour"], np.asarray(b["rgb"]), cfg.colour_tolerance
                    ) and (overlap(tn.points, to.keys, cfg.assoc_voxel) >= 0.5
                           or overlap(to.points, tn.keys, cfg.assoc_voxel) >= 0.5 or self._handoff(old, new, touched))
                if same:
                    keep, drop = (old, new) if b["first_seen"] <= a["first_seen"] else (new, old)
                    self._merge(keep, drop, t)
                    if drop == new:
                        break
                    a, tn = self._graph.nodes[new], self.tracks[new]
                    # Its box grew with the merge: the rest of the class is culled again.
                    olds, k = self._within_reach(tn, same_cls[same_cls.index(old) + 1 :]), 0

    def _within_reach(self, track, nodes: list[str]) -> list[str]:
        """The nodes (in order) a merge with ``track`` could join: boxes closer than two association
        voxels (a point overlap, or furniture pieces that touch, needs that) or centres within the
        hand-off gate. The merge test proper runs on these alone."""
        nodes = [n for n in nodes if n in self.tracks]
        if not nodes:
            return nodes
        lo = np.array([self.tracks[n].box_min for n in nodes])
        hi = np.array([self.tracks[n].box_max for n in nodes])
        gap = np.maximum(lo - track.box_max, track.box_min - hi).max(axis=1)
        near = np.linalg.norm((lo + hi) / 2 - track.center, axis=1) < self.config.handoff_gate
        keep = (gap < 2 * self.config.assoc_voxel + 1e-6) | near
        return [n for n, k in zip(nodes, keep) if k]

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
        for label, count in td.votes.items():
            tk.votes[label] = tk.votes.get(label, 0) + count
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
        rows = self._node_rows()
        is_lost = np.ones(len(rows.nodes), dtype=bool)
        for node in seen:
            r = rows.row.get(node)
            if r is not None:
                is_lost[r] = False
        lost_rows = np.flatnonzero(is_lost)
        if not len(lost_rows) or not views:
            return
        # Plain lists and ints from here: a house loses hundreds of nodes from view every frame, and
        # numpy scalars cost several times a list's own items in the loops below.
        lost_list = lost_rows.tolist()
        lost = [rows.nodes[r] for r in lost_list]
        # Every lost node's visibility and container at once (one projection per camera, one box test
        # for all pairs): nothing below changes another node's inputs. Only the nodes whose status would
        # change, or that a container holds, go through the loop.
        attrs = [rows.attrs[r] for r in lost_list]
        judged, todo = [], []
        for i, a in enumerate(attrs):
            (todo if a["held"] or a["inside"] else judged).append(i)
        verdict: dict[str, str] = {}
        if judged:
            judged_rows = lost_rows[judged]
            boxes = (rows.lo[judged_rows], rows.hi[judged_rows])
            samples = _Samples(rows.tracks, judged_rows.tolist())
            totals, throughs, occludeds = visibility_many(samples, views, cfg, boxes)
            statuses = np.select(
                [totals == 0, throughs >= cfg.missing_fraction, occludeds >= 0.5],
                ["out_of_view", "missing", "occluded"],
                "unseen",
            ).tolist()
            # A lost object's container changes only with its own box or a container's box around it.
            holders = self._holder_memo.get(rows, judged_rows, cfg.contain_margin, lambda r: self._holders(r, rows))
            for i, status, holder in zip(judged, statuses, holders):
                if holder or status != attrs[i]["status"]:
                    verdict[lost[i]] = (status, holder)
                    todo.append(i)
        for i in sorted(todo):
            node, a = lost[i], attrs[i]
            track = self.tracks[node]
            if a["held"]:
                status = "held"
            elif a["inside"]:
                status = "hidden"
            else:
                status, holder = verdict[node]
                if not holder and track.left in self._graph and t - track.left_t <= GLIMPSE:
                    # Seen a moment through the gap of a shutting drawer, or over the rim of a cup coming
                    # down, then lost again: it is still where it was hidden (the container's seen box,
                    # a drawer's front, need not hold its whole footprint).
                    holder = track.left
            changes: dict = {}
            tag = status
            if status not in ("held", "hidden") and a["kind"] == "object":
                if holder:
                    status, tag = "hidden", "contained"
                    changes["inside"] = holder
                    rest = self.tracks[holder].rest
                    shift = np.zeros(3)
                    if rest.get("slid_t") == t:
                        # Shut in by a drawer that slid this frame: it slid along.
                        shift[:2] = rest["slid_x"], rest["slid_y"]
                    # Last seen on its way down into the container (a block lowered into a drawer, lost
                    # among the tray's points): it came to rest on the container's floor.
                    above = track.box_min[2] - self.tracks[holder].box_min[2]
                    if above > FLOATING:
                        shift[2] = -above
                    if shift.any():
                        track.shift(shift)
                        changes.update(
                            position=_vec(track.center), box_min=_vec(track.box_min), box_max=_vec(track.box_max)
                        )
            if status != a["status"]:
                changes.update(status=status)
                if a["visible"]:
                    changes.update(visible=False, unseen_since=t, last_seen=a["last_seen"])
                changes["confidence"] = _confidence(a["n_obs"], status)
                self._set(node, t, tag, changes)

    def _holders(self, nodes: np.ndarray, rows) -> list[str]:
        """:meth:`_container_of` for many nodes at once (the same answers): pairs are first culled
        on x, then the survivors tested in one go. ``nodes``: (K,) rows of ``rows`` (a NodeRows)."""
        out = [""] * len(nodes)
        objects = np.flatnonzero(rows.kind[nodes] == "object")
        containers = np.flatnonzero(rows.kind == "container")
        if not len(objects) or not len(containers):
            return out
        m = self.config.contain_margin
        # Each container's box, then the box it had a frame ago where it has one (in that order, as ties
        # go to the first).
        has_prev = ~np.isnan(rows.prev_lo[containers, 0])
        lo, hi, which = rows.lo[containers], rows.hi[containers], containers
        if has_prev.any():
            places = np.concatenate([2 * np.arange(len(containers)), 2 * np.flatnonzero(has_prev) + 1])
            order = np.argsort(places, kind="stable")
            lo = np.concatenate([lo, rows.prev_lo[containers[has_prev]]])[order]
            hi = np.concatenate([hi, rows.prev_hi[containers[has_prev]]])[order]
            which = np.concatenate([containers, containers[has_prev]])[order]
        position = np.full(len(rows.nodes), -1)
        position[nodes] = np.arange(len(nodes))
        owner = position[which]  # the container's own position among the nodes (-1: not among them)
        vol = np.prod(np.maximum(hi - lo, 1e-3), axis=1)
        own_lo, own_hi = rows.lo[nodes[objects]], rows.hi[nodes[objects]]
        centre = (own_lo + own_hi) / 2
        # Pairs whose x could fit: boxes sorted by their low x; an object's centre x can only lie in the
        # boxes starting at most ``widest`` before it (a few, found by bisection), then the exact test.
        order = np.argsort(lo[:, 0], kind="stable")
        start_x = lo[order, 0]
        widest = float((hi[:, 0] - lo[:, 0]).max())
        first = np.searchsorted(start_x, centre[:, 0] - widest - m, side="left")
        count = np.searchsorted(start_x, centre[:, 0] + m, side="right") - first
        i = np.repeat(np.arange(len(centre)), np.maximum(count, 0))
        if len(i) == 0:
            return out
        j = order[np.repeat(first - np.cumsum(np.maximum(count, 0)) + np.maximum(count, 0), np.maximum(count, 0))
                  + np.arange(len(i))]
        fits = (centre[i, 0] >= lo[j, 0] - m) & (centre[i, 0] <= hi[j, 0] + m)
        i, j = i[fits], j[fits]
        if len(i) == 0:
            return out
        own_vol = np.prod(np.maximum(own_hi - own_lo, 1e-3), axis=1)
        ok = (
            (vol[j] > own_vol[i])
            & (own_lo[i, 2] >= lo[j, 2] - 0.005)
            & np.all(centre[i] >= lo[j] - m, axis=1)
            & np.all(centre[i] <= hi[j] + m, axis=1)
            & np.all(own_lo[i, :2] >= lo[j, :2] - m, axis=1)
            & np.all(own_hi[i, :2] <= hi[j, :2] + m, axis=1)
            & (owner[j] != objects[i])
        )
        best: dict[int, tuple[float, int]] = {}
        for a, b in zip(i[ok].tolist(), j[ok].tolist()):  # the smallest box; on a tie the first container
            if a not in best or (vol[b], b) < best[a]:
                best[a] = (vol[b], b)
        for a, (_, b) in best.items():
            out[objects[a]] = rows.nodes[which[b]]
        return out

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
