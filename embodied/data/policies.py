"""Policies that can record demonstrations: a registry of factories ``(env, seed) -> policy``.

A policy needs ``act(obs) -> action`` and may have ``reset()``, ``close()``
and ``current_call`` (the :class:`~embodied.planner.calls.SkillCall` it is
executing after each ``act``; ``None`` or absent: no skill). Register more
with :func:`register_policy`; a factory registered with ``perceives=True``
takes a third argument, the perception mode ("masks", "learned" or
"geometric"), which the others (the privileged expert) have no use for.
``relabel:RUN[@MIX]`` records a learned high-level policy's own episodes with
the planner's labels (:mod:`embodied.agent.relabel`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym

PolicyFactory = Callable[..., Any]  # (env, seed) -> policy; (env, seed, perception) where it perceives
_FACTORIES: dict[str, PolicyFactory] = {}
_PERCEIVING: set[str] = set()


def register_policy(name: str, factory: PolicyFactory, perceives: bool = False) -> None:
    _FACTORIES[name] = factory
    if perceives:
        _PERCEIVING.add(name)
    else:
        _PERCEIVING.discard(name)


def policy_names() -> list[str]:
    return sorted(_FACTORIES)


def known_policy(name: str) -> bool:
    return name in _FACTORIES or _relabel_spec(name) is not None


def check_perception(name: str, perception: str) -> None:
    """A clear error where policy ``name`` cannot perceive with ``perception`` (an unknown mode, or a
    policy that reads the simulator's state, such as the expert, given anything but the default)."""
    from embodied.perception.types import MODES

    if perception not in MODES:
        raise ValueError(f"unknown perception {perception!r}; choose one of {', '.join(MODES)}")
    perceives = name in _PERCEIVING or _relabel_spec(name) is not None
    if perception != "masks" and not perceives:
        raise ValueError(f"policy {name!r} does not perceive (it reads the simulator's state), so perception "
                         f"{perception!r} means nothing to it; it is for: {', '.join(sorted(_PERCEIVING))}, "
                         "relabel:RUN[@MIX]")


def make_policy(name: str, env: gym.Env, seed: int, perception: str = "masks") -> Any:
    """The policy ``name`` for ``env``; ``perception``: the detector an agent policy sees through."""
    check_perception(name, perception)
    relabel = _relabel_spec(name)
    if relabel is not None:
        from embodied.eval.rollout import make_learned

        run, mix = relabel
        return make_learned(env, f"learned:{run}", seed, relabel_mix=mix, perception=perception)
    if name not in _FACTORIES:
        raise ValueError(f"unknown policy {name!r}; available: {', '.join(policy_names())}, relabel:RUN[@MIX]")
    if name in _PERCEIVING:
        return _FACTORIES[name](env, seed, perception)
    return _FACTORIES[name](env, seed)


def _relabel_spec(name: str) -> tuple[str, float] | None:
    """"relabel:RUN[@MIX]" -> (RUN, MIX): the learned policy of RUN acts (the planner's call at share MIX,
    default 0) and every decision is stored with the planner's label (embodied.agent.relabel)."""
    if not name.startswith("relabel:"):
        return None
    run, _, mix = name.removeprefix("relabel:").partition("@")
    try:
        value = float(mix) if mix else 0.0
    except ValueError:
        raise ValueError(f"policy {name!r}: MIX in relabel:RUN@MIX is a number in [0, 1], not {mix!r}") from None
    if not run or not 0.0 <= value <= 1.0:
        raise ValueError(f"policy {name!r}: expected relabel:RUN[@MIX], MIX in [0, 1]")
    return run, value


def _expert(env: gym.Env, seed: int):
    from embodied.experts import make_expert

    return make_expert(env)


def _agent(env: gym.Env, seed: int, perception: str = "masks"):
    """The memory agent; its ``current_call`` annotates each frame with the planner's call, and its
    decision log (embodied.agent.decisions) is stored beside the episode."""
    from embodied.eval.rollout import make_agent

    return make_agent(env, seed, perception=perception, record_decisions=True)


register_policy("expert", _expert)
register_policy("agent", _agent, perceives=True)
