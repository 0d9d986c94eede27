"""Configuration of the learned high-level policy (:mod:`policies.memory_policy.modeling`)."""

from __future__ import annotations

from dataclasses import dataclass, field

MEMORIES = ("none", "implicit", "explicit")


@dataclass
class MemoryPolicyConfig:
    memory: str = "explicit"  # none | implicit | explicit: the one memory input
    # The shared trunk: a transformer encoder over [decision, goal words, proprio, memory tokens].
    d_model: int = 96
    n_heads: int = 4
    n_layers: int = 3
    dropout: float = 0.1
    max_goal_words: int = 24
    # Words the policy knows (goal text, node classes, colours, room names), learned from the demos;
    # index 0 pads, 1 is any word not seen in training.
    vocab: tuple[str, ...] = ()
    state_dim: int = 22  # proprio padded to this width (the arm's 22; a base's 5 fills the front)
    token_dim: int = 0  # explicit: width of a node token (embodied.agent.tokens.TOKEN_DIM)
    word_slots: int = 5  # explicit: words per node (embodied.agent.tokens.WORD_SLOTS), each slot its own map
    max_nodes: int = 96
    # explicit: spot features, geometric copy features between nodes (see modeling._spots): how far a node
    # is from where it was first seen, and whether some other node now stands on that first spot, or it on
    # another's. They read the token's position and first_position at these offsets (set by the trainer
    # from embodied.agent.tokens; () without spot features).
    spot_features: bool = False
    spot_offsets: tuple[int, ...] = ()
    # explicit: anchor features, geometry relative to the node last acted on (the most recent of the
    # action events, embodied.agent.tokens.ACTION_TAGS, in the tokens themselves): per node, whether it
    # is that node, and how near it stands to where that node was first seen and to where it is now
    # (the object a cup just lifted had covered; the block the drawer just opened holds). Offsets set by
    # the trainer: position, first_position, then each action tag's last-event age.
    anchor_features: bool = False
    anchor_offsets: tuple[int, ...] = ()
    # explicit: the last call, what the policy itself just did (a call's outcome shows in memory, e.g. a
    # pick that left nothing held): the skill of the call started last for this goal, how many times in a
    # row it was started (inputs.last_call), and which node it was aimed at.
    last_call_features: bool = False
    # explicit: a second pointer, at the node a call's point is read from when that is not the target (a
    # block placed into a drawer: the point is the drawer as it stands now). A free point within
    # data.WHERE_RADIUS of another node is learned as that node plus a small regressed offset (source
    # "node"); other free points stay regressed.
    where_pointer: bool = False
    where_offsets: tuple[int, ...] = ()  # where a token keeps its position (set by the trainer)
    # explicit: first-box features, containment at first sight from raw tokens: node i's first spot lies
    # in node j's box set on j's first spot (a block first seen in a drawer, or under a cup). Per node,
    # whether something held it so and whether it held something so; with where_pointer, the relation
    # from the target to each node biases the where pointer. Offsets (first_position, size) set by the trainer.
    first_box_features: bool = False
    first_box_offsets: tuple[int, ...] = ()
    # explicit, with where_pointer: free spots as more places the where pointer may point at. Around the
    # call's target, a grid of candidate table spots (features.free_spots), each described by how clear
    # it is of every node's box now and of every node's first spot; a free point near one is learned as
    # that spot plus an offset (a cup set aside). Offsets (position, size, first_position) set by the trainer.
    free_spots: bool = False
    free_spot_offsets: tuple[int, ...] = ()
    # explicit: goal-hop features, one hop on from the nodes the goal names (features.goal_hops): which
    # nodes share a word with them across slots (the object's room word, a room's name), and which node
    # holds their room centre or holder position. Offsets (position, room_position, holder_position) set
    # by the trainer.
    goal_hop_features: bool = False
    goal_hop_offsets: tuple[int, ...] = ()
    # explicit: where the demonstrating plan's order was arbitrary (calls tagged with units, see
    # embodied.planner.calls.UNIT), any unit's first call counts as right: the skill and target loss is
    # -log of the summed probability of the equally good choices, and the pointer is conditioned on the
    # skill so that a choice's skill and target agree.
    any_order: bool = False
    # Decoding, not training: a call (skill and target) started this many times in a row for the same goal
    # is not chosen again until another call runs; the policy's next likeliest choice is taken instead,
    # as the scripted agent gives up a call after its retries. 0: no limit.
    max_repeats: int = 0
    # none / implicit: camera frames through a small CNN trained from scratch.
    image_size: int = 32
    camera_slots: int = 2  # frames of up to this many cameras per step (missing ones are zeros)
    # implicit: a causal transformer over up to history_len past frames, history_stride steps apart at
    # least; the stride grows so that the window always reaches back to the episode's start.
    history_len: int = 32
    history_stride: int = 4
    history_layers: int = 2
    history_dropout: float = 0.3  # training: fraction of past frames dropped (against copying the past)
    past_decision_weight: float = 0.2  # implicit: loss weight of predicting the previous decision's skill
    # Output vocabulary (embodied.planner.calls.DECISIONS / SOURCES) and the regression statistics.
    decisions: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    xyz_mean: tuple[float, ...] = (0.0, 0.0, 0.0)
    xyz_std: tuple[float, ...] = (1.0, 1.0, 1.0)
    extra: dict = field(default_factory=dict)  # free notes (what the data was), never read by the model

    def validate(self) -> None:
        if self.memory not in MEMORIES:
            raise ValueError(f"memory must be one of {', '.join(MEMORIES)}, got {self.memory!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} must be a multiple of n_heads {self.n_heads}")
        if not 1 <= self.history_len <= 256:
            raise ValueError(f"history_len must be in 1..256, got {self.history_len}")
        if self.history_stride < 1:
            raise ValueError(f"history_stride must be >= 1, got {self.history_stride}")
        if self.spot_features and (self.memory != "explicit" or len(self.spot_offsets) != 2):
            raise ValueError("spot_features is for the explicit policy and needs spot_offsets (position, "
                             f"first_position), got memory {self.memory!r} and offsets {self.spot_offsets}")
        if self.anchor_features and (self.memory != "explicit" or len(self.anchor_offsets) < 3):
            raise ValueError("anchor_features is for the explicit policy and needs anchor_offsets (position, "
                             f"first_position, event ages), got memory {self.memory!r} and {self.anchor_offsets}")
        if self.last_call_features and self.memory != "explicit":
            raise ValueError(f"last_call_features is for the explicit policy, not {self.memory!r} (the other "
                             "inputs see no past decision, against copying it)")
        if self.first_box_features and (self.memory != "explicit" or len(self.first_box_offsets) != 2):
            raise ValueError("first_box_features is for the explicit policy and needs first_box_offsets "
                             f"(first_position, size), got memory {self.memory!r} and {self.first_box_offsets}")
        if self.where_pointer and (self.memory != "explicit" or len(self.where_offsets) != 1):
            raise ValueError("where_pointer is for the explicit policy (it points at nodes) and needs where_offsets "
                             f"(position), got memory {self.memory!r} and {self.where_offsets}")
        if self.free_spots and (not self.where_pointer or len(self.free_spot_offsets) != 3):
            raise ValueError("free_spots extends the where pointer (set where_pointer too) and needs "
                             f"free_spot_offsets (position, size, first_position), got {self.free_spot_offsets}")
        if self.goal_hop_features and (self.memory != "explicit" or len(self.goal_hop_offsets) != 3):
            raise ValueError("goal_hop_features is for the explicit policy and needs goal_hop_offsets (position, "
                             f"room_position, holder_position), got memory {self.memory!r} and {self.goal_hop_offsets}")
        if self.any_order and self.memory != "explicit":
            raise ValueError(f"any_order is for the explicit policy (it points at nodes), not {self.memory!r}")
        if self.max_repeats < 0:
            raise ValueError(f"max_repeats must be >= 0 (0: no limit), got {self.max_repeats}")
        if self.image_size % 16:
            raise ValueError(f"image_size must be a multiple of 16, got {self.image_size}")
