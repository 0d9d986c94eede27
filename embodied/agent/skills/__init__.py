"""Skills: policies that execute one skill call from observations and memory only."""

from embodied.agent.skills.base import Skill

__all__ = ["Skill"]
