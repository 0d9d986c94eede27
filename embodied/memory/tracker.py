"""Data association and track updates (mixed into :class:`SpatialMemory`).

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
           and colour, nearest first, at any distance
Anything left over is a new node. Cameras are processed one after another,
each updating the tracks, so the second camera sees the first's result.
Supports and furniture (seen in pieces) match by box overlap instead.
"""

from __future__ import annotations

import functools

import numpy as np

from embodied.memory.config import ARTICULATED_CLASSES, RIGID_CONTAINERS, SIZE_CLASSES, kind_of
from embodied.memory.gating import brightness_step, colour_distance_matrix, footprint_overlap, looks_as_before
from embodied.memory.spatial import overlap
from embodied.memory.tracks import Track, View
from embodied.perception.colour import colour_distance, colour_name
from embodied.perception.types import ObjectObservation

PHYSICAL = ("object", "container", "articulated", "surface")
SETTLED = 2.0  # overlap value that flags "looks exactly as this camera saw it last time"
UNSEEN_REID = ("missing", "out_of_view", "hidden")
REID_RANK = {"missing": 0, "hidden": 0, "out_of_view": 1}  # re-identification order: known gone first
LOOK_CELL = 0.25  # m, cells of the ground the cameras have looked at (see Tracking._look)
# A camera's view is read again for those cells once it moved this far or turned this much (a tenth of a
# cell at a few metres) since it was last read: a wrist camera creeping a few mm per step is read rarely.
LOOK_MOVE = 0.02  # m
LOOK_TURN_COS = float(np.cos(np.radians(0.5)))
NEAR = 0.05  # m, box gap under which a detection touches a node (point overlap and settled looks need it)
# Nodes from which _table first drops those no detection could pair with: below it the pass costs more
# than it saves (a workcell holds ~15 nodes; a house hundreds).
PREFILTER_FROM = 48


@functools.lru_cache(maxsize=16)
def _sparse_rays(shape: tuple[int, int], steps: tuple[int, int], K_bytes: bytes) -> np.ndarray:
    """(N,3) float64 camera-frame rays (x/z, y/z, 1) of every ``steps``-th pixel (rows, columns) of an
    image of ``shape``, row-major, for the intrinsics ``K`` (3x3 float64, as bytes so the cache can key
    on it). Depth times a ray is the pixel's point in the camera frame."""
    K = np.frombuffer(K_bytes, dtype=np.float64).reshape(3, 3)
    vs, us = np.mgrid[0 : shape[0] : steps[0], 0 : shape[1] : steps[1]]
    rays = np.stack([(us - K[0, 2]) / K[0, 0], (vs - K[1, 2]) / K[1, 1], np.ones(us.shape)], axis=-1)
    return rays.reshape(-1, 3)


def _barely_moved(before: np.ndarray, now: np.ndarray) -> bool:
    """Whether a camera pose (4x4 camera-to-world) moved under ``LOOK_MOVE`` and turned under ``LOOK_TURN``."""
    if np.abs(now[:3, 3] - before[:3, 3]).max() >= LOOK_MOVE:
        return False
    # cos of the rotation angle between the two orientations: (trace(R1^T R2) - 1) / 2
    return (np.einsum("ij,ij->", before[:3, :3], now[:3, :3]) - 1.0) / 2.0 > LOOK_TURN_COS


def _vec(a) -> tuple[float, float, float]:
    return (float(a[0]), float(a[1]), float(a[2]))


class Tracking:
    """Association, track updates, permanence and containment. Needs the SpatialMemory fields."""

    def _physical(self) -> list[str]:
        """Physical node ids in graph order (kept between frames; do not modify the list)."""
        return self._kind_index()[1]

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

    def _table(self, camera: str, dets: list[ObjectObservation] = ()) -> tuple:
        """Per-node arrays for vectorised gating: ids, boxes, classes, colour names, RGB, surface flags,
        and the centre and size of each node's last view from ``camera`` (inf / 0 if none).

        With ``dets``, only the nodes one of them could pair with: boxes closer than 5 cm (touching,
        which a node's last view, inside its box, also needs to settle a match) or a predicted centre
        within the motion gate. The rest could never pair, so a frame costs the nodes near what the
        camera sees, not every node remembered (re-identification at any distance looks at all)."""
        nodes = self._physical()
        tracks = [self.tracks[n] for n in nodes]
        lo = np.array([tr.box_min for tr in tracks]).reshape(-1, 3)
        hi = np.array([tr.box_max for tr in tracks]).reshape(-1, 3)
        # Constant-velocity prediction (a few steps at most): fast movers stay inside the gate.
        ahead = np.array([min(self.t - tr.t_obs, 5) for tr in tracks], dtype=np.float64)
        velocity = np.array([tr.velocity for tr in tracks], dtype=np.float64).reshape(-1, 3)
        if len(dets) and len(nodes) > PREFILTER_FROM:
            d_lo = np.array([d.box_min for d in dets])
            d_hi = np.array([d.box_max for d in dets])
            gap = np.maximum(lo[None] - d_hi[:, None], d_lo[:, None] - hi[None]).max(axis=2)
            centres = (lo + hi) / 2 + velocity * ahead[:, None]
            gate = self.config.move_gate + 1.5 * np.sqrt((velocity**2).sum(axis=1))
            dist = np.sqrt(((centres[None] - ((d_lo + d_hi) / 2)[:, None]) ** 2).sum(axis=2))
            keep = np.nonzero(((gap < NEAR) | (dist < gate[None])).any(axis=0))[0]
            if len(keep) < len(nodes):
                nodes, tracks = [nodes[k] for k in keep], [tracks[k] for k in keep]
                lo, hi, ahead, velocity = lo[keep], hi[keep], ahead[keep], velocity[keep]
        attrs = [self._graph.nodes[n] for n in nodes]
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
            ok = np.ones_like(gap, dtype=bool)
            d_cls = np.array([d.label for d in dets], dtype=object)[:, None]
            if cfg.strict_class:
                ok = d_cls == cls[None]
            else:
                # A size class ("flat": a partial view) may continue any track; a recognised shape
                # (a cup, a drawer) only its own kind's, so a cup never continues a scrap's track.
                ok = (d_cls == cls[None]) | np.isin(d_cls, list(SIZE_CLASSES))
            d_rgb = np.array([d.rgb for d in dets], dtype=np.float64)
            # Cameras see one surface in different colours (a highlight turns orange yellowish), so a
            # detection is judged against this camera's own last look where there is one.
            as_before = looks_as_before(d_rgb, seen_rgb, cfg.colour_tolerance, cfg.brightness_ratio)
            col_ok = (np.array([d.colour for d in dets], dtype=object)[:, None] == colour[None]) | (
                colour_distance_matrix(d_rgb, rgb) < cfg.colour_tolerance
            ) | as_before
            touching = gap < NEAR
            # Static things look the same to a camera frame after frame: the same centre (4 mm)
            # and size (20%) as the node's last view from this camera settles it, no overlap needed.
            n_pts = np.array([d.n_points for d in dets], dtype=np.float64)
            same = ok & (np.sqrt(((last[None] - d_c[:, None]) ** 2).sum(axis=2)) < 0.004)
            same &= np.abs(n_pts[:, None] - size[None]) <= 0.2 * size[None]
            same_name = np.array([d.colour for d in dets], dtype=object)[:, None] == colour[None]
            same &= np.where(~np.isnan(seen_rgb[:, 0])[None], as_before, same_name)
            settled = same.any(axis=1)
            for i, j in zip(*np.nonzero(same)):
                pairs.append((3.0, i, nodes[j], SETTLED))
            for i, j in zip(*np.nonzero(ok & (touching | (dist < gate[None])) & ~settled[:, None])):
                det, node = dets[i], nodes[j]
                ov = 0.0
                if touching[i, j]:
                    if surface[j] or big[i]:
                        ov = footprint_overlap(det, lo[j], hi[j])
                    else:
                        ov = overlap(det.points, self.tracks[node].keys, cfg.assoc_voxel)
                if ov >= cfg.min_overlap and col_ok[i, j]:
                    # Ties (a sliver of a neighbour overlaps as fully as the object itself) go to the nearer centre.
                    pairs.append((1.0 + ov - 0.1 * min(dist[i, j] / cfg.move_gate, 1.0), i, node, ov))
                elif ov >= 0.5:
                    # Same place, other colour: a cue panel or a lit button, or a shaded view
                    # of a drawer's inside. Ranked below every colour-consistent overlap.
                    pairs.append((ov, i, node, ov))
                elif col_ok[i, j] and dist[i, j] < gate[j] and not surface[j]:
                    pairs.append((1.0 - dist[i, j] / gate[j], i, node, ov))
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

    def _reidentify(self, dets: list[ObjectObservation], match: dict[int, str], taken_here: set) -> None:
        """Re-identification at any distance for the detections left unmatched: an unseen node of the
        same class and colour, those known to have left their place (missing, hidden) first, then the
        nearest to the detection. Not for a detection on ground no camera had looked at before: an
        object found on new ground is a discovery (the tenth white mug of the house), not a known one
        that moved there unseen. Nor while a look-alike lost from view a moment ago is close by: that is
        the better explanation (the hand-off merge joins them once every camera is in)."""
        cfg = self.config
        todo = [i for i, det in enumerate(dets) if i not in match and self._looked_at(det.center)]
        nodes = self._physical()
        if not todo or not nodes:
            return
        tracks = [self.tracks[n] for n in nodes]
        attrs = [self._graph.nodes[n] for n in nodes]
        surface = np.array([tr.surface for tr in tracks], dtype=bool)
        rank = np.array([REID_RANK.get(a["status"], -1) for a in attrs])
        free = (rank >= 0) & ~surface & np.array([n not in taken_here for n in nodes])
        last = np.array([a["last_seen"] for a in attrs])
        recent = (last < self.t) & (last >= self.t - cfg.handoff_steps) & ~surface
        if not (free | recent).any():
            return
        cls = np.array([a["cls"] for a in attrs], dtype=object)
        colour = np.array([a["colour"] for a in attrs], dtype=object)
        rgb = np.array([a["rgb"] for a in attrs], dtype=np.float64).reshape(-1, 3)
        ahead = np.array([min(self.t - tr.t_obs, 5) for tr in tracks], dtype=np.float64)
        velocity = np.array([tr.velocity for tr in tracks], dtype=np.float64).reshape(-1, 3)
        centres = np.array([tr.center for tr in tracks]).reshape(-1, 3) + velocity * ahead[:, None]
        for i in todo:
            det = dets[i]
            ok = (cls == det.label) | (not cfg.strict_class and det.label in SIZE_CLASSES)
            ok &= (colour == det.colour) | (
                colour_distance_matrix(np.asarray(det.rgb, dtype=np.float64)[None], rgb)[0] < cfg.colour_tolerance
            )
            handoff = np.nonzero(recent & ok)[0]
            if len(handoff) and np.linalg.norm(centres[handoff] - det.center, axis=1).min() < cfg.handoff_gate:
                continue
            cand = np.nonzero(free & ok)[0]
            if not len(cand):
                continue
            d = np.linalg.norm(centres[cand] - det.center, axis=1)
            j = cand[np.lexsort((d, rank[cand]))[0]]
            match[i] = nodes[j]
            taken_here.add(nodes[j])
            free[j] = False

    # --- what the cameras have looked at ---------------------------------------------
    def _look(self, views) -> None:
        """Note the ground cells (``LOOK_CELL`` m, xy) this frame's cameras see: a sparse grid of depth
        pixels back-projected. A camera that moved less than ``LOOK_MOVE`` m and ``LOOK_TURN`` since the
        last time it was read adds nothing new (its view shifted by a fraction of a cell)."""
        if self._looked is None:
            return
        for view in views:
            pose = np.asarray(view.cam_to_world, dtype=np.float64)
            before = self._look_pose.get(view.name)
            if before is not None and _barely_moved(before, pose):
                continue
            self._look_pose[view.name] = pose.copy()
            h, w = view.depth.shape
            steps = (max(1, h // 24), max(1, w // 24))
            z = view.depth[:: steps[0], :: steps[1]].reshape(-1)
            hit = z > 0
            if not hit.any():
                continue
            rays = _sparse_rays((h, w), steps, np.asarray(view.K, dtype=np.float64).tobytes())[hit]
            cam = rays * z[hit, None].astype(np.float64)
            world = cam @ view.cam_to_world[:3, :3].T + view.cam_to_world[:3, 3]
            cells = np.floor(world[:, :2] / LOOK_CELL).astype(np.int64) + (1 << 20)
            self._looked.update(((cells[:, 0] << 21) | cells[:, 1]).tolist())

    def _looked_at(self, point) -> bool:
        """Whether a camera looked at the ground within a cell of ``point`` before this frame (always
        true for a memory that keeps no such record: one loaded from a file written before it did)."""
        if self._looked is None:
            return True
        ix, iy = (int(np.floor(float(c) / LOOK_CELL)) + (1 << 20) for c in point[:2])
        return any(((ix + dx) << 21) | (iy + dy) in self._looked for dx in (-1, 0, 1) for dy in (-1, 0, 1))

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
        surface = bool(kind == "surface" or max(det.extent[0], det.extent[1]) > 0.5)
        if surface and kind == "object":
            kind = "surface"
        track = Track(surface=surface, t_obs=t, rigid=not surface and det.label not in ARTICULATED_CLASSES)
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
        cam = det.camera
        if ov == SETTLED and a["visible"]:
            # Nothing changed since this camera's last look: the common case, kept cheap.
            track.views[cam].t = t
            a["n_obs"] += 1
            a["last_seen"] = t
            if track.velocity.any():
                track.velocity = 0.5 * track.velocity if np.abs(track.velocity).max() > 1e-4 else track.velocity * 0
            track.t_obs = t
            self.log.noops += 1
            return
        self.changed.add(node)
        det_rgb = np.asarray(det.rgb, dtype=np.float64)
        view = View(det.points, det.center, det.box_min, det.box_max, det.n_points, t, self._eye_z(det.camera), det_rgb)
        old_center = track.center.copy()
        if a["kind"] == "container":
            track.prev_box = (track.box_min.copy(), track.box_max.copy())
        moved = False
        changed = False
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
            # Held objects and moving parts (a drawer sliding shut shows less of itself) change
            # their views for real; for the rest a much smaller view means occlusion.
            partial = (det.truncated or (prev is not None and det.n_points < 0.6 * prev.n_points)) and not (
                a["held"] or a["articulated"]
            )
            # A partial view (cut off, occluded) shifts its centre without any motion; it
            # counts as a move only if it is far and no longer lies on the object's points.
            moved = shift > tol and (not partial or (shift > 3 * tol and ov < 0.5))
            if moved:
                # Earlier views from the other cameras saw it where it no longer is; views taken this
                # frame already show the new place (two cameras watching a sliding drawer).
                track.views = {c: v for c, v in track.views.items() if v.t == t and c != cam}
                track.views[cam] = view
                changed = True
            elif prev is None or (
                not partial and (shift > 0.003 or abs(det.n_points - prev.n_points) > 0.2 * prev.n_points)
            ):
                if a["articulated"] and prev is not None and shift > 0.003:
                    # A part changes shape as it slides: other cameras' older views show it as it was.
                    track.views = {c: v for c, v in track.views.items() if v.t == t}
                track.views[cam] = view
                changed = True
            else:
                prev.t = t
                prev.rgb = det_rgb
            if changed:
                track.refresh(cfg.assoc_voxel, cfg.max_object_points)
            if moved or shift > tol or a["held"]:
                light = 0  # a moving object's shading changes with its pose; only a still one "lights up"
        changes: dict = {}
        if not a["visible"]:
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
        # A colour change is what one camera sees change. A camera's first look at an object only shows
        # it from another side (cameras disagree on colour), which is no change of the object.
        if (
            before_rgb is not None
            and det.colour != colour_name(before_rgb)
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


def _confidence(n_obs: int, status: str) -> float:
    """Grows with observations; halves while the object is missing from where it should be."""
    c = n_obs / (n_obs + 2.0)
    return round(c * (0.5 if status == "missing" else 1.0), 4)
