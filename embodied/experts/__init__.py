"""Scripted experts: privileged-state controllers in the agent's action space.

They exist to produce demonstrations and to prove each task solvable; the
agent itself never sees what they read.
"""

from embodied.experts.motion import ScriptedExpert, Waypoint, make_expert

__all__ = ["ScriptedExpert", "Waypoint", "make_expert"]
