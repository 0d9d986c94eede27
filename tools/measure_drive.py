"""Measure the differential-drive base: expert success, lateral slip and wheel-odometry error.

    MUJOCO_GL=egl python tools/measure_drive.py --tasks ObjectRevisit-v0 MovedObject-v0 MultiGoal-v0 \
        --seeds 1000-1049 [--policy expert|agent] [--option odom_noise=0.05] [--json out.json]

Per task: success rate, the base's lateral (body-frame y) speed over every
step of every episode (RMS and max of ``info["privileged"]["lateral_speed"]``,
m/s: the largest per-substep slip in each control step), and the odometry
error ``|odometry_pose - robot_pose|`` (xy, m) at the end of the tour and at
the end of the episode (odometry is re-zeroed at the dock when recall starts).
Images are off for the expert; the agent needs them.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import embodied
from embodied.eval.rollout import run_episodes


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


def measure(task: str, seeds: list[int], policy: str, options: dict) -> dict:
    env = embodied.make(task, images=policy != "expert", **options)
    slip: list[float] = []
    tour_err: list[float] = []
    end_err: list[float] = []
    last: dict = {}

    def error(info: dict) -> float:
        p = info["privileged"]
        return float(np.linalg.norm(p["odometry_pose"][:2] - p["robot_pose"][:2]))

    def on_reset(seed, obs, info):
        last.update(info=info)

    def on_step(obs, info):
        slip.append(float(info["privileged"]["lateral_speed"]))
        if last["info"]["phase"] == "observe" and info["phase"] != "observe":
            tour_err.append(error(last["info"]))
        last.update(info=info)

    def on_end(result):
        end_err.append(error(last["info"]))

    t0 = time.time()
    results = run_episodes(env, policy, seeds, on_step=on_step, on_reset=on_reset, on_end=on_end)
    env.close()
    slip_arr = np.array(slip)
    return {
        "task": task, "policy": policy, "options": options, "seeds": [seeds[0], seeds[-1]], "episodes": len(results),
        "success": float(np.mean([r.success for r in results])),
        "failed_seeds": [r.seed for r in results if not r.success],
        "lateral_speed_rms": float(np.sqrt(np.mean(slip_arr**2))), "lateral_speed_max": float(slip_arr.max()),
        "lateral_speed_p99": float(np.quantile(slip_arr, 0.99)), "steps": len(slip),
        "odom_error_tour_end_median": float(np.median(tour_err)) if tour_err else None,
        "odom_error_tour_end_max": float(np.max(tour_err)) if tour_err else None,
        "odom_error_episode_end_median": float(np.median(end_err)),
        "seconds": round(time.time() - t0, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", nargs="+", default=["ObjectRevisit-v0", "MovedObject-v0", "MultiGoal-v0"])
    ap.add_argument("--seeds", type=seeds_arg, default=seeds_arg("1000-1049"))
    ap.add_argument("--policy", default="expert", choices=["expert", "agent"])
    ap.add_argument("--option", type=option, action="append", default=[])
    ap.add_argument("--json", default=None, help="also write the rows to this file")
    args = ap.parse_args()
    rows = []
    for task in args.tasks:
        row = measure(task, args.seeds, args.policy, dict(args.option))
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
