"""Skill calls for scripted experts, built from the privileged state they read.

The experts' waypoint plans are segmented into the planner's skill calls
(:mod:`embodied.planner.calls`) so that demonstrations carry the same
conditioning a learned head gets from the planner at run time. Parameters
follow the ``SkillCall`` docstring; boxes are the entity's true world
axis-aligned box (the planner's come from memory, which estimates the same box).
"""

from __future__ import annotations

import math

import numpy as np

from embodied.planner.calls import SkillCall

PULL_YAW = math.pi  # drawers slide out toward the robot, along world -x


def entity_box(env, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(centre (3,), size (3,)) of entity ``name``'s visible geoms, world frame, metres."""
    u = env.unwrapped
    model, data = u.model, u.data
    entity = u.entity[name] if hasattr(u, "entity") else next(e for e in u.entities if e.name == name)
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for g in entity.geom_ids:
        if model.geom_type[g] == 0 or model.geom_rgba[g, 3] <= 0:  # planes, invisible helpers
            continue
        rot = data.geom_xmat[g].reshape(3, 3)
        centre = data.geom_xpos[g] + rot @ model.geom_aabb[g, :3]
        half = np.abs(rot) @ model.geom_aabb[g, 3:]
        lo, hi = np.minimum(lo, centre - half), np.maximum(hi, centre + half)
    if not np.all(np.isfinite(lo)):
        raise ValueError(f"entity {name!r} has no visible geometry")
    return (lo + hi) / 2, hi - lo


def object_call(env, skill: str, name: str, xyz=None, yaw: float = math.nan, note: str = "") -> SkillCall:
    """A call on entity ``name``: ``xyz`` defaults to its box centre; ``size`` is its box size."""
    centre, size = entity_box(env, name)
    return SkillCall(skill, name, tuple(centre if xyz is None else xyz), yaw, tuple(size), note)
