"""Decisions: the points where an agent chooses its next skill call, and what it chose.

An agent decides when its goal text changes and whenever its running call
ends (done or failed). At each such point a :class:`DecisionLog` keeps what a
learned high-level policy would see there and the call the agent then
started (or none: ``stop``), in the terms such a policy answers in:

    skill    index into DECISIONS (SKILLS + "stop")
    target   index of the call's target among the memory's node tokens (-1: none)
    source   where the call's point comes from: 0 the target now, 1 where the target was
             first seen, 2 free (a point no node gives, e.g. a spot to set a cup aside)
    params   (PARAM_DIM,) float32, :meth:`SkillCall.params`

    log = DecisionLog()
    log.add(t, goal_text, obs, memory, call_or_None)
    arrays, meta = log.pack()        # safetensors-ready arrays + JSON-plain words and ids

``pack`` is what :func:`embodied.data.episode.record_episode` stores beside an
episode (``meta/decisions/``); :mod:`policies.memory_policy` trains on it.
"""

from __future__ import annotations

import numpy as np

from embodied.agent.tokens import TOKEN_DIM, NodeTokens, field_slice, node_tokens
from embodied.planner.calls import DECISIONS, PARAM_DIM, SOURCES, STOP, SkillCall

SAME_POINT = 0.01  # m: a call's point this close to a node's position is read from the node


def label(call: SkillCall | None, tokens: NodeTokens) -> tuple[int, int, int, np.ndarray]:
    """(skill, target, source, params) of ``call`` against ``tokens`` (see the module docstring)."""
    if call is None:
        return STOP, -1, SOURCES.index("free"), np.zeros(PARAM_DIM, np.float32)
    target = tokens.ids.index(call.target) if call.target in tokens.ids else -1
    source = SOURCES.index("free")
    if target >= 0:
        xyz = np.asarray(call.xyz, np.float32)
        now = tokens.features[target, field_slice("position")]
        if np.linalg.norm(xyz - now) <= SAME_POINT:
            source = SOURCES.index("now")
        elif np.linalg.norm(xyz - tokens.first_xyz[target]) <= SAME_POINT:
            source = SOURCES.index("first")
    return DECISIONS.index(call.skill), target, source, call.params()


class DecisionLog:
    """Every decision of one episode (see the module docstring)."""

    def __init__(self, max_nodes: int = 96, labeller: str = "agent"):
        """``labeller``: who chose the calls kept: "agent" (the call it ran) or "planner" (the planner's
        call from the same memory, whatever ran: :mod:`embodied.agent.relabel`)."""
        self.max_nodes = int(max_nodes)
        self.labeller = labeller
        self.rows: list[dict] = []

    def add(self, t: int, goal: str, obs: dict, memory, call: SkillCall | None,
            alternatives: list[SkillCall] | None = None, ran: SkillCall | None = None) -> None:
        """``alternatives``: calls as good as ``call`` there (None: not known; the trainer infers them).
        ``ran``: the call that ran there when ``call`` is a label of another labeller's."""
        tokens = node_tokens(memory, self.max_nodes)
        skill, target, source, params = label(call, tokens)
        self.rows.append({"t": int(t), "goal": str(goal), "proprio": np.asarray(obs["proprio"], np.float32).copy(),
                          "tokens": tokens, "skill": skill, "target": target, "source": source, "params": params,
                          "call": None if call is None else call.to_dict(),
                          "alternatives": None if alternatives is None else [c.to_dict() for c in alternatives],
                          "ran": None if ran is None else ran.to_dict()})

    def __len__(self) -> int:
        return len(self.rows)

    ARRAYS = ("proprio", "params")  # per row, besides the tokens' features and first_xyz

    def state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON-plain rows without their arrays, arrays ``K.proprio``, ``K.params``, ``K.features``,
        ``K.first_xyz`` of row K): the log exactly, for saving an agent mid-episode."""
        rows, arrays = [], {}
        for k, r in enumerate(self.rows):
            tok = r["tokens"]
            rows.append({**{f: v for f, v in r.items() if f not in (*self.ARRAYS, "tokens")},
                         "tokens": {"ids": list(tok.ids), "words": [list(w) for w in tok.words], "t": int(tok.t)}})
            arrays.update({f"{k}.proprio": r["proprio"], f"{k}.params": r["params"], f"{k}.features": tok.features,
                           f"{k}.first_xyz": tok.first_xyz})
        return {"max_nodes": self.max_nodes, "labeller": self.labeller, "rows": rows}, arrays

    @classmethod
    def from_state(cls, doc: dict, arrays: dict[str, np.ndarray]) -> DecisionLog:
        log = cls(int(doc["max_nodes"]), str(doc["labeller"]))
        for k, row in enumerate(doc["rows"]):
            got = {f: arrays.get(f"{k}.{f}") for f in ("proprio", "params", "features", "first_xyz")}
            tok = row["tokens"]
            n = len(tok["ids"])
            if any(a is None or a.dtype != np.float32 for a in got.values()) or got["features"].shape != \
                    (n, TOKEN_DIM) or got["first_xyz"].shape != (n, 3) or got["params"].shape != (PARAM_DIM,):
                raise ValueError(f"array {k}.*: row {k}'s arrays missing or misshapen")
            tokens = NodeTokens([str(i) for i in tok["ids"]], [tuple(str(x) for x in w) for w in tok["words"]],
                                got["features"].copy(), got["first_xyz"].copy(), int(tok["t"]))
            log.rows.append({**row, "t": int(row["t"]), "proprio": got["proprio"].copy(), "tokens": tokens,
                             "params": got["params"].copy()})
        return log

    def pack(self) -> tuple[dict[str, np.ndarray], dict]:
        """Arrays ``decision.*`` (D decisions, N the most nodes at any of them, padded) and the
        JSON-plain side: goal text, node ids and words per decision."""
        d = len(self.rows)
        n = max([len(r["tokens"]) for r in self.rows] + [1])
        feats = np.zeros((d, n, TOKEN_DIM), np.float32)
        first = np.zeros((d, n, 3), np.float32)
        mask = np.zeros((d, n), bool)
        for k, r in enumerate(self.rows):
            m = len(r["tokens"])
            feats[k, :m], first[k, :m], mask[k, :m] = r["tokens"].features, r["tokens"].first_xyz, True
        width = max([len(r["proprio"]) for r in self.rows] + [1])
        arrays = {
            "decision.t": np.array([r["t"] for r in self.rows], np.int64).reshape(d),
            "decision.skill": np.array([r["skill"] for r in self.rows], np.int64).reshape(d),
            "decision.target": np.array([r["target"] for r in self.rows], np.int64).reshape(d),
            "decision.source": np.array([r["source"] for r in self.rows], np.int64).reshape(d),
            "decision.params": np.stack([r["params"] for r in self.rows]) if d else np.zeros((0, PARAM_DIM), np.float32),
            "decision.proprio": np.stack([r["proprio"] for r in self.rows]) if d else np.zeros((0, width), np.float32),
            "decision.tokens": feats,
            "decision.first_xyz": first,
            "decision.mask": mask,
        }
        meta = {"goals": [r["goal"] for r in self.rows], "ids": [r["tokens"].ids for r in self.rows],
                "words": [[list(w) for w in r["tokens"].words] for r in self.rows],
                "calls": [r["call"] for r in self.rows], "labeller": self.labeller}
        if any(r["alternatives"] is not None for r in self.rows):
            meta["alternatives"] = [r["alternatives"] for r in self.rows]
        if self.labeller != "agent":
            meta["ran"] = [r["ran"] for r in self.rows]
        return arrays, meta
