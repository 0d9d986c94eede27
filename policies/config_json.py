"""A configuration dataclass to and from JSON values (the run folder's config.json).

Torch-free and light, so that code far from the heads (a training loop on another
machine, the exporter) reads and writes configurations without importing every head.
"""

from __future__ import annotations

import dataclasses
import json
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
        if isinstance(v, list) and "tuple" in str(hints.get(k, "")):
            v = tuple(v)
        kwargs[k] = v
    return cls(**kwargs)
