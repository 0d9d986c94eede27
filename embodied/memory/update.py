"""The measurement update: a new node from an unmatched view, a matched view folded into its node.

A matched view is one of: the same look as the camera's last (settled: only the counters move), a part
of the object (cut by the image's edge, occluded, one face: its centre shifts with no motion), a move
(its shift exceeds the tolerance the view's noise allows), or a refinement. Its colour is judged in looks.py.
"""

from __future__ import annotations

import numpy as np

from embodied.memory.affordances import affords
from embodied.memory.looks import judge_colour
from embodied.memory.noise import shift_tolerance
from embodied.memory.tracks import Track, View
from embodied.perception.geometry import shape_class
from embodied.perception.types import ObjectObservation


def vec(a) -> tuple[float, float, float]:
    return (float(a[0]), float(a[1]), float(a[2]))


def confidence(n_obs: int, status: str) -> float:
    """Grows with observations; halves while the object is missing from where it should be."""
    c = n_obs / (n_obs + 2.0)
    return round(c * (0.5 if status == "missing" else 1.0), 4)


class Updater:
    """Writes views into nodes. Needs the store, the memory's config and its ``events`` hooks."""

    def __init__(self, store, config, hooks):
        self.store, self.config, self.hooks = store, config, hooks
        self.optics: dict[str, tuple[np.ndarray, float]] = {}  # camera -> (position (3,) m, focal px), this frame
        self.changed: set[str] = set()  # nodes whose geometry changed this frame
        self.renamed: set[str] = set()  # nodes their class votes renamed this frame

    def begin(self, views) -> None:
        self.optics = {v.name: (v.cam_to_world[:3, 3], float(v.K[0, 0])) for v in views}
        self.changed, self.renamed = set(), set()

    def _pixel_size(self, camera: str, point: np.ndarray) -> float:
        """Metres one pixel of ``camera`` spans at ``point`` (0 if the camera is unknown)."""
        optics = self.optics.get(camera)
        return 0.0 if optics is None else float(np.linalg.norm(point - optics[0])) / max(optics[1], 1e-6)

    def _view(self, det: ObjectObservation, t: int) -> View:
        optics = self.optics.get(det.camera)
        eye_z = np.inf if optics is None else float(optics[0][2])
        distance = 0.0 if optics is None else float(np.linalg.norm(det.center - optics[0]))
        return View(det.points, det.center, det.box_min, det.box_max, det.n_points, t, eye_z,
                    np.asarray(det.rgb, dtype=np.float64), np.asarray(det.noise, dtype=np.float64), 0.0, distance)

    def add(self, det: ObjectObservation, t: int) -> str:
        cfg = self.config
        aff = affords(det.label)
        surface = bool(aff.kind == "surface" or max(det.extent[0], det.extent[1]) > cfg.track.furniture_width)
        kind = "surface" if surface and aff.kind == "object" else aff.kind
        track = Track(surface=surface, t_obs=t, rigid=not surface and not aff.jointed and cfg.on("height"),
                      votes={det.label: 1} if cfg.detector.class_votes else {})
        track.gone.reset(False, cfg.beliefs)
        track.views[det.camera] = self._view(det, t)
        if surface:
            track.grow_surface(det.points, det.box_min, det.box_max, cfg.track.max_points, cfg.association.voxel)
        track.refresh(cfg)
        store = self.store
        node = store.new_id(det.label)
        store.tracks[node] = track
        self.changed.add(node)
        attrs = {"kind": kind, "cls": det.label, "colour": det.colour,
                 "rgb": vec(np.round(det.rgb.astype(np.float64), 4)), "position": vec(track.center),
                 "box_min": vec(track.box_min), "box_max": vec(track.box_max), "first_seen": t, "last_seen": t,
                 "visible": True, "status": "visible", "unseen_since": -1, "state": "", "articulated": aff.jointed,
                 "inside": "", "held": False, "n_obs": 1, "confidence": confidence(1, "visible")}
        store.add_node(node, attrs, t, "seen")
        self.hooks.geometry_changed(node, t)
        return node

    def observe(self, node: str, det: ObjectObservation, t: int, overlap: float, settled: bool) -> None:
        cfg, store = self.config, self.store
        a, track = store._graph.nodes[node], store.tracks[node]
        aff = affords(a["cls"])
        if cfg.detector.class_votes:
            self._vote(node, a, track, det.label, t)
        cam = det.camera
        prev = track.views.get(cam)
        if settled and a["visible"] and prev is not None:
            self._settled(node, a, track, prev, det, t)
            return
        self.changed.add(node)
        view = self._view(det, t)
        old_center = track.center.copy()
        if a["kind"] == "container" and track.t_obs < t:  # its box as the last frame left it (the first camera)
            track.prev_box = (track.box_min.copy(), track.box_max.copy())
        moved = changed = in_motion = nested = False
        shift, creep, still = 0.0, cfg.track.creep, cfg.track.creep
        reference = None if prev is None else prev.rgb
        extent = 0 if prev is None else prev.n_points  # how much of the object the reference look showed
        if track.surface:
            track.views[cam] = view
            if track.grow_surface(det.points, det.box_min, det.box_max, cfg.track.max_points, cfg.association.voxel):
                track.refresh(cfg)
                changed = True
        else:
            pixel = cfg.track.move_tol_pixels * self._pixel_size(cam, det.center)
            noise = shift_tolerance(det.noise, len(det.points), cfg.sensor, 0.0)
            tol = max(cfg.track.move_tol, pixel, noise)
            # A shift under a pixel (far) or the view's noise is no motion; up close a few mm a step is a slow push.
            creep = pixel if pixel > cfg.track.move_tol else max(cfg.track.creep, noise)
            still = max(cfg.track.creep, noise)  # a step under this adds no velocity
            ref_centre, tol = (prev.center, tol) if prev is not None else (track.center, 2.5 * tol)
            shift = float(np.linalg.norm(det.center - ref_centre))
            partial = self.partial_view(node, det, prev, track, a, aff)
            slide = self.hooks.slide_of(node) if aff.prismatic else None
            if slide is not None and prev is not None:
                # A part moves along its slide only: that is its shift; a shift off it (across, up or down)
                # beyond the view's noise shows part of it (the arm pulling it hides its middle).
                delta = det.center - ref_centre
                along = float(np.dot(delta[:2], slide))
                off = float(np.linalg.norm(delta - np.array([slide[0], slide[1], 0.0]) * along))
                shift = abs(along)
                partial = partial or (cfg.on("off_slide_is_partial") and off > max(cfg.articulation.across_shift,
                                                                                   noise))
                if partial and cfg.on("front_face") and not (det.truncated or det.occluded):
                    # Nothing cuts or hides the view: its front (the face it slides out by) is where the part is.
                    hi, lo = det.box_max[:2] - prev.box_max[:2], det.box_min[:2] - prev.box_min[:2]
                    front = abs(float(np.dot(np.where(slide > 0, hi, lo), slide)))
                    shift, partial = (front, False) if front > tol else (shift, partial)
            moved = shift > tol and (not partial or (shift > 3 * tol and overlap < 0.5)) and not aff.anchored
            if moved:
                # The other cameras' older views saw it where it no longer is.
                track.views = {c: v for c, v in track.views.items() if v.t == t and c != cam}
                track.views[cam] = view
                changed = True
            elif prev is None or (not partial and (shift > creep or abs(det.n_points - prev.n_points)
                                                   > cfg.association.settle_size * prev.n_points)):
                if prev is not None and shift > creep:
                    # Past noise (a slow push): other cameras' older views no longer meeting this one show where it was.
                    track.views = {c: v for c, v in track.views.items() if v.t == t or not (
                        np.any(v.box_max < view.box_min - tol) or np.any(v.box_min > view.box_max + tol))}
                if prev is not None:  # the camera's colour reference and its evidence of a change stay
                    view.rgb, view.pending = prev.rgb, prev.pending
                track.views[cam] = view
                changed = True
            else:
                prev.t = t
            if changed:
                track.refresh(cfg, at_rest=not moved and float(np.abs(track.velocity).max()) <= cfg.track.moving)
            # A view nested in the camera's last (or holding it) with half or twice its points shows less
            # or more of the same still thing (a screen's rim, then its whole lit face): no move of it.
            nested = cfg.on("nested") and prev is not None and not aff.jointed and \
                _nested(det, prev, cfg.track.nest_slack)
            in_motion = not aff.anchored and (((moved or shift > tol) and not nested) or a["held"])
        changes: dict = {}
        if not a["visible"]:
            if a["inside"]:
                track.left, track.left_t = a["inside"], t
            changes.update(visible=True, status="visible", unseen_since=-1, inside="")
        track.gone.reset(False, cfg.beliefs)
        centre = track.center
        if not track.surface:
            step = centre - old_center
            dt = max(t - track.t_obs, 1)
            track.velocity = 0.5 * track.velocity + 0.5 * (step / dt if np.abs(step).max() > still else 0.0)
            track.t_obs = t
        # The node's centre moved, or a face (what a grasp or a touch aims at) or a support's edge.
        face = max(np.abs(track.box_max - np.asarray(a["box_max"])).max(),
                   np.abs(track.box_min - np.asarray(a["box_min"])).max())
        if np.linalg.norm(centre - np.asarray(a["position"])) > cfg.track.log_tol or face > (
                cfg.track.log_tol if track.surface else cfg.track.face_tol):
            changes.update(position=vec(centre), box_min=vec(track.box_min), box_max=vec(track.box_max))
        light = 0 if track.surface or in_motion else judge_colour(det, reference, track.views.get(cam), a, changes,
                                                                  cfg, extent)
        a["n_obs"] += 1
        a["last_seen"] = t
        if changes:
            # Motion: a big jump, or the same camera saw it shift; a flash seen in a fuller view (or on a
            # thing that never moves) is the light, not a move.
            motion = moved or (prev is not None and shift > creep and "position" in changes and not aff.anchored)
            motion = motion and not ((nested or (aff.emissive and not moved)) and "rgb" in changes)
            tag = ("seen" if "visible" in changes else "moved" if motion
                   else ("brightened" if light > 0 else "dimmed" if light < 0 else "recoloured") if "rgb" in changes
                   else "refined")
            if "visible" in changes:
                changes.update(last_seen=t, n_obs=a["n_obs"], confidence=confidence(a["n_obs"], "visible"))
            store.set(node, t, tag, changes)
        else:
            store.log.append(t, "NOOP", node, "")
        if aff.carries:
            self.hooks.container_moved(node, centre - old_center, t)
        if changed:
            self.hooks.geometry_changed(node, t)

    def _settled(self, node: str, a: dict, track: Track, prev: View, det: ObjectObservation, t: int) -> None:
        """Nothing changed since this camera's last look: the common case, kept cheap."""
        if a["kind"] == "container" and track.t_obs < t:
            track.prev_box = (track.box_min.copy(), track.box_max.copy())
        prev.t = t
        a["n_obs"] += 1
        a["last_seen"] = t
        track.gone.reset(False, self.config.beliefs)
        stirring = track.velocity.any()  # most settled things stand still: skip the reductions
        if stirring:
            track.velocity = 0.5 * track.velocity if np.abs(track.velocity).max() > 1e-4 else track.velocity * 0
        if track.rigid and (not stirring or float(np.abs(track.velocity).max()) <= self.config.track.moving):
            track.learn_height(prev)  # a view first taken in motion, now seen at rest
        track.t_obs = t
        if prev.rgb is not None:  # a settled look is the reference's colour: the reference follows it
            blend = self.config.track.reference_blend
            prev.rgb = (1 - blend) * prev.rgb + blend * np.asarray(det.rgb, dtype=np.float64)
        self.store.log.noops += 1
        if a.get("articulated") and not a["state"]:
            self.hooks.geometry_changed(node, t)  # a part not judged yet is judged as soon as it can be

    def partial_view(self, node: str, det: ObjectObservation, prev: View | None, track: Track, a: dict, aff) -> bool:
        """Whether a view shows only part of the object (its centre shifts with no motion): cut by the image's
        edge or a nearer surface, few of the camera's last view's points, one face; not a held or sliding thing's."""
        tc, on = self.config.track, self.config.on
        thick = track.box_max - track.box_min >= tc.solid
        few = prev is not None and det.n_points < tc.partial_points * prev.n_points
        face = on("one_face") and np.any((det.extent < tc.face_thin) & thick)
        partial = (det.truncated or det.occluded or few or face) and not (a["held"] or aff.prismatic)
        if prev is not None:
            out = np.any(det.box_min < prev.box_min - tc.reach_out) or np.any(det.box_max > prev.box_max + tc.reach_out)
            partial = partial and not (on("reaches_out") and out)
            if aff.shape_only and on("shape_reference"):
                partial = partial and shape_class(prev.box_max - prev.box_min) == a["cls"]
        partial = partial or (on("lit_face_partial") and aff.pressable and det.label != a["cls"])
        if aff.prismatic and prev is not None and self.config.detector.drawer_narrow_views:
            partial = partial or self.hooks.narrower_across(node, det, prev)  # part of it hidden
        return bool(partial)

    def _vote(self, node: str, a: dict, track: Track, label: str, t: int) -> None:
        """Count the view's class and rename the node when its votes say so, unless its affordances were fixed at
        its making (a jointed part, a support, an emissive thing) or a container holding something would stop
        being one."""
        new = track.vote(label, a["cls"])
        old_aff, new_aff = affords(a["cls"]), affords(label if new is None else new)
        if new is None or old_aff.jointed or track.surface or new_aff.jointed or old_aff.emissive:
            return
        if a["kind"] == new_aff.kind == "object":
            self.store.set(node, t, "renamed", {"cls": new})
        elif {a["kind"], new_aff.kind} == {"object", "container"} and not self.hooks.holds_anything(node):
            self.store.set(node, t, "renamed", {"cls": new, "kind": new_aff.kind})
        else:
            return
        self.renamed.add(node)


def _nested(det: ObjectObservation, prev: View, slack: float) -> bool:
    """Whether one of ``det`` and ``prev`` has at least twice the other's points and holds its box."""
    small, big = (det, prev) if det.n_points < prev.n_points else (prev, det)
    return bool(big.n_points >= 2 * max(small.n_points, 1) and np.all(small.box_min >= big.box_min - slack)
                and np.all(small.box_max <= big.box_max + slack))
