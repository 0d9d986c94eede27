"""Re-identification at any distance (mixed into :class:`Association`): a detection nothing matched may be a
known object that moved unseen, found again by class and colour."""

from __future__ import annotations

import numpy as np

from embodied.memory.config import SIZE_CLASSES
from embodied.memory.gating import brightness_ratio, colour_distance_matrix, surface_patch
from embodied.perception import is_line
from embodied.perception.types import ObjectObservation

MOVING = 0.003  # m per step: an object whose smoothed velocity is above this is in motion
REID_RANK = {"missing": 0, "hidden": 0, "out_of_view": 1}  # re-identification order: known gone first
LINE = 0.005  # m: a view this thin along two axes is a line (an edge's sliver), no view of a solid thing


class Reidentification:
    """Needs the SpatialMemory fields (config, t) and the Tracking methods (_node_rows, _looked_at, _ahead)."""

    def _reidentify(self, dets: list[ObjectObservation], match: dict[int, str], taken_here: set) -> None:
        """Re-identification at any distance for the detections left unmatched: an unseen node of the same class and
        colour, those known to have left their place (missing, hidden) first, then the nearest to the detection; one
        merely out of view, lost at rest, only within ``reid_out_of_view_reach`` (one lost in motion, carried out of
        view, may be anywhere). Not for a detection on ground no camera had looked at before: an object found on new
        ground is a discovery (the tenth white mug of the house), not a known one that moved there unseen. Nor while a
        look-alike lost from view a moment ago is close by: that is the better explanation (the hand-off merge joins
        them once every camera is in). Never a part on a joint (a drawer, a button): it cannot leave its place, where
        association finds it (a 20-pixel sliver of a drawer's edge had taken a lost drawer's node 13 cm sideways:
        HiddenObject 920008). Nor a view that is a line, under 5 mm along two axes: no view of a solid thing (a pink
        table's edge, a 26 mm line at table height, had taken the pink block hidden under a cup 22 cm off, and the block
        was fetched there for the rest of the episode: Rearrange 930002, visual=randomized)."""
        cfg = self.config
        todo = [i for i, det in enumerate(dets) if i not in match and self._looked_at(det.center)
                and not is_line(det, LINE)]
        if not todo:
            return
        rows = self._node_rows()
        nodes, tracks = rows.nodes, rows.tracks
        if not nodes:
            return
        # One pass over the attribute dicts for what every candidate needs (a house holds hundreds).
        status, last, cls, colour, rgb = zip(*[(a["status"], a["last_seen"], a["cls"], a["colour"], a["rgb"])
                                               for a in rows.attrs])
        surface = np.array([tr.surface for tr in tracks], dtype=bool)
        jointed = np.array([bool(a.get("articulated")) for a in rows.attrs], dtype=bool)
        rank = np.array([REID_RANK.get(s, -1) for s in status])
        free = (rank >= 0) & ~surface & ~jointed
        for n in taken_here:
            r = rows.row.get(n)
            if r is not None:
                free[r] = False
        last = np.array(last)
        recent = (last < self.t) & (last >= self.t - cfg.handoff_steps) & ~surface
        if not (free | recent).any():
            return
        cls = np.array(cls, dtype=object)
        colour = np.array(colour, dtype=object)
        sized = np.isin(cls, list(SIZE_CLASSES))
        # Nor is a hidden thing found again in such a view (surface_patch).
        hidden = np.array(status, dtype=object) == "hidden"
        patch = surface_patch(dets)
        rgb = np.array(rgb, dtype=np.float64).reshape(-1, 3)
        centres = (rows.lo + rows.hi) / 2 + rows.velocity * self._ahead(tracks)[:, None]
        in_motion = np.abs(rows.velocity).max(axis=1) > MOVING  # lost in motion: no known place to stay near
        for i in todo:
            det = dets[i]
            ok = (cls == det.label) | (sized & ~hidden & (not cfg.strict_class and det.label in SIZE_CLASSES))
            if patch[i]:
                ok &= ~hidden
            d_rgb = np.asarray(det.rgb, dtype=np.float64)
            near_colour = colour_distance_matrix(d_rgb[None], rgb)[0] < cfg.colour_tolerance
            near_colour &= brightness_ratio(d_rgb, rgb) < cfg.reid_brightness_ratio
            ok &= (colour == det.colour) | near_colour
            handoff = np.nonzero(recent & ok)[0]
            if len(handoff) and np.linalg.norm(centres[handoff] - det.center, axis=1).min() < cfg.handoff_gate:
                continue
            cand = np.nonzero(free & ok)[0]
            if not len(cand):
                continue
            d = np.linalg.norm(centres[cand] - det.center, axis=1)
            if cfg.reid_out_of_view_reach is not None:
                near = (rank[cand] == 0) | (d <= cfg.reid_out_of_view_reach) | in_motion[cand]
                cand, d = cand[near], d[near]
                if not len(cand):
                    continue
            j = cand[np.lexsort((d, rank[cand]))[0]]
            match[i] = nodes[j]
            taken_here.add(nodes[j])
            free[j] = False
