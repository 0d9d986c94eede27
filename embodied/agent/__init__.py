"""The agent side: what acts on observations alone (perception, memory, skills).

Nothing here imports the simulator side (``embodied.tasks``, ``embodied.experts``,
``embodied.envs``); running policies in tasks and checking against the
simulator's truth is ``embodied.eval``.

    embodied.agent.memory_agent   MemoryAgent: perceive -> remember -> plan -> act
    embodied.agent.ride     MemoryRider: perception + memory fed each episode's observations
    embodied.agent.skills   the Skill protocol
    embodied.agent.decisions   DecisionLog: what the agent saw and chose at each decision point
    embodied.agent.learned     LearnedDecider: a learned high-level policy choosing every call
    embodied.agent.persist     saving and restoring a MemoryAgent (MemoryAgent.save/load/resume_memory)
"""

from embodied.agent.memory_agent import AgentConfig, MemoryAgent

__all__ = ["AgentConfig", "MemoryAgent"]
