"""Plan captions on videos: the agent's plan, with the current skill marked, under every frame.

``PlanCaption`` sits between ``run_episodes`` and a video writer (or another
wrapper) like ``OverlayVideo``: ``add(frame)`` appends a text panel with the
policy's ``plan_text()`` below the frame. Policies without a plan pass
through unchanged.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFont

LINE_HEIGHT = 12
MAX_LINES = 9


class PlanCaption:
    """``label`` (e.g. which skills a learned head runs) leads the caption's first line."""

    def __init__(self, video, label: str = ""):
        self.video = video
        self.policy = None
        self.label = label

    def set_policy(self, policy) -> None:
        self.policy = policy

    def add(self, frame: np.ndarray) -> None:
        text = self.policy.plan_text() if hasattr(self.policy, "plan_text") else ""
        if text and self.label:
            text = f"[{self.label}] {text}"
        self.video.add(caption(frame, text) if text else frame)

    def close(self) -> None:
        self.video.close()


def caption(frame: np.ndarray, text: str) -> np.ndarray:
    """``frame`` (H, W, 3) uint8 with ``text`` in a black panel below it (lines past MAX_LINES cut)."""
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        current = next((k for k, line in enumerate(lines) if line.startswith(">")), 1)
        start = max(1, min(current - 2, len(lines) - MAX_LINES + 1))
        lines = lines[:1] + lines[start : start + MAX_LINES - 1]
    h = (MAX_LINES + 1) * LINE_HEIGHT
    h += (-(frame.shape[0] + h)) % 8  # keep the frame height a multiple of 8 for the encoder
    panel = Image.new("RGB", (frame.shape[1], h), (0, 0, 0))
    draw = ImageDraw.Draw(panel)
    font = ImageFont.load_default()
    for k, line in enumerate(lines):
        colour = (255, 220, 80) if line.startswith(">") else (200, 200, 200)
        draw.text((4, 4 + k * LINE_HEIGHT), line[:160], fill=colour, font=font)
    return np.concatenate([frame, np.asarray(panel)], axis=0)
