"""The spawn rule: whether a view that matched no node makes a new one.

A view no node explains becomes a tentative node (``DetectorProfile.min_sightings`` keeps it out of plans
until confirmed), unless something remembered explains it after all:

  piece         a patch (a size class with no height) near a view of its colour that found a node
  edge          cut by the image's edge, where the profile waits for a whole view (a learned detector's
                border pieces); an emissive thing seen there still, frame after frame, is let in
  in hand       of the held object's class and colour, within ``grasp_radius`` of it: a sliver between the
                fingers
  beside        of a pressable class, centred within ``beside`` of a remembered one's box: a sliver of its base
"""

from __future__ import annotations

import numpy as np

from embodied.memory.affordances import affords
from embodied.perception.colour import same_colour


class Spawner:
    """Needs the store and the config."""

    def __init__(self, store, config):
        self.store, self.config = store, config
        # (camera, class) -> [(centre (3,) m, frames running, last step)]: edge views that made no node yet
        self.edge_views: dict[tuple[str, str], list[tuple[np.ndarray, int, int]]] = {}

    def allows(self, det, matched: list, t: int) -> bool:
        """Whether the unmatched view ``det`` makes a node; ``matched``: its camera's views that found one."""
        aff, on = affords(det.label), self.config.on
        if on("patch_piece") and self._piece(det, matched):
            return False
        if det.truncated and not self.config.detector.new_from_truncated and aff.kind != "surface" \
                and not (aff.emissive and on("steady_edge") and self._steady_at_edge(det, t)):
            return False
        return not ((on("in_hand") and self._in_hand(det))
                    or (aff.pressable and on("beside_pressable") and self._beside_pressable(det)))

    def _piece(self, det, matched: list) -> bool:
        cfg = self.config.association
        if not (affords(det.label).shape_only and float(det.box_max[2] - det.box_min[2]) < cfg.patch):
            return False
        return any(np.maximum(v.box_min - det.box_max, det.box_min - v.box_max).max() < cfg.piece_gap
                   and same_colour(det.colour, det.rgb, v.colour, v.rgb, cfg.colour_tolerance) for v in matched)

    def _steady_at_edge(self, det, t: int) -> bool:
        """Whether the camera has seen this view at the image's edge, of its class, still (its centre moving
        under ``steady_reach`` a frame) for the profile's ``steady_frames`` frames running, with no node of
        its class within ``steady_alone``. A moving camera's edge pieces jump from frame to frame; a screen
        at the scene camera's edge is seen there alike every frame."""
        cfg = self.config.lifecycle
        runs = [r for r in self.edge_views.get((det.camera, det.label), []) if r[2] >= t - 1]
        centre = np.asarray(det.center, dtype=np.float64)
        for k, (c, n, last) in enumerate(runs):
            if last == t - 1 and np.linalg.norm(c - centre) < cfg.steady_reach:
                runs[k] = (c, n + 1, t)
                break
        else:
            runs.append((centre, 1, t))
            k = len(runs) - 1
        self.edge_views[det.camera, det.label] = runs
        if runs[k][1] < self.config.detector.steady_frames:
            return False
        return all(np.linalg.norm(self.store.tracks[n].center - centre) > cfg.steady_alone
                   for n in self.store.nodes_of(cls=det.label))

    def _in_hand(self, det) -> bool:
        reach, tol = self.config.grasp.grasp_radius, self.config.association.colour_tolerance
        for node in self.store.physical():
            a = self.store._graph.nodes[node]
            if a["held"] and a["cls"] == det.label and same_colour(a["colour"], np.asarray(a["rgb"]), det.colour,
                                                                 det.rgb, tol):
                track = self.store.tracks[node]
                if np.maximum(track.box_min - det.box_max, det.box_min - track.box_max).max() < reach:
                    return True
        return False

    def _beside_pressable(self, det) -> bool:
        slack = self.config.association.beside
        centre = (det.box_min + det.box_max)[:2] / 2
        for node in self.store.nodes_of(cls=det.label):
            tr = self.store.tracks[node]
            if np.all(centre >= tr.box_min[:2] - slack) and np.all(centre <= tr.box_max[:2] + slack):
                return True
        return False
