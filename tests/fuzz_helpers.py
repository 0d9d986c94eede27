"""Fuzzing the loaders: malformed copies of valid files, and the property every loader must keep.

Each example starts from a real, valid file made by the code that writes it (a saved memory, a recorded
run, a recorded dataset, a checkpoint, an exported head) and breaks it one way:

    truncated      the file cut at a random byte
    retyped        one value anywhere in a JSON document replaced by a value of another type
    bad number     one number replaced by NaN, +-inf, a huge or a negative value
    dropped key    one key anywhere in a JSON document removed
    random bytes   the whole file replaced, or a few of its bytes overwritten

The property (:func:`loads_or_names_the_file`): the loader either returns something usable or raises the
project's own error (exactly the documented type, not a subclass leaking from json, pyarrow or PyAV)
whose message names a file of the folder; it never hangs (a per-example alarm) and never writes (every
file of the folder is byte for byte as before).

Profiles: ``EMBODIED_FUZZ=ci`` (the default; a few dozen examples per loader) or ``EMBODIED_FUZZ=long``
(``tools/fuzz_loaders.sh``: 1,000 per loader).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis.control import currently_in_test_context
from hypothesis import strategies as st

# --- profiles --------------------------------------------------------------------------------------

PROFILE = os.environ.get("EMBODIED_FUZZ", "ci")
if PROFILE not in ("ci", "long"):
    raise ValueError(f"EMBODIED_FUZZ must be ci or long, got {PROFILE!r}")
LONG = PROFILE == "long"
EXAMPLE_SECONDS = 30  # the alarm: an example still running after this long is a hang

_COMMON = dict(
    deadline=timedelta(seconds=10),  # an example this slow is a bug (the typical one takes 10-300 ms)
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    print_blob=True,
)
settings.register_profile("fuzz-ci", max_examples=60, **_COMMON)
settings.register_profile("fuzz-long", max_examples=1000, **_COMMON)


def fuzz(examples: int | None = None) -> settings:
    """The settings of a fuzz test: the profile's, ``examples`` in CI (the long run always does 1,000)."""
    base = settings.get_profile(f"fuzz-{PROFILE}")
    return settings(base, max_examples=examples) if examples and not LONG else settings(base)


class Broken(bytes):
    """A broken file's bytes; ``what`` says how it was broken (the falsifying example shows only that)."""

    what: str

    def __new__(cls, data: bytes, what: str):
        out = super().__new__(cls, data)
        out.what = what
        return out

    def __repr__(self) -> str:
        return f"<{len(self)} bytes: {self.what}>"


# --- mutations of JSON documents -------------------------------------------------------------------

OTHER_VALUES: tuple[Any, ...] = (None, True, False, 0, 1, -1, 2.5, "", "x", "nan", [], [0], [[]], ["x"], {}, {"x": 1},
                                 [1.0, 2.0, 3.0], 2**63, 10**30)
BAD_NUMBERS: tuple[Any, ...] = (math.nan, math.inf, -math.inf, 1e308, -1e308, 10**30, -(10**30), 2**63, 2**64,
                                -(2**63) - 1, -1, -2.5, 0, 0.5, 1e-320)


def _kind(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def _children(node: Any) -> list:
    if isinstance(node, dict):
        return list(node)
    if isinstance(node, list):
        return list(range(len(node)))
    return []


def _walk(draw, doc: Any) -> list:
    """A path from the root to some value: each step into a random child, stopping at random."""
    path, node = [], doc
    while _children(node) and not (path and draw(st.integers(0, 2)) == 0):
        key = draw(st.sampled_from(_children(node)))
        path.append(key)
        node = node[key]
    return path


def _get(doc: Any, path: list) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _numbers(node: Any, path: list) -> Iterator[list]:
    if isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path
    for key in _children(node):
        yield from _numbers(node[key], [*path, key])


@st.composite
def mutated_json(draw, doc: Any) -> Any:
    """(a broken copy of ``doc``, what was done): 1-3 retyped values, bad numbers or dropped keys."""
    doc = copy.deepcopy(doc)
    done = []
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(("retype", "number", "drop")))
        path = _walk(draw, doc)
        if how == "number":
            leaves = list(_numbers(_get(doc, path), path))
            if not leaves:
                how = "retype"
            else:
                path = draw(st.sampled_from(leaves))
                value = draw(st.sampled_from(BAD_NUMBERS))
        if how == "drop":
            while path and not isinstance(_get(doc, path[:-1]), dict):
                path = path[:-1]
            if not path:
                how = "retype"
                path = _walk(draw, doc)
            else:
                del _get(doc, path[:-1])[path[-1]]
                done.append(f"dropped {path}")
                continue
        if how == "retype":
            old = _get(doc, path) if path else doc
            value = draw(st.sampled_from([v for v in OTHER_VALUES if _kind(v) != _kind(old)]))
        value = copy.deepcopy(value)  # never the shared constant: a later mutation may edit it in place
        if not path:
            doc = value
        else:
            _get(doc, path[:-1])[path[-1]] = value
        done.append(f"{how} {path} = {value!r}")
    return doc, "; ".join(done)


def dump_json(doc: Any) -> bytes:
    """JSON as Python writes it, NaN and Infinity included (as a corrupt writer or a hand edit would)."""
    return json.dumps(doc, allow_nan=True).encode()


# --- mutations of any file -------------------------------------------------------------------------


@st.composite
def broken_bytes(draw, data: bytes) -> Broken:
    """``data`` truncated, overwritten in places, or replaced by random bytes."""
    how = draw(st.sampled_from(("truncate", "overwrite", "random")))
    if how == "truncate":
        at = draw(st.integers(0, max(0, len(data) - 1)))
        return Broken(data[:at], f"truncated at byte {at} of {len(data)}")
    if how == "overwrite" and data:
        out = bytearray(data)
        places = draw(st.lists(st.tuples(st.integers(0, len(data) - 1), st.integers(0, 255)), min_size=1, max_size=8))
        for at, byte in places:
            out[at] = byte
        return Broken(out, f"bytes overwritten: {sorted(places)}")
    junk = draw(st.binary(max_size=512))
    return Broken(junk, f"replaced by random bytes {junk[:40]!r}")


@st.composite
def broken_json_file(draw, data: bytes) -> Broken:
    """A JSON file's bytes, broken as bytes (a third of the time) or as a document."""
    if draw(st.integers(0, 2)) == 0:
        return draw(broken_bytes(data))
    doc, what = draw(mutated_json(json.loads(data)))
    return Broken(dump_json(doc), what)


# --- the property ----------------------------------------------------------------------------------


class Hang(BaseException):
    """An example ran past :data:`EXAMPLE_SECONDS` (a BaseException, so no loader's handler eats it)."""


@contextmanager
def time_limit(seconds: float = EXAMPLE_SECONDS):
    def ring(signum, frame):
        raise Hang(f"the loader ran for more than {seconds} s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def folder_state(folder: Path) -> dict[str, tuple[str, int]]:
    """{relative path: (sha256, mode)} of every file and folder under ``folder``."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_file():
            out[rel] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode)
        else:
            out[rel] = ("dir", path.stat().st_mode)
    return out


@contextmanager
def copy_of(source: Path) -> Iterator[Path]:
    """A scratch copy of folder (or file) ``source``, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        target = Path(tmp) / source.name
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy2(source, target)
        yield target


def outcome(text: str) -> None:
    """Count an outcome in the statistics (``--hypothesis-show-statistics``) when run by hypothesis."""
    if currently_in_test_context():
        event(text)


def loads_or_names_the_file(
    load: Callable[[], Any],
    folder: Path,
    errors: tuple[type[BaseException], ...],
    usable: Callable[[Any], None] | None = None,
    what: str = "",
) -> BaseException | None:
    """Run ``load``: it returns (and ``usable`` accepts the result) or raises exactly one of ``errors`` naming a
    path under ``folder``; the folder is unchanged either way. Returns the error raised (None: it loaded)."""
    before = folder_state(folder)
    error = None
    try:
        with time_limit():
            result = load()
    except errors as exc:
        error = exc
        assert type(exc) in errors, f"{what}: {type(exc).__module__}.{type(exc).__name__} leaked: {exc}"
        assert str(folder) in str(exc), f"{what}: the error does not name the file: {exc}"
        named = [rel for rel in before if f"{folder}/{rel}" in str(exc)]
        outcome(f"{type(exc).__name__} naming {max(named, key=len) if named else folder.name + '/'}")
    else:
        if usable is not None:
            with time_limit():
                usable(result)
        outcome("loaded")
    assert folder_state(folder) == before, f"{what}: loading changed the folder"
    return error
