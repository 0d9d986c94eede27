"""Writing a file so that a crash never leaves half of it under its name: a temporary file beside it,
fsynced, then renamed into place (``os.replace`` is atomic on one file system)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path: str | os.PathLike, data: bytes | str, mode: int | None = None) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` atomically, with permissions ``mode`` (None: mkstemp's
    0600); the folder is made if needed. Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
