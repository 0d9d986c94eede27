"""Image files of a recording: camera RGB as JPEG, depth as 16-bit PNG in millimetres; the mode of shared files."""

from __future__ import annotations

import io
import os

import numpy as np


def shared_file_mode() -> int:
    """0o666 less the process umask: what a plain ``open`` would give (``mkstemp`` makes 0600, and a
    recording is meant to be shared)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def encode_depth_png(depth: np.ndarray) -> bytes:
    """Depth (H, W) in metres as a 16-bit greyscale PNG in millimetres (0 where unknown or out of range)."""
    from PIL import Image

    z = np.asarray(depth, dtype=np.float64)
    mm = np.where(np.isfinite(z) & (z > 0), np.round(z * 1000.0), 0.0)
    mm = np.where(mm > np.iinfo(np.uint16).max, 0.0, mm).astype(np.uint16)
    buf = io.BytesIO()
    Image.fromarray(mm).save(buf, format="PNG")
    return buf.getvalue()


def decode_depth_png(path: str | os.PathLike) -> np.ndarray:
    """A depth keyframe back as (H, W) float32 metres (0 where the recording had no depth)."""
    from PIL import Image

    with Image.open(path) as image:
        return np.asarray(image, dtype=np.uint16).astype(np.float32) / 1000.0


def encode_jpeg(rgb: np.ndarray, quality: int = 85) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(rgb, dtype=np.uint8)).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()
