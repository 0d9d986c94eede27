"""``embodied bench``: speed measurements (kept out of the timed tests)."""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np

from embodied.cli.options import task_knobs
from embodied.tasks import TASKS, get_task


def _steps_per_second(env: gym.Env, steps: int, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    space = env.action_space
    actions = rng.uniform(space.low, space.high, size=(steps, *space.shape)).astype(np.float32)
    env.reset(seed=seed)
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def measure_env(name: str, steps: int = 600, image_size: int = 128, options: dict | None = None) -> dict:
    """Steps/s of ``name`` blind and rendering; ``options`` (task knobs) time a scene other than the default."""
    entry = get_task(name)
    options = dict(options or {})
    blind = gym.make(entry.env_id, images=False, **options).unwrapped
    no_render = _steps_per_second(blind, steps)
    blind.close()
    seeing = gym.make(entry.env_id, images=True, image_size=image_size, **options).unwrapped
    render_steps = max(50, steps // 6)
    with_render = _steps_per_second(seeing, render_steps)
    seeing.reset(seed=0)
    start = time.perf_counter()
    for _ in range(render_steps):
        seeing.rig.render(seeing.data)
    bare_ms = (time.perf_counter() - start) / render_steps * 1e3
    cameras = list(seeing.cameras)
    seeing.close()
    step_ms = 1e3 / with_render
    return {
        "task": entry.name,
        "cameras": cameras,
        "image_size": image_size,
        "steps_per_s_no_render": round(no_render, 1),
        "steps_per_s_render": round(with_render, 1),
        "render_ms": round(bare_ms, 2),
        "step_ms_render": round(step_ms, 2),
        "step_over_render": round(step_ms / bare_ms, 3),
        "options": options,
    }


def env(args: argparse.Namespace) -> list[dict] | None:
    names = [get_task(name).name for name in args.task] if args.task else list(TASKS)
    options = task_knobs(args.option, names)
    rows = []
    for name in names:
        row = measure_env(name, steps=args.steps, options=options)
        rows.append(row)
        if not args.json:
            print(
                f"{row['task']:<20} no-render {row['steps_per_s_no_render']:>7.0f} steps/s | "
                f"{len(row['cameras'])}-cam {row['image_size']}px RGB-D+seg {row['steps_per_s_render']:>6.1f} steps/s | "
                f"render {row['render_ms']:.2f} ms, step/render {row['step_over_render']:.2f}",
                flush=True,
            )
    return rows if args.json else None


def perception(args: argparse.Namespace) -> list[dict] | None:
    from embodied.eval.perception_bench import MODES, bench_perception

    tasks = tuple(args.task or ("ShellGame-v0", "ObjectRevisit-v0"))
    rows = bench_perception(tasks, args.frames, modes=tuple(args.mode or MODES),
                            options=task_knobs(args.option, tasks))
    if args.json:
        return rows
    print(f"{'task':18s} {'mode':10s} {'ms/camera':>10s} {'segment':>8s}  objects")
    for r in rows:
        ms = "-" if r["ms_per_camera"] is None else f"{r['ms_per_camera']:.2f}"
        seg = "" if r.get("segment_ms") is None else f"{r['segment_ms']:.2f}"
        print(f"{r['task']:18s} {r['mode']:10s} {ms:>10s} {seg:>8s}  {r.get('objects_last_frame', r.get('note', ''))}")
        if r.get("stages_ms"):
            print(" " * 30 + "of which " + ", ".join(f"{k} {v:.2f}" for k, v in r["stages_ms"].items()))
    return None
