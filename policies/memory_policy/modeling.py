"""The learned high-level policy: one trunk, three interchangeable memory inputs.

    policy = MemoryPolicy(config, stats)
    losses = policy(batch)                 # {"loss", "skill", "pointer", ...} (training)
    d = policy.decide(batch_of_one)        # Decision: skill, target node, point source, parameters

Batch (B decision points; shapes; every key a tensor):

    goal_ids, goal_mask     (B, G) int64 / bool    the goal's words (policies.memory_policy.inputs)
    state                   (B, S + 1) float32     proprio padded to S (config.state_dim) + its fill fraction
    explicit:  tokens       (B, N, F) float32      memory node tokens (embodied.agent.tokens)
               node_words   (B, N, W) int64        each node's words (class, colour, names, shown colour)
               node_mask    (B, N) bool
               where_pointer: where (B,) int64 (the node a point is read from, -1 none), offset (B, 3) m
               last_call_features: last_skill (B,) int64 (0 none, else 1 + the index in decisions),
               last_repeats (B,) float32 (inputs.last_call), last_target (B, N) float32 (1 at its node)
    none:      frames       (B, C, 3, s, s)        the current camera frames, [0, 1]
               frame_mask   (B, C) bool            which camera slots hold a camera
    implicit:  history      (B, L, C, 3, s, s)     past frames, oldest first up to the current one (age 0),
                                                   then padding
               history_mask (B, L) bool            which history slots hold a frame (a prefix)
               history_age  (B, L) float32         steps before the decision
    labels:    skill, target, source, prev_skill (B,) int64; params (B, 8) float32 (SkillCall.params)
               any_order: alt_skill, alt_target (B, A) int64, the equally good choices (-1 pads)

The trunk is a transformer encoder over [decision token, goal words, proprio,
memory tokens]. The decision token's output chooses the skill (or stop). The
explicit policy chooses the call's target by pointing at a node token, and
reads its point from that node (now, or where first seen) or regresses it
(``source``); the other two regress the point and the box size. The implicit
history runs through its own causal transformer first. Against copying past
decisions (the history-conditioned imitation failure) the implicit policy sees
no past decisions at all, drops a fraction of its past frames in training,
and learns to predict the previous decision's skill from the history
(past-token prediction, as an auxiliary loss); the past frames it drops are
left out when batches are built (:mod:`policies.memory_policy.data`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from policies.memory_policy.configuration import MemoryPolicyConfig
from policies.memory_policy.features import FREE_FEATURES, SPOT_SCALES, anchor_features, first_inside, free_spots
from policies.memory_policy.features import goal_hops, spot_features, word_matches

TYPES = ("decision", "goal", "state", "node", "frame")


@dataclass
class Decision:
    skill: str
    target: int  # node index (explicit), -1 none
    source: str  # now | first | free
    xyz: np.ndarray  # (3,) m, the regressed point (used when source is free, or without nodes)
    yaw: float  # rad; NaN when the call has none
    size: np.ndarray  # (3,) m, the regressed box size (used without nodes)
    skill_prob: float
    where: int = -1  # source "node": the node index the point is read from
    offset: np.ndarray | None = None  # (3,) m, source "node": added to that node's position


class FrameEncoder(nn.Module):
    """(N, 3, s, s) -> (N, d): four stride-2 convolutions, trained from scratch."""

    def __init__(self, image_size: int, d: int):
        super().__init__()
        chans = (3, 16, 32, 64, 64)
        layers: list[nn.Module] = []
        for a, b in itertools.pairwise(chans):
            layers += [nn.Conv2d(a, b, 3, stride=2, padding=1), nn.GroupNorm(8 if b >= 16 else 1, b), nn.SiLU()]
        self.net = nn.Sequential(*layers)
        self.out = nn.Linear(64 * (image_size // 16) ** 2, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.net(x).flatten(1))


OFFSET_SCALE = 0.05  # m: where_pointer offsets are regressed in these units


def _encoder(d: int, heads: int, layers: int, dropout: float) -> nn.TransformerEncoder:
    layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout, batch_first=True, norm_first=True)
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


class MemoryPolicy(nn.Module):
    name = "memory"

    def __init__(self, config: MemoryPolicyConfig, stats: dict[str, dict[str, list[float]]]):
        super().__init__()
        config.validate()
        self.config = c = config
        d = c.d_model
        n_dec = len(c.decisions)
        if not n_dec or not c.sources or len(c.vocab) < 2:
            raise ValueError("MemoryPolicyConfig needs its decisions, sources and vocab (set from the data)")
        self.stop = c.decisions.index("stop")
        self.word = nn.Embedding(len(c.vocab), d, padding_idx=0)
        self.goal_pos = nn.Parameter(torch.randn(c.max_goal_words, d) * 0.02)
        self.kinds = nn.Parameter(torch.randn(len(TYPES), d) * 0.02)
        self.state_in = nn.Linear(c.state_dim + 1, d)
        for key in ("state", "tokens"):
            s = stats.get(key, {})
            width = c.state_dim + 1 if key == "state" else max(c.token_dim, 1)
            mean = torch.tensor(s.get("mean", [0.0] * width), dtype=torch.float32)
            std = torch.tensor(s.get("std", [1.0] * width), dtype=torch.float32).clamp_min(1e-3)
            self.register_buffer(f"{key}_mean", mean)
            self.register_buffer(f"{key}_std", std)
        self.register_buffer("xyz_mean", torch.tensor(c.xyz_mean, dtype=torch.float32))
        self.register_buffer("xyz_std", torch.tensor(c.xyz_std, dtype=torch.float32).clamp_min(1e-3))
        if c.memory == "explicit":
            if c.token_dim < 1:
                raise ValueError("the explicit policy needs token_dim (set from the data)")
            self.node_in = nn.Sequential(nn.Linear(c.token_dim, d), nn.SiLU(), nn.Linear(d, d))
            self.node_words = nn.Linear(c.word_slots * d, d)  # each word slot its own map (a colour shown != worn)
            # Which of a node's words another node has in some slot, or the goal names (see _matches).
            self.matches = nn.Linear(c.word_slots * c.word_slots + c.word_slots, d)
            if c.spot_features:
                self.spots = nn.Linear(3 * len(SPOT_SCALES), d)
            if c.anchor_features:
                self.anchor = nn.Linear(1 + 3 * len(SPOT_SCALES), d)
            if c.where_pointer:
                self.where_query, self.where_key = nn.Linear(d, d), nn.Linear(d, d)
            if c.first_box_features:
                self.first_box = nn.Linear(2, d)
                self.where_inside = nn.Parameter(torch.zeros(1))  # the where pointer's bias (with where_pointer)
            if c.goal_hop_features:
                self.hops = nn.Linear(c.word_slots * c.word_slots + 2, d)
            if c.free_spots:  # candidate spots, as keys of the where pointer beside the nodes
                self.free_in = nn.Sequential(nn.Linear(FREE_FEATURES, d), nn.SiLU(), nn.Linear(d, d))
            if c.last_call_features:
                self.last_skill = nn.Embedding(n_dec + 1, d)
                self.last_repeats = nn.Linear(1, d)
                self.last_target = nn.Linear(1, d)
        else:
            self.frames = FrameEncoder(c.image_size, d)
            self.camera = nn.Parameter(torch.randn(c.camera_slots, d) * 0.02)
            if c.memory == "implicit":
                self.age_in = nn.Linear(2, d)
                self.history = _encoder(d, c.n_heads, c.history_layers, c.dropout)
                self.past = nn.Linear(d, n_dec + 1)  # the previous decision's skill, or none yet
        self.trunk = _encoder(d, c.n_heads, c.n_layers, c.dropout)
        self.norm = nn.LayerNorm(d)
        self.skill_head = nn.Linear(d, n_dec)
        self.query, self.key = nn.Linear(d, d), nn.Linear(d, d)
        self.skill_emb = nn.Embedding(n_dec, d)
        width = len(c.sources) + 9 + (3 if c.where_pointer else 0)  # + the where offset
        self.call_head = nn.Sequential(nn.Linear(3 * d, 2 * d), nn.SiLU(), nn.Linear(2 * d, width))

    # --- memory tokens ------------------------------------------------------------
    def _memory(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, M, d) memory tokens and their (B, M) validity."""
        c = self.config
        t = self.kinds
        if c.memory == "explicit":
            x = (batch["tokens"] - self.tokens_mean) / self.tokens_std
            words = self.node_words(self.word(batch["node_words"]).flatten(2))
            matches = self.matches(word_matches(batch["node_words"], batch["node_mask"], batch["goal_ids"]))
            if c.spot_features:
                matches = matches + self.spots(spot_features(batch["tokens"], batch["node_mask"], c.spot_offsets))
            if c.anchor_features:
                matches = matches + self.anchor(anchor_features(batch["tokens"], batch["node_mask"], c.anchor_offsets))
            if c.last_call_features:
                matches = matches + self.last_target(batch["last_target"].unsqueeze(-1))
            if c.first_box_features:
                inside = first_inside(batch["tokens"], batch["node_mask"], c.first_box_offsets).float()
                matches = matches + self.first_box(torch.stack([inside.amax(2), inside.amax(1)], -1))
            if c.goal_hop_features:
                matches = matches + self.hops(goal_hops(batch["node_words"], batch["node_mask"], batch["goal_ids"],
                                                        batch["tokens"], c.goal_hop_offsets))
            return self.node_in(x) + words + matches + t[3], batch["node_mask"]
        if c.memory == "none":
            f = batch["frames"]  # (B, C, 3, s, s)
            b, cams = f.shape[:2]
            z = self.frames(f.flatten(0, 1)).view(b, cams, -1) + self.camera[:cams] + t[4]
            return z, batch["frame_mask"]
        h = batch["history"]  # (B, L, C, 3, s, s)
        b, length, cams = h.shape[:3]
        valid = batch["history_mask"]  # a prefix: padding after the current frame, so no query sees none
        z = h.new_zeros(b * length, cams, c.d_model)
        kept = valid.flatten()
        z[kept] = self.frames(h.flatten(0, 1)[kept].flatten(0, 1)).view(-1, cams, c.d_model)  # padding skips the CNN
        z = (z.view(b, length, cams, -1) + self.camera[:cams]).sum(2)  # one token per step: its cameras summed
        age = batch["history_age"].float()
        z = z + self.age_in(torch.stack([age / 500.0, torch.log1p(age) / 8.0], -1)) + t[4]
        causal = torch.triu(torch.ones(length, length, dtype=torch.bool, device=z.device), 1)
        z = self.history(z, mask=causal, src_key_padding_mask=~valid)
        return z, valid

    def _encode(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(decision token (B, d), memory outputs (B, M, d), memory validity (B, M))."""
        c, t = self.config, self.kinds
        b = batch["goal_ids"].shape[0]
        goal = self.word(batch["goal_ids"]) + self.goal_pos[: batch["goal_ids"].shape[1]] + t[1]
        state = self.state_in((batch["state"] - self.state_mean) / self.state_std).unsqueeze(1) + t[2]
        if c.memory == "explicit" and c.last_call_features:
            last = self.last_skill(batch["last_skill"]) + self.last_repeats(batch["last_repeats"].unsqueeze(-1))
            state = state + last.unsqueeze(1)
        mem, valid = self._memory(batch)
        head = t[0].expand(b, 1, c.d_model)
        x = torch.cat([head, goal, state, mem], 1)
        ones = torch.ones(b, 1, dtype=torch.bool, device=x.device)
        keep = torch.cat([ones, batch["goal_mask"], ones, valid], 1)
        h = self.norm(self.trunk(x, src_key_padding_mask=~keep))
        m = mem.shape[1]
        return h[:, 0], h[:, -m:], valid

    def _pointer(self, hc: torch.Tensor, hm: torch.Tensor, valid: torch.Tensor,
                 skill: torch.Tensor | None = None) -> torch.Tensor:
        """(B, N) node logits; with ``any_order``, given the skill (B,) or for each of (B, A) skills: (B, A, N)."""
        q = hc
        if self.config.any_order and skill is not None:
            emb = self.skill_emb(skill.clamp_min(0))
            q = hc.unsqueeze(1) + emb if skill.dim() == 2 else hc + emb
        k = self.key(hm)
        if q.dim() == 3:
            logits = torch.einsum("bad,bnd->ban", self.query(q), k) / math.sqrt(hc.shape[-1])
            return logits.masked_fill(~valid.unsqueeze(1), -1e9)
        logits = torch.einsum("bd,bnd->bn", self.query(q), k) / math.sqrt(hc.shape[-1])
        return logits.masked_fill(~valid, -1e9)

    def _choice_loss(self, hc: torch.Tensor, hm: torch.Tensor, valid: torch.Tensor, alt_skill: torch.Tensor,
                     alt_target: torch.Tensor) -> torch.Tensor:
        """-log P(any of the equally good (skill, target) choices): alt_* (B, A), -1 pads, column 0 the
        recorded choice (target -1: the skill points at nothing)."""
        lp = F.log_softmax(self.skill_head(hc), -1).gather(1, alt_skill.clamp_min(0))
        node = F.log_softmax(self._pointer(hc, hm, valid, alt_skill), -1)
        node = node.gather(2, alt_target.clamp_min(0).unsqueeze(-1)).squeeze(-1)
        pointed = (alt_target >= 0) & (alt_skill != self.stop)
        lp = (lp + torch.where(pointed, node, torch.zeros_like(node))).masked_fill(alt_skill < 0, -math.inf)
        return -torch.logsumexp(lp, 1).mean()

    def _picked(self, hc: torch.Tensor, hm: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """(B, d): the target node's output (zeros where there is none)."""
        if self.config.memory != "explicit":
            return torch.zeros_like(hc)
        return hm[torch.arange(hm.shape[0]), target.clamp_min(0)] * (target >= 0).unsqueeze(-1)

    def _call(self, hc: torch.Tensor, hm: torch.Tensor, skill: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """(B, n_sources + 9 [+ 3]): source logits, xyz (normalised), cos/sin yaw, has-yaw logit, size (m)
        [, where_pointer: the offset from the where node, / OFFSET_SCALE]."""
        return self.call_head(torch.cat([hc, self._picked(hc, hm, target), self.skill_emb(skill)], -1))

    def _where(self, hc: torch.Tensor, hm: torch.Tensor, valid: torch.Tensor, skill: torch.Tensor,
               target: torch.Tensor, tokens: torch.Tensor | None = None) -> torch.Tensor:
        """(B, N [+ S]) logits of the node a call's point is read from, given its skill and target (and the
        raw tokens, for the first-box bias); with ``free_spots``, then of each candidate spot around the
        target (features.free_spots; none without a target)."""
        q = self.where_query(hc + self.skill_emb(skill) + self._picked(hc, hm, target))
        logits = torch.einsum("bd,bnd->bn", q, self.where_key(hm)) / math.sqrt(hc.shape[-1])
        if self.config.first_box_features and tokens is not None:  # the boxes the target was first seen in
            rows = torch.arange(hc.shape[0], device=hc.device)
            held = first_inside(tokens, valid, self.config.first_box_offsets)[rows, target.clamp_min(0)]
            logits = logits + self.where_inside * (held & (target >= 0)[:, None]).float()
        logits = logits.masked_fill(~valid, -1e9)
        if self.config.free_spots and tokens is not None:
            _, feats = free_spots(tokens, valid, target, self.config.free_spot_offsets)
            spot = torch.einsum("bd,bsd->bs", q, self.where_key(self.free_in(feats))) / math.sqrt(hc.shape[-1])
            logits = torch.cat([logits, spot.masked_fill((target < 0)[:, None], -1e9)], 1)
        return logits

    # --- training -------------------------------------------------------------------
    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        c = self.config
        hc, hm, valid = self._encode(batch)
        skill, target, source = batch["skill"], batch["target"], batch["source"]
        acting = skill != self.stop
        explicit = c.memory == "explicit"
        pointed = acting & (target >= 0) if explicit else torch.zeros_like(acting)
        zero = hc.sum() * 0
        if c.any_order:  # skill and target scored together, over the equally good choices
            out = {"skill": self._choice_loss(hc, hm, valid, batch["alt_skill"], batch["alt_target"]),
                   "pointer": zero}
        else:
            out = {"skill": F.cross_entropy(self.skill_head(hc), skill)}
            if pointed.any():
                out["pointer"] = F.cross_entropy(self._pointer(hc, hm, valid)[pointed], target[pointed])
            else:
                out["pointer"] = zero
        call = self._call(hc, hm, skill, target if explicit else torch.full_like(target, -1))
        ns = len(c.sources)
        params = batch["params"]
        free = acting & ~pointed | (pointed & (source == c.sources.index("free")))
        out["source"] = F.cross_entropy(call[pointed, :ns], source[pointed]) if pointed.any() else zero
        xyz = (params[:, :3] - self.xyz_mean) / self.xyz_std
        out["xyz"] = F.smooth_l1_loss(call[free, ns:ns + 3], xyz[free]) if free.any() else zero
        has_yaw = params[:, 7] > 0.5
        out["has_yaw"] = F.binary_cross_entropy_with_logits(call[acting, ns + 5], has_yaw[acting].float()) \
            if acting.any() else zero
        yawed = acting & has_yaw
        if yawed.any():
            want = torch.stack([torch.cos(params[:, 3]), torch.sin(params[:, 3])], -1)
            out["yaw"] = F.mse_loss(call[yawed, ns + 3:ns + 5], want[yawed])
        else:
            out["yaw"] = zero
        sized = acting & ~pointed
        out["size"] = F.smooth_l1_loss(call[sized, ns + 6:ns + 9] * 10, params[sized, 4:7] * 10) if sized.any() else zero
        loss = out["skill"] + out["pointer"] + out["source"] + out["xyz"] + out["has_yaw"] + out["yaw"] + out["size"]
        if c.where_pointer:
            at = pointed & (batch["where"] >= 0)
            if at.any():
                where = self._where(hc, hm, valid, skill, target, batch["tokens"])
                out["where"] = F.cross_entropy(where[at], batch["where"][at])
                off = call[at, ns + 9:ns + 12]
                out["offset"] = F.smooth_l1_loss(off, batch["offset"][at] / OFFSET_SCALE)
            else:
                out["where"] = out["offset"] = zero
            loss = loss + out["where"] + out["offset"]
        if c.memory == "implicit" and c.past_decision_weight > 0:
            earlier = (valid & (batch["history_age"] > 0)).float().unsqueeze(-1)
            past = self.past((hm * earlier).sum(1) / earlier.sum(1).clamp_min(1.0))
            out["past"] = F.cross_entropy(past, batch["prev_skill"] + 1)
            loss = loss + c.past_decision_weight * out["past"]
        out["loss"] = loss
        return out

    # --- inference ------------------------------------------------------------------
    @torch.no_grad()
    def decide(self, batch: dict[str, torch.Tensor], avoid: tuple[int, int] | None = None) -> Decision:
        """The decision for a batch of one decision point; never ``avoid`` = (skill index, node index or -1)
        (the likeliest other choice: the next node for that skill, else the next skill)."""
        c = self.config
        hc, hm, valid = self._encode(batch)
        probs = self.skill_head(hc).softmax(-1)[0]
        for k in probs.argsort(descending=True).tolist():
            skill, target = torch.tensor([k]), torch.tensor([-1])
            if c.memory == "explicit" and bool(valid.any()) and k != self.stop:
                logits = self._pointer(hc, hm, valid, skill)
                if avoid is not None and avoid[0] == k and avoid[1] >= 0:
                    logits[0, avoid[1]] = -math.inf
                if not bool((logits > -1e9).any()):  # every node avoided or padding
                    continue
                target = logits.argmax(-1)
            if avoid is None or (k, int(target)) != tuple(avoid):
                break
        call = self._call(hc, hm, skill, target)[0]
        ns = len(c.sources)
        source = c.sources[int(call[:ns].argmax())] if int(target) >= 0 else "free"
        xyz = (call[ns:ns + 3] * self.xyz_std + self.xyz_mean).numpy().astype(np.float64)
        yaw = float(torch.atan2(call[ns + 4], call[ns + 3])) if float(call[ns + 5]) > 0 else math.nan
        size = call[ns + 6:ns + 9].clamp_min(0).numpy().astype(np.float64)
        where, offset = -1, None
        if source == "node":
            where = int(self._where(hc, hm, valid, skill, target, batch["tokens"]).argmax(-1))
            offset = (call[ns + 9:ns + 12] * OFFSET_SCALE).numpy().astype(np.float64)
            n = batch["tokens"].shape[1]
            if where >= n:  # a free spot: the point is that spot plus the offset
                spots, _ = free_spots(batch["tokens"], valid, target, c.free_spot_offsets)
                xyz, where = spots[0, where - n].numpy().astype(np.float64) + offset, -1
        return Decision(c.decisions[k], int(target), source, xyz, yaw, size, float(probs[k]), where, offset)
