"""Atomic commits of several files: a redo journal, recovery on open, garbage collection.

A commit writes every new file under a temporary name (``.NAME.*.partial``,
which LeRobot's ``*.parquet``/``*.mp4`` globs never match), fsyncs them, then
writes the journal ``meta/.commit.json`` listing the renames (the commit
point), renames the files into place (``meta/info.json`` last) and deletes the
journal. A process killed before the journal is written leaves only temporary
files; one killed after it leaves a journal that :func:`recover` (run by every
reader and writer of this package when it opens a dataset) replays.
SIGINT is held back while a commit runs, so Ctrl-C never lands inside one.
"""

from __future__ import annotations

import json
import os
import signal
from contextlib import contextmanager
from pathlib import Path

from embodied.data.layout import INFO_PATH, DatasetError, atomic_write, fsync_dir, fsync_path, read_json

JOURNAL = "meta/.commit.json"


@contextmanager
def sigint_held():
    """Delay Ctrl-C until the block is done (it is delivered right after)."""
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    except (AttributeError, ValueError, OSError):
        old = None
    try:
        yield
    finally:
        if old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def apply(root: Path, renames: list[tuple[Path, Path]]) -> None:
    """Journal, then rename each (tmp, final), then drop the journal."""
    for tmp, _ in renames:
        fsync_path(tmp)
    journal = root / JOURNAL
    base = Path(root).resolve()  # the paths may be absolute and root relative, or the other way round
    doc = {"renames": [[str(Path(t).resolve().relative_to(base)), str(Path(f).resolve().relative_to(base))]
                       for t, f in renames]}
    atomic_write(journal, json.dumps(doc))
    _replay(root, doc)
    journal.unlink()
    fsync_dir(journal.parent)


def _replay(root: Path, doc: dict) -> None:
    dirs = set()
    for tmp, final in doc["renames"]:
        src, dst = root / tmp, root / final
        if src.exists():
            os.replace(src, dst)
        dirs.add(dst.parent)
    for d in dirs:
        fsync_dir(d)


def recover(root: Path) -> bool:
    """Finish a commit that a killed writer left half done; True if there was one."""
    journal = root / JOURNAL
    if not journal.exists():
        return False
    doc = read_json(journal)
    if not isinstance(doc, dict) or not isinstance(doc.get("renames"), list):
        raise DatasetError(journal, "malformed commit journal")
    try:
        _replay(root, doc)
        journal.unlink()
    except OSError as exc:
        raise DatasetError(journal, f"an interrupted commit needs finishing but the folder is not writable: {exc}") from None
    return True


def collect_garbage(root: Path, referenced: set[Path], strays: bool = True) -> list[Path]:
    """Remove temporaries and (``strays``) data/video/episode files that ``meta/`` does not reference."""
    removed = []
    for sub in ("data", "videos", "meta"):
        base = root / sub
        if not base.exists():
            continue
        for path in sorted(base.rglob("*")):
            if not path.is_file():
                continue
            rel = path.relative_to(root)
            partial = path.name.endswith(".partial")
            stray = strays and (sub != "meta" or rel.parts[:2] == ("meta", "episodes"))
            if partial or (stray and rel not in referenced and path.suffix in (".parquet", ".mp4")):
                path.unlink()
                removed.append(rel)
    for sub in ("data", "videos", "meta"):
        base = root / sub
        if base.exists():
            for d in sorted((p for p in base.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                if not any(d.iterdir()):
                    d.rmdir()
    return removed


def is_dataset(root: Path) -> bool:
    return (root / INFO_PATH).exists()


def ensure_clean_target(root: Path) -> None:
    """A new dataset goes into a missing or empty folder, or one holding only a killed first run's leftovers."""
    if root.exists() and not root.is_dir():
        raise ValueError(f"{root} exists and is not a folder")
    if not root.exists():
        return
    leftovers = {"data", "videos", "meta"}
    others = [p.name for p in root.iterdir() if p.name not in leftovers]
    if others:
        raise ValueError(f"{root} is not empty and holds no dataset ({', '.join(sorted(others)[:3])}); choose a new folder")
    recover(root)
    collect_garbage(root, set(), strays=False)
    for sub in leftovers:
        d = root / sub
        if d.exists() and any(p.is_file() for p in d.rglob("*")):
            raise ValueError(f"{root}/{sub} holds files but there is no meta/info.json; choose a new folder")
