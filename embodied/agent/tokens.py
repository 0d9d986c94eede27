"""The memory as a set of node tokens: generic attributes of each node, for learned policies.

    nodes = node_tokens(memory)              # NodeTokens
    nodes.ids                                # [N] node ids, in graph order (places left out)
    nodes.words                              # [N] WORD_SLOTS words of each node; "" where none
    nodes.features                           # (N, TOKEN_DIM) float32, laid out as TOKEN_FIELDS
    nodes.first_xyz                          # (N, 3) m: where each node was when first seen

Every token holds what any node has, whatever the task: its kind, position
and box, where it was first seen, articulation state, containment (what holds
it, how much it holds), when it was first and last seen, and per event tag
the count, the times of the first and last event and the order in which the
nodes first had it (rank 0, 1, ... / RANK_SCALE; RANK_NONE without). Nothing
names a task; the class, colour, names and the most vivid colour a node
showed come as words (WORD_SLOTS), for a policy to embed beside the goal's words. Place nodes (the path graph of a mobile robot's travels) are left
out: they are many and carry no object facts. Times are in control steps,
scaled: ``age`` = (now - t) / AGE_SCALE, clipped to [0, 4]; never seen = 4.
Positions are metres in the world frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TOKEN_KINDS = ("object", "container", "articulated", "surface", "room", "agent")
STATES = ("open", "closed", "pressed", "released")
STATUSES = ("visible", "occluded", "missing", "out_of_view", "unseen", "hidden", "held")
# Event tags whose counts and times a token keeps: what happened to a node, never the agent's notes.
EVENT_TAGS = ("moved", "carried", "opened", "closed", "pressed", "released", "brightened", "dimmed",
              "recoloured", "grasp", "release", "contained", "uncovered", "occluded", "missing", "unseen")
AGE_SCALE = 500.0  # steps
MAX_AGE = 4.0
RANK_SCALE, RANK_NONE = 4.0, 2.0
# The words of a node: its class, colour name, own name (rooms), the name of the room it stands in, and
# the most vivid colour it turned to (a screen's cue, a light): "" if it never changed colour.
WORD_SLOTS = ("class", "colour", "name", "room", "shown_colour")


def _fields() -> list[tuple[str, int]]:
    out = [("kind", len(TOKEN_KINDS)), ("position", 3), ("size", 3), ("first_position", 3), ("rgb", 3),
           ("shown_rgb", 3), ("state", len(STATES)), ("status", len(STATUSES)), ("held", 1), ("inside", 1),
           ("holder_position", 3), ("holds", 1), ("room_position", 3), ("first_seen_age", 1),
           ("last_seen_age", 1), ("first_seen_rank", 1), ("visible", 1), ("n_obs", 1)]
    for tag in EVENT_TAGS:
        out += [(f"{tag}.count", 1), (f"{tag}.first_age", 1), (f"{tag}.last_age", 1), (f"{tag}.first_rank", 1)]
    return out


TOKEN_FIELDS: tuple[tuple[str, int], ...] = tuple(_fields())
TOKEN_DIM = sum(n for _, n in TOKEN_FIELDS)
_OFFSET: dict[str, int] = {}
_k = 0
for _name, _n in TOKEN_FIELDS:
    _OFFSET[_name] = _k
    _k += _n


# Event tags of what the agent's own skills do to a node: the node with the most recent one is the one
# last acted on (a learned policy's anchor features, policies.memory_policy.modeling._anchor).
ACTION_TAGS = ("opened", "closed", "grasp", "release", "pressed")  # not moved: perception jitter moves nodes


def spot_offsets() -> tuple[int, int]:
    """Where a token keeps its position and its first position (the spot features read them)."""
    return field_slice("position").start, field_slice("first_position").start


def anchor_offsets() -> tuple[int, ...]:
    """Position, first position, then each of ACTION_TAGS' last-event age (the anchor features read them)."""
    return (*spot_offsets(), *(field_slice(f"{tag}.last_age").start for tag in ACTION_TAGS))


def first_box_offsets() -> tuple[int, int]:
    """Where a token keeps its first position and its box size (the first-box features read them)."""
    return field_slice("first_position").start, field_slice("size").start


def free_spot_offsets() -> tuple[int, int, int]:
    """Where a token keeps its position, box size and first position (the free-spot features read them)."""
    return field_slice("position").start, field_slice("size").start, field_slice("first_position").start


def goal_hop_offsets() -> tuple[int, int, int]:
    """Where a token keeps its position, its room's centre and its holder's position (the goal-hop features)."""
    return field_slice("position").start, field_slice("room_position").start, field_slice("holder_position").start


def field_slice(name: str) -> slice:
    """Where field ``name`` of :data:`TOKEN_FIELDS` sits in a token."""
    n = dict(TOKEN_FIELDS)[name]
    return slice(_OFFSET[name], _OFFSET[name] + n)


@dataclass
class NodeTokens:
    ids: list[str]
    words: list[tuple[str, ...]]  # WORD_SLOTS words of each node
    features: np.ndarray  # (N, TOKEN_DIM) float32
    first_xyz: np.ndarray  # (N, 3) float32, m
    t: int  # the memory's time (step) the tokens describe

    def __len__(self) -> int:
        return len(self.ids)


def _age(now: int, t: float | None) -> float:
    if t is None or t < 0:
        return MAX_AGE
    return float(min(MAX_AGE, max(0.0, (now - t) / AGE_SCALE)))


def node_tokens(memory, max_nodes: int = 96) -> NodeTokens:
    """Tokens of ``memory``'s nodes (a :class:`~embodied.memory.SpatialMemory`), through its public
    graph, queries and event log; the ``max_nodes`` most recently seen when there are more."""
    graph = memory.graph
    now = max(int(memory.t), 0)
    nodes = [(n, a) for n, a in graph.nodes(data=True) if a.get("kind") != "place"]
    if len(nodes) > max_nodes:
        nodes = sorted(nodes, key=lambda na: -int(na[1].get("last_seen", -1)))[:max_nodes]
    index = {n: k for k, (n, _) in enumerate(nodes)}
    feats = np.zeros((len(nodes), TOKEN_DIM), np.float32)
    first = np.zeros((len(nodes), 3), np.float32)
    words: list[tuple[str, ...]] = []
    firsts: dict[str, list[tuple[int, int]]] = {tag: [] for tag in EVENT_TAGS}  # tag -> (first time, node index)
    holds = np.zeros(len(nodes), np.float32)
    holder_of: dict[str, str] = {}
    room_of: dict[str, str] = {}
    for u, v, rel in graph.edges(keys=True):
        if rel == "in" and u in index:
            holder_of.setdefault(u, v)
            if v in index:
                holds[index[v]] += 1
        elif rel == "in_room" and u in index:
            room_of.setdefault(u, v)
    for k, (node, a) in enumerate(nodes):
        f = feats[k]

        def put(name: str, value, f=f) -> None:
            f[field_slice(name)] = value

        kind = a.get("kind", "object")
        if kind in TOKEN_KINDS:
            f[_OFFSET["kind"] + TOKEN_KINDS.index(kind)] = 1.0
        pos = np.asarray(a.get("position", (0.0, 0.0, 0.0)), np.float32)
        put("position", pos)
        if "box_min" in a and "box_max" in a:
            put("size", np.asarray(a["box_max"], np.float32) - np.asarray(a["box_min"], np.float32))
        events = memory.log.of_node(node)
        p0 = memory.log.position_at(node, events[0].t) if events else None
        first[k] = pos if p0 is None else np.asarray(p0, np.float32)
        put("first_position", first[k])
        put("rgb", np.asarray(a.get("rgb", (0.0, 0.0, 0.0)), np.float32))
        state, status = a.get("state", ""), a.get("status", "")
        if state in STATES:
            f[_OFFSET["state"] + STATES.index(state)] = 1.0
        if status in STATUSES:
            f[_OFFSET["status"] + STATUSES.index(status)] = 1.0
        put("held", float(bool(a.get("held", False))))
        holder = holder_of.get(node) or a.get("inside", "") or ""
        put("inside", float(bool(holder)))
        if holder and holder in graph:
            put("holder_position", np.asarray(graph.nodes[holder]["position"], np.float32))
        put("holds", holds[k])
        room = room_of.get(node, "")
        if room and room in graph:
            put("room_position", np.asarray(graph.nodes[room]["position"], np.float32))
        put("first_seen_age", _age(now, a.get("first_seen")))
        put("last_seen_age", _age(now, a.get("last_seen")))
        put("visible", float(bool(a.get("visible", False))))
        put("n_obs", np.log1p(float(a.get("n_obs", 0))) / 8.0)
        shown, shown_name, chroma = None, "", 0.0
        counts: dict[str, list[int]] = {}
        for e in events:
            # The colour a node showed: the most vivid one it turned (a screen's cue, a lit button).
            if e.tag in ("brightened", "recoloured") and "rgb" in e.data:
                vivid = float(max(e.data["rgb"]) - min(e.data["rgb"]))
                if vivid > chroma:
                    shown, chroma = e.data["rgb"], vivid
                    shown_name = str(e.data.get("colour") or shown_name)
            if e.tag in EVENT_TAGS:
                counts.setdefault(e.tag, []).append(e.t)
        if shown is not None:
            put("shown_rgb", np.asarray(shown, np.float32))
        for tag in EVENT_TAGS:
            times = counts.get(tag)
            put(f"{tag}.count", np.log1p(len(times)) if times else 0.0)
            put(f"{tag}.first_age", _age(now, times[0] if times else None))
            put(f"{tag}.last_age", _age(now, times[-1] if times else None))
            if times:
                firsts[tag].append((times[0], k))
        room_name = str(graph.nodes[room].get("name", "") or "") if room and room in graph else ""
        words.append((str(a.get("cls", "")), str(a.get("colour", "") or ""), str(a.get("name", "") or ""),
                      room_name, shown_name))
    for tag, seen in firsts.items():
        _ranks(feats, field_slice(f"{tag}.first_rank"), seen)
    _ranks(feats, field_slice("first_seen_rank"),
           [(int(a.get("first_seen", -1)), k) for k, (_, a) in enumerate(nodes) if int(a.get("first_seen", -1)) >= 0])
    return NodeTokens([n for n, _ in nodes], words, feats, first, now)


def _ranks(feats: np.ndarray, where: slice, seen: list[tuple[int, int]]) -> None:
    """Write each node's order in ``seen`` ((time, node index) pairs; ties share a rank) into ``where``."""
    feats[:, where] = RANK_NONE
    order = sorted({t for t, _ in seen})
    for t, k in seen:
        feats[k, where] = order.index(t) / RANK_SCALE
