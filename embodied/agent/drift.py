"""The head camera's drift-corrected pose, as the agent and the memory rider both take it.

    fix = DriftFix()                              # one per episode, mobile robots only
    obs = fix(obs, t, moving)                     # extrinsics/head replaced by the corrected pose

``moving`` (H,W) bool marks the head camera's pixels of movable things (left
out of the scan); None when unknown. The env re-zeroes odometry on the dock
as the (first) recall phase starts, so the localiser re-anchors there, once.
"""

from __future__ import annotations

import numpy as np

from embodied.agent.skills.navigate import CAMERA as HEAD_CAMERA
from embodied.mapping.localise import DepthLocaliser, LocaliserConfig

RECALL = 2  # the recall phase's index in obs["goal"]["phase"]


class DriftFix:
    def __init__(self, config: LocaliserConfig | None = None, phase: int = 0):
        """``phase``: the phase of the step before the first one corrected (a fresh start mid-episode)."""
        self.localiser = DepthLocaliser(config or LocaliserConfig())
        self._phase = phase
        # The dock's re-zeroing comes once, as the first recall phase starts; a task whose goals each start
        # a recall phase of their own (Lifelong) does not re-zero the odometry at the later ones.
        self._anchored = phase == RECALL

    def state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON-plain: the last phase, whether the dock's re-anchoring happened, the localiser's document; its
        arrays); see ``DepthLocaliser.state``."""
        doc, arrays = self.localiser.state()
        return {"phase": self._phase, "anchored": self._anchored, "localiser": doc}, arrays

    @classmethod
    def from_state(cls, doc: dict, arrays: dict[str, np.ndarray], config: LocaliserConfig | None = None) -> DriftFix:
        fix = cls(config, phase=int(doc["phase"]))
        if not isinstance(doc["anchored"], bool):
            raise ValueError(f"anchored: expected a boolean, got {doc['anchored']!r}")
        fix._anchored = doc["anchored"]
        fix.localiser = DepthLocaliser.from_state(doc["localiser"], arrays, config)
        return fix

    def __call__(self, obs: dict, t: int, moving: np.ndarray | None) -> dict:
        phase = int(obs["goal"]["phase"])
        if phase == RECALL and self._phase != RECALL and not self._anchored:
            self.localiser.reanchor()
            self._anchored = True
        self._phase = phase
        key = f"extrinsics/{HEAD_CAMERA}"
        out = dict(obs)
        out[key] = self.localiser.correct(obs[f"depth/{HEAD_CAMERA}"], obs[f"intrinsics/{HEAD_CAMERA}"], obs[key],
                                          t, moving)
        return out


def moving_mask(segments: dict, kind_of) -> np.ndarray | None:
    """(H,W) bool: the head camera's pixels of objects and containers, from one step's masks
    (``Perceiver.segment``); None without masks."""
    if HEAD_CAMERA not in segments:
        return None
    seg, labels = segments[HEAD_CAMERA]
    return np.isin(seg, [i for i, c in labels.items() if kind_of(c) in ("object", "container")])
