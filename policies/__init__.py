"""Action heads: anything that maps observations to actions.

Every policy follows one small protocol (``policies.base.Policy``):
``reset()`` at episode start and ``act(obs) -> action`` each control step.

Learned heads (``policies.diffusion``, ``policies.act``) share LeRobot's interface
(``forward``, ``predict_action_chunk``, ``select_action``, ``reset``; see
``policies.head``), train with ``policies.train`` (``embodied train``) and run as
the agent's skills through ``policies.skill_head.load_head("diffusion:RUN")``.
The high-level policy (``policies.memory_policy``) chooses those skill calls
instead of the planner, from one memory input: none, implicit or explicit.
"""

from policies.base import Policy, RandomPolicy

__all__ = ["Policy", "RandomPolicy"]
