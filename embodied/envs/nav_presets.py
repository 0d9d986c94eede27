"""The difficulty ladder the navigation tasks share (see ``MemoryTaskEnv``'s ``preset=`` knob)."""

from __future__ import annotations

# The shared navigation ladder: more objects to keep apart (chance 1/11 at 12), longer waits at the
# dock, and wheel odometry that drifts more (the agent corrects it against what it mapped).
NAV_PRESETS = {
    "easy": {},
    "medium": {"objects": 12, "delay": 300, "odom_noise": 0.02},
    "hard": {"objects": 12, "delay": 1000, "odom_noise": 0.05},
    "extreme": {"objects": 12, "delay": 2000, "odom_noise": 0.1},
}


def nav_presets(extra: dict[str, dict] | None = None) -> dict[str, dict]:
    """``NAV_PRESETS`` with a family's own knobs added per preset."""
    return {name: {**knobs, **(extra or {}).get(name, {})} for name, knobs in NAV_PRESETS.items()}
