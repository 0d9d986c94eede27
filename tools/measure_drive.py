"""Measure the differential-drive base: expert success, lateral slip and wheel-odometry error.

    MUJOCO_GL=egl python tools/measure_drive.py --tasks ObjectRevisit-v0 MovedObject-v0 MultiGoal-v0 \
        --seeds 1000-1049 [--policy expert|agent] [--option odom_noise=0.05] [--json out.json]
    MUJOCO_GL=egl python tools/measure_drive.py --wall-seeds 1000-1019

Per task: success rate, the base's lateral (body-frame y) speed over every
step of every episode (RMS and max of ``info["privileged"]["lateral_speed"]``,
m/s: the largest per-substep slip in each control step), and the odometry
error ``|odometry_pose - robot_pose|`` (xy, m) at the end of the tour and at
the end of the episode (odometry is re-zeroed at the dock when recall starts).
Images are off for the expert; the agent needs them.

``--wall-seeds``: instead, from the dock (which faces a wall 0.5 m away) drive
full speed into the wall for 3 s, then forward while turning at 0.45 rad/s
for 9 s (sliding the bumper along walls and furniture); reports the largest
sideways speed and odometry error (``odom_noise=0``).
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


def wall_push(seeds: list[int]) -> dict:
    env = embodied.make("ObjectRevisit-v0", images=False, time_limit=1000)
    slip, odom = [], []
    for seed in seeds:
        obs, info = env.reset(seed=seed)
        while info["phase"] != "recall":
            obs, _, _, _, info = env.step(np.zeros(2, np.float32))
        worst_slip = worst_odom = 0.0
        for t in range(120):
            obs, _, terminated, _, info = env.step(np.array([1.0, 0.0 if t < 30 else 0.3], np.float32))
            p = info["privileged"]
            worst_slip = max(worst_slip, float(p["lateral_speed"]))
            worst_odom = max(worst_odom, float(np.linalg.norm(p["odometry_pose"][:2] - p["robot_pose"][:2])))
            if terminated:
                break
        slip.append(worst_slip)
        odom.append(worst_odom)
    env.close()
    return {"wall_seeds": [seeds[0], seeds[-1]], "episodes": len(seeds), "lateral_speed_max": float(np.max(slip)),
            "lateral_speed_median_of_max": float(np.median(slip)), "odom_error_max": float(np.max(odom))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", nargs="+", default=["ObjectRevisit-v0", "MovedObject-v0", "MultiGoal-v0"])
    ap.add_argument("--seeds", type=seeds_arg, default=seeds_arg("1000-1049"))
    ap.add_argument("--policy", default="expert", choices=["expert", "agent"])
    ap.add_argument("--option", type=option, action="append", default=[])
    ap.add_argument("--json", default=None, help="also write the rows to this file")
    ap.add_argument("--wall-seeds", type=seeds_arg, default=None, help="measure pushing against walls instead")
    args = ap.parse_args()
    if args.wall_seeds:
        print(json.dumps(wall_push(args.wall_seeds)))
        return
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
