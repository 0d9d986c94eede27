"""mp4 with PyAV: encode an episode, append episodes to a file without re-encoding, decode by timestamp.

Every episode is encoded on its own (it starts on a key frame) as a
fragmented mp4 with a time base of ``1/fps``, so frame ``k`` of a file has
timestamp ``k / fps`` exactly. Appending episodes to a file is a byte copy of
the file plus the episodes' fragments, their decode times (``tfdt``) moved
past the frames before them: no decoding, no remuxing, no per-packet work.
All episodes of a file share one init segment (same encoder settings give
the same one; :func:`append` checks).
"""

from __future__ import annotations

import io
import shutil
import struct
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from embodied.data.layout import PIX_FMT, DatasetError

CODEC = "libx264"
CRF = 23
GOP = 10  # frames between key frames: seeking by timestamp decodes at most this many extra frames
FRAGMENTED = "frag_keyframe+empty_moov+default_base_moof+skip_trailer"


class EpisodeEncoder:
    """Encode RGB frames (size, width or size, 3) uint8 into an in-memory mp4."""

    def __init__(self, size: int, fps: int, crf: int = CRF, gop: int = GOP, width: int | None = None):
        self.buf = io.BytesIO()
        # Fragmented (a moof + mdat per key frame, no index at the end): episodes append as bytes.
        self.container = av.open(self.buf, mode="w", format="mp4", options={"movflags": FRAGMENTED})
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


def _stream(container, path: Path):
    """The first video stream of an open container (DatasetError when it has none)."""
    if not container.streams.video:
        raise DatasetError(path, "holds no video stream")
    return container.streams.video[0]


def frame_size(path: Path) -> tuple[int, int]:
    """(height, width) of an mp4's video stream, from its header."""
    container = _open(str(path), str(path))
    try:
        ctx = _stream(container, path).codec_context
        if ctx is None:  # a stream PyAV found no decoder for: a corrupt header
            raise DatasetError(path, "its video stream has no decodable codec (corrupt header)")
        return int(ctx.height), int(ctx.width)
    finally:
        container.close()


class IncompatibleVideo(ValueError):
    """An episode cannot be appended to this mp4 (another init segment); start a new file."""


def probe(path: Path) -> int:
    """Frame count of an mp4 on disk, counting packets (no decoding)."""
    container = _open(str(path), str(path))
    try:
        stream = _stream(container, path)
        n = sum(1 for p in container.demux(stream) if p.size)
    except av.FFmpegError as exc:
        raise DatasetError(path, f"mp4 cannot be read (truncated or corrupt): {exc}") from None
    finally:
        container.close()
    return n


def _boxes(data: bytes | bytearray, start: int = 0, end: int | None = None):
    """(type, offset, size, header size) of the ISO-BMFF boxes in ``data[start:end]``."""
    end = len(data) if end is None else end
    i = start
    while i + 8 <= end:
        size, kind = struct.unpack(">I4s", data[i : i + 8])
        header = 8
        if size == 1:
            size, header = struct.unpack(">Q", data[i + 8 : i + 16])[0], 16
        elif size == 0:
            size = end - i
        if size < header or i + size > end:
            raise ValueError(f"box {kind!r} at byte {i} runs past the end")
        yield kind.decode("latin-1"), i, size, header
        i += size


def split_fragments(mp4: bytes, name: str = "mp4") -> tuple[bytes, bytes]:
    """(init segment: ftyp + moov, fragments: moof + mdat ...) of a fragmented mp4."""
    try:
        first = next(off for kind, off, _, _ in _boxes(mp4) if kind == "moof")
    except (StopIteration, ValueError, struct.error):
        raise DatasetError(name, "not a fragmented mp4 (no moof box)") from None
    return mp4[:first], mp4[first:]


def init_segment(path: Path) -> bytes | None:
    """The init segment of a fragmented mp4 on disk; None if the file is not one."""
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    try:
        for kind, off, _, _ in _boxes(head, 0, len(head)):
            if kind == "moof":
                return head[:off]
    except (ValueError, struct.error):
        pass
    return None


def _timescale(init: bytes) -> int:
    at = init.find(b"mdhd")
    version = init[at + 4]
    offset = at + 8 + (16 if version == 1 else 8)
    return struct.unpack(">I", init[offset : offset + 4])[0]


def _shift(fragments: bytes, delta: int) -> bytes:
    """``fragments`` with every track fragment's decode time (tfdt) moved by ``delta`` ticks."""
    out = bytearray(fragments)
    for kind, off, size, header in _boxes(out):
        if kind != "moof":
            continue
        for kind2, off2, size2, header2 in _boxes(out, off + header, off + size):
            if kind2 != "traf":
                continue
            for kind3, off3, _, header3 in _boxes(out, off2 + header2, off2 + size2):
                if kind3 == "tfdt":
                    at = off3 + header3 + 4  # past version and flags
                    if out[off3 + header3] == 1:
                        out[at : at + 8] = struct.pack(">Q", struct.unpack(">Q", out[at : at + 8])[0] + delta)
                    else:
                        out[at : at + 4] = struct.pack(">I", struct.unpack(">I", out[at : at + 4])[0] + delta)
    return bytes(out)


def append(existing: Path | None, frames_before: int, episodes: list[tuple[str, bytes, int]], out: Path, fps: int) -> None:
    """Write ``out``: ``existing`` (or nothing) followed by ``episodes`` ((name, mp4, frames)), back to back.

    Bytes only: the file is copied, and each episode's fragments are appended
    with their decode times moved past the frames before them. Every episode
    must share the file's init segment (same codec parameters); raises
    ``ValueError`` when one does not, so that the caller starts a new file.
    """
    init = init_segment(existing) if existing is not None else split_fragments(episodes[0][1], episodes[0][0])[0]
    if init is None:
        raise IncompatibleVideo(f"{existing} is not a fragmented mp4")
    scale = _timescale(init)
    if scale % fps:
        raise IncompatibleVideo(f"timescale {scale} is not a multiple of {fps} fps")
    if existing is not None:
        shutil.copyfile(existing, out)
    with open(out, "ab" if existing is not None else "wb") as f:
        if existing is None:
            f.write(init)
        at = frames_before
        for name, mp4, frames in episodes:
            head, fragments = split_fragments(mp4, name)
            if head != init:
                raise IncompatibleVideo(f"{name} was encoded with other codec parameters")
            f.write(_shift(fragments, at * (scale // fps)))
            at += frames


def decode_range(path: Path, start: int, stop: int, fps: int) -> np.ndarray:
    """Frames ``start..stop-1`` (file frame numbers, i.e. timestamps ``k / fps``) as (N, H, W, 3) uint8."""
    container = _open(str(path), str(path))
    frames: dict[int, np.ndarray] = {}
    try:
        stream = _stream(container, path)
        # No decoder threads: with frame threading ("AUTO"), leaving the decode loop early and closing
        # the container deadlocked now and then (main thread and the av:h264 workers all on futexes, seen
        # in the test suite), and at these frame sizes threads decode no faster (about 900 frames/s either way).
        stream.thread_type = "NONE"
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
