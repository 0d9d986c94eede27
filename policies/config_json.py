"""A configuration dataclass to and from JSON values (the run folder's config.json).

Torch-free and light, so that code far from the heads (a training loop on another
machine, the exporter) reads and writes configurations without importing every head.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from typing import Any


def config_to_dict(config) -> dict:
    return json.loads(json.dumps(dataclasses.asdict(config)))


def config_from_dict(cls: type, d: dict[str, Any], where: str = "config") -> Any:
    """Build ``cls`` from JSON values (lists become tuples where the field is a tuple)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [k for k in d if k not in fields]
    if unknown:
        raise ValueError(f"{where}: unknown {cls.__name__} option {unknown[0]!r}; options: {', '.join(fields)}")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for k, v in d.items():
        if k in hints and not _fits(v, hints[k]):
            shown = repr(v) if len(repr(v)) <= 60 else repr(v)[:57] + "..."
            raise ValueError(f"{where}: {cls.__name__} option {k!r} must be {_name(hints[k])}, got {shown}")
        if isinstance(v, list) and "tuple" in str(hints.get(k, "")):
            v = tuple(v)
        kwargs[k] = v
    return cls(**kwargs)


def _name(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint)


def _fits(value: Any, hint: Any) -> bool:
    """Whether a JSON value is of the annotated type: bool, int (64-bit), float (finite; an int will do), str,
    tuples (as lists) of those, dicts, unions with None. Other annotations are not checked."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**63
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if hint is str:
        return isinstance(value, str)
    if hint is tuple or origin is tuple:
        if not isinstance(value, (list, tuple)):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_fits(v, args[0]) for v in value)
        return not args or len(value) == len(args) and all(_fits(v, a) for v, a in zip(value, args))
    if hint is dict or origin is dict:
        return isinstance(value, dict)
    return True
