"""A learned decider: the high-level policy (:mod:`policies.memory_policy`) choosing each next call.

    decider = LearnedDecider(policy)                 # a trained MemoryPolicy
    agent = MemoryAgent(labels, config, skills=heads, decider=decider)

The agent asks when its goal text changes and whenever its running call ends,
as it does when it plans (:mod:`embodied.agent.decisions`). The decider turns
what the policy says into a :class:`SkillCall`:

    explicit   the target is the node pointed at; the point is that node's position now, where it
               was first seen, another node's position plus an offset (``where_pointer``: the
               drawer a block goes into), a free spot near the target plus an offset (``free_spots``: a
               cup set aside) or the regressed point (``source``); the box size is the node's;
               a room node makes a room goal, a first-seen point a "when first" one
    none,      no nodes: the regressed point and box size
    implicit
    stop       no call (None): nothing more to do for this goal

The none and implicit inputs are camera frames: every step's frames are kept
(area-resized to the policy's image size, uint8) for the implicit history.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from embodied.agent.tokens import (
    TOKEN_DIM,
    TOKEN_KINDS,
    anchor_offsets,
    field_slice,
    first_box_offsets,
    free_spot_offsets,
    node_tokens,
    spot_offsets,
)
from embodied.planner.calls import SkillCall
from policies.memory_policy.inputs import frames_tensor, history_indices, last_call, node_word_ids
from policies.memory_policy.inputs import pad_state, word_ids, words


class LearnedDecider:
    def __init__(self, policy):
        self.policy = policy.eval()
        c = policy.config
        self.config = c
        self.index = {w: i for i, w in enumerate(c.vocab)}
        self.cameras: dict[str, list[str]] = dict(c.extra.get("cameras", {}))
        if c.memory == "explicit":  # the policy reads tokens as they were laid out when it was trained
            spots, anchors = spot_offsets(), anchor_offsets()
            if c.token_dim != TOKEN_DIM or (c.spot_features and tuple(c.spot_offsets) != spots) \
                    or (c.anchor_features and tuple(c.anchor_offsets) != anchors) \
                    or (c.first_box_features and tuple(c.first_box_offsets) != first_box_offsets()) \
                    or (c.where_pointer and tuple(c.where_offsets) != (field_slice("position").start,)) \
                    or (c.free_spots and tuple(c.free_spot_offsets) != free_spot_offsets()):
                raise ValueError(f"this explicit policy was trained on node tokens of width {c.token_dim} "
                                 f"(spot offsets {tuple(c.spot_offsets)}, anchor offsets "
                                 f"{tuple(c.anchor_offsets)}); embodied.agent.tokens now makes width "
                                 f"{TOKEN_DIM} (offsets {spots}, {anchors}): retrain it")
        self.reset()

    def reset(self) -> None:
        self.frames: list[np.ndarray] = []  # per step: (C, 3, s, s) uint8
        self.last: dict | None = None  # the latest decision's inputs and answer (for reports and tests)
        self.goal: str | None = None
        self.started: list[tuple[str, str]] = []  # (skill, target id) of the calls started for this goal
        self._appended = False  # the latest decision added its call to started

    # --- inputs -------------------------------------------------------------------
    def observe(self, obs: dict[str, Any], t: int) -> None:
        """Keep this step's camera frames (none: only the latest; implicit: every step)."""
        c = self.config
        if c.memory == "explicit":
            return
        cams = self.cameras.get(str(np.asarray(obs["proprio"]).shape[0]), [])
        s = c.image_size
        step = np.zeros((c.camera_slots, 3, s, s), np.uint8)
        for slot, cam in enumerate(cams[: c.camera_slots]):
            key = f"rgb/{cam}"
            if key not in obs:
                raise ValueError(f"the {c.memory} policy needs camera {cam!r}: the observation has no {key!r}")
            step[slot] = frames_tensor(obs[key], s).mul(255).round().to(torch.uint8).numpy()
        if c.memory == "none":
            self.frames = [step]
        else:
            self.frames.extend([step] * (t + 1 - len(self.frames)))  # a step never observed repeats the last
            self.frames = self.frames[: t + 1]

    def _batch(self, goal: str, memory, obs: dict, t: int) -> tuple[dict[str, torch.Tensor], Any]:
        c = self.config
        ids, mask = word_ids(words(goal), self.index, c.max_goal_words)
        batch = {"goal_ids": torch.from_numpy(ids)[None], "goal_mask": torch.from_numpy(mask)[None],
                 "state": torch.from_numpy(pad_state(obs["proprio"], c.state_dim))[None]}
        tokens = None
        if c.memory == "explicit":
            tokens = node_tokens(memory, c.max_nodes)
            n = max(len(tokens), 1)
            feats = np.zeros((n, c.token_dim), np.float32)
            feats[: len(tokens)] = tokens.features
            batch.update(tokens=torch.from_numpy(feats)[None],
                         node_words=torch.from_numpy(node_word_ids([list(w) for w in tokens.words], self.index, n,
                                                                   c.word_slots))[None],
                         node_mask=torch.from_numpy(np.arange(n) < len(tokens))[None])
            if c.last_call_features:
                skill, target, repeats = last_call(self.started)
                flag = np.zeros(n, np.float32)
                if target in tokens.ids:
                    flag[tokens.ids.index(target)] = 1.0
                batch.update(last_skill=torch.tensor([c.decisions.index(skill) + 1 if skill else 0]),
                             last_repeats=torch.tensor([repeats], dtype=torch.float32),
                             last_target=torch.from_numpy(flag)[None])
        elif c.memory == "none":
            batch.update(frames=torch.from_numpy(self.frames[-1]).float().div_(255.0)[None],
                         frame_mask=torch.from_numpy(self._slots(obs))[None])
        else:
            steps = history_indices(t, c.history_len, c.history_stride)
            hist = np.stack([self.frames[min(k, len(self.frames) - 1)] for k in steps])
            batch.update(history=torch.from_numpy(hist).float().div_(255.0)[None],
                         history_mask=torch.ones(1, len(steps), dtype=torch.bool),
                         history_age=torch.from_numpy(t - np.asarray(steps, np.float32))[None])
        return batch, tokens

    def _slots(self, obs: dict) -> np.ndarray:
        n = len(self.cameras.get(str(np.asarray(obs["proprio"]).shape[0]), []))
        return np.arange(self.config.camera_slots) < n

    # --- the decision -------------------------------------------------------------
    def decide(self, goal: str, memory, obs: dict[str, Any], t: int) -> SkillCall | None:
        if goal != self.goal:
            self.goal, self.started = goal, []
        batch, tokens = self._batch(goal, memory, obs, t)
        d = self.policy.decide(batch, self._avoid(tokens))
        self.last = {"t": t, "goal": goal, "decision": d}
        self._appended = False
        call = self._call(d, tokens)
        self.ran(call)
        return call

    def _avoid(self, tokens) -> tuple[int, int] | None:
        """(skill index, node index or -1) of the last call if it was started ``max_repeats`` times in a
        row for this goal (the policy then takes its next likeliest choice), else None."""
        n = self.config.max_repeats
        if not n or len(self.started) < n or len(set(self.started[-n:])) != 1:
            return None
        skill, target = self.started[-1]
        if skill not in self.config.decisions or skill == "wait":  # time passing is a wait's effect
            return None
        ids = list(tokens.ids) if tokens is not None else []
        return self.config.decisions.index(skill), ids.index(target) if target in ids else -1

    def ran(self, call: SkillCall | None) -> None:
        """The call that runs after the latest decision (its own, or one put in its place by a
        relabelling decider): the last call the next decision sees."""
        if self._appended:
            self.started.pop()
        self._appended = call is not None
        if call is not None:
            self.started.append((call.skill, call.target))

    def _call(self, d, tokens) -> SkillCall | None:
        """The :class:`SkillCall` of the policy's decision ``d`` over ``tokens`` (None: stop)."""
        if d.skill == "stop":
            return None
        if d.skill == "wait":
            return SkillCall("wait")
        yaw = d.yaw
        if tokens is None or d.target < 0 or d.target >= len(tokens):
            return SkillCall(d.skill, "", tuple(d.xyz), yaw, tuple(d.size), "", {})
        k = d.target
        feats = tokens.features[k]
        kind_room = bool(feats[field_slice("kind")][TOKEN_KINDS.index("room")] > 0.5)
        xyz = {"now": feats[field_slice("position")], "first": tokens.first_xyz[k]}.get(d.source, d.xyz)
        if d.source == "node" and 0 <= d.where < len(tokens):  # read from another node, e.g. a drawer
            xyz = tokens.features[d.where, field_slice("position")] + d.offset
        cls, colour, name = tokens.words[k][:3]
        extra: dict = {}
        if kind_room:
            extra["room"] = True
        if d.source == "first":
            extra["when"] = "first"
        note = f"{colour} {cls}".strip() if not kind_room else (name or tokens.ids[k])
        return SkillCall(d.skill, tokens.ids[k], tuple(float(v) for v in xyz), yaw,
                         tuple(float(v) for v in feats[field_slice("size")]), note, extra)
