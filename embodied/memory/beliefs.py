"""Beliefs accumulated from evidence, as occupancy maps keep them: log-odds, with decisions on the belief.

    pressed = Belief()                          # log-odds 0: no evidence either way
    pressed.add(gaussian_llr(top, rest - click, rest, sigma))   # one frame's evidence
    if pressed.flipped(): ...                   # the decision changed: log it

A measurement x with noise std sigma speaks for hypothesis "yes" (mean mu_yes) over "no" (mean mu_no) by
the log-likelihood ratio ((x - mu_no)^2 - (x - mu_yes)^2) / (2 sigma^2). A frame's evidence is capped
(``CAP``): one outlying frame moves a belief at most as far as a clear frame does, and the belief itself
is clamped (``LIMIT``) so that it can turn when the world changes. A belief holds "yes" from ``ENTER``
and lets it go under ``-ENTER``: a clear frame (a measurement three noise stds past the threshold, whose
evidence reaches ``CAP``) turns it at once, weaker frames add up (two frames two stds past).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

CAP = 6.0  # the most one frame may add: a measurement 3 stds past the threshold (log-odds 6.6)
LIMIT = 4.0  # the belief stays within +-LIMIT, so one clear frame (CAP) turns it past ENTER
ENTER = 2.0  # log-odds 2 (88 %) decides "yes", -2 "no"


def gaussian_llr(x: float, mu_yes: float, mu_no: float, sigma: float, cap: float = CAP) -> float:
    """Log-likelihood ratio of ``x`` under N(mu_yes, sigma) against N(mu_no, sigma), capped at +-``cap``."""
    s2 = 2.0 * max(sigma, 1e-9) ** 2
    llr = ((x - mu_no) ** 2 - (x - mu_yes) ** 2) / s2
    return max(-cap, min(cap, llr))


def side_llr(x: float, threshold: float, sigma: float, cap: float = CAP) -> float:
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

    def add(self, llr: float) -> bool:
        """Fold one frame's evidence in (capped at +-CAP); returns the decision (True: yes)."""
        self.log_odds = max(-LIMIT, min(LIMIT, self.log_odds + max(-CAP, min(CAP, llr))))
        before = self.state
        if self.log_odds >= ENTER:
            self.state = True
        elif self.log_odds <= -ENTER:
            self.state = False
        self.changed = self.state != before
        return self.state

    def reset(self, state: bool, log_odds: float | None = None) -> None:
        """Set the decision (an action known to change it: the robot's own press), with its evidence."""
        self.state = bool(state)
        self.log_odds = (LIMIT if state else -LIMIT) if log_odds is None else log_odds
        self.changed = False

    @property
    def probability(self) -> float:
        return 1.0 / (1.0 + math.exp(-self.log_odds))

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

    def to_json(self) -> list:
        return [self.n, self.mean, self.m2]

    @classmethod
    def from_json(cls, value) -> RunningMean:
        if not (isinstance(value, list) and len(value) == 3
                and all(isinstance(v, (int, float)) and math.isfinite(v) for v in value)):
            raise ValueError(f"running mean: expected [n, mean, m2], got {value!r}")
        return cls(float(value[0]), float(value[1]), float(value[2]))
