"""Policies that can record demonstrations: a registry of factories ``(env, seed) -> policy``.

A policy needs ``act(obs) -> action`` and may have ``reset()``, ``close()``
and ``current_call`` (the :class:`~embodied.planner.calls.SkillCall` it is
executing after each ``act``; ``None`` or absent: no skill). Register more
with :func:`register_policy`.
"""

from __future__ import annotations

from typing import Any, Callable

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
    try:
        from embodied.agent import MemoryAgent
    except ImportError as exc:
        raise ValueError(
            f"--policy agent needs embodied.agent.MemoryAgent, which is not available yet ({exc}); use --policy expert"
        ) from None
    try:
        return MemoryAgent(env, seed=seed)
    except TypeError:
        return MemoryAgent(env)


register_policy("expert", _expert)
register_policy("agent", _agent)
