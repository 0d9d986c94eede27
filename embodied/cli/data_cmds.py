"""``embodied record-demos``, ``embodied data info|check|video`` and ``embodied bench data``.

    embodied record-demos --task NAME [--task ...] --episodes N --out DIR [--policy expert|agent]
                          [--workers K] [--ray [ADDRESS]] [--image-size S] [--cameras a,b] [--depth]
                          [--seed S] [--option key=value ...] [--resume] [--json]
    embodied data info DIR [--json]
    embodied data check DIR [--decode] [--json]
    embodied data video DIR --episode E -o out.mp4 [--json]
    embodied bench data [--task NAME] [--episodes N] [--workers 1,2] [--option key=value ...] [--json]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from embodied.cli.options import add_option_argument, task_knobs


def register(sub: argparse._SubParsersAction, bench_sub: argparse._SubParsersAction) -> None:
    """Add the data commands to the ``embodied`` parser (and ``bench data`` to ``bench``)."""
    p = sub.add_parser("record-demos", help="record demonstrations as a LeRobotDataset v3.0 folder")
    p.add_argument("--task", action="append", required=True, help="task to record (repeatable)")
    p.add_argument("--episodes", type=int, required=True, help="episodes per task (seeds seed..seed+N-1)")
    p.add_argument("--out", required=True, help="dataset folder (new, or existing with --resume)")
    p.add_argument("--policy", default="expert", help="expert: scripted, privileged; agent: embodied.agent.MemoryAgent; relabel:RUN[@MIX]: "
                   "RUN's learned high-level policy acts, the planner labels each decision (DAgger)")
    p.add_argument("--perception", choices=["masks", "learned", "geometric"], default="masks",
                   help="what an agent policy sees through: the renderer's masks, the learned RGB-D segmenter "
                        "(trained on 128 px frames: pair it with --image-size 128) or geometry")
    p.add_argument("--workers", type=int, default=1, help="worker processes (or Ray tasks in flight per CPU)")
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run episodes as Ray tasks (on the cluster at ADDRESS; none: a local instance)")
    p.add_argument("--image-size", type=int, default=96, help="camera size in pixels")
    p.add_argument("--cameras", help="comma-separated camera names (default: the task's cameras)")
    p.add_argument("--depth", action="store_true", help="also store depth (uint16 mm) in the data rows")
    p.add_argument("--seed", type=int, default=0, help="first seed; episode i of a task uses seed+i")
    add_option_argument(p)
    p.add_argument("--resume", action="store_true", help="append to DIR, recording only the (task, seed) pairs it lacks")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=record_demos)

    p = sub.add_parser("data", help="inspect recorded demonstrations")
    data_sub = p.add_subparsers(dest="data_command", required=True)
    d = data_sub.add_parser("info", help="episodes, frames, features, tasks, size on disk, success rate")
    d.add_argument("dir")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=data_info)
    d = data_sub.add_parser("check", help="validate the whole dataset (exit 1 on problems)")
    d.add_argument("dir")
    d.add_argument("--decode", action="store_true", help="also decode every video frame")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=data_check)
    d = data_sub.add_parser("video", help="render one episode's cameras, phase and skill to an mp4")
    d.add_argument("dir")
    d.add_argument("--episode", type=int, required=True)
    d.add_argument("-o", "--output", required=True)
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=data_video)

    b = bench_sub.add_parser("data", help="recording speed per worker count, overhead vs bare rollout, MB/100 episodes")
    b.add_argument("--task", default="PutBlockBack-v0")
    b.add_argument("--episodes", type=int, default=8)
    b.add_argument("--workers", default="1,2", help="comma-separated worker counts to time")
    b.add_argument("--image-size", type=int, default=96)
    b.add_argument("--keep", help="keep the recorded datasets under this folder")
    add_option_argument(b)
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=bench_data)


def record_demos(args) -> dict:
    from embodied.data.workers import RecordConfig, record

    cfg = RecordConfig(
        tasks=args.task,
        episodes=args.episodes,
        out=Path(args.out),
        policy=args.policy,
        workers=args.workers,
        image_size=args.image_size,
        cameras=tuple(c.strip() for c in args.cameras.split(",") if c.strip()) if args.cameras else (),
        depth=args.depth,
        seed=args.seed,
        resume=args.resume,
        options=task_knobs(args.option, args.task),  # checked here, before any worker starts
        ray=args.ray is not None,
        ray_address=args.ray or None,
        perception=args.perception,
    )
    summary = record(cfg, progress=True)
    summary["options"] = cfg.options
    if not args.json:
        print(f"{summary['episodes_recorded']} episodes ({summary['frames_recorded']} frames) -> {summary['dataset']}: "
              f"{summary['frames_per_s']:.0f} frames/s, success {summary['success_rate']:.0%}; "
              f"{summary['episodes_total']} episodes in the dataset")
    return summary


def data_info(args) -> dict:
    from embodied.data.inspect import dataset_info

    info = dataset_info(args.dir)
    if not args.json:
        print(f"{info['root']}: {info['episodes']} episodes, {info['frames']} frames ({info['duration_s']:.0f} s at "
              f"{info['fps']} fps), {info['size_mb']:.1f} MB on disk, success rate {info['success_rate']:.0%}")
        print(f"robot {info['robot_type']}, cameras {', '.join(info['cameras']) or '-'}")
        for key, f in info["features"].items():
            print(f"  {key:32s} {f['dtype']:8s} {f['shape']}")
        print("tasks:")
        for task, i in info["tasks"].items():
            print(f"  {i:3d}  {task}")
        for name, d in info["per_task"].items():
            print(f"  {name}: {d['episodes']} episodes, {d['frames']} frames, {d['successes']} successes")
    return info


def data_check(args) -> dict:
    from embodied.data.inspect import check_dataset

    problems = check_dataset(args.dir, decode=args.decode)
    result = {"dataset": args.dir, "ok": not problems, "problems": problems}
    if not args.json:
        print(f"{args.dir}: " + ("OK" if not problems else f"{len(problems)} problem(s)"))
        for p in problems:
            print(f"  {p}")
    if problems:
        if args.json:
            import json

            print(json.dumps(result, indent=2))
        raise SystemExit(1)
    return result


def data_video(args) -> dict:
    from embodied.data.render import render_episode

    result = render_episode(args.dir, args.episode, args.output, progress=True)
    if not args.json:
        print(f"episode {result['episode']} ({result['frames']} frames, {result['task']!r}) -> {result['output']}")
    return result


def bench_data(args) -> dict:
    from embodied.data.bench import BenchConfig, run_bench

    workers = [int(w) for w in str(args.workers).split(",") if w.strip()]
    options = task_knobs(args.option, [args.task])
    result = run_bench(BenchConfig(args.task, args.episodes, workers, args.image_size, args.keep, options))
    if not args.json:
        print(f"{args.task}, {args.episodes} episodes at {args.image_size}px:")
        print(f"  bare rollout (1 process): {result['bare_frames_per_s']:.0f} frames/s, "
              f"{result['bare_frames_per_cpu_s']:.0f} frames per CPU second")
        for w, r in result["record"].items():
            print(f"  record, {w} worker(s): {r['frames_per_s']:.0f} frames/s ({r['speedup']:.2f}x of 1)")
        print(f"  recording overhead vs bare rollout (1 worker): {result['overhead_pct']:.0f}% CPU time per frame "
              f"({result['overhead_wall_pct']:.0f}% wall clock)")
        print(f"  {result['mb_per_100_episodes']:.1f} MB per 100 episodes")
    return result
