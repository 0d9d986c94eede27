"""Beliefs accumulated from evidence, as occupancy maps keep them: log-odds, with decisions on the belief.

    pressed = Belief()                          # log-odds 0: no evidence either way
    pressed.add(side_llr(travel, click, sigma, cfg.cap), cfg)   # one frame's evidence (cfg: BeliefConfig)
    if pressed.changed: ...                     # the decision changed: log it

A frame's evidence is capped (``cap``): one outlying frame moves a belief no further than a clear one
(three noise stds past the threshold) does. The belief is clamped (``limit``) so it can turn when the world
changes, and holds "yes" from ``enter`` until under ``-enter``: a clear frame turns it at once, weaker
frames add up. The numbers are ``config.BeliefConfig``'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from embodied.memory.config import BeliefConfig


def side_llr(x: float, threshold: float, sigma: float, cap: float) -> float:
    """Log-odds that the true value lies above ``threshold`` given a measurement ``x`` with noise std
    ``sigma``: log(Phi(z) / Phi(-z)), z = (x - threshold) / sigma, capped at +-``cap``. A noiseless
    measurement decides at once; one a std past the threshold gives 1.7, so two such frames decide."""
    if sigma <= 1e-9:
        return cap if x > threshold else -cap
    z = (x - threshold) / sigma
    if abs(z) > 6.0:
        return cap if z > 0 else -cap
    above, below = 0.5 * math.erfc(-z / math.sqrt(2.0)), 0.5 * math.erfc(z / math.sqrt(2.0))
    return max(-cap, min(cap, math.log(above) - math.log(below)))


@dataclass
class Belief:
    """A binary belief as clamped log-odds, with the decision it supports (hysteresis at +-ENTER)."""

    log_odds: float = 0.0
    state: bool = False
    changed: bool = False  # the last ``add`` flipped the decision

    def add(self, llr: float, cfg: BeliefConfig) -> bool:
        """Fold one frame's evidence in (capped at +-cap); returns the decision (True: yes)."""
        before = self.state
        if cfg.single_frame:  # the ablation: this frame's evidence alone decides
            self.log_odds, self.state = llr, llr > 0
        else:
            self.log_odds = max(-cfg.limit, min(cfg.limit, self.log_odds + max(-cfg.cap, min(cfg.cap, llr))))
            if self.log_odds >= cfg.enter:
                self.state = True
            elif self.log_odds <= -cfg.enter:
                self.state = False
        self.changed = self.state != before
        return self.state

    def reset(self, state: bool, cfg: BeliefConfig) -> None:
        """Set the decision with full evidence (seen again; the robot's own press let go)."""
        self.state = bool(state)
        self.log_odds = cfg.limit if state else -cfg.limit
        self.changed = False

    def to_json(self) -> list:
        return [round(self.log_odds, 6), bool(self.state)]

    @classmethod
    def from_json(cls, value) -> Belief:
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[1], bool)
                and isinstance(value[0], (int, float)) and math.isfinite(value[0])):
            raise ValueError(f"belief: expected [log-odds, state], got {value!r}")
        return cls(float(value[0]), value[1])


@dataclass
class RunningMean:
    """The mean and spread of a repeated measurement (Welford), forgetting beyond ``window`` samples."""

    n: float = 0.0
    mean: float = 0.0
    m2: float = 0.0
    window: float = 20.0

    def add(self, x: float) -> None:
        self.n = min(self.n + 1.0, self.window)
        delta = x - self.mean
        self.mean += delta / self.n
        self.m2 = max(0.0, self.m2 * (1.0 - 1.0 / self.n) + delta * (x - self.mean))

    @property
    def std_of_mean(self) -> float:
        """Std of the mean (m), 0 before two samples."""
        return math.sqrt(self.m2 / max(self.n - 1.0, 1.0) / max(self.n, 1.0)) if self.n > 1 else 0.0
