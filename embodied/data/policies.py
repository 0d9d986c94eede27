"""Policies that can record demonstrations: a registry of factories ``(env, seed) -> policy``.

A policy needs ``act(obs) -> action`` and may have ``reset()``, ``close()``
and ``current_call`` (the :class:`~embodied.planner.calls.SkillCall` it is
executing after each ``act``; ``None`` or absent: no skill). Register more
with :func:`register_policy`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym

PolicyFactory = Callable[[gym.Env, int], Any]
_FACTORIES: dict[str, PolicyFactory] = {}


def register_policy(name: str, factory: PolicyFactory) -> None:
    _FACTORIES[name] = factory


def policy_names() -> list[str]:
    return sorted(_FACTORIES)


def make_policy(name: str, env: gym.Env, seed: int) -> Any:
    if name not in _FACTORIES:
        raise ValueError(f"unknown policy {name!r}; available: {', '.join(policy_names())}")
    return _FACTORIES[name](env, seed)


def _expert(env: gym.Env, seed: int):
    from embodied.experts import make_expert

    return make_expert(env)


def _agent(env: gym.Env, seed: int):
    """The memory agent; its ``current_call`` annotates each frame with the planner's call, and its
    decision log (embodied.agent.decisions) is stored beside the episode."""
    from embodied.eval.rollout import make_agent

    return make_agent(env, seed, record_decisions=True)


register_policy("expert", _expert)
register_policy("agent", _agent)
