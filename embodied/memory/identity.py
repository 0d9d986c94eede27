"""One node per thing: duplicates merged, renamed nodes rejoined, nodes seen together kept apart.

* Seen together, never merged: nodes matched in one camera frame are distinct things.
* Duplicates: a node changed this frame merges into an older one of its class (which keeps its history)
  when both describe one thing: furniture whose boxes overlap by half the smaller; objects on each other's
  points, or a hand-off (the old node lost just before the new one first seen, close by).
* Rejoin (class votes): a node its votes renamed may be a known object first misnamed where it came back;
  it joins the nearest node of its new class and colour known gone that the log never shows visible with it.
"""

from __future__ import annotations

import numpy as np

from embodied.memory.affordances import affords
from embodied.memory.spatial import overlap
from embodied.memory.update import vec
from embodied.perception.colour import same_colour

UNSEEN = ("missing", "out_of_view", "hidden")


class Identity:
    """Needs the store, the config and the memory's hooks (slide gate)."""

    def __init__(self, store, config, hooks):
        self.store, self.config, self.hooks = store, config, hooks
        self.together: set[tuple[str, str]] = set()

    def _alike(self, a: dict) -> str:
        """What a node may merge with: its class, or with class votes any plain object."""
        return "object:" if self.config.detector.class_votes and a["kind"] == "object" else a["cls"]

    def note_together(self, nodes: set, changed: set) -> None:
        """Nodes matched in one camera frame may never merge (pairs with a node that changed this frame)."""
        fresh = nodes & changed
        if not fresh:
            return
        by_cls: dict[str, list[str]] = {}
        for n in nodes:
            by_cls.setdefault(self._alike(self.store._graph.nodes[n]), []).append(n)
        for u in fresh:
            for v in by_cls[self._alike(self.store._graph.nodes[u])]:
                if v != u:
                    self.together.add((u, v) if u < v else (v, u))

    def merge_duplicates(self, t: int, touched: set, changed: set) -> None:
        store, cfg, across = self.store, self.config.association, self.hooks.across_slide
        fresh = sorted(touched & changed)
        if not fresh:
            return
        rows = store.rows()
        by_cls: dict[str, list[str]] = {}
        for n, a in zip(rows.nodes, rows.attrs):
            by_cls.setdefault(self._alike(a), []).append(n)
        for new in fresh:
            if new not in store._graph or len(by_cls.get(self._alike(store._graph.nodes[new]), ())) < 2:
                continue
            a, tn = store._graph.nodes[new], store.tracks[new]
            same_cls = by_cls[self._alike(a)]
            olds, k = self._within_reach(tn, same_cls), 0
            while k < len(olds):
                old = olds[k]
                k += 1
                if old == new or old not in store._graph or (min(old, new), max(old, new)) in self.together:
                    continue
                b, to = store._graph.nodes[old], store.tracks[old]
                if across(old, tn.center, to.center) or across(new, to.center, tn.center):
                    continue  # a part and a piece across its slide: two things
                if tn.surface or to.surface:  # pieces of furniture may only touch (within 2 cm)
                    w = np.minimum(tn.box_max, to.box_max) - np.maximum(tn.box_min, to.box_min) + 2 * 0.02
                    small = min(np.prod(np.maximum(tn.box_max - tn.box_min, 0.005)),
                                np.prod(np.maximum(to.box_max - to.box_min, 0.005)))
                    same = np.prod(np.clip(w, 0, None)) >= 0.5 * small
                else:  # either node's points on the other's: a far glimpse of one piece, or the whole seen later
                    same = same_colour(a["colour"], np.asarray(a["rgb"]), b["colour"], np.asarray(b["rgb"]),
                                       cfg.colour_tolerance) and (
                        overlap(tn.points, to.keys, cfg.voxel) >= 0.5 or overlap(to.points, tn.keys, cfg.voxel) >= 0.5
                        or (self.config.on("handoff") and self._handoff(old, new, touched)))
                if same:
                    keep, drop = (old, new) if b["first_seen"] <= a["first_seen"] else (new, old)
                    self.merge(keep, drop, t)
                    if drop == new:
                        break
                    a, tn = store._graph.nodes[new], store.tracks[new]
                    olds, k = self._within_reach(tn, same_cls[same_cls.index(old) + 1:]), 0

    def _within_reach(self, track, nodes: list[str]) -> list[str]:
        """The nodes (in order) within two voxels of ``track``'s box or the hand-off gate of its centre."""
        nodes = [n for n in nodes if n in self.store.tracks]
        if not nodes:
            return nodes
        cfg = self.config.association
        lo = np.array([self.store.tracks[n].box_min for n in nodes])
        hi = np.array([self.store.tracks[n].box_max for n in nodes])
        gap = np.maximum(lo - track.box_max, track.box_min - hi).max(axis=1)
        near = np.linalg.norm((lo + hi) / 2 - track.center, axis=1) < cfg.handoff_gate
        return [n for n, k in zip(nodes, (gap < 2 * cfg.voxel + 1e-6) | near) if k]

    def _handoff(self, old: str, new: str, touched: set) -> bool:
        """``old`` stopped being seen just before ``new`` first was, close by: one track picked up again."""
        cfg, g = self.config.association, self.store._graph.nodes
        if affords(g[old]["cls"]).anchored:
            return False  # an anchored thing is picked up again where it stands (on its points), never nearby
        gap = g[new]["first_seen"] - g[old]["last_seen"]
        near = np.linalg.norm(self.store.tracks[new].center - self.store.tracks[old].center) < cfg.handoff_gate
        return old not in touched and 0 < gap <= cfg.handoff_steps and bool(near)

    def merge(self, keep: str, drop: str, t: int) -> None:
        """Fold ``drop`` into ``keep`` (the older node keeps its history) and delete ``drop``."""
        store, cfg = self.store, self.config
        tk, td = store.tracks[keep], store.tracks[drop]
        a, b = store._graph.nodes[keep], store._graph.nodes[drop]
        if tk.surface:
            tk.grow_surface(td.points, td.box_min, td.box_max, cfg.track.max_points, cfg.association.voxel)
        elif b["last_seen"] >= a["last_seen"]:
            tk.views = td.views  # the newer node has the current look
        tk.refresh(cfg)
        for label, count in td.votes.items():
            tk.votes[label] = tk.votes.get(label, 0) + count
        a["n_obs"] += b["n_obs"]
        changes = {"position": vec(tk.center), "box_min": vec(tk.box_min), "box_max": vec(tk.box_max),
                   "n_obs": a["n_obs"]}
        if b["last_seen"] >= a["last_seen"]:
            changes.update({k: b[k] for k in ("visible", "status", "unseen_since", "last_seen")})
            tk.gone = td.gone
        store.set(keep, t, "merged", changes)
        self.together = {p for p in self.together if drop not in p}
        store.delete(drop, t, "merged")

    # --- rejoin ------------------------------------------------------------------------------------
    def rejoin(self, renamed: set, t: int) -> None:
        """Renamed nodes rejoin (see the module docstring); a node merely out of view is known gone only if a
        ``missing`` was logged since last seen. The older node keeps its history and takes the new place."""
        store, tol = self.store, self.config.association.colour_tolerance
        for node in sorted(renamed):
            if node not in store._graph or node not in store.tracks:
                continue
            a = store._graph.nodes[node]
            best, best_d = None, np.inf
            for old, b in store._graph.nodes(data=True):
                if (old == node or b.get("cls") != a["cls"] or b.get("status") not in UNSEEN or old not in store.tracks
                        or affords(b["cls"]).jointed or (min(old, node), max(old, node)) in self.together
                        or not same_colour(a["colour"], np.asarray(a["rgb"]), b["colour"], np.asarray(b["rgb"]), tol)):
                    continue
                if b["status"] == "out_of_view" and not any(
                        e.tag == "missing" and e.t > b["last_seen"] for e in store.log.of_node(old)):
                    continue  # merely out of sight: maybe a second look-alike, not known gone
                if self._seen_together(old, node):
                    continue
                d = float(np.linalg.norm(store.tracks[old].center - store.tracks[node].center))
                if d < best_d:
                    best, best_d = old, d
            if best is None:
                continue
            inside = store._graph.nodes[best]["inside"]
            self.merge(best, node, t)
            if inside:  # out of its container, as when association finds it again
                store.tracks[best].left, store.tracks[best].left_t = inside, t
                store.set(best, t, "seen", {"inside": ""})

    def _seen_together(self, u: str, v: str) -> bool:
        """Whether the log shows ``u`` and ``v`` visible at one step: two things, whatever their classes."""
        spans = [self._visible_spans(n) for n in (u, v)]
        return any(s0 < e1 and s1 < e0 for s0, e0 in spans[0] for s1, e1 in spans[1])

    def _visible_spans(self, node: str) -> list[tuple[int, int]]:
        spans, start = [], None
        for e in self.store.log.of_node(node):
            shown = True if e.op == "ADD" else e.data.get("visible")
            if shown is True and start is None:
                start = e.t
            elif shown is False and start is not None:
                spans.append((start, e.t))
                start = None
        if start is not None:
            spans.append((start, self.store.t + 1))
        return spans
