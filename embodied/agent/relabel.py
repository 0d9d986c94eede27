"""Relabelling (DAgger): a learned decider acts, and the planner says what it would have done there.

    decider = RelabellingDecider(LearnedDecider(policy), mix=0.0)
    agent = MemoryAgent(labels, AgentConfig(record_decisions=True), decider=decider)

Imitation learned from the planner's own episodes only ever sees the states the
planner reaches; a policy that errs once lands in states no demo shows. Here the
learned policy chooses the call that runs (or, with probability ``mix``, the
planner does), and at every decision the planner plans afresh from the same
memory: its first call is the label the agent's :class:`DecisionLog` keeps, and
the first calls of the plan's other any-order units are the equally good
alternatives. Decisions where the planner cannot resolve the goal keep no label.

A fresh plan is a right label only for goals whose plan is a function of what
memory holds now (``put everything back``: whatever is displaced, held, open); a
goal planned once as a fixed sequence (lift the cup that hides the ball) would be
relabelled from its start after every call.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embodied.planner.calls import RESUMED, UNIT, SkillCall
from embodied.planner.grammar import GrammarError, parse
from embodied.planner.planner import Planner
from embodied.planner.resolver import ResolutionError


class RelabellingDecider:
    """A decider (``reset``, ``observe``, ``decide``) whose every decision the planner labels."""

    labeller = "planner"

    def __init__(self, decider, planner: Planner | None = None, mix: float = 0.0, seed: int = 0):
        if not 0.0 <= mix <= 1.0:
            raise ValueError(f"mix {mix} is a probability: the share of decisions the planner's call runs")
        self.decider = decider
        self.planner = planner or Planner()
        self.mix = float(mix)
        self.rng = np.random.default_rng(seed)
        self.reset()

    def reset(self) -> None:
        self.decider.reset()
        self.label: tuple[bool, SkillCall | None, list[SkillCall]] = (False, None, [])

    def observe(self, obs: dict[str, Any], t: int) -> None:
        self.decider.observe(obs, t)

    def decide(self, goal: str, memory, obs: dict[str, Any], t: int) -> SkillCall | None:
        call = self.decider.decide(goal, memory, obs, t)
        try:
            plan = self.planner.plan(parse(goal), memory, np.asarray(obs["goal"].get("target_rgb", np.zeros(3))))
        except (GrammarError, ResolutionError):
            self.label = (False, None, [])
            return call
        first = plan[0] if plan else None
        self.label = (True, first, _other_units(plan))
        if self.rng.random() < self.mix:
            if hasattr(self.decider, "ran"):
                self.decider.ran(first)  # what it remembers doing is what runs
            return first
        return call

    def take_label(self) -> tuple[bool, SkillCall | None, list[SkillCall]]:
        """(labelled, the planner's call or None for stop, the alternatives) of the latest decision."""
        out, self.label = self.label, (False, None, [])
        return out


def _other_units(plan: list[SkillCall]) -> list[SkillCall]:
    """The first call of every unit but the first call's own, when the first call starts a unit afresh
    (a unit begun, its object in hand or its drawer open, is finished first)."""
    if not plan or UNIT not in plan[0].extra or plan[0].extra.get(RESUMED):
        return []
    seen, out = {plan[0].extra[UNIT]}, []
    for c in plan[1:]:
        unit = c.extra.get(UNIT)
        if unit is not None and unit not in seen:
            seen.add(unit)
            out.append(c)
    return out
