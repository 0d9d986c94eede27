"""Teacher-forced accuracy of a learned high-level policy on recorded decision points (fresh demos).

    python3 tools/decision_accuracy.py --policy explicit --data runs/memory/fresh_rr [--data ...] [--json]

At each recorded decision the policy sees what the demonstrator saw and answers; scores are over the
decisions: ``skill`` (the recorded skill), ``target`` (the recorded node, given the recorded skill) and
``choice`` (its own skill and node among the equally good ones, see ``any_order``). ``points``: given
the recorded skill and target, the share of the policy's call points within POINT_TOLERANCE (xy) of the
recorded one, per kind of place: ``back`` (a place at a first-seen spot), ``into`` (into a drawer,
``extra["into"]``) and ``aside`` (any other place). ``--policy`` is a shipped policy's name or a run /
export folder (as ``learned:RUN`` takes). Explicit policies only.
"""

from __future__ import annotations

import argparse
import copy
import json

import numpy as np
import torch

from embodied.eval.rollout import learned_policy
from embodied.agent.tokens import field_slice
from policies.memory_policy.data import DecisionData
from policies.memory_policy.features import free_spots
from policies.memory_policy.modeling import OFFSET_SCALE
from policies.memory_policy.train import accuracy

POINT_TOLERANCE = 0.02  # m


@torch.no_grad()
def point_accuracy(policy, data: DecisionData) -> dict[str, dict[str, float]]:
    """Per kind of place, {"n", "within"}: teacher-forced skill and target, the policy's own point source."""
    c = policy.config
    b = data.batch(np.arange(len(data)), train=False)
    hc, hm, valid = policy._encode(b)
    call = policy._call(hc, hm, b["skill"], b["target"])
    ns = len(c.sources)
    where = policy._where(hc, hm, valid, b["skill"], b["target"], b["tokens"]).argmax(-1) if c.where_pointer else None
    here = field_slice("position")
    spots = free_spots(b["tokens"], valid, b["target"], c.free_spot_offsets)[0] if c.free_spots else None
    hits: dict[str, list[bool]] = {}
    for i, (k, j) in enumerate(data.rows):
        ep = data.episodes[k][1]
        rec = ep.calls[j] if ep.calls else None
        t = int(b["target"][i])
        if rec is None or rec["skill"] != "place" or t < 0:
            continue
        kind = "into" if rec["extra"].get("into") else "back" if int(ep.arrays["decision.source"][j]) == 1 else "aside"
        source = c.sources[int(call[i, :ns].argmax())]
        if source == "now":
            xyz = data.tokens[i, t, here]
        elif source == "first":
            xyz = ep.arrays["decision.first_xyz"][j, t]
        elif source == "node":
            w, n = int(where[i]), data.tokens.shape[1]
            at = data.tokens[i, w, here] if w < n else spots[i, w - n].numpy()  # a node, or a free spot
            xyz = at + call[i, ns + 9:ns + 12].numpy() * OFFSET_SCALE
        else:
            xyz = (call[i, ns:ns + 3] * policy.xyz_std + policy.xyz_mean).numpy()
        miss = float(np.linalg.norm(np.asarray(xyz[:2]) - np.asarray(rec["xyz"][:2])))
        hits.setdefault(kind, []).append(miss <= POINT_TOLERANCE)
    return {kind: {"n": len(h), "within": float(np.mean(h))} for kind, h in sorted(hits.items())}


def decision_accuracy(policy_run: str, roots: list[str]) -> dict:
    policy = learned_policy(policy_run)
    if policy.config.memory != "explicit":
        raise SystemExit(f"{policy_run} is a {policy.config.memory!r} policy; this scores explicit ones")
    config = copy.deepcopy(policy.config)
    config.any_order = True  # the data's alternatives are built whatever the policy was trained with
    data = DecisionData(roots, config, progress=False)
    return {"policy": policy_run, "data": roots, "decisions": len(data), "episodes": len(data.episodes),
            **accuracy(policy, data), "points": point_accuracy(policy, data)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--policy", required=True)
    p.add_argument("--data", action="append", required=True)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    result = decision_accuracy(args.policy, args.data)
    print(json.dumps(result, indent=2) if args.json else
          "  ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in result.items()))


if __name__ == "__main__":
    main()
