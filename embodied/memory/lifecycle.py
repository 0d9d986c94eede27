"""Track states from the evidence of each frame: why an unmatched node was not seen, and where it is.

A node not matched this frame stays in memory; its remembered points are projected into the depth images
(``spatial.visibility_many``). A point seen through (the depth reads farther) speaks for absence, any other
return for presence, each worth log(19) = 2.9 of log-odds (``misread``: one in twenty misread), a frame at
most ``frame_evidence``. The ``gone`` belief adds up the frames and decides ``missing``; else the state says
why it was not seen. States: visible (matched this frame), occluded (mostly behind something nearer),
out_of_view (no image holds enough of it), unseen (the depth agrees it is there; no view matched), missing
(the belief says it has gone), hidden (vanished within a container's box: inside it), held (in the hand).

An object lost within a container's box (now or a frame ago) is inside it: it moves with the container,
sinks to its floor, and is left behind by a cup lifted clear of it.
"""

from __future__ import annotations

import math

import numpy as np

from embodied.memory.affordances import affords
from embodied.memory.spatial import visibility_many
from embodied.memory.update import confidence, vec


class _Samples:
    """The sample clouds of some tracks, read only when a camera may see them (a house has hundreds)."""

    __slots__ = ("rows", "tracks")

    def __init__(self, tracks: list, rows: list[int]):
        self.tracks, self.rows = tracks, rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.tracks[self.rows[i]].samples


class Lifecycle:
    """Needs the store and the config."""

    def __init__(self, store, config):
        self.store, self.config = store, config

    def update(self, views, seen: set, t: int) -> None:
        """The state of every physical node not matched this frame (see the module docstring)."""
        store, cfg = self.store, self.config.lifecycle
        rows = store.rows()
        lost = [r for r, n in enumerate(rows.nodes) if n not in seen]
        if not lost or not views:
            return
        attrs = [rows.attrs[r] for r in lost]
        judged = [i for i, a in enumerate(attrs) if not (a["held"] or a["inside"])]
        verdict: dict[int, tuple[str, str]] = {}
        if judged:
            judged_rows = np.array([lost[i] for i in judged])
            boxes = (rows.lo[judged_rows], rows.hi[judged_rows])
            total, through, occluded = visibility_many(_Samples(rows.tracks, judged_rows.tolist()), views, cfg,
                                                       self.config.sensor.k, boxes)
            holders = self.holders(rows, judged_rows)
            point = math.log((1.0 - cfg.misread) / cfg.misread)  # one point's reading, misread at that rate
            for k, i in enumerate(judged):
                track = rows.tracks[lost[i]]
                other = total[k] - through[k] - occluded[k]
                if total[k]:
                    track.gone.add(float(np.clip(point * float(through[k] - other), -cfg.frame_evidence,
                                                 cfg.frame_evidence)), self.config.beliefs)
                # Out of view, its absence is still believed: seen again, it is missing again. A part on a joint
                # cannot leave: its absence shows it moved on its joint (a drawer pushed shut), never gone.
                gone = track.gone.state and not affords(attrs[i]["cls"]).jointed
                status = ("out_of_view" if total[k] == 0 else "missing" if gone
                          else "occluded" if occluded[k] >= cfg.occluded_fraction * total[k] else "unseen")
                verdict[i] = (status, holders[k])
        for i, a in enumerate(attrs):
            node = rows.nodes[lost[i]]
            if a["held"] or a["inside"]:
                status, holder = "held" if a["held"] else "hidden", ""
            else:
                status, holder = verdict[i]
                track = rows.tracks[lost[i]]
                glimpse = self.config.on("glimpse") and track.left in store._graph and t - track.left_t <= cfg.glimpse
                if not holder and glimpse:
                    holder = track.left  # seen a moment through a shutting drawer's gap: still in it
            changes: dict = {}
            tag = status
            if holder and a["kind"] == "object" and status not in ("held", "hidden"):
                status, tag = "hidden", "contained"
                changes.update(inside=holder, **self._settle_into(rows.tracks[lost[i]], holder, t))
            if status != a["status"]:
                changes["status"] = status
                if a["visible"]:
                    changes.update(visible=False, unseen_since=t, last_seen=a["last_seen"])
                changes["confidence"] = confidence(a["n_obs"], status)
                store.set(node, t, tag, changes)

    def _settle_into(self, track, holder: str, t: int) -> dict:
        """Where an object lost into a container comes to rest: shut in by a drawer that slid this frame it
        slid along; lost on its way down (among a tray's points) it sank to the floor."""
        parts, shift = self.store.tracks[holder].parts, np.zeros(3)
        if parts.get("slid_t") == t:
            shift[:2] = parts["slid_x"], parts["slid_y"]
        above = track.box_min[2] - self.store.tracks[holder].box_min[2]
        if above > self.config.lifecycle.floating and self.config.on("sink"):
            shift[2] = -above
        if not shift.any():
            return {}
        track.shift(shift)
        return {"position": vec(track.center), "box_min": vec(track.box_min), "box_max": vec(track.box_max)}

    def holders(self, rows, nodes: np.ndarray) -> list[str]:
        """The container each plain object of the rows ``nodes`` (K,) lies in (""): the smallest whose box, now
        or a frame ago, grown by ``contain_margin``, holds its centre and footprint, its bottom no lower than
        the container's (less ``relations.sink``)."""
        out = [""] * len(nodes)
        objects = np.flatnonzero(rows.kind[nodes] == "object")
        containers = np.flatnonzero(rows.kind == "container")
        if not len(objects) or not len(containers):
            return out
        m, sink = self.config.lifecycle.contain_margin, self.config.relations.sink
        has_prev = ~np.isnan(rows.prev_lo[containers, 0])
        lo = np.concatenate([rows.lo[containers], rows.prev_lo[containers[has_prev]]])
        hi = np.concatenate([rows.hi[containers], rows.prev_hi[containers[has_prev]]])
        which = np.concatenate([containers, containers[has_prev]])
        own_lo, own_hi = rows.lo[nodes[objects]], rows.hi[nodes[objects]]
        centre = (own_lo + own_hi) / 2
        vol = np.prod(np.maximum(hi - lo, 1e-3), axis=1)
        own_vol = np.prod(np.maximum(own_hi - own_lo, 1e-3), axis=1)
        fits = ((vol[None] > own_vol[:, None]) & (own_lo[:, None, 2] >= lo[None, :, 2] - sink)
                & np.all(centre[:, None] >= lo[None] - m, axis=2) & np.all(centre[:, None] <= hi[None] + m, axis=2)
                & np.all(own_lo[:, None, :2] >= lo[None, :, :2] - m, axis=2)
                & np.all(own_hi[:, None, :2] <= hi[None, :, :2] + m, axis=2)
                & (which[None] != nodes[objects][:, None]))
        for a in np.flatnonzero(fits.any(axis=1)):
            cand = np.flatnonzero(fits[a])
            best = cand[np.lexsort((cand, vol[cand]))[0]]  # the smallest; on a tie the first container
            out[objects[a]] = rows.nodes[which[best]]
        return out

    # --- contents moving with their container ----------------------------------------------------
    def carry_contents(self, container: str, delta: np.ndarray, t: int) -> None:
        """Hidden objects inside a container move with it (in xy: a cup slid over a ball, a drawer slid shut)."""
        delta = np.array([delta[0], delta[1], 0.0])
        if np.linalg.norm(delta) < 1e-6:
            return
        store = self.store
        for node in store.physical():
            a = store._graph.nodes[node]
            if a["inside"] == container and not a["visible"]:
                track = store.tracks[node]
                track.shift(delta)
                if np.linalg.norm(track.center - np.asarray(a["position"])) > self.config.track.log_tol:
                    store.set(node, t, "carried", {"position": vec(track.center), "box_min": vec(track.box_min),
                                                   "box_max": vec(track.box_max)})

    def container_moved(self, container: str, delta: np.ndarray, t: int) -> None:
        """A rigid container moved: its contents with it; lifted clear of them (its bottom ``clear`` above
        their top), it holds them no longer: they stay, and the next look says whether they are."""
        self.carry_contents(container, delta, t)
        store = self.store
        if not self.config.on("uncover"):
            return
        bottom = store.tracks[container].box_min[2]
        for node in store.physical():
            a = store._graph.nodes[node]
            if a["inside"] == container and not a["visible"] and \
                    bottom > store.tracks[node].box_max[2] + self.config.lifecycle.clear:
                store.set(node, t, "uncovered", {"inside": "", "status": "unseen"})

    def holds_anything(self, node: str) -> bool:
        return any(a.get("inside") == node for n, a in self.store._graph.nodes(data=True) if n != node)
