"""Measure the observation-only navigation agent (memory + FreeSpaceMap + NavigateSkill).

    MUJOCO_GL=egl python tools/measure_navigate.py --tasks ObjectRevisit-v0 MovedObject-v0 MultiGoal-v0 \
        --seeds 1000-1029 [--option key=value ...] [--json out.json]

Prints, per task: success rate, recall steps (mean / median), and the time
per frame of ``FreeSpaceMap.integrate`` and per plan (graph rebuild when the
map changed + stand-off search + A*), plus 50 random ``path`` queries on the
first episode's final map (graph cached / rebuilt before each query). The episode loop is
``tests/nav_agent_helpers.run_nav_episode``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from nav_agent_helpers import run_nav_episode  # noqa: E402


def seeds_arg(text: str) -> list[int]:
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def option(text: str) -> tuple[str, object]:
    key, value = text.split("=", 1)
    for cast in (int, float):
        try:
            return key, cast(value)
        except ValueError:
            pass
    return key, value


def bench_paths(freespace, n: int = 50, seed: int = 0) -> dict:
    """Time ``path`` between random known-free points: with the graph cached, and with a rebuild forced."""
    rng = np.random.default_rng(seed)
    cells = np.argwhere(freespace.known_free & (freespace.clearance() >= freespace.radius))
    pick = cells[rng.integers(len(cells), size=(n, 2))]
    pts = freespace.low + freespace.res * (pick[..., ::-1] + 0.5)
    cached, rebuilt, found = [], [], 0
    for a, b in pts:
        t0 = time.perf_counter()
        found += bool(freespace.path(a, b))
        cached.append((time.perf_counter() - t0) * 1e3)
        freespace._cache = {}  # drop the graph: the next query builds it again
        t0 = time.perf_counter()
        freespace.path(a, b)
        rebuilt.append((time.perf_counter() - t0) * 1e3)
    return {"queries": n, "found": found, "cached_ms_median": float(np.median(cached)),
            "cached_ms_p99": float(np.percentile(cached, 99)), "rebuild_ms_median": float(np.median(rebuilt)),
            "rebuild_ms_p99": float(np.percentile(rebuilt, 99))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", default=["ObjectRevisit-v0", "MovedObject-v0", "MultiGoal-v0"])
    ap.add_argument("--seeds", type=seeds_arg, default=seeds_arg("1000-1029"))
    ap.add_argument("--option", type=option, action="append", default=[])
    ap.add_argument("--json", help="write per-episode results here")
    args = ap.parse_args()
    out = {}
    for task in args.tasks:
        eps, integ, plan = [], [], []
        t0 = time.time()
        bench = None
        for seed in args.seeds:
            ep = run_nav_episode(task, seed, dict(args.option), keep=bench is None)
            if bench is None:
                bench = bench_paths(ep.freespace)
            eps.append(ep.summary())
            integ += ep.integrate_ms
            plan += ep.plan_ms
            if not ep.success:
                print(f"  {task} seed {seed}: FAILED", json.dumps(ep.summary()["goals"]), flush=True)
        ok = [e["success"] for e in eps]
        steps = [e["recall_steps"] for e in eps]
        row = {
            "episodes": len(eps), "success": float(np.mean(ok)), "successes": int(np.sum(ok)),
            "recall_steps_mean": float(np.mean(steps)), "recall_steps_median": float(np.median(steps)),
            "recall_steps_success_mean": float(np.mean([s for s, o in zip(steps, ok) if o])) if any(ok) else None,
            "integrate_ms_median": float(np.median(integ)), "integrate_ms_p99": float(np.percentile(integ, 99)),
            "plan_ms_median": float(np.median(plan)), "plan_ms_p99": float(np.percentile(plan, 99)),
            "plans": len(plan), "wall_s": time.time() - t0, "path_bench": bench, "episodes_detail": eps,
        }
        out[task] = row
        print(f"{task}: success {row['successes']}/{row['episodes']} ({100 * row['success']:.1f}%), "
              f"recall steps mean {row['recall_steps_mean']:.0f} median {row['recall_steps_median']:.0f}; "
              f"integrate {row['integrate_ms_median']:.2f} ms median ({row['integrate_ms_p99']:.2f} p99); "
              f"plan {row['plan_ms_median']:.1f} ms median ({row['plan_ms_p99']:.1f} p99, {row['plans']} plans); "
              f"{row['wall_s']:.0f} s", flush=True)
        print(f"  path queries on seed {args.seeds[0]}'s final map: {json.dumps(bench)}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
