"""The perception front end: one observation dict in, one :class:`Frame` out."""

from __future__ import annotations

import dataclasses

import numpy as np

from embodied.perception.flush import surface_patches
from embodied.perception.geometric import detect_geometric
from embodied.perception.geometry import camera_arrays, cameras_in, corrupt, make_view
from embodied.perception.masks import detect_masks
from embodied.perception.pieces import is_line, join_pieces
from embodied.perception.self_filter import hand_pixels
from embodied.perception.types import Frame, PerceptionConfig

WORKCELL_PROPRIO_DIM = 22  # qpos 7, qvel 7, TCP pos 3, TCP quat 4, gripper width 1
TCP_SLICE = slice(14, 17)


def tcp_of(proprio: np.ndarray | None) -> np.ndarray | None:
    """TCP position (3,) m from a workcell proprio vector; None for other robots."""
    if proprio is None:
        return None
    proprio = np.asarray(proprio)
    if proprio.shape != (WORKCELL_PROPRIO_DIM,):
        return None
    return proprio[TCP_SLICE].astype(np.float64)


class Perceiver:
    """Turns observations into object observations.

    Args:
        labels: instance id -> class label (``env.unwrapped.labels``); needed
            in "masks" mode, ignored in "geometric" mode.
        config: a :class:`PerceptionConfig` (or its fields as keyword args).
    """

    def __init__(self, labels: dict[int, str] | None = None, config: PerceptionConfig | None = None, **knobs):
        if config is not None and knobs:
            raise ValueError("pass either a PerceptionConfig or keyword knobs, not both")
        self.config = config or PerceptionConfig(**knobs)
        self.config.validate()
        if self.config.mode == "masks" and not labels:
            raise ValueError("masks mode needs the label map (instance id -> class), e.g. env.unwrapped.labels")
        self.labels = {int(k): str(v) for k, v in (labels or {}).items()}
        self.rng = np.random.default_rng(self.config.seed)
        self.segmenter = None
        if self.config.mode == "learned":
            from embodied.perception.learned.segmenter import LearnedSegmenter  # torch only when used

            self.segmenter = LearnedSegmenter(self.config.segmenter or None)
            touching = set(self.segmenter.touching)
            self._singular = lambda label: label not in touching

    def with_config(self, **changes) -> Perceiver:
        return Perceiver(self.labels, dataclasses.replace(self.config, **changes))

    def segment(self, obs: dict) -> dict[str, tuple[np.ndarray, dict[int, str]]]:
        """Per camera: instance ids (H,W) int32 (0 = background) and {id: class}; from the rendered
        masks ("masks") or the learned segmenter ("learned"); empty in geometric mode. Pass the result
        to ``__call__`` to perceive the same observation without segmenting it twice."""
        cfg = self.config
        out = {}
        for cam in cameras_in(obs, cfg.cameras):
            if cfg.mode == "masks":
                out[cam] = (np.asarray(obs[f"segmentation/{cam}"]), self.labels)
            elif cfg.mode == "learned":
                out[cam] = self.segmenter(np.asarray(obs[f"rgb/{cam}"]), np.asarray(obs[f"depth/{cam}"]),
                                          obs.get(f"intrinsics/{cam}"), obs.get(f"extrinsics/{cam}"), cam)
        return out

    def _shuffled(self, seg: np.ndarray, labels: dict[int, str], lut: np.ndarray) -> np.ndarray:
        return lut[np.clip(seg, 0, len(lut) - 1)]

    def __call__(self, obs: dict, t: int, segments: dict | None = None) -> Frame:
        """Perceive one observation at time ``t`` (control steps); ``segments``: ``self.segment(obs)``
        if already made."""
        cfg = self.config
        masks = cfg.mode == "masks"
        learned = cfg.mode == "learned"
        if learned and segments is None:
            segments = self.segment(obs)
        cameras = cameras_in(obs, cfg.cameras)
        proprio = obs.get("proprio")
        tcp = tcp_of(proprio)
        labels = self.labels
        lut = None
        if masks and cfg.shuffle_ids:
            # Fresh random ids every frame, shared by the cameras of the frame: the
            # same object gets different ids at different times, so only tracking
            # can give it an identity.
            top = max(labels) + 1 if labels else 1
            new_ids = self.rng.choice(np.arange(1, 1000 + top), size=top, replace=False)
            lut = np.zeros(top, dtype=np.int32)
            lut[1:] = new_ids[1:]
            labels = {int(lut[k]): v for k, v in labels.items() if 0 < k < top}
        objects, views, planes = [], [], {}
        for cam in cameras:
            noisy = cfg.depth_noise > 0 or cfg.dropout > 0
            arrays = camera_arrays(obs, cam, need_masks=masks, copy=noisy)
            if learned:
                arrays["segmentation"], cam_labels = segments[cam]
                if cfg.self_filter and tcp is not None:
                    # The hand is known from proprioception: its pixels are no object's, whatever the
                    # segmenter grouped them with.
                    hand = hand_pixels(arrays["depth"], arrays["intrinsics"], arrays["extrinsics"], proprio)
                    arrays["segmentation"] = np.where(hand, 0, arrays["segmentation"])
            if lut is not None:
                arrays["segmentation"] = self._shuffled(arrays["segmentation"], labels, lut)
            corrupt(arrays, cfg, self.rng)
            view = make_view(cam, arrays)
            views.append(view)
            if masks or learned:
                found = detect_masks(arrays, cam_labels if learned else labels, cam, t, cfg, view.depth_sigma)
                if learned:  # pieces an occluder cut apart are one object (the renderer's masks never cut)
                    found = join_pieces(found, cfg.piece_pixels, cfg.piece_gap, self._singular, cfg.singular_gap)
                    k = cfg.filter_noise_stds
                    patches = surface_patches(found, cfg.line_width, cfg.flush_tolerance, cfg.flush_kept,
                                              noise_stds=k)
                    found = [o for o in found if not is_line(o, cfg.line_width, k) and o.key not in patches]
                objects.extend(found)
            else:
                seen = [h[0] for h in planes.values() if h]
                found, heights = detect_geometric(arrays, cam, t, cfg, tcp, min(seen) if seen else None,
                                                  view.depth_sigma)
                objects.extend(found)
                planes[cam] = heights
        extras = {"support_planes": planes} if planes else {}
        return Frame(int(t), objects, views, None if proprio is None else np.asarray(proprio), extras)
