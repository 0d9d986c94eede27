"""Action heads: anything that maps observations to actions.

Every policy follows one small protocol (``policies.base.Policy``):
``reset()`` at episode start and ``act(obs) -> action`` each control step.
"""

from policies.base import Policy, RandomPolicy

__all__ = ["Policy", "RandomPolicy"]
