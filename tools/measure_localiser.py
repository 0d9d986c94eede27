"""The localiser alone on recorded tours: corrected camera pose vs the truth, per solver, and its cost.

    MUJOCO_GL=egl python tools/measure_localiser.py --seeds 2000 2001 --noise 0 0.05 [--solver planar open3d] [--json]

Drives each tour (the env drives; no agent), keeps the head depth, the
odometry extrinsics, the small objects' mask and the true camera pose
(privileged: this is a tool), then replays every frame through a fresh
``DepthLocaliser`` per solver. Prints, per (seed, noise, solver), the
odometry's and the corrected pose's xy error at the end of the tour and at
worst (m), the worst heading error (rad), and the localiser's CPU time per
frame (thread time, all frames; registrations run on every 3rd moving one).
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np

import embodied  # noqa: F401  (registers the tasks)
from embodied.memory.config import kind_of
from embodied.mapping.localise import DepthLocaliser, LocaliserConfig
from embodied.mapping.registration import wrap, yaw_of


def record_tour(task: str, seed: int, noise: float) -> list[tuple]:
    """(depth, K, odometry extrinsics, ignore mask, true camera pose) of every observe/delay step."""
    env = gym.make(f"embodied/{task}", odom_noise=noise)
    obs, info = env.reset(seed=seed)
    movable = np.array(sorted(i for i, c in env.unwrapped.labels.items() if kind_of(c) in ("object", "container")))
    frames = []
    while int(obs["goal"]["phase"]) != 2:
        frames.append((obs["depth/head"], obs["intrinsics/head"], obs["extrinsics/head"],
                       np.isin(obs["segmentation/head"], movable), info["privileged"]["camera_pose"]["head"]))
        obs, _, _, _, info = env.step(np.zeros(2, np.float32))
    env.close()
    return frames


def replay(frames: list[tuple], solver: str) -> dict:
    loc = DepthLocaliser(LocaliserConfig(solver=solver))
    err, odo, yaw = [], [], []
    cpu = time.thread_time()
    for t, (depth, K, T_odom, ignore, truth) in enumerate(frames):
        pose = loc.correct(depth, K, T_odom, t, ignore)
        err.append(float(np.linalg.norm(pose[:2, 3] - truth[:2, 3])))
        odo.append(float(np.linalg.norm(T_odom[:2, 3] - truth[:2, 3])))
        yaw.append(abs(wrap(yaw_of(pose) - yaw_of(truth))))
    cpu_ms = (time.thread_time() - cpu) * 1e3 / len(frames)
    return {"frames": len(frames), "odom_end_m": odo[-1], "odom_max_m": max(odo), "error_end_m": err[-1],
            "error_max_m": max(err), "yaw_max_rad": max(yaw), "cpu_ms_per_frame": cpu_ms, **loc.stats()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", default="ObjectRevisit-v0")
    ap.add_argument("--seeds", type=int, nargs="+", default=[2000, 2001])
    ap.add_argument("--noise", type=float, nargs="+", default=[0.0, 0.05])
    ap.add_argument("--solver", nargs="+", default=["planar", "open3d"])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    for seed in args.seeds:
        for noise in args.noise:
            frames = record_tour(args.task, seed, noise)
            for solver in args.solver:
                row = {"task": args.task, "seed": seed, "noise": noise, "solver": solver, **replay(frames, solver)}
                rows.append(row)
                if not args.json:
                    print(f"seed {seed} noise {noise:g} {solver:>6}: odometry end {row['odom_end_m']:.3f} m | corrected "
                          f"end {row['error_end_m']:.3f} max {row['error_max_m']:.3f} m, heading max "
                          f"{row['yaw_max_rad']:.3f} rad | {row['cpu_ms_per_frame']:.2f} ms CPU/frame, "
                          f"{row['accepted']}/{row['registrations']} fits accepted", flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
