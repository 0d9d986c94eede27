"""Teacher-forced accuracy of a learned high-level policy on recorded decision points (fresh demos).

    python3 tools/decision_accuracy.py --policy explicit --data runs/memory/fresh_rr [--data ...] [--json]

At each recorded decision the policy sees what the demonstrator saw and answers; scores are over the
decisions: ``skill`` (the recorded skill), ``target`` (the recorded node, given the recorded skill) and
``choice`` (its own skill and node among the equally good ones, see ``any_order``). ``--policy`` is a
shipped policy's name or a run / export folder (as ``learned:RUN`` takes). Explicit policies only.
"""

from __future__ import annotations

import argparse
import copy
import json

from embodied.eval.rollout import learned_policy
from policies.memory_policy.data import DecisionData
from policies.memory_policy.train import accuracy


def decision_accuracy(policy_run: str, roots: list[str]) -> dict:
    policy = learned_policy(policy_run)
    if policy.config.memory != "explicit":
        raise SystemExit(f"{policy_run} is a {policy.config.memory!r} policy; this scores explicit ones")
    config = copy.deepcopy(policy.config)
    config.any_order = True  # the data's alternatives are built whatever the policy was trained with
    data = DecisionData(roots, config, progress=False)
    return {"policy": policy_run, "data": roots, "decisions": len(data), "episodes": len(data.episodes),
            **accuracy(policy, data)}


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
