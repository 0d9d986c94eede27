"""Articulated parts (mixed into :class:`SpatialMemory`): drawers open and closed, buttons pressed and
released, judged from observed geometry.

A drawer's state is how far it sticks out of its housing (m), against the least travel seen on the
parts of its row; which way it slides out is voted over the frames and over the drawers of the row
(``slide_direction``), so a housing seen merged with its neighbour does not turn a drawer sideways.
"""

from __future__ import annotations

import numpy as np

from embodied.memory.carve import drawers_clear_of_objects, drawers_spanned, housings_clear_of_drawers
from embodied.memory.config import HOUSING_CLASSES, SIZE_CLASSES

FIXTURE_CLASSES = HOUSING_CLASSES | {"drawer"}
from embodied.perception import join_views

SLIDE_SIDES = ("out_x-", "out_y-", "out_x+", "out_y+")  # a drawer's slide votes (Track.rest keys)
FRONT_MIN = 0.08  # m: a drawer view this wide shows its front (see _slide_vote)
NARROWER = 0.7  # a drawer view this much narrower across its slide than the last is partly hidden
ROW_REACH = 1.0  # m: drawers this close pool their slide votes (one row faces one way)
PIECE_ACROSS = 0.015  # m: a drawer piece lies across the slide within its drawer's width and this much
PIECE_REACH = 0.25  # m: ... and along the slide within this of the drawer's box (it may have been pulled)
PIECE_WIDEST = 1.3  # a drawer node wider across its slide than this times its row's narrowest has no corridor
PULL_REACH = 0.25  # m: a drawer pulled out this far still slides out of its housing
# m around a drawer's box (its node may be its handle strip, 2/3 of its front): a size-class view in its
# colour there is of it
LOOKALIKE_SLACK = 0.04
OBJECT_SLACK = 0.01  # m around a remembered object's box: a drawer view's points there are the object's
BLOB_COVER = 0.5  # a size-class view wider than BLOB_WIDE (m; two blocks) covering this share of a drawer's
BLOB_WIDE = 0.08  # or a housing's footprint is furniture
TOP_PLATE = 0.01  # m: a size-class view over a housing, this close below its top (5 mm above), is its top plate
REACH_SLACK = 0.02  # m: fingers over a drawer's box grown by this ...
REACH_ABOVE = 0.2  # m ... and at most this high over its top are reaching into it (or carrying over it)
MERGED_WIDTH = 1.75  # a drawer view wider across its slide than this times its row's median is several drawers
SPAN_SHARE = 0.5  # ... and so is one covering this share of two of the row's whole drawers (WHOLE of its median)
WHOLE = 0.6


class Articulation:
    """Needs the SpatialMemory fields (_graph, tracks, config, grip, _parts_dirty) and methods (_find, _set,
    _carry_contents)."""

    def _articulation(self, node: str, t: int) -> None:
        """Drawer open/closed and button pressed/released from observed geometry."""
        a = self._graph.nodes[node]
        if not a.get("articulated"):
            return
        cfg = self.config
        track = self.tracks[node]
        rest = track.rest
        if a["cls"] in ("button", "switch"):
            if a.get("pressed_by") == "agent":
                return  # the robot's own press is judged from proprioception (see _touch)
            # The cap travels down when pressed: compare its top with the highest top seen, but not while
            # the hand is over it: a learned detector's view of a button with the fingers rising off it
            # reached 9 cm, the rest top stayed there, the fingers never rose above it between presses,
            # and the second of two presses never showed (CountFlashes 930000, visual=randomized).
            top = float(track.box_max[2])
            if "top" not in rest or not self._hand_over(track):
                rest["top"] = max(rest.get("top", top), top)
                # Its footprint as last seen with no hand over it, for ``_touch``: the fingers on the cap
                # hide most of it.
                (rest["x0"], rest["y0"]), (rest["x1"], rest["y1"]) = track.box_min[:2], track.box_max[:2]
            state = "pressed" if top < rest["top"] - cfg.button_press_delta else "released"
        else:
            if self._reaching_in(track):
                return
            found = self._drawer_travel(node, track)
            if found is None:
                return
            travel, outward = found
            if "now" in rest and abs(travel - rest["now"]) > 1e-3:
                # What was hidden in the drawer slides with it (a block shut in stays behind its front);
                # the slide is kept for what gets shut in during this very frame (see _permanence).
                slide = (travel - rest["now"]) * outward
                rest.update(slid_x=float(slide[0]), slid_y=float(slide[1]), slid_t=float(t))
                self._carry_contents(node, slide, t)
            rest["now"] = travel
            # Closed is the least travel seen on a part of this class (all drawers of a row
            # look alike), so a drawer first seen open still reads open once a shut one is seen.
            rest["travel"] = min(rest.get("travel", travel), travel)
            self._parts_dirty.add(a["cls"])  # judged once per frame, when every part has been seen
            return
        if state != a["state"]:
            self._set(node, t, state, {"state": state})

    def _hand_over(self, track) -> bool:
        """Whether the TCP (proprioception) is over the part's footprint grown by REACH_SLACK."""
        tcp = self.grip.get("tcp")
        if tcp is None:
            return False
        xy = np.asarray(tcp[:2], dtype=np.float64)
        return bool(np.all(xy >= track.box_min[:2] - REACH_SLACK) and np.all(xy <= track.box_max[:2] + REACH_SLACK))

    def _reaching_in(self, track) -> bool:
        """Whether the robot's fingers are down in (or over) a drawer, open or holding something, not shut
        on nothing: that is a hook on its handle, which slides it (fingers opening from a release are no
        hook: StashAndFetch 930006). The arm then hides the tray's front from the cameras, and a view cut
        short there read as the drawer closing: the block in it slid along, and the grasp went 3 cm
        behind it (HiddenObject 930000). Only a hooked handle moves a drawer the arm is in. (The TCP and
        width of the last frame; workcell only.)"""
        g = self.grip
        if g.get("tcp") is None or (g["width"] <= self.config.grasp_min_width and not g["holding"]):
            return False
        return self._hand_over(track) and float(g["tcp"][2]) <= track.box_max[2] + REACH_ABOVE

    def _drawer_states(self, cls: str, t: int) -> None:
        """Open/closed for every part of a class against the row's reference travel."""
        parts = [n for n in self._find(cls=cls) if "now" in self.tracks[n].rest]
        if not parts:  # the frame's parts were merged into nodes not yet placed in a housing
            return
        # The median of the rests, so one drawer seen half-hidden does not move the reference; parts
        # seen a tenth as often as the best seen (fleeting fragments) do not vote.
        most = max(self._graph.nodes[n]["n_obs"] for n in parts)
        voters = [n for n in parts if self._graph.nodes[n]["n_obs"] * 10 >= most] or parts
        ref = float(np.median([self.tracks[n].rest["travel"] for n in voters]))
        for n in parts:
            rest = self.tracks[n].rest
            state = "open" if rest["now"] > ref + self.config.drawer_open_delta else "closed"
            before = self._graph.nodes[n]["state"]
            if state == before:
                continue
            if before and abs(rest["now"] - rest.get("judged", rest["now"])) < self.config.drawer_open_delta / 2:
                continue  # the part did not slide: the reference moved (a new view of the row), not the drawer
            rest["judged"] = rest["now"]
            self._set(n, t, "opened" if state == "open" else "closed", {"state": state})

    def _drawer_travel(self, node: str, track) -> tuple[float, np.ndarray] | None:
        """How far a sliding part sticks out of its housing (m) and the outward direction (3,);
        None while no housing is known.

        The housing is the one whose footprint, grown by 3 cm (a shut drawer's front sits just outside
        it), overlaps the part's footprint most. The travel is measured out of the side the drawer's row
        slides out of (see slide_direction), to which this frame's view adds its vote.
        """
        lo, hi = track.box_min, track.box_max
        out, best_area, housing = None, 0.0, None
        for other in self._find(kind="surface"):
            if self._graph.nodes[other]["cls"] not in HOUSING_CLASSES:
                continue
            h = self.tracks[other]
            w = np.minimum(hi[:2], h.box_max[:2] + 0.03) - np.maximum(lo[:2], h.box_min[:2] - 0.03)
            area = float(np.prod(np.clip(w, 0, None)))
            if area > best_area:
                best_area, housing = area, other
        side = self._slide_side(node)
        if housing is None and side is not None:
            # Pulled far out, with the part still inside out of view (the arm, the housing's top): the
            # housing it slides out of, its box grown that way by the longest pull.
            out_dir = _side_vector(side)
            for other in self._find(kind="surface"):
                if self._graph.nodes[other]["cls"] not in HOUSING_CLASSES:
                    continue
                h = self.tracks[other]
                glo, ghi = h.box_min[:2] - 0.03, h.box_max[:2] + 0.03
                glo, ghi = glo + np.minimum(out_dir, 0) * PULL_REACH, ghi + np.maximum(out_dir, 0) * PULL_REACH
                w = np.minimum(hi[:2], ghi) - np.maximum(lo[:2], glo)
                area = float(np.prod(np.clip(w, 0, None)))
                if area > best_area:
                    best_area, housing = area, other
        if housing is not None:
            h = self.tracks[housing]
            # How far the part sticks out of each side, in SLIDE_SIDES order.
            out = np.array([h.box_min[0] - lo[0], h.box_min[1] - lo[1], hi[0] - h.box_max[0], hi[1] - h.box_max[1]])
        if out is None:
            if self._graph.nodes[node]["cls"] != "drawer_unit":
                return None
            # A drawer unit modelled as one entity grows longer as it opens (nothing to carry along).
            return float(max(hi[0] - lo[0], hi[1] - lo[1])), np.zeros(3)
        vote = self._slide_vote(track, housing, SLIDE_SIDES[int(np.argmax(out))])
        track.rest[vote] = track.rest.get(vote, 0.0) + 1.0
        side = self._slide_side(node)
        outward = np.zeros(3)
        outward[:2] = _side_vector(side)
        return float(out[SLIDE_SIDES.index(side)]), outward

    def _slide_vote(self, track, housing: str, at: str) -> str:
        """This frame's vote for the way a drawer slides out (a SLIDE_SIDES key).

        A drawer's front is wider than the drawer is pulled out, so the short side of a view at least
        FRONT_MIN wide is the slide's axis, and it slides away from its housing's centre. That holds
        where a housing merged with its neighbour (a row seen as one box: the drawer at the row's end
        then sits at a side of the box as much as at its front). A narrower view (a fragment) votes for
        the housing side ``at`` it sticks out of most."""
        size = (track.box_max - track.box_min)[:2]
        if size.max() < FRONT_MIN or size.max() < 1.5 * size.min():
            return at
        axis = int(np.argmin(size))
        away = track.center[axis] - self.tracks[housing].center[axis]
        return f"out_{'xy'[axis]}{'+' if away > 0 else '-'}"

    def _slide_side(self, node: str) -> str | None:
        """The SLIDE_SIDES key a drawer slides out of: the most votes of the drawers of its row (its class
        within ROW_REACH): the row faces one way, and a fragment of a drawer seen a few times at the wrong
        side of a housing merged with its neighbour is outvoted. With ``MemoryConfig.row_slide`` a drawer
        with no vote of its own takes its row's (one first seen pulled out, apart from its housing, cannot
        vote: ReopenDrawer 930000 on geometric perception). None before a vote of its own (or its row's)."""
        track = self.tracks.get(node)
        if track is None or not (self.config.row_slide or any(k in track.rest for k in SLIDE_SIDES)):
            return None
        votes = dict.fromkeys(SLIDE_SIDES, 0.0)
        for other in self._find(cls=self._graph.nodes[node]["cls"]):
            tr = self.tracks[other]
            if other == node or np.linalg.norm(tr.center[:2] - track.center[:2]) < ROW_REACH:
                for k in SLIDE_SIDES:
                    votes[k] += tr.rest.get(k, 0.0)
        return max(SLIDE_SIDES, key=votes.get) if any(votes.values()) else None

    def _narrower_across(self, node: str, det, prev) -> bool:
        """Whether a view ``det`` of a drawer is under NARROWER times as wide across its slide as the
        camera's previous view ``prev`` (False before its slide is known)."""
        side = self._slide_side(node)
        if side is None:
            return False
        k = 1 if side[4] == "x" else 0
        return float(det.box_max[k] - det.box_min[k]) < NARROWER * float(prev.box_max[k] - prev.box_min[k])

    def _join_drawer_pieces(self, dets: list) -> list:
        """One camera's detections with those of drawers in one remembered drawer's slide corridor joined
        into one (``MemoryConfig.drawer_pieces``): across the slide within the drawer's width (and
        PIECE_ACROSS), overlapping its height, along the slide within PIECE_REACH of its box. Drawers of a
        row stand side by side across their slide, so none lies in another's corridor."""
        drawers = [i for i, d in enumerate(dets) if d.label == "drawer"]
        if not drawers:
            return dets
        nodes, widths = self._drawer_widths()
        dets = self._drop_merged_drawers(dets, drawers, nodes, widths)
        drawers = [i for i, d in enumerate(dets) if d.label == "drawer"]
        if len(drawers) < 2:
            return dets
        groups: list[list[int]] = []
        taken: set[int] = set()
        for (node, side), width in zip(nodes, widths):
            if width > PIECE_WIDEST * min(widths):
                continue  # a node grown over two drawers (the drawers of a row are alike): no corridor
            across = _across(side)
            along = 1 - across
            tr = self.tracks[node]
            lo, hi = tr.box_min, tr.box_max
            inside = [i for i in drawers if i not in taken
                      and dets[i].box_min[across] >= lo[across] - PIECE_ACROSS
                      and dets[i].box_max[across] <= hi[across] + PIECE_ACROSS
                      and dets[i].box_min[2] <= hi[2] and dets[i].box_max[2] >= lo[2]
                      and dets[i].box_max[along] >= lo[along] - PIECE_REACH
                      and dets[i].box_min[along] <= hi[along] + PIECE_REACH]
            if len(inside) > 1:
                groups.append(inside)
                taken.update(inside)
        if not groups:
            return dets
        joined = {g[0]: join_views([dets[i] for i in g]) for g in groups}
        return [joined.get(i, d) for i, d in enumerate(dets) if i not in taken or i in joined]

    def _carve_drawers_from_housings(self, dets: list) -> list:
        """``dets`` with each housing view cut clear of the remembered drawers it takes in
        (``carve.housings_clear_of_drawers``). A learned detector can see a pulled-out drawer and its
        cabinet as one cabinet; grown by that view, the housing reached the drawer's front, and the drawer,
        pulled open to its stop, never seemed to stick out of it again: the plan kept opening the open
        drawer (HiddenObject 930067). Part of ``drawer_pieces``."""
        drawers = [(self.tracks[n].box_min, self.tracks[n].box_max) for n in self._find(cls="drawer")]
        return housings_clear_of_drawers(dets, drawers, HOUSING_CLASSES, BLOB_COVER, LOOKALIKE_SLACK)

    def _carve_objects_from_drawers(self, dets: list) -> list:
        """``dets`` with each drawer view cut clear of the plain objects memory holds where it last saw them
        (not held, in no container, not missing: the depth did not see through their place), seen last
        frame or not (``carve.drawers_clear_of_objects``). A learned detector saw a cyan block just in front
        of a blue drawer pulled open as part of the drawer; the drawer's front grew 5 cm towards the robot,
        and the block set "into the open drawer" behind that front came down on the real front
        (StashAndFetch 930086). A white block there, swallowed by the drawer's view from step 34 on, was
        unseen since, yet still there (StashAndFetch 930026, randomized look). A stale box costs little: a
        drawer's front is far wider than a block, so cutting a block's footprint out of it leaves its box.
        Part of ``drawer_pieces``."""
        if not any(d.label == "drawer" for d in dets):
            return dets
        nodes = self.graph.nodes
        objects = [(self.tracks[n].box_min, self.tracks[n].box_max) for n in self._find(kind="object")
                   if nodes[n].get("status") != "missing" and not nodes[n].get("held") and not nodes[n].get("inside")]
        return drawers_clear_of_objects(dets, objects, OBJECT_SLACK)

    def _drop_drawer_lookalikes(self, dets: list) -> list:
        """``dets`` without the views of no recognised shape (a size class) that lie in a drawer's space, in
        the drawer's colour: its box grown by LOOKALIKE_SLACK, and by PULL_REACH both ways along its slide
        (pulled out, or its tray reaching back under the housing's top). A camera close to an open drawer
        that sees no housing cannot tell the drawer's shape (its tray's walls, its front), and memory made
        things of such views that the plan then moved, or that took the views of the block in the tray
        (StashAndFetch 930004). Only geometric mode's detector reports size classes. Where classes are not
        strict (geometric mode, whose shape rules guess), a cup view there in the drawer's colour goes too:
        the corner of an open drawer seen close up has a cup's size (no task paints a cup like its
        drawers)."""
        looks = SIZE_CLASSES if self.config.strict_class else SIZE_CLASSES | {"cup"}
        if not any(d.label in looks for d in dets):
            return dets
        dets = self._drop_furniture_views(dets)
        spaces = []
        for node, side in self._drawer_widths()[0]:
            tr, a = self.tracks[node], self._graph.nodes[node]
            along = np.abs(_side_vector(side)) * PULL_REACH  # pulled out, and its tray back in the housing
            lo = tr.box_min[:2] - LOOKALIKE_SLACK - along
            hi = tr.box_max[:2] + LOOKALIKE_SLACK + along
            spaces.append((lo, hi, a["colour"]))
        if not spaces:
            return dets

        def lookalike(d) -> bool:  # the colour's name, no tolerance: a pink block in a purple tray is a block
            return d.label in looks and any(
                np.all(d.box_min[:2] >= lo) and np.all(d.box_max[:2] <= hi) and d.colour == colour
                for lo, hi, colour in spaces)

        return [d for d in dets if not lookalike(d)]

    def _drop_furniture_views(self, dets: list) -> list:
        """``dets`` without the size-class views of furniture. Those over a housing's footprint at its top:
        its top plate cut off from the rest (the wrist camera over an open drawer sees the housing only
        where the hand leaves it; that sliver, 11 cm from a block hidden under the hand, became the block's
        move onto the housing: HiddenObject 930001); a thing standing on the housing reaches higher. And
        those wider than BLOB_WIDE covering BLOB_COVER of a drawer's or a housing's footprint: a drawer row
        and its housing seen as one blob from close by, whose node then took the views of the block
        stashed in the drawer (StashAndFetch 930001)."""
        fixtures = [(self.tracks[n], self._graph.nodes[n]["cls"]) for n in self._find()
                    if self._graph.nodes[n]["cls"] in FIXTURE_CLASSES]
        if not fixtures:
            return dets

        def furniture(d) -> bool:
            if d.label not in SIZE_CLASSES:
                return False
            wide = float(np.max(d.box_max[:2] - d.box_min[:2])) > BLOB_WIDE
            for tr, cls in fixtures:
                lo, hi = tr.box_min[:2], tr.box_max[:2]
                inner = np.clip(np.minimum(d.box_max[:2], hi) - np.maximum(d.box_min[:2], lo), 0, None)
                if wide and np.prod(inner) >= BLOB_COVER * np.prod(np.maximum(hi - lo, 1e-3)):
                    return True
                top = float(tr.box_max[2])
                if (cls in HOUSING_CLASSES and np.all(d.box_min[:2] >= lo - LOOKALIKE_SLACK)
                        and np.all(d.box_max[:2] <= hi + LOOKALIKE_SLACK)
                        and top - TOP_PLATE <= d.box_min[2] and d.box_max[2] <= top + TOP_PLATE / 2):
                    return True
            return False

        return [d for d in dets if not furniture(d)]

    def _drawer_widths(self) -> tuple[list[tuple[str, str]], list[float]]:
        """The drawer nodes whose slide is known, with their slide side, and each one's width (m) across
        its slide."""
        nodes = [(n, self._slide_side(n)) for n in self._find(cls="drawer")]
        nodes = [(n, side) for n, side in nodes if side is not None]
        widths = [float(np.ptp([self.tracks[n].box_min, self.tracks[n].box_max], axis=0)[_across(side)])
                  for n, side in nodes]
        return nodes, widths

    def _drop_merged_drawers(self, dets: list, drawers: list[int], nodes: list[tuple[str, str]],
                             widths: list[float]) -> list:
        """``dets`` without the drawer views wider across their row's slide than MERGED_WIDTH times the
        row's median drawer, or covering SPAN_SHARE of the width of two of its drawers (each at least WHOLE
        times the median wide, so not pieces): several drawers the detector saw as one (two fronts a few
        pixels apart in the wrist camera, joined), which would drag one drawer's node over its neighbour's
        place and leave the drawer that really opens to a node of its own (HiddenObject 920008; in the
        randomized look, whose drawers share one colour, a view over one and most of the next, 1.73 times
        one: StashAndFetch 930019). A node's width follows its views (a drawer's handle strip from afar is
        two thirds of its front), hence the median and the margin: two fronts seen as one are 1.9 times
        one."""
        drop = set()
        for i in drawers:
            det = dets[i]
            row = [(n, side, w) for (n, side), w in zip(nodes, widths)
                   if np.linalg.norm(self.tracks[n].center[:2] - det.center[:2]) < ROW_REACH]
            if len(row) < 2:
                continue  # no row to measure against yet
            typical = float(np.median([w for _, _, w in row]))
            sides = [sd for _, sd, _ in row]
            k = _across(max(set(sides), key=sides.count))
            whole = [(self.tracks[n].box_min, self.tracks[n].box_max) for n, _, w in row if w >= WHOLE * typical]
            if float(det.box_max[k] - det.box_min[k]) > MERGED_WIDTH * typical or \
                    drawers_spanned(det.box_min, det.box_max, whole, k, SPAN_SHARE) >= 2:
                drop.add(i)
        return [d for i, d in enumerate(dets) if i not in drop] if drop else dets

    def slide_direction(self, node: str) -> np.ndarray | None:
        """(2,) unit world xy a drawer slides out along (judged from its housing and its row, see
        _slide_side); None until it has been seen with a housing."""
        side = self._slide_side(node)
        return None if side is None else _side_vector(side)


def _across(side: str) -> int:
    """The world axis (0: x, 1: y) across the slide of a SLIDE_SIDES key."""
    return 1 if side[4] == "x" else 0


def _side_vector(side: str) -> np.ndarray:
    """(2,) unit xy of a SLIDE_SIDES key: "out_x-" -> (-1, 0)."""
    v = np.zeros(2)
    v["xy".index(side[4])] = 1.0 if side[5] == "+" else -1.0
    return v
