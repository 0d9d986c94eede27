"""Knobs of the env itself, not of its task: how the scenery looks (``visual``) and what the cameras and
encoders get wrong (``sensor``). Commands take them through ``--option`` like task knobs and hand them to
``gym.make``; they are no field of a task's ``Options``, so they leave the task's truth, chance rate and
presets alone.

    env_knobs, task_knobs = split_env_knobs({"delay": 60, "sensor": "realistic"})
    # ({"sensor": "realistic"}, {"delay": 60})

Nothing here imports the simulator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

VISUALS = ("default", "randomized")
SENSORS = ("ideal", "realistic", "harsh")
ENV_KNOBS: dict[str, tuple[str, ...]] = {"visual": VISUALS, "sensor": SENSORS}  # knob -> its values, default first


def check_env_knob(name: str, value: Any) -> str:
    """``value`` of env knob ``name`` as a checked string; a wrong one names the valid values."""
    allowed = ENV_KNOBS[name]
    text = str(value).strip()
    if text not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return text


def split_env_knobs(knobs: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """(the env knobs among ``knobs``, checked; the rest, the task's knobs, as given)."""
    env = {k: check_env_knob(k, v) for k, v in knobs.items() if k in ENV_KNOBS}
    return env, {k: v for k, v in knobs.items() if k not in ENV_KNOBS}
