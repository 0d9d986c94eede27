"""Scripted experts: privileged-state controllers in the agent's action space.

They exist to produce demonstrations and to prove each task solvable; the
agent itself never sees what they read. Each task's expert is named in
:mod:`embodied.experts.registry` (tasks do not know their experts).
"""

from embodied.experts.motion import ScriptedExpert, Waypoint
from embodied.experts.registry import EXPERTS, expert_class, make_expert, task_name

__all__ = ["EXPERTS", "ScriptedExpert", "Waypoint", "expert_class", "make_expert", "task_name"]
