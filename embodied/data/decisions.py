"""Reading the decision points stored beside a recording (``meta/decisions/``).

    episodes = load_decisions(root)      # list[EpisodeDecisions], in episode order
    ep.arrays["decision.tokens"]         # (D, N, TOKEN_DIM) float32 node tokens at each decision
    ep.goals[k], ep.ids[k], ep.words[k]  # goal text, node ids and (class, colour, room name) words
    ep.calls[k]                          # the call started there (SkillCall.to_dict; None: stop)
    ep.ran[k]                            # relabelled episodes: the call that ran there (calls: the labels)

What the arrays hold is documented in :mod:`embodied.agent.decisions`; they
are written by ``embodied record-demos --policy agent``. Only safetensors and
JSON are read (nothing is unpickled), and nothing of the simulator is imported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors import SafetensorError, safe_open

from embodied.data.commit import recover
from embodied.data.layout import DECISIONS_PATH, DatasetError

KEYS = ("decision.t", "decision.skill", "decision.target", "decision.source", "decision.params",
        "decision.proprio", "decision.tokens", "decision.first_xyz", "decision.mask")


@dataclass
class EpisodeDecisions:
    episode: int
    task: str  # the recorded task's name (for reports; a policy never sees it)
    length: int  # frames in the episode
    success: bool  # the recorded episode solved its task
    arrays: dict[str, np.ndarray]
    goals: list[str]
    ids: list[list[str]]
    words: list[list[list[str]]]
    calls: list[dict | None] | None = None  # the call started at each decision (SkillCall.to_dict), if stored
    labeller: str = "agent"  # "agent": the calls it ran; "planner": relabelled (embodied.agent.relabel)
    alternatives: list[list[dict] | None] | None = None  # per decision, calls as good as the label, if stored
    ran: list[dict | None] | None = None  # relabelled: the call that ran at each decision (calls holds the labels)

    def __len__(self) -> int:
        return int(self.arrays["decision.t"].shape[0])


def read_decisions(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    """The arrays and JSON side of one decisions file; a clear :class:`DatasetError` if it is bad."""
    try:
        with safe_open(str(path), framework="numpy") as f:
            meta = json.loads((f.metadata() or {}).get("decisions", "null"))
            arrays = {k: f.get_tensor(k) for k in f.keys()}
    except FileNotFoundError:
        raise DatasetError(path, "missing") from None
    except (SafetensorError, OSError, ValueError) as exc:
        raise DatasetError(path, f"not a readable decisions file (truncated or corrupt): {exc}") from None
    missing = [k for k in KEYS if k not in arrays]
    if missing or not isinstance(meta, dict) or not all(k in meta for k in ("goals", "ids", "words")):
        raise DatasetError(path, f"lacks {missing[0] if missing else 'its goals, ids and words'}")
    d = arrays["decision.t"].shape[0]
    if any(arrays[k].shape[0] != d for k in KEYS) or len(meta["goals"]) != d:
        raise DatasetError(path, "arrays and goals disagree on the number of decisions")
    return arrays, meta


def load_decisions(root: str | Path) -> list[EpisodeDecisions]:
    """Every episode's decisions (episodes recorded by a policy that keeps none are skipped)."""
    from embodied.data.writer import load_episodes

    root = Path(root)
    recover(root)
    out = []
    for r in load_episodes(root):
        e = int(r["episode_index"])
        path = root / DECISIONS_PATH.format(episode_index=e)
        if not path.exists():
            continue
        arrays, meta = read_decisions(path)
        out.append(EpisodeDecisions(e, str(r.get("task_name") or ""), int(r["length"]), bool(r.get("success")),
                                    arrays, meta["goals"], meta["ids"], meta["words"], meta.get("calls"),
                                    str(meta.get("labeller", "agent")), meta.get("alternatives"),
                                    meta.get("ran")))
    if not out:
        raise DatasetError(root / "meta" / "decisions", "no decisions: record the demos with --policy agent")
    return out
