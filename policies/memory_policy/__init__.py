"""A learned high-level policy: at each decision point, the next skill call, from the goal's words,
proprioception and one memory input (``none``, ``implicit`` or ``explicit``).

    policies.memory_policy.configuration   MemoryPolicyConfig (a dataclass)
    policies.memory_policy.modeling        MemoryPolicy: forward(batch) -> losses; decide(inputs) -> Decision
    policies.memory_policy.inputs          goal words, images and token tensors, shared by training and the agent
    policies.memory_policy.data            DecisionData: recorded decision points as training batches
    policies.memory_policy.train           train_memory_policy(...): the run folder, as the action heads have
"""

from policies.memory_policy.configuration import MEMORIES, MemoryPolicyConfig

__all__ = ["MEMORIES", "MemoryPolicyConfig"]
