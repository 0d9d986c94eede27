"""The spawn rule: a view no node explains becomes a tentative node (``DetectorProfile.min_sightings`` keeps
it out of plans until confirmed), unless it is a piece of one that found a node, a view cut by the image's
edge where the profile waits for a whole view, or a sliver between the fingers or of a pressable's base
(the rules patch_piece, steady_edge, in_hand and beside_pressable).
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
        patch = affords(det.label).shape_only and float(det.box_max[2] - det.box_min[2]) < cfg.patch
        return patch and any(np.maximum(v.box_min - det.box_max, det.box_min - v.box_max).max() < cfg.piece_gap
                             and same_colour(det.colour, det.rgb, v.colour, v.rgb, cfg.colour_tolerance)
                             for v in matched)

    def _steady_at_edge(self, det, t: int) -> bool:
        """Whether the camera has seen this view at the image's edge, still (its centre moving under
        ``steady_reach`` a frame), ``steady_frames`` frames running, with no node of its class within
        ``steady_alone``: a moving camera's edge pieces jump, a screen at a still camera's edge stays."""
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
        tracks = (self.store.tracks[n] for n in self.store.nodes_of(cls=det.label))
        return runs[k][1] >= self.config.detector.steady_frames and all(
            np.linalg.norm(tr.center - centre) > cfg.steady_alone for tr in tracks)

    def _in_hand(self, det) -> bool:
        reach, tol = self.config.grasp.grasp_radius, self.config.association.colour_tolerance
        g, tracks = self.store._graph.nodes, self.store.tracks
        return any(g[n]["held"] and g[n]["cls"] == det.label
                   and same_colour(g[n]["colour"], np.asarray(g[n]["rgb"]), det.colour, det.rgb, tol)
                   and np.maximum(tracks[n].box_min - det.box_max, det.box_min - tracks[n].box_max).max() < reach
                   for n in self.store.physical())

    def _beside_pressable(self, det) -> bool:
        slack, centre = self.config.association.beside, (det.box_min + det.box_max)[:2] / 2
        return any(np.all(centre >= tr.box_min[:2] - slack) and np.all(centre <= tr.box_max[:2] + slack)
                   for tr in (self.store.tracks[n] for n in self.store.nodes_of(cls=det.label)))
