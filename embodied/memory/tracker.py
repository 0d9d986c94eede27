"""Track updates (mixed into :class:`SpatialMemory`): a node made for a new detection, a matched one
updated (moved, refined, recoloured, seen again), the contents a rigid container carries.

:class:`Tracking` brings in the data association (``embodied.memory.association``: which node each
detection is) and the record of ground the cameras have looked at (``embodied.memory.looked_at``).
"""

from __future__ import annotations

import numpy as np

from embodied.memory.association import LIT, PUSHED, SETTLED, Association
from embodied.memory.config import ARTICULATED_CLASSES, FURNITURE_WIDTH, RIGID_CONTAINERS, kind_of
from embodied.memory.gating import brightness_step
from embodied.memory.looked_at import LookedAt
from embodied.memory.node_rows import NodeRows  # noqa: F401  (the type _node_rows returns)
from embodied.memory.reidentify import MOVING
from embodied.memory.tracks import Track, View
from embodied.perception.colour import colour_distance, colour_name, hue_nudged, named_firmly
from embodied.perception.geometry import SMALL_MAX  # the shape classes' bound: a longer view is no "small" thing
from embodied.perception.types import ObjectObservation

PHYSICAL = ("object", "container", "articulated", "surface")


def _vec(a) -> tuple[float, float, float]:
    return (float(a[0]), float(a[1]), float(a[2]))


class Tracking(Association, LookedAt):
    """Track updates, with association and the looked-at record. Needs the SpatialMemory fields."""

    def _physical(self) -> list[str]:
        """Physical node ids in graph order (kept between frames; do not modify the list)."""
        return self._kind_index()[1]

    def _node_rows(self) -> NodeRows:
        """The physical nodes' rows (boxes, velocities, attribute dicts, tracks), up to date now."""
        return self._rows.sync(self._physical(), self._graph, self.tracks)

    def _kind_index(self) -> tuple[int, list[str], list[str]]:
        """(node count, physical nodes, place nodes), in graph order: one pass over the graph, redone
        when a node is added, deleted or changes kind (``_add_node``, ``delete``, ``_set`` drop it) or
        the node count changed behind their back."""
        index = self._kinds
        if index is None or index[0] != len(self._graph):
            physical, places = [], []
            for n, a in self._graph.nodes(data=True):
                if a["kind"] in PHYSICAL:
                    physical.append(n)
                elif a["kind"] == "place":
                    places.append(n)
            index = self._kinds = (len(self._graph), physical, places)
        return index

    # --- track updates ------------------------------------------------------
    def _pixel_size(self, camera: str, point: np.ndarray) -> float:
        """Metres one pixel of ``camera`` spans at ``point`` (0 if the camera is unknown)."""
        optics = self._optics.get(camera)
        if optics is None:
            return 0.0
        position, focal = optics
        return float(np.linalg.norm(np.asarray(point) - position)) / max(focal, 1e-6)

    def _eye_z(self, camera: str) -> float:
        """Height (m) of a camera of the current frame; inf if unknown."""
        return self._eyes.get(camera, np.inf)

    def _add(self, det: ObjectObservation, t: int) -> str:
        cfg = self.config
        kind = kind_of(det.label)
        surface = bool(kind == "surface" or max(det.extent[0], det.extent[1]) > FURNITURE_WIDTH)
        if surface and kind == "object":
            kind = "surface"
        track = Track(surface=surface, t_obs=t, rigid=not surface and det.label not in ARTICULATED_CLASSES,
                      votes={det.label: 1} if cfg.class_votes else {})
        view = View(det.points, det.center, det.box_min, det.box_max, det.n_points, t, self._eye_z(det.camera),
                    np.asarray(det.rgb, dtype=np.float64))
        track.views[det.camera] = view
        if surface:
            track.grow_surface(det.points, det.box_min, det.box_max, cfg.max_object_points, cfg.assoc_voxel)
        track.refresh(cfg.assoc_voxel, cfg.max_object_points)
        node = self._new_id(det.label)
        self.tracks[node] = track
        self.changed.add(node)
        attrs = {
            "kind": kind,
            "cls": det.label,
            "colour": det.colour,
            "rgb": _vec(np.round(det.rgb.astype(np.float64), 4)),
            "position": _vec(track.center),
            "box_min": _vec(track.box_min),
            "box_max": _vec(track.box_max),
            "first_seen": t,
            "last_seen": t,
            "visible": True,
            "status": "visible",
            "unseen_since": -1,
            "state": "",
            "articulated": det.label in ARTICULATED_CLASSES,
            "inside": "",
            "held": False,
            "n_obs": 1,
            "confidence": _confidence(1, "visible"),
        }
        self._add_node(node, attrs, t, "seen")
        self._articulation(node, t)
        return node

    def _observe(self, node: str, det: ObjectObservation, t: int, ov: float = 0.0) -> None:
        cfg = self.config
        a = self._graph.nodes[node]
        track = self.tracks[node]
        if cfg.class_votes:
            self._vote(node, a, track, det.label, t)
        cam = det.camera
        if ov == SETTLED and a["visible"]:
            # Nothing changed since this camera's last look: the common case, kept cheap.
            track.views[cam].t = t
            a["n_obs"] += 1
            a["last_seen"] = t
            if track.velocity.any():
                track.velocity = 0.5 * track.velocity if np.abs(track.velocity).max() > 1e-4 else track.velocity * 0
            if track.rigid and float(np.abs(track.velocity).max()) <= MOVING:
                track.learn_height(track.views[cam])  # a view first taken in motion, now seen at rest
            track.t_obs = t
            self.log.noops += 1
            if a.get("articulated") and not a["state"]:
                # A part not judged yet (a drawer first seen pulled out, apart from its housing, before its
                # row's slide was voted) is judged as soon as it can be, unmoved: ReopenDrawer 930000 on
                # geometric perception saw the open drawer for 60 steps and never called it open.
                self._articulation(node, t)
            return
        self.changed.add(node)
        det_rgb = np.asarray(det.rgb, dtype=np.float64)
        view = View(det.points, det.center, det.box_min, det.box_max, det.n_points, t, self._eye_z(det.camera), det_rgb)
        old_center = track.center.copy()
        if a["kind"] == "container":
            track.prev_box = (track.box_min.copy(), track.box_max.copy())
        moved = False
        changed = False
        in_motion = False  # moving or held: its shading changes with its pose, whatever its colour
        nested = False  # the view is more or less of the camera's last one (see below)
        shift = 0.0
        prev = None
        creep = 0.003
        before = track.views.get(cam)
        before_rgb = None if before is None else before.rgb  # the view may be updated in place below
        light = 0 if track.surface else brightness_step(det_rgb, before_rgb, cfg.brightness_ratio)
        if track.surface:
            track.views[cam] = view
            if track.grow_surface(det.points, det.box_min, det.box_max, cfg.max_object_points, cfg.assoc_voxel):
                track.refresh(cfg.assoc_voxel, cfg.max_object_points)
                changed = True
        else:
            prev = before
            pixel = cfg.move_tol_pixels * self._pixel_size(cam, det.center)
            tol = max(cfg.move_tol, pixel)
            # Below one pixel a shift is noise where pixels are coarser than move_tol (far objects);
            # up close, a few millimetres a step is a slow push.
            creep = pixel if pixel > cfg.move_tol else 0.003
            ref, tol = (prev.center, tol) if prev is not None else (track.center, 2.5 * tol)
            shift = float(np.linalg.norm(det.center - ref))
            # Held objects and sliding parts (a drawer sliding shut shows less of itself) change their
            # views for real; for the rest a much smaller view means occlusion. A button only sinks 6 mm: a
            # sliver of it is its base around a lit cap named otherwise (a yellow "block"), which had dragged
            # the button's node onto the sliver, judged it pressed, and lost its flash (SequenceRecall
            # 930024, randomized look).
            partial = (det.truncated or (prev is not None and det.n_points < 0.6 * prev.n_points)
                       or _one_face(det, track)) and not (a["held"] or (a["articulated"] and a["cls"] not in PUSHED))
            # A part of what this camera saw lies within what it saw: a smaller view reaching well out of
            # the last one shows the object somewhere else.
            partial = partial and not (prev is not None and _reaches_out(det, prev))
            # A "small" thing's last view longer than anything small was it merged with a neighbour (a block
            # set down beside another, seen as one "medium" blue cluster): a smaller view is no part of that
            # (the node had stayed between the two blocks, where each grasp missed: Rearrange 930060, geometric).
            partial = partial and not (prev is not None and a["cls"] == "small" and _longer(prev, SMALL_MAX)
                                       and not _longer(det, SMALL_MAX))
            # A button's view named otherwise is its lit cap (a yellow "block"): a part of it, its colour news.
            partial = partial or (a["cls"] in PUSHED and det.label != a["cls"])
            # A drawer shows less of itself along its slide as it shuts, never across it: a view much
            # narrower across is a part hidden (by the arm pushing it, by a handle), not a move.
            partial = partial or (cfg.drawer_narrow_views and prev is not None and a["articulated"]
                                  and self._narrower_across(node, det, prev))
            # A partial view (cut off, occluded) shifts its centre without any motion; it
            # counts as a move only if it is far and no longer lies on the object's points.
            # A button never moves: its other cameras' views stay (a sunk view of a lit button's base had
            # counted as a move, which dropped the wrist camera's view, and its flash, a look with nothing
            # before it, went unlogged: SequenceRecall 930065, randomized look).
            moved = shift > tol and (not partial or (shift > 3 * tol and ov < 0.5)) and a["cls"] not in PUSHED
            if moved:
                # Earlier views from the other cameras saw it where it no longer is; views taken this
                # frame already show the new place (two cameras watching a sliding drawer).
                track.views = {c: v for c, v in track.views.items() if v.t == t and c != cam}
                track.views[cam] = view
                changed = True
            elif prev is None or (
                not partial and (shift > 0.003 or abs(det.n_points - prev.n_points) > 0.2 * prev.n_points)
            ):
                if a["articulated"] and a["cls"] not in PUSHED and prev is not None and shift > 0.003:
                    # A part changes shape as it slides: other cameras' older views show it as it was.
                    track.views = {c: v for c, v in track.views.items() if v.t == t}
                track.views[cam] = view
                changed = True
            else:
                prev.t = t
                prev.rgb = det_rgb
            if changed:
                at_rest = not moved and float(np.abs(track.velocity).max()) <= MOVING
                track.refresh(cfg.assoc_voxel, cfg.max_object_points, at_rest=at_rest)
            # A view nested in the camera's last one (or holding it) with half or twice its points shows less
            # or more of the same still thing, not a move of it, for its colour's sake: a screen whose grey
            # face the detector took only the top rim of (20 points), then the whole face (137) when it lit
            # red, 4 cm lower, was never recoloured (RememberColor 930032, randomized look).
            nested = prev is not None and not a["articulated"] and _nested(det, prev)
            in_motion = ((moved or shift > tol) and not nested) or a["held"]
            if in_motion:
                light = 0  # a moving object's shading changes with its pose; only a still one "lights up"
        changes: dict = {}
        if not a["visible"]:
            if a["inside"]:
                track.left, track.left_t = a["inside"], t
            changes.update(visible=True, status="visible", unseen_since=-1, inside="")
        centre = track.center
        if not track.surface:
            # Velocity (m/step) from centre motion between observations; it decays when nothing moves.
            step = centre - old_center
            dt = max(t - track.t_obs, 1)
            track.velocity = 0.5 * track.velocity + 0.5 * (step / dt if np.abs(step).max() > 0.003 else 0.0)
            track.t_obs = t
        if np.linalg.norm(centre - np.asarray(a["position"])) > cfg.log_tol or (
            # Supports grow in pieces, at either end of their box.
            track.surface
            and max(
                np.abs(track.box_max - np.asarray(a["box_max"])).max(),
                np.abs(track.box_min - np.asarray(a["box_min"])).max(),
            )
            > cfg.log_tol
        ):
            changes.update(position=_vec(centre), box_min=_vec(track.box_min), box_max=_vec(track.box_max))
        # A colour change is what one camera sees change in a still object (a panel, a lit button). A camera's
        # first look at an object only shows it from another side (cameras disagree on colour), and an object
        # lifted or carried catches highlights (an orange block named yellow): neither changes the object. Nor
        # does a hue on the edge of its name's band (an orange block beside the hand read as yellow at 48
        # degrees, and the plan fetched it: StashAndFetch 930023, randomized look), nor a hue nudged as the
        # camera sees it much brighter (the same orange block under the wrist camera's light, clipped yellow).
        if (
            not in_motion
            and before_rgb is not None
            and det.colour != colour_name(before_rgb)
            and named_firmly(det_rgb)
            and not (light > 0 and hue_nudged(det_rgb, before_rgb))
            and colour_distance(det_rgb, before_rgb) > cfg.colour_tolerance
            and det.colour != a["colour"]
        ):
            changes.update(colour=det.colour, rgb=_vec(np.round(det_rgb, 4)))
        elif light:
            # Far brighter or dimmer in the same hue: a light went on or off, or the object went into
            # shade. The name is kept (a white block in a drawer is still the white block).
            changes.update(rgb=_vec(np.round(det_rgb, 4)))
        a["n_obs"] += 1
        a["last_seen"] = t
        if changes:
            # Motion: a big jump, or the same camera saw it shift (a new camera's view only refines).
            motion = moved or (prev is not None and shift > creep and "position" in changes)
            # A fuller view that brings a new colour logs the colour's change (a screen's flash is counted
            # by its "brightened" events), its place refined with it.
            # So does a lit thing's view that crept (its lit cap alone, 9 mm above the whole button's
            # centre): lit things never move by themselves, and a flash tagged "moved" went uncounted
            # (SequenceRecall 930053, randomized look).
            motion = motion and not ((nested or (a["cls"] in LIT and not moved)) and "rgb" in changes)
            tag = (
                "seen"
                if "visible" in changes
                else "moved"
                if motion
                else ("brightened" if light > 0 else "dimmed" if light < 0 else "recoloured")
                if "rgb" in changes
                else "refined"
            )
            if "visible" in changes:
                # Counters ride along with status changes only: a moving object's log stays lean.
                changes.update(last_seen=t, n_obs=a["n_obs"], confidence=_confidence(a["n_obs"], "visible"))
            self._set(node, t, tag, changes)
        else:
            self.log.append(t, "NOOP", node, "")
        if a["kind"] == "container" and a["cls"] in RIGID_CONTAINERS:
            self._carry_contents(node, centre - old_center, t)
            self._uncover(node, t)
        if changed:
            self._articulation(node, t)

    def _vote(self, node: str, a: dict, track: Track, label: str, t: int) -> None:
        """Count the detection's class; the node is renamed when its votes say so. A plain object and a
        rigid container (a pyramid and a box) share one kind of track, so either may become the other: a
        box first glimpsed as a pyramid would otherwise stay a pyramid however often it is seen as a box. A
        container holding something keeps what it is, and supports and moving parts keep theirs (their
        tracks were built for it)."""
        new = track.vote(label, a["cls"])
        if new is None or a["articulated"] or track.surface or new in ARTICULATED_CLASSES or a["cls"] in LIT:
            return  # nor is a screen, whose lit face a detector may name otherwise (a red cup)
        kind = kind_of(new)
        if a["kind"] == kind == "object":
            self._set(node, t, "renamed", {"cls": new})
        elif {a["kind"], kind} == {"object", "container"} and not self._holds_anything(node):
            self._set(node, t, "renamed", {"cls": new, "kind": kind})
        else:
            return
        self._renamed.add(node)

    def _holds_anything(self, node: str) -> bool:
        return any(b["inside"] == node for n, b in self._graph.nodes(data=True) if n != node and "inside" in b)

    def _carry_contents(self, container: str, delta: np.ndarray, t: int) -> None:
        """Hidden objects under a cup slide with it; lifting an open-bottomed cup leaves them behind."""
        delta = np.array([delta[0], delta[1], 0.0])
        if np.linalg.norm(delta) < 1e-6:
            return
        for node in self._physical():
            a = self._graph.nodes[node]
            if a["inside"] == container and not a["visible"]:
                self.tracks[node].shift(delta)
                pos = self.tracks[node].center
                if np.linalg.norm(pos - np.asarray(a["position"])) > self.config.log_tol:
                    self._set(
                        node,
                        t,
                        "carried",
                        {
                            "position": _vec(pos),
                            "box_min": _vec(self.tracks[node].box_min),
                            "box_max": _vec(self.tracks[node].box_max),
                        },
                    )


    def _uncover(self, container: str, t: int) -> None:
        """A cup lifted clear of what it covered no longer holds it: the object is left where it was,
        and the next visibility check says whether it is really there."""
        bottom = self.tracks[container].box_min[2]
        for node in self._physical():
            a = self._graph.nodes[node]
            if a["inside"] == container and not a["visible"] and bottom > self.tracks[node].box_max[2] + 0.005:
                self._set(node, t, "uncovered", {"inside": "", "status": "unseen"})


FACE_THIN = 0.005  # m: a view this thin along an axis on which the object is ...
SOLID = 0.02  # m: ... at least this thick shows one face of it
REACH_OUT = 0.02  # m: a view reaching this far out of the camera's last view of the object is no part of it
NEST_SLACK = 0.01  # m: a view within this of the same camera's other view's box lies inside it


def _one_face(det: ObjectObservation, track: Track) -> bool:
    """Whether a view shows only one face of a solid object: flat along an axis on which the remembered
    box is thick (the wrist camera beside a block it is about to grasp sees only its side). Its centre
    lies on that face, half the object away from the object's centre, with no motion at all (a block's
    node had followed its side face 2 cm off and down, and the grasp went there: StashAndFetch 920000,
    920005 on the learned segmenter)."""
    extent = det.box_max - det.box_min
    return bool(np.any((extent < FACE_THIN) & (track.box_max - track.box_min >= SOLID)))


def _reaches_out(det: ObjectObservation, prev) -> bool:
    """Whether ``det`` reaches REACH_OUT or more beyond the box of ``prev``, the same camera's last view
    (a block set down under the scene camera's eyes showed it half as many points, 3.4 cm below its last
    view in the air; held as a partial view, that view stayed, and the block's box spanned both, 8.5 cm
    tall: the grasp took its top 1 cm and dropped it. Rearrange 930003, learned, visual=randomized)."""
    return bool(np.any(det.box_min < prev.box_min - REACH_OUT) or np.any(det.box_max > prev.box_max + REACH_OUT))


def _longer(view, length: float) -> bool:
    """Whether ``view``'s box (a detection or a stored view) is ``length`` m or more along some axis."""
    return bool(np.max(view.box_max - view.box_min) >= length)


def _nested(det: ObjectObservation, prev) -> bool:
    """Whether one of ``det`` and ``prev`` (the same camera's last view) has at least twice the other's
    points and holds its box (within NEST_SLACK)."""
    small, big = (det, prev) if det.n_points < prev.n_points else (prev, det)
    return bool(big.n_points >= 2 * max(small.n_points, 1)
                and np.all(small.box_min >= big.box_min - NEST_SLACK) and np.all(small.box_max <= big.box_max + NEST_SLACK))


def _confidence(n_obs: int, status: str) -> float:
    """Grows with observations; halves while the object is missing from where it should be."""
    c = n_obs / (n_obs + 2.0)
    return round(c * (0.5 if status == "missing" else 1.0), 4)
