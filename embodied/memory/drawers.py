"""The prismatic plugin: parts that slide out of a housing (drawers), judged open or shut.

A part's travel is how far it sticks out of its housing along the side its row slides out of, a vote over
the frames and the row's parts (one row faces one way: a housing seen merged with its neighbour turns no
drawer sideways). Shut is the least travel seen on the row's parts, and the ``opened`` belief takes each
judged frame's evidence that the travel lies ``open_delta`` past it. What is hidden in a part slides with it.

State per track (``Track.parts``): the slide votes (``SLIDE_SIDES`` keys) and, in m, ``now`` (its travel),
``travel`` (the least seen), ``judged`` (when last judged), ``carried`` (when its contents last slid with
it), ``slid_x``/``slid_y`` at step ``slid_t`` (its last slide, for what gets shut in that frame).
"""

from __future__ import annotations

import numpy as np

from embodied.memory.affordances import affords
from embodied.memory.beliefs import side_llr

SLIDE_SIDES = ("out_x-", "out_y-", "out_x+", "out_y+")


def side_vector(side: str) -> np.ndarray:
    """(2,) unit xy of a SLIDE_SIDES key: "out_x-" -> (-1, 0)."""
    v = np.zeros(2)
    v["xy".index(side[4])] = 1.0 if side[5] == "+" else -1.0
    return v


def across(side: str) -> int:
    """The world axis (0: x, 1: y) across the slide of a SLIDE_SIDES key."""
    return 1 if side[4] == "x" else 0


class Drawers:
    """Judges prismatic parts. Needs the store, the config and the memory's hooks (the hand, contents)."""

    def __init__(self, store, config, hooks):
        self.store, self.config, self.hooks = store, config, hooks
        self.dirty: set[str] = set()  # classes with a part whose travel was measured this frame

    def parts(self, least: int = 1) -> list[str]:
        """The nodes of prismatic parts that slide out of a housing (not a housing themselves)."""
        return [n for n in self.store.nodes_of(least=least)
                if affords(self.store._graph.nodes[n]["cls"]).prismatic and n in self.store.tracks]

    def on_update(self, node: str, t: int) -> None:
        """A part's geometry changed: measure its travel (not while the fingers reach into it: the arm then
        hides the tray's front, and a view cut short there would read as the part closing)."""
        a = self.store._graph.nodes[node]
        aff = affords(a["cls"])
        if not aff.prismatic:
            return
        track = self.store.tracks[node]
        if self.config.on("reaching_in") and self.hooks.reaching_in(track):
            return
        found = self._travel(node, track, aff)
        if found is None:
            return
        travel, outward = found
        parts = track.parts
        # What is hidden in it slides with it, once the slide since it was last carried is more than noise.
        if "carried" in parts and abs(travel - parts["carried"]) > self._noise(track):
            slide = (travel - parts["carried"]) * outward
            parts.update(slid_x=float(slide[0]), slid_y=float(slide[1]), slid_t=float(t), carried=travel)
            self.hooks.carry_contents(node, slide, t)
        parts.setdefault("carried", travel)
        parts.update(now=travel, travel=min(parts.get("travel", travel), travel))
        self.dirty.add(a["cls"])

    def _noise(self, track) -> float:
        """m: the std of a travel measurement: the views' point noise along the slide, or ``slide_floor``."""
        noise = max((float(np.max(v.noise[:2])) for v in track.views.values()), default=0.0)
        return max(self.config.articulation.slide_floor, self.config.sensor.k * noise / 2)

    def end_frame(self, t: int) -> None:
        """Open or shut, for every part of a class measured this frame, against the median least travel of
        its parts (those seen a tenth as often as the best seen do not vote); logged only if the part slid
        half ``open_delta`` since last judged (else the reference moved, not the part)."""
        cfg, beliefs = self.config.articulation, self.config.beliefs
        for cls in sorted(self.dirty):
            parts = [n for n in self.store.nodes_of(cls=cls) if "now" in self.store.tracks[n].parts]
            if not parts:
                continue
            most = max(self.store._graph.nodes[n]["n_obs"] for n in parts)
            voters = [n for n in parts if self.store._graph.nodes[n]["n_obs"] * 10 >= most] or parts
            ref = float(np.median([self.store.tracks[n].parts["travel"] for n in voters]))
            for n in parts:
                track = self.store.tracks[n]
                p = track.parts
                track.opened.add(side_llr(p["now"], ref + cfg.open_delta, self._noise(track), beliefs.cap), beliefs)
                state = "open" if track.opened.state else "closed"
                before = self.store._graph.nodes[n]["state"]
                if state == before or (before and abs(p["now"] - p.get("judged", p["now"])) < cfg.open_delta / 2):
                    continue
                p["judged"] = p["now"]
                self.store.set(n, t, "opened" if state == "open" else "closed", {"state": state})
        self.dirty.clear()

    def _housings(self) -> list[str]:
        return [n for n in self.store.nodes_of(kind="surface") if affords(self.store._graph.nodes[n]["cls"]).housing]

    def _travel(self, node: str, track, aff) -> tuple[float, np.ndarray] | None:
        """How far (m) a part sticks out of the housing whose footprint grown by ``housing_margin`` (then also
        ``pull_reach`` along a known slide) overlaps it most, and the outward direction (3,); a part that is
        its own housing (a drawer unit seen as one) grows longer as it opens. None: no housing."""
        cfg = self.config.articulation
        lo, hi = track.box_min, track.box_max
        best_area, housing = 0.0, None
        side = self.slide_side(node)
        reach = np.zeros(2) if side is None else side_vector(side) * cfg.pull_reach
        for grown in ((0.0, 0.0), (np.minimum(reach, 0), np.maximum(reach, 0))):
            for other in self._housings():
                h = self.store.tracks[other]
                g_lo = h.box_min[:2] - cfg.housing_margin + grown[0]
                g_hi = h.box_max[:2] + cfg.housing_margin + grown[1]
                area = float(np.prod(np.clip(np.minimum(hi[:2], g_hi) - np.maximum(lo[:2], g_lo), 0, None)))
                if area > best_area:
                    best_area, housing = area, other
            if housing is not None or side is None:
                break
        if housing is None:
            return (float(max(hi[0] - lo[0], hi[1] - lo[1])), np.zeros(3)) if aff.housing else None
        h = self.store.tracks[housing]
        out = np.array([h.box_min[0] - lo[0], h.box_min[1] - lo[1], hi[0] - h.box_max[0], hi[1] - h.box_max[1]])
        vote = self._slide_vote(track, housing, SLIDE_SIDES[int(np.argmax(out))])
        track.parts[vote] = track.parts.get(vote, 0.0) + 1.0
        side = self.slide_side(node)
        return float(out[SLIDE_SIDES.index(side)]), np.append(side_vector(side), 0.0)

    def _slide_vote(self, track, housing: str, at: str) -> str:
        """This frame's vote for the way a part slides out: a view ``front_min`` wide shows its front (the short
        side is the slide's axis, away from the housing's centre); a fragment votes for the side ``at``."""
        size = (track.box_max - track.box_min)[:2]
        if size.max() < self.config.articulation.front_min or size.max() < 1.5 * size.min():
            return at
        axis = int(np.argmin(size))
        away = track.center[axis] - self.store.tracks[housing].center[axis]
        return f"out_{'xy'[axis]}{'+' if away > 0 else '-'}"

    def slide_side(self, node: str) -> str | None:
        """The SLIDE_SIDES key a part slides out of: the most votes of its class within ``row_reach``; with
        ``row_slide`` a part with no vote of its own takes its row's. None before any vote counts."""
        track = self.store.tracks.get(node)
        if track is None or not (self.config.detector.row_slide or any(k in track.parts for k in SLIDE_SIDES)):
            return None
        votes = dict.fromkeys(SLIDE_SIDES, 0.0)
        reach = self.config.articulation.row_reach
        for other in self.store.nodes_of(cls=self.store._graph.nodes[node]["cls"]):
            tr = self.store.tracks[other]
            if other == node or np.linalg.norm(tr.center[:2] - track.center[:2]) < reach:
                for k in SLIDE_SIDES:
                    votes[k] += tr.parts.get(k, 0.0)
        return max(SLIDE_SIDES, key=votes.get) if any(votes.values()) else None

    def slide_direction(self, node: str) -> np.ndarray | None:
        """(2,) unit world xy a part slides out along; None until it has been seen with a housing."""
        side = self.slide_side(node)
        return None if side is None else side_vector(side)

    def off_slide(self, node: str, det, centre: np.ndarray) -> bool:
        """Whether a view is not of a part (which moves only along its slide): centred over ``slide_gate``
        across it and, if cut by the image's edge, wholly beside its lane grown by ``lane_slack``."""
        if not self.across_slide(node, det.center, centre):
            return False
        if not det.truncated:
            return True
        k, slack, track = across(self.slide_side(node)), self.config.association.lane_slack, self.store.tracks[node]
        return bool(det.box_max[k] < track.box_min[k] - slack or det.box_min[k] > track.box_max[k] + slack)

    def across_slide(self, node: str, point: np.ndarray, centre: np.ndarray) -> bool:
        """Whether ``point`` lies more than ``slide_gate`` across a part's slide from its ``centre``."""
        side = self.slide_side(node) if affords(self.store._graph.nodes[node]["cls"]).prismatic else None
        if side is None:
            return False
        k = across(side)
        return abs(float(point[k]) - float(centre[k])) > self.config.association.slide_gate

    def narrower_across(self, node: str, det, prev) -> bool:
        """Whether a view of a part is under ``narrower`` times as wide across its slide as the camera's
        last view (part of it hidden, not a move); False before its slide is known."""
        side = self.slide_side(node)
        if side is None:
            return False
        k = across(side)
        width = float(det.box_max[k] - det.box_min[k])
        return width < self.config.articulation.narrower * float(prev.box_max[k] - prev.box_min[k])

    def widths(self) -> tuple[list[tuple[str, str]], list[float]]:
        """The parts whose slide is known, with their slide side, and each one's width (m) across it."""
        g, tracks = self.store._graph.nodes, self.store.tracks
        nodes = [(n, self.slide_side(n)) for n in self.parts() if not affords(g[n]["cls"]).housing]
        nodes = [(n, side) for n, side in nodes if side is not None]
        return nodes, [float(np.ptp([tracks[n].box_min, tracks[n].box_max], axis=0)[across(side)]) for n, side in nodes]
