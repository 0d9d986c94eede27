"""The memory agent's knobs (:class:`AgentConfig`): perception, memory, retries and replans, ablations,
drift correction. ``MemoryAgent(labels, AgentConfig(...))``; see :mod:`embodied.agent.memory_agent`."""

from __future__ import annotations

from dataclasses import dataclass, field

from embodied.agent.aim import AimConfig
from embodied.memory import MemoryConfig
from embodied.mapping.localise import LocaliserConfig
from embodied.perception import PerceptionConfig

@dataclass
class AgentConfig:
    perception: PerceptionConfig = field(default_factory=lambda: PerceptionConfig(shuffle_ids=True))
    memory: MemoryConfig | None = None
    max_retries: int = 2  # per call, before replanning
    max_replans: int = 3  # per goal, before giving up
    # A goal memory cannot resolve yet ("nothing in memory is a cup") is planned again every this many steps
    # while the robot stands idle: a later frame may show the referent (0: plan once and idle).
    retry_unresolved: int = 10
    wipe_at_recall: bool = False  # ablation: forget everything at the first recall step
    blank_observe: bool = False  # ablation: blank frames and no instruction during observe
    settle_steps: int = 1  # steps of memory updates between a skill's end and its effect check
    # A retried place or grasp is aimed off its target by the miss seen (None: retry as is).
    aim: AimConfig | None = field(default_factory=AimConfig)
    rooms_every: int = 50  # mobile base: re-segment rooms from the free-space map every this many steps (0: never)
    # Mobile base: drift correction of the odometry camera pose (None: trust odometry, the ablation).
    localise: LocaliserConfig | None = field(default_factory=LocaliserConfig)
    record_decisions: bool = False  # keep a DecisionLog: the inputs and choice at every decision point
    max_decisions: int = 40  # with a learned decider: decisions per goal before it gives up

    def memory_config(self) -> MemoryConfig:
        """``memory``, or by default the memory for the agent's detector (``MemoryConfig.for_detector``: what a
        learned or geometric detector gets wrong is its profile, embodied.memory.config.DetectorProfile)."""
        if self.memory is not None:
            return self.memory
        return MemoryConfig.for_detector(self.perception.mode)
