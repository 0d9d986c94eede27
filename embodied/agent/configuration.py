"""The memory agent's knobs (:class:`AgentConfig`): perception, memory, retries and replans, ablations,
drift correction. ``MemoryAgent(labels, AgentConfig(...))``; see :mod:`embodied.agent.memory_agent`."""

from __future__ import annotations

from dataclasses import dataclass, field

from embodied.agent.aim import AimConfig
from embodied.memory import MemoryConfig
from embodied.mapping.localise import LocaliserConfig
from embodied.perception import PerceptionConfig

# m: with a learned detector an object out of view (not found missing) is re-identified only this near its
# remembered place: farther than a workcell reaches, nearer than the 4.8-5.7 m of the stray views that had
# taken a house's lamp and book (ObjectRevisit 930043; ChangedObject 930007, visual=randomized).
OUT_OF_VIEW_REACH = 1.5


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
        """``memory``, or by default the memory for the agent's detector: on a learned or geometric one a
        node enters plans once seen 3 times (``MemoryConfig.min_sightings``), on the renderer's masks at once;
        a learned one's flickering labels are outvoted (``MemoryConfig.class_votes``) and its pieces at the
        image's edge wait for a whole view (``new_from_truncated``), its narrow views of a drawer are
        parts hidden (``drawer_narrow_views``) and its pieces of one drawer, or of one object, join
        (``drawer_pieces``, ``object_pieces``), and an object out of view is picked up again only by a view
        within OUT_OF_VIEW_REACH of it (``reid_out_of_view_reach``). Geometric mode's size classes are
        views, not kinds (a block seen from above is flat, carried past the arm tall): one may continue a
        node of another (``strict_class`` off, as ``eval-memory`` runs it), and an open drawer seen apart
        from its housing takes its row's slide (``row_slide``)."""
        if self.memory is not None:
            return self.memory
        mode = self.perception.mode
        learned = mode == "learned"
        return MemoryConfig(min_sightings=1 if mode == "masks" else 3, class_votes=learned,
                            strict_class=mode != "geometric", row_slide=mode == "geometric",
                            new_from_truncated=not learned, drawer_narrow_views=learned, drawer_pieces=learned,
                            object_pieces=learned,
                            reid_out_of_view_reach=OUT_OF_VIEW_REACH if learned else None)
