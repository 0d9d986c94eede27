"""Copy features of the explicit policy, computed from raw node tokens and word ids (nothing here knows a task).

    word_matches(words, mask, goal)          (B, N, W*W + W)  words shared between nodes, and named by the goal
    spot_features(tokens, mask, offsets)     (B, N, 3 * len(SPOT_SCALES))  nodes against first-seen spots
    anchor_features(tokens, mask, offsets)   (B, N, 1 + 3 * len(SPOT_SCALES))  nodes against the last acted on
    first_inside(tokens, mask, offsets)      (B, N, N) bool  what held what when first seen
    goal_hops(words, mask, goal, tokens, offsets) (B, N, W*W + 2)  what the nodes the goal names point at
    free_spots(tokens, mask, target, offsets) (B, S, 3) m, (B, S, FREE_FEATURES)  candidate spots near the target

Token offsets are set by the trainer from embodied.agent.tokens and kept in the policy's configuration.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def word_matches(words: torch.Tensor, mask: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
    """(B, N, W*W + W) float: for each node, slot pair (a, b), whether another node has this node's word of
    slot a in its slot b (a colour one node wears and another showed; a class two nodes share), and per
    slot whether the goal's words name it. Words are compared as ids; padding and unknown words match
    nothing. Copy features of a pointer network, over generic word slots: nothing here knows a task."""
    b, n, w = words.shape
    cross = _shared_words(words, mask).any(2).reshape(b, n, w * w)
    return torch.cat([cross, _goal_named(words, mask, goal)], -1).float()


def _shared_words(words: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, N, N, W, W) bool: [j, i, a, b] when node j's word of slot a is node i's word of slot b (i != j,
    known words only)."""
    known = (words > 1) & mask.unsqueeze(-1)  # (B, N, W)
    eq = words[:, :, None, :, None] == words[:, None, :, None, :]
    eq &= known[:, :, None, :, None] & known[:, None, :, None, :]
    return eq & ~torch.eye(words.shape[1], dtype=torch.bool, device=words.device)[None, :, :, None, None]


def _goal_named(words: torch.Tensor, mask: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
    """(B, N, W) bool: which of each node's (known) words the goal's words name."""
    known = (words > 1) & mask.unsqueeze(-1)
    return ((words[..., None] == goal[:, None, None, :]) & known[..., None] & (goal > 1)[:, None, None, :]).any(-1)


SPOT_SCALES = (0.02, 0.05, 0.12)  # m: what counts as "at" a spot, softly, at three scales


def spot_features(tokens: torch.Tensor, mask: torch.Tensor, offsets: tuple[int, ...]) -> torch.Tensor:
    """(B, N, 3 * len(SPOT_SCALES)) float, from raw tokens (metres): per node, exp(-d / scale) of d =
    (a) its xy distance from where it was first seen, (b) the nearest other node's xy distance to that
    first spot (something stands where it was), (c) its own xy distance to the nearest other node's first
    spot (it stands where something was). Geometry between any nodes: nothing here knows a task."""
    pos = tokens[..., offsets[0]: offsets[0] + 2]
    first = tokens[..., offsets[1]: offsets[1] + 2]
    n = tokens.shape[1]
    cross = torch.cdist(first, pos)  # (B, N, N): node i's first spot to node j now
    far = ~mask[:, None, :] | ~mask[:, :, None] | torch.eye(n, dtype=torch.bool, device=tokens.device)[None]
    cross = cross.masked_fill(far, 1e3)
    d = torch.stack([(pos - first).norm(dim=-1), cross.amin(2), cross.amin(1)], -1)  # (B, N, 3)
    scales = torch.tensor(SPOT_SCALES, dtype=tokens.dtype, device=tokens.device)
    return torch.exp(-d[..., None] / scales).flatten(2) * mask[..., None]


NEVER = 3.99  # a token's event age at or above this (MAX_AGE, 4): no such event, or long ago


def anchor_features(tokens: torch.Tensor, mask: torch.Tensor, offsets: tuple[int, ...]) -> torch.Tensor:
    """(B, N, 1 + 3 * len(SPOT_SCALES)) float, from raw tokens: the anchor is the node whose latest action
    event (ages at ``offsets[2:]``) is the most recent; per node, whether it is the anchor, and exp(-d /
    scale) of d = its xy distance now to the anchor's first spot, to the anchor now, and from its own first
    spot to the anchor now. All zeros when no node has an action event. Nothing here knows a task."""
    pos = tokens[..., offsets[0]: offsets[0] + 2]
    first = tokens[..., offsets[1]: offsets[1] + 2]
    ages = torch.stack([tokens[..., o] for o in offsets[2:]], -1).amin(-1).masked_fill(~mask, 1e3)
    best, k = ages.min(1)
    live = (best < NEVER)[:, None] & mask  # (B, N)
    rows = torch.arange(tokens.shape[0], device=tokens.device)
    at, was = pos[rows, k].unsqueeze(1), first[rows, k].unsqueeze(1)
    d = torch.stack([(pos - was).norm(dim=-1), (pos - at).norm(dim=-1), (first - at).norm(dim=-1)], -1)
    scales = torch.tensor(SPOT_SCALES, dtype=tokens.dtype, device=tokens.device)
    near = torch.exp(-d[..., None] / scales).flatten(2)
    is_anchor = F.one_hot(k, tokens.shape[1]).to(tokens.dtype).unsqueeze(-1)
    return torch.cat([is_anchor, near], -1) * live.unsqueeze(-1)


FIRST_BOX_MARGIN = 0.01  # m around a box
FIRST_BOX_MAX_AREA = 0.05  # m^2 (xy): larger boxes (the table) hold nothing in this sense


def first_inside(tokens: torch.Tensor, mask: torch.Tensor, offsets: tuple[int, ...]) -> torch.Tensor:
    """(B, N, N) bool from raw tokens: [i, j] when node i's first spot (xy) lies within node j's box (its
    size now, plus a margin) set on j's first spot; j != i, j no larger than FIRST_BOX_MAX_AREA. What held
    what when first seen, from geometry alone (a drawer that slid open since still counts)."""
    first = tokens[..., offsets[0]: offsets[0] + 2]
    half = tokens[..., offsets[1]: offsets[1] + 2] / 2 + FIRST_BOX_MARGIN
    gap = (first[:, :, None, :] - first[:, None, :, :]).abs()  # (B, N, N, 2)
    inside = (gap <= half[:, None, :, :]).all(-1)
    small = tokens[..., offsets[1]] * tokens[..., offsets[1] + 1] <= FIRST_BOX_MAX_AREA
    n = tokens.shape[1]
    ok = mask[:, :, None] & (mask & small)[:, None, :] & ~torch.eye(n, dtype=torch.bool, device=tokens.device)[None]
    return inside & ok


HOP_SCALES = (0.5, 0.05)  # m: a room's centre, a holder's position, against a node's position


def goal_hops(words: torch.Tensor, mask: torch.Tensor, goal: torch.Tensor, tokens: torch.Tensor,
              offsets: tuple[int, ...]) -> torch.Tensor:
    """(B, N, W*W + 2) float, one hop on from the nodes the goal names. Each node i is weighted by how many
    of its words the goal names, relative to the best-named node (g_i in [0, 1]). Per node j: for each
    slot pair (a, b), the largest g_i over other nodes i whose word of slot b is j's word of slot a (the
    room word of the object the goal names is this room's name); then the largest g_i * exp(-d / scale)
    of d = the xy distance from i's room centre, and from i's holder, to j's position (HOP_SCALES).
    Offsets: position, room_position, holder_position. Generic relations only: nothing here knows a task."""
    b, n, w = words.shape
    count = _goal_named(words, mask, goal).sum(-1).to(tokens.dtype)  # (B, N)
    g = count / count.amax(1, keepdim=True).clamp_min(1.0)
    eq = _shared_words(words, mask)  # (B, j, i, a, b)
    word_hop = (eq.to(tokens.dtype) * g[:, None, :, None, None]).amax(2).reshape(b, n, w * w)
    pos = tokens[..., offsets[0]: offsets[0] + 2]
    near = []
    for o, scale in zip(offsets[1:], HOP_SCALES):
        at = tokens[..., o: o + 2]  # (B, N, 2): where node i's room centre / holder is; zeros: none
        has = mask & (at.abs().sum(-1) > 0)
        d = torch.cdist(pos, at)  # (B, j, i)
        w_ij = torch.exp(-d / scale) * g[:, None, :] * has[:, None, :]
        w_ij = w_ij.masked_fill(torch.eye(n, dtype=torch.bool, device=tokens.device)[None], 0.0)
        near.append(w_ij.amax(2))
    return torch.cat([word_hop, torch.stack(near, -1)], -1) * mask.unsqueeze(-1)


FREE_STEP, FREE_REACH = 0.03, 0.24  # m: candidate spots every FREE_STEP within FREE_REACH of the target (each axis)
FREE_SCALES = (0.03, 0.06, 0.09, 0.12)  # m: how clear a spot is, softly
FREE_MAX_AREA = 0.2  # m^2 (xy): larger boxes (the table, a room) are what spots stand on, not obstacles
_FREE_GRID = torch.arange(-FREE_REACH, FREE_REACH + 1e-6, FREE_STEP)
FREE_OFFSETS = torch.cartesian_prod(_FREE_GRID, _FREE_GRID)  # (S, 2) m
FREE_FEATURES = 2 + 2 + 1 + 2 * len(FREE_SCALES)


def free_spots(tokens: torch.Tensor, mask: torch.Tensor, target: torch.Tensor,
               offsets: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """Candidate spots around each row's target node (B,) and what a policy needs to choose one: (B, S, 3)
    m, on the xy grid FREE_OFFSETS around the target at the target's height, and (B, S, FREE_FEATURES):
    the offset / FREE_REACH, the spot's absolute xy, its distance to the target, and exp(-d / scale) of
    d = its xy distance to the nearest other node's box now (boxes no larger than FREE_MAX_AREA) and to the
    nearest node's first spot. Offsets: position, size, first_position. A row without a target (-1) gets
    the spots of node 0 (callers mask them). Free space from the nodes alone: nothing here knows a task."""
    p, s, f = offsets
    pos, size, first = tokens[..., p:p + 3], tokens[..., s:s + 3], tokens[..., f:f + 2]
    rows = torch.arange(tokens.shape[0], device=tokens.device)
    k = target.clamp_min(0)
    centre = pos[rows, k]  # (B, 3)
    grid = FREE_OFFSETS.to(tokens)
    xy = centre[:, None, :2] + grid  # (B, S, 2)
    lo, hi = pos[..., :2] - size[..., :2] / 2, pos[..., :2] + size[..., :2] / 2  # (B, N, 2)
    out = torch.maximum((lo[:, None] - xy[:, :, None]).clamp_min(0), (xy[:, :, None] - hi[:, None]).clamp_min(0))
    box_gap = out.norm(dim=-1)  # (B, S, N)
    n = tokens.shape[1]
    others = mask & (size[..., 0] * size[..., 1] <= FREE_MAX_AREA)
    others = others & (torch.arange(n, device=tokens.device)[None] != k[:, None])
    box_gap = box_gap.masked_fill(~others[:, None], 1e3).amin(2)
    first_gap = torch.cdist(xy, first).masked_fill(~mask[:, None], 1e3).amin(2)
    scales = torch.tensor(FREE_SCALES, dtype=tokens.dtype, device=tokens.device)
    clear = torch.exp(-torch.stack([box_gap, first_gap], -1)[..., None] / scales).flatten(2)
    feats = torch.cat([grid.expand(xy.shape[0], -1, -1) / FREE_REACH, xy, grid.norm(dim=-1).expand(xy.shape[0], -1)[..., None],
                       clear], -1)
    spots = torch.cat([xy, centre[:, None, 2:].expand(-1, xy.shape[1], -1)], -1)
    return spots, feats
