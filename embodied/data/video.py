"""mp4 with PyAV: encode an episode, append episodes to a file without re-encoding, decode by timestamp.

Every episode is encoded on its own (it starts on a key frame) with a time
base of ``1/fps``, so frame ``k`` of a file has pts ``k`` and timestamp
``k / fps`` exactly. Appending remuxes the packets of the file and of the new
episodes into a new file (no decoding); it needs identical codec parameters,
which the same encoder settings give (``can_append`` checks).
"""

from __future__ import annotations

import io
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from embodied.data.layout import PIX_FMT, DatasetError

CODEC = "libx264"
CRF = 23
GOP = 10  # frames between key frames: seeking by timestamp decodes at most this many extra frames


class EpisodeEncoder:
    """Encode RGB frames (size, width or size, 3) uint8 into an in-memory mp4."""

    def __init__(self, size: int, fps: int, crf: int = CRF, gop: int = GOP, width: int | None = None):
        self.buf = io.BytesIO()
        self.container = av.open(self.buf, mode="w", format="mp4")
        self.stream = self.container.add_stream(CODEC, rate=fps)
        self.stream.height, self.stream.width = size, width or size
        self.stream.pix_fmt = PIX_FMT
        self.time_base = Fraction(1, fps)
        self.stream.options = {"crf": str(crf), "g": str(gop), "preset": "veryfast", "bf": "0", "threads": "1"}
        self.frames = 0

    def add(self, rgb: np.ndarray) -> None:
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb, dtype=np.uint8), format="rgb24")
        frame.pts = self.frames
        frame.time_base = self.time_base
        for packet in self.stream.encode(frame):
            self.container.mux(packet)
        self.frames += 1

    def close(self) -> bytes:
        for packet in self.stream.encode():
            self.container.mux(packet)
        self.container.close()
        return self.buf.getvalue()


def _open(source, name: str):
    try:
        return av.open(source)
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise DatasetError(name, f"not a readable mp4 (truncated or corrupt): {exc}") from None


def probe(path: Path) -> tuple[int, bytes]:
    """(frame count, codec extradata) of an mp4 on disk, counting packets (no decoding)."""
    container = _open(str(path), str(path))
    try:
        stream = container.streams.video[0]
        extradata = bytes(stream.codec_context.extradata or b"")
        n = sum(1 for p in container.demux(stream) if p.size)
    except av.FFmpegError as exc:
        raise DatasetError(path, f"mp4 cannot be read (truncated or corrupt): {exc}") from None
    finally:
        container.close()
    return n, extradata


def extradata_of(mp4: bytes) -> bytes:
    with av.open(io.BytesIO(mp4)) as c:
        return bytes(c.streams.video[0].codec_context.extradata or b"")


def concat(sources: list[tuple[str, object]], out: Path, fps: int) -> int:
    """Remux the video packets of ``sources`` ((name, path or mp4 bytes)) back to back into ``out``.

    Returns the number of frames written. Timestamps continue across sources:
    a source's frame ``k`` lands at ``offset + k`` in units of ``1/fps``.
    """
    tb = Fraction(1, fps)
    output = av.open(str(out), mode="w", format="mp4")
    out_stream = None
    offset = 0
    try:
        for name, src in sources:
            container = _open(io.BytesIO(src) if isinstance(src, (bytes, bytearray)) else str(src), name)
            try:
                stream = container.streams.video[0]
                if out_stream is None:
                    out_stream = output.add_stream_from_template(stream)
                    out_stream.time_base = tb
                count = 0
                for packet in container.demux(stream):
                    if packet.dts is None and not packet.size:
                        continue
                    k = round(float(packet.pts * stream.time_base) * fps)
                    kd = round(float(packet.dts * stream.time_base) * fps) if packet.dts is not None else k
                    packet.stream = out_stream
                    packet.time_base = tb
                    packet.pts, packet.dts, packet.duration = offset + k, offset + kd, 1
                    output.mux(packet)
                    count += 1
            except av.FFmpegError as exc:
                raise DatasetError(name, f"mp4 cannot be read (truncated or corrupt): {exc}") from None
            finally:
                container.close()
            offset += count
    finally:
        output.close()
    return offset


def decode_range(path: Path, start: int, stop: int, fps: int) -> np.ndarray:
    """Frames ``start..stop-1`` (file frame numbers, i.e. timestamps ``k / fps``) as (N, H, W, 3) uint8."""
    container = _open(str(path), str(path))
    frames: dict[int, np.ndarray] = {}
    try:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        if start > 0:
            container.seek(int(start / fps / stream.time_base), stream=stream, backward=True, any_frame=False)
        for frame in container.decode(stream):
            k = round(float(frame.pts * stream.time_base) * fps)
            if k >= stop:
                break
            if k >= start:
                frames[k] = frame.to_ndarray(format="rgb24")
    except av.FFmpegError as exc:
        raise DatasetError(path, f"mp4 cannot be decoded (truncated or corrupt): {exc}") from None
    finally:
        container.close()
    missing = [k for k in range(start, stop) if k not in frames]
    if missing:
        raise DatasetError(path, f"frames {missing[0]}..{missing[-1]} (timestamps from {missing[0] / fps:.3f} s) missing")
    return np.stack([frames[k] for k in range(start, stop)])
