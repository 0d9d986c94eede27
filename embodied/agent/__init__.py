"""The agent loop: run policies in tasks and collect what happened."""

from embodied.agent.rollout import EpisodeResult, make_policy, run_episodes

__all__ = ["EpisodeResult", "make_policy", "run_episodes"]
