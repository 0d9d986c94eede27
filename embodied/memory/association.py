"""Data association (mixed into :class:`SpatialMemory` through :class:`~embodied.memory.tracker.Tracking`).

Per camera, detections are matched one-to-one to remembered nodes, greedily
by score:
  settled  same class, same centre (4 mm), size and colour as this
           camera's last view of the node                   score 3
  overlap  same class, compatible colour, >= min_overlap of the detection's
           points within one voxel of the node's points     score 1 + overlap
           (any colour if overlap >= 0.5: the object changed colour)
  motion   same class and colour, centre within the gate of the node's
           constant-velocity prediction                     score 1 - d/gate
  re-id    an unseen (missing / out of view / hidden) node of the same class
           and colour (under another colour name: within reid_brightness_ratio
           in brightness), nearest first, at any distance
Anything left over is a new node. Cameras are processed one after another,
each updating the tracks, so the second camera sees the first's result.
Supports and furniture (seen in pieces) match by box overlap instead.
"""

from __future__ import annotations

import numpy as np

from embodied.memory.config import FURNITURE_WIDTH, HOUSING_CLASSES, SIZE_CLASSES, kind_of
from embodied.memory.gating import (as_last_seen, centred_over, colour_distance_matrix, footprint_overlap, lit_caps,
                                    looks_as_before, surface_patch)
from embodied.memory.reidentify import MOVING, Reidentification
from embodied.memory.spatial import overlap
from embodied.perception import join_views
from embodied.perception.colour import same_colour
from embodied.perception.types import ObjectObservation

FIXTURES = HOUSING_CLASSES | {"drawer", "button", "switch"}  # classes no size-class view continues
# Things that light up: lit, a detector may name them otherwise (a screen showing red named a red cup:
# RememberColor 930007 in the randomized look, where that view made a cup and the screen never showed a colour).
LIT = ("button", "switch", "cue_panel")
PUSHED = ("button", "switch")  # articulated parts pressed in place, never slid or moved
BESIDE_SLACK = 0.02  # m: a view of a pushed part centred farther than this outside its box is not of it

THING_KINDS = ("object", "container")  # what lies on supports and moves
SETTLED = 2.0  # overlap value that flags "looks exactly as this camera saw it last time"
UNSEEN_REID = ("missing", "out_of_view", "hidden")
NEAR = 0.05  # m, box gap under which a detection touches a node (point overlap and settled looks need it)
# m: a view of a drawer centred this far across its slide from the node is not of it. A drawer front
# is 18 cm wide, so a half-hidden view shifts its centre by up to 4.5 cm.
SLIDE_GATE = 0.05
MERGED_VIEW = 1.5  # a view this many times wider than a settled rigid object, beside another, is both
SETTLED_SIGHTINGS = 10  # a rigid object seen this often has its size
PIECE_SLACK = 0.01  # m: pieces of a remembered object lie within its box grown by this
LANE_SLACK = 0.01  # m: a view cut by the image's edge is of a drawer only if it reaches this near its box across the slide
# Nodes from which _table first drops those no detection could pair with: below it the pass costs more
# than it saves (a workcell holds ~15 nodes; a house hundreds).
PREFILTER_FROM = 48


class Association(Reidentification):
    """Matching one camera's detections to remembered nodes. Needs the SpatialMemory fields (_graph, tracks,
    config, t) and the Tracking methods (_physical, _looked_at)."""

    def _table(self, camera: str, dets: list[ObjectObservation] = ()) -> tuple:
        """Per-node arrays for vectorised gating: ids, boxes, classes, colour names, RGB, surface flags,
        and the centre and size of each node's last view from ``camera`` (inf / 0 if none).

        With ``dets``, only the nodes one of them could pair with: boxes closer than 5 cm (touching,
        which a node's last view, inside its box, also needs to settle a match) or a predicted centre
        within the motion gate. The rest could never pair, so a frame costs the nodes near what the
        camera sees, not every node remembered (re-identification at any distance looks at all)."""
        rows = self._node_rows()
        nodes, tracks, attrs = rows.nodes, rows.tracks, rows.attrs
        lo, hi, velocity = rows.lo, rows.hi, rows.velocity
        moving = np.flatnonzero(velocity.any(axis=1))
        if len(dets) and len(nodes) > PREFILTER_FROM:
            d_lo = np.array([d.box_min for d in dets])
            d_hi = np.array([d.box_max for d in dets])
            gap = np.maximum(lo[None] - d_hi[:, None], d_lo[:, None] - hi[None]).max(axis=2)
            centres = (lo + hi) / 2
            centres[moving] += velocity[moving] * self._ahead([tracks[k] for k in moving])[:, None]
            gate = self.config.move_gate + 1.5 * np.sqrt((velocity**2).sum(axis=1))
            dist = np.sqrt(((centres[None] - ((d_lo + d_hi) / 2)[:, None]) ** 2).sum(axis=2))
            keep = np.nonzero(((gap < NEAR) | (dist < gate[None])).any(axis=0))[0]
            if len(keep) < len(nodes):
                nodes, tracks, attrs = [nodes[k] for k in keep], [tracks[k] for k in keep], [attrs[k] for k in keep]
                lo, hi, velocity = lo[keep], hi[keep], velocity[keep]
        # Constant-velocity prediction (a few steps at most): fast movers stay inside the gate.
        ahead = self._ahead(tracks)
        cls = np.array([a["cls"] for a in attrs], dtype=object)
        colour = np.array([a["colour"] for a in attrs], dtype=object)
        rgb = np.array([a["rgb"] for a in attrs], dtype=np.float64).reshape(-1, 3)
        surface = np.array([tr.surface for tr in tracks], dtype=bool)
        views = [tr.views.get(camera) for tr in tracks]
        last = np.array([v.center if v is not None else (np.inf,) * 3 for v in views], dtype=np.float64).reshape(-1, 3)
        size = np.array([v.n_points if v is not None else 0 for v in views], dtype=np.float64)
        # Colour of each node's last view from this camera (nan: none, or no colour kept).
        seen_rgb = np.array(
            [v.rgb if v is not None and v.rgb is not None else (np.nan,) * 3 for v in views], dtype=np.float64
        ).reshape(-1, 3)
        return nodes, lo, hi, cls, colour, rgb, surface, last, size, seen_rgb, velocity * ahead[:, None], velocity

    def _unmoved_elsewhere(self, node: str, camera: str) -> bool:
        """Whether another camera of this frame has a detection of ``node``'s class just as it last saw the
        node (``as_last_seen``): then it has not moved, and no view of ``camera``'s takes it by nearness
        alone (two cups passing each other in a shell game, seen as one by a learned detector, reappear
        apart; the scene camera's first view of the moving one lay nearer the still cup that hides the
        ball, which the wrist camera saw unmoved, and took it: ShellGame 930004). Asked only of the
        pairs matched by nearness, so a frame pays for it only where it matters."""
        track, a = self.tracks[node], self._graph.nodes[node]
        for other, dets in self._frame_dets.items():
            view = track.views.get(other)
            dets = [d for d in dets if d.label == a["cls"]] if other != camera and view is not None else []
            if not dets:
                continue
            seen = np.array([view.rgb if view.rgb is not None else (np.nan,) * 3], dtype=np.float64)
            d_rgb = np.array([d.rgb for d in dets], dtype=np.float64)
            as_before = looks_as_before(d_rgb, seen, self.config.colour_tolerance, self.config.brightness_ratio)
            centres = np.array([(d.box_min + d.box_max) / 2 for d in dets])
            if as_last_seen(dets, centres, view.center[None], np.array([float(view.n_points)]),
                             np.array([a["colour"]], dtype=object), seen, as_before).any():
                return True
        return False

    def _ahead(self, tracks: list) -> np.ndarray:
        """(K,) float64 steps each track's constant-velocity prediction runs ahead: since its last
        observation, at most 5."""
        t = self.t
        return np.array([min(t - tr.t_obs, 5) for tr in tracks], dtype=np.float64)

    def _associate(
        self, dets: list[ObjectObservation], taken_here: set
    ) -> list[tuple[ObjectObservation, str | None, float]]:
        """(detection, matched node or None, its overlap) for every detection of one camera."""
        cfg = self.config
        nodes, lo, hi, cls, colour, rgb, surface, last, size, seen_rgb, drift, velocity = self._table(
            dets[0].camera if dets else "", dets
        )
        pairs: list[tuple[float, int, str, float]] = []  # (score, detection, node, overlap)
        if nodes and dets:
            centres = (lo + hi) / 2 + drift
            gate = cfg.move_gate + 1.5 * np.sqrt((velocity**2).sum(axis=1))
            d_lo = np.array([d.box_min for d in dets])
            d_hi = np.array([d.box_max for d in dets])
            d_c = (d_lo + d_hi) / 2
            big = np.max(d_hi[:, :2] - d_lo[:, :2], axis=1) > 0.3
            # Gating for every (detection, node) pair at once: box gap, centre distance, class, colour.
            gap = np.maximum(lo[None] - d_hi[:, None], d_lo[:, None] - hi[None]).max(axis=2)
            dist = np.sqrt(((centres[None] - d_c[:, None]) ** 2).sum(axis=2))
            d_cls = np.array([d.label for d in dets], dtype=object)[:, None]
            same_cls = d_cls == cls[None]
            # With class votes any class may continue a node, another one only where the detection lies
            # on the node's own points (below); but a movable thing's detection never continues a support
            # under another class. It lies on supports (its footprint inside theirs), and a thing first
            # glimpsed as furniture (a cone once read as a sofa) would otherwise feed that support's node,
            # which no vote renames, for good (VanishedObject 920003 on the learned segmenter). Nor a
            # fixture's (a drawer, a button): a block's face first glimpsed through a drawer's gap as a
            # green "drawer" had become a drawer that the block's views carried across the table, and the
            # block was put back into that (Rearrange 930008, visual=randomized).
            # Save a button's: lit, its cap may be named otherwise (a white block), and such a view lying on
            # the button's points still shows the button, else its flashes go unseen (SequenceRecall 930010
            # and 930017 in the randomized look). Moving parts keep their class (no vote renames them).
            thing = np.array([kind_of(d.label) in THING_KINDS for d in dets], dtype=bool)
            fixed = surface | np.isin(cls, list(FIXTURES))
            lit = np.isin(cls, list(LIT))
            # Pressed in place, never moved: a view of a button off its points is not it (a thin line of the
            # table's pattern beside a lit button, named button, had dragged its node 4 cm aside and judged
            # it pressed: SequenceRecall 930053, randomized look), nor is one centred off its box (a sliver
            # of the next button's base, 10 cm away, had stretched the node over both: SequenceRecall 930097).
            pushed = np.isin(cls, list(PUSHED))
            over = centred_over(d_c, lo, hi, BESIDE_SLACK)
            ok = (same_cls | ~(thing[:, None] & fixed[None]) | (thing[:, None] & lit[None])) & (over | ~pushed[None])
            if not cfg.class_votes:
                # A size class ("flat": a partial view) may continue any track; a recognised shape
                # (a cup, a drawer) only its own kind's, so a cup never continues a scrap's track.
                # Nor a fixture's (a drawer, its housing, a button): a wrist camera close to a drawer row
                # sees it as one large thing, which would stretch one drawer over its neighbours.
                ok = same_cls if cfg.strict_class else same_cls | (np.isin(d_cls, list(SIZE_CLASSES))
                                                                   & ~np.isin(cls, list(FIXTURES))[None])
            d_rgb = np.array([d.rgb for d in dets], dtype=np.float64)
            # Cameras see one surface in different colours (a highlight turns orange yellowish), so a
            # detection is judged against this camera's own last look where there is one.
            as_before = looks_as_before(d_rgb, seen_rgb, cfg.colour_tolerance, cfg.brightness_ratio)
            col_ok = (np.array([d.colour for d in dets], dtype=object)[:, None] == colour[None]) | (
                colour_distance_matrix(d_rgb, rgb) < cfg.colour_tolerance
            ) | as_before
            touching = gap < NEAR
            # A size class continues a recognised shape's node (a cup seen as its knob) only on its points:
            # moving near it is another thing's move (a ball carried out from under a lifted cup).
            sized = np.isin(cls, list(SIZE_CLASSES))
            moves = sized | cfg.class_votes  # nodes another class's detection may continue by a move
            # A patch with no height, or a view of another size class, never moves a thing hidden in a
            # container (glare on a cup is no view of the ball under the next one: surface_patch).
            patch = surface_patch(dets)
            loose = np.isin(d_cls[:, 0], list(SIZE_CLASSES))
            still = self._standing_still(nodes)
            # Static things look the same to a camera frame after frame: the same centre (4 mm)
            # and size (20%) as the node's last view from this camera settles it, no overlap needed.
            same = ok & as_last_seen(dets, d_c, last, size, colour, seen_rgb, as_before)
            settled = same.any(axis=1)
            for i, j in zip(*np.nonzero(same)):
                pairs.append((3.0, i, nodes[j], SETTLED))
            # A lit thing's view named otherwise (a button's lit cap read as a yellow block), centred over
            # the thing's box: the thing lit, ranked above every other pair, a settled one too. A sliver of
            # its base, still named button, had taken the node, and the lit cap became a block that held the
            # flash (SequenceRecall 930041 and 930092, randomized look). Only where names flicker (class
            # votes): a true label on a lit thing's box is another thing.
            caps = lit_caps(thing, lit, same_cls, d_c, lo, hi) if cfg.class_votes else np.zeros_like(same_cls)
            for i, j in zip(*np.nonzero(caps)):
                pairs.append((3.5, i, nodes[j], 1.0))
            for i, j in zip(*np.nonzero(ok & (touching | (dist < gate[None])) & ~settled[:, None])):
                det, node = dets[i], nodes[j]
                if self._off_slide(node, d_c[i], centres[j]) and (not det.truncated or self._off_lane(node, det)):
                    continue
                ov = 0.0
                if touching[i, j]:
                    if surface[j] or big[i]:
                        ov = footprint_overlap(det, lo[j], hi[j])
                    else:
                        ov = overlap(det.points, self.tracks[node].keys, cfg.assoc_voxel)
                if not same_cls[i, j] and cfg.class_votes:
                    # Its label flickered (or a lit button's cap was named otherwise, in its lit colour):
                    # ranked below every same-class match.
                    if ov >= 0.5 and (col_ok[i, j] or lit[j]):
                        pairs.append((ov, i, node, ov))
                elif ov >= cfg.min_overlap and col_ok[i, j]:
                    # Ties (a sliver of a neighbour overlaps as fully as the object itself) go to the nearer centre.
                    off = 2.0 if still[j] and not over[i, j] else 0.0
                    pairs.append((1.0 + ov - 0.1 * min(dist[i, j] / cfg.move_gate, 1.0) - off, i, node, ov))
                elif ov >= 0.5 and (same_cls[i, j] or sized[j]):
                    # Same place, other colour: a cue panel or a lit button, or a shaded view
                    # of a drawer's inside. Ranked below every colour-consistent overlap. Not a
                    # size class on a recognised shape: a ball under a lifting cup is no view of it. Ties go
                    # to the nearer centre: a sliver beside a button, on its points as fully as the button's
                    # own view when it went dark again, had taken it (SequenceRecall 930053, randomized look).
                    pairs.append((ov - 0.1 * min(dist[i, j] / cfg.move_gate, 1.0), i, node, ov))
                elif (col_ok[i, j] and dist[i, j] < gate[j] and not surface[j] and (same_cls[i, j] or moves[j])
                      and not pushed[j]
                      and not ((patch[i] or (loose[i] and not same_cls[i, j]))
                               and self._graph.nodes[node]["status"] == "hidden")
                      and not self._unmoved_elsewhere(node, det.camera)):
                    # Near, not on its points: a move, unless another camera sees the node unmoved.
                    pairs.append((1.0 - dist[i, j] / gate[j] - (1.0 if still[j] else 0.0), i, node, ov))
        pairs.sort(key=lambda p: -p[0])
        match: dict[int, str] = {}
        overlaps: dict[int, float] = {}
        for _, i, node, ov in pairs:
            if i in match or node in taken_here:
                continue
            match[i] = node
            overlaps[i] = ov
            taken_here.add(node)
        if cfg.reid_any_distance and len(match) < len(dets):
            self._reidentify(dets, match, taken_here)
        return [(det, match.get(i), overlaps.get(i, 0.0)) for i, det in enumerate(dets)]

    def _standing_still(self, nodes: list[str]) -> np.ndarray:
        """(N,) bool: which of ``nodes`` are rigid containers (cups) lost at rest (smoothed velocity under
        MOVING) whose place the depth still shows filled (status "unseen"), while merged views are left out
        (``MemoryConfig.object_pieces``). Such a node moves only after the others, and takes a view centred
        off it only after them: three cups in a row, one region to a learned detector, went unseen for two
        frames mid-swap, and the cup standing still, the nearest node, took a passing cup's view (ShellGame
        930047, 930064 and 930075, randomized look). The ball hidden in one went with the wrong cup, and no
        later view could undo it. A passing cup lost in the merge is "unseen" too, but moving: it keeps its
        claim (held back as well, it had lost its own view to the still cup: ShellGame 930087)."""
        if not self.config.object_pieces:
            return np.zeros(len(nodes), dtype=bool)
        attrs = [self._graph.nodes[n] for n in nodes]
        return np.array([a["status"] == "unseen" and a["kind"] == "container" and not a["articulated"]
                         and float(np.abs(self.tracks[n].velocity).max()) <= MOVING for n, a in zip(nodes, attrs)],
                        dtype=bool)

    def _off_slide(self, node: str, det_centre: np.ndarray, node_centre: np.ndarray) -> bool:
        """A drawer moves only along its housing's slide: a whole view (not cut by the image's edge)
        centred more than SLIDE_GATE across that line from the node's centre is not of it (a sliver of the
        gap between two housings, labelled drawer by a learned detector)."""
        out = self.slide_direction(node)
        if out is None:
            return False
        across = 0 if out[0] == 0.0 else 1
        return abs(float(det_centre[across]) - float(node_centre[across])) > SLIDE_GATE

    def _join_object_pieces(self, dets: list[ObjectObservation]) -> list[ObjectObservation]:
        """One camera's detections with those that lie, two or more together, within one remembered plain
        object's box (grown by PIECE_SLACK), of its class and colour, joined into one view
        (``MemoryConfig.object_pieces``): pieces of it (a block's lit top and shaded side, which a learned
        detector's regions can split). Else one piece continues the node and the other makes a second
        block, seen together with the first and so never merged (StashAndFetch 920000). Two blocks side
        by side are two nodes, and neither's box holds the other's view."""
        if len(dets) < 2:
            return dets
        rows = self._node_rows()
        taken: set[int] = set()
        groups: list[list[int]] = []
        for node, a, track in zip(rows.nodes, rows.attrs, rows.tracks):
            if a["kind"] != "object" or a["held"] or track.surface:
                continue
            lo, hi = track.box_min - PIECE_SLACK, track.box_max + PIECE_SLACK
            inside = [i for i, d in enumerate(dets) if i not in taken and d.label == a["cls"]
                      and np.all(d.box_min >= lo) and np.all(d.box_max <= hi)
                      and same_colour(d.colour, d.rgb, a["colour"], np.asarray(a["rgb"]), self.config.colour_tolerance)]
            if len(inside) > 1:
                groups.append(inside)
                taken.update(inside)
        if not groups:
            return dets
        joined = {g[0]: join_views([dets[i] for i in g]) for g in groups}
        return [joined.get(i, d) for i, d in enumerate(dets) if i not in taken or i in joined]

    def _drop_merged_views(self, dets: list[ObjectObservation]) -> list[ObjectObservation]:
        """One camera's detections without those that are two remembered objects seen as one
        (``MemoryConfig.object_pieces``): a view of a rigid thing's class with two or more nodes of its
        class, each seen SETTLED_SIGHTINGS times or more, covering it or within their own width of it, and
        MERGED_VIEW times wider than the widest of them along x or y. A rigid object does not grow; two cups
        passing each other in a shell game are one cup-shaped region to a learned detector, and that view
        had dragged the hidden ball's cup onto the other's place (ShellGame 930004). What it covers is
        seen again when they part. One object alone is never left out (a lamp first seen in part, then
        whole: with one node of its class, the whole view had been dropped for good: ChangedObject
        930005). Nor is a view of a plain object's class wider than FURNITURE_WIDTH kept: the object joined
        with the furniture it stands on (a pink dumbbell and 50 cm of the bed under it, GoAsTold 930020, became a
        78 cm "dumbbell" the agent parked in front of, 26 cm off). Buttons are rigid too: two seen as one from
        the moving wrist camera had dragged one's node onto the other (SequenceRecall 930097, randomized look)."""
        if not dets:
            return dets
        rows = self._node_rows()
        boxes: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        for a, tr in zip(rows.attrs, rows.tracks):
            rigid = (a["kind"] in THING_KINDS and not a["articulated"]) or a["cls"] in PUSHED
            if rigid and not a["held"] and not tr.surface and a["n_obs"] >= SETTLED_SIGHTINGS:
                boxes.setdefault(a["cls"], []).append((tr.box_min, tr.box_max))
        keep = []
        for det in dets:
            wide = det.box_max[:2] - det.box_min[:2]
            if wide.max() > FURNITURE_WIDTH and det.label not in SIZE_CLASSES and kind_of(det.label) == "object":
                continue
            # Its class's objects it covers, or that stand within their own width of it (a moving one's
            # node lags behind while the merged view hides it).
            near = [(lo, hi) for lo, hi in boxes.get(det.label, ())
                    if np.all(det.box_min[:2] - (hi - lo)[:2] <= hi[:2]) and np.all(det.box_max[:2] + (hi - lo)[:2] >= lo[:2])]
            # Wider than the widest of them: a node's box may be its last frame's partial view (a cup half
            # hidden as it slid), and every whole view of that node had then been left out for good.
            merged = len(near) >= 2 and bool(np.any(wide > MERGED_VIEW * np.max([hi - lo for lo, hi in near], 0)[:2]))
            if not merged:
                keep.append(det)
        return keep

    def _off_lane(self, node: str, det: ObjectObservation) -> bool:
        """Whether a view cut by the image's edge lies wholly beside a drawer's lane (its box across the
        slide, grown by LANE_SLACK): a partial view of the drawer may be centred off its middle, but not off the
        drawer (a 20-pixel sliver of the next drawer's edge had dragged a drawer's node 13 cm sideways:
        HiddenObject 920008)."""
        out = self.slide_direction(node)
        if out is None:
            return False
        k = 0 if out[0] == 0.0 else 1
        track = self.tracks[node]
        return bool(det.box_max[k] < track.box_min[k] - LANE_SLACK or det.box_min[k] > track.box_max[k] + LANE_SLACK)
