"""Rejoining a renamed node (mixed into :class:`SpatialMemory`): with class votes a known object first
misnamed where it reappeared becomes a node of its own, since re-identification looks for unseen nodes of
the detection's class; once the votes rename it, it joins the node of its new class found missing."""

from __future__ import annotations

import numpy as np

from embodied.memory.association import UNSEEN_REID
from embodied.perception.colour import same_colour


class Rejoining:
    """Needs the SpatialMemory fields (_graph, tracks, config, log, together, t, _renamed) and
    Permanence._merge."""

    def _rejoin_renamed(self, t: int) -> None:
        """A node its class votes renamed this frame may be a known object first misnamed where it
        reappeared: re-identification passed it by, as no unseen node had its first class. It joins the
        nearest node of its new class and colour known gone (found missing, or hidden, since last seen)
        that the log never shows visible with it; the older node keeps its history and takes the new
        place. (Learned ChangedObject: the ball carried out of view came down 1.3 m on as a "lamp",
        renamed a ball 7 steps later, 930024; the box carried in view was a "lamp" every other frame,
        930031. Each mover's own node stayed missing where last seen, and the agent went there.)"""
        cfg = self.config
        renamed, self._renamed = self._renamed, set()
        for node in sorted(renamed):
            if node not in self._graph or node not in self.tracks:
                continue
            a = self._graph.nodes[node]
            best, best_d = None, np.inf
            for old, b in self._graph.nodes(data=True):
                if (old == node or b.get("cls") != a["cls"] or b.get("status") not in UNSEEN_REID
                        or old not in self.tracks or b.get("articulated")
                        or (min(old, node), max(old, node)) in self.together
                        or not same_colour(a["colour"], np.asarray(a["rgb"]), b["colour"], np.asarray(b["rgb"]),
                                           cfg.colour_tolerance)):
                    continue
                if b["status"] == "out_of_view" and not any(
                        e.tag == "missing" and e.t > b["last_seen"] for e in self.log.of_node(old)):
                    continue  # merely out of sight: maybe a second look-alike, not known gone
                if self._seen_together(old, node):
                    continue
                d = float(np.linalg.norm(self.tracks[old].center - self.tracks[node].center))
                if d < best_d:
                    best, best_d = old, d
            if best is None:
                continue
            inside = self._graph.nodes[best]["inside"]
            self._merge(best, node, t)
            if inside:  # out of its container, as when association finds it again (Tracking._observe)
                self.tracks[best].left, self.tracks[best].left_t = inside, t
                self._set(best, t, "seen", {"inside": ""})

    def _seen_together(self, u: str, v: str) -> bool:
        """Whether the log shows ``u`` and ``v`` visible at one step: two things, whatever their classes
        (``together`` holds only pairs that may merge by class, and a renamed node changed class)."""
        spans = [self._visible_spans(n) for n in (u, v)]
        return any(s0 < e1 and s1 < e0 for s0, e0 in spans[0] for s1, e1 in spans[1])

    def _visible_spans(self, node: str) -> list[tuple[int, int]]:
        """The [first, past-last) steps at which the log has ``node`` visible."""
        spans, start = [], None
        for e in self.log.of_node(node):
            shown = True if e.op == "ADD" else e.data.get("visible")
            if shown is True and start is None:
                start = e.t
            elif shown is False and start is not None:
                spans.append((start, e.t))
                start = None
        if start is not None:
            spans.append((start, self.t + 1))
        return spans
