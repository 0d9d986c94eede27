"""``embodied eval-memory``, ``embodied eval-rooms`` and ``embodied bench memory``."""

from __future__ import annotations

import argparse

from embodied.cli.options import task_knobs
from embodied.tasks import TASKS, get_task


def eval_memory(args: argparse.Namespace) -> dict | None:
    from embodied.eval.evaluate import eval_memory as run_eval

    tasks = [get_task(name).name for name in args.task] if args.task else None
    if args.episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {args.episodes}")
    options = task_knobs(args.option, tasks or list(TASKS))
    perception = {}
    if args.depth_noise:
        perception["depth_noise"] = args.depth_noise
    if args.dropout:
        perception["dropout"] = args.dropout
    if args.mask_erosion:
        perception["mask_erosion"] = args.mask_erosion
    report = run_eval(
        tasks,
        episodes=args.episodes,
        seed=args.seed,
        image_size=args.image_size,
        render_every=args.render_every,
        mode=args.mode,
        accuracy=not args.no_accuracy,
        perception=perception,
        stop_at_recall=args.no_accuracy,
        options=options,
    )
    if args.json:
        return report
    print(f"{'task':<20} {'recall':>7} {'chance':>7} {'pos err':>8} {'on/in P':>8} {'on/in R':>8} {'dup':>4} {'merge':>5}")
    for row in report["tasks"]:
        acc = row["accuracy"]
        print(
            f"{row['task']:<20} {_fmt(row['recall_success'])} {row['chance']:>7.3f} "
            f"{_fmt(acc.get('position_error_median'), 8, 4)} {_fmt(acc.get('relation_precision'), 8)} "
            f"{_fmt(acc.get('relation_recall'), 8)} {acc.get('duplicates', '-'):>4} {acc.get('merges', '-'):>5}"
        )
        for failure in row["failures"][:3]:
            print(f"    failed seed {failure['seed']}: {failure['answer']}")
    return None


def eval_rooms(args: argparse.Namespace) -> dict | None:
    from embodied.eval.rooms import eval_rooms as run_eval

    if args.episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {args.episodes}")
    names = [get_task(t).name for t in args.task] if args.task else [n for n, e in TASKS.items()
                                                                    if e.suite == "navigation"]
    options = task_knobs(args.option, names)
    report = run_eval(names, episodes=args.episodes, seed=args.seed, image_size=args.image_size, options=options)
    if args.json:
        return report
    print(f"{'task':<18} {'assigned right':>15} {'min':>6} {'4 rooms':>8} {'doors':>6} {'names right':>12}")
    for row in report["tasks"]:
        n = row["episodes"]
        print(f"{row['task']:<18} {row['accuracy']:>15.3f} {row['accuracy_min']:>6.3f} {row['four_rooms']:>5}/{n:<2} "
              f"{row['doors_right']:>3}/{n:<2} {row['named_right']:>6}/{row['named']:<5}")
    return None


def _fmt(value, width: int = 7, digits: int = 3) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.{digits}f}"


def bench_memory(args: argparse.Namespace) -> dict | None:
    from embodied.eval.bench import bench_memory as run_bench

    task = get_task(args.task).name
    report = run_bench(task=task, frames=args.frames, steps=args.steps, objects=args.objects, seed=args.seed,
                       options=task_knobs(args.option, [task]))
    if args.json:
        return report
    up, lr, q, snap, size = (report[k] for k in ("update", "long_run", "queries", "snapshot", "size"))
    print(f"perception + update per frame ({args.task}): {_line(up.get('total', up))}")
    print(f"long run: {lr['steps']} steps, {lr['objects']} objects, {lr['events']} events; update {_line(lr['update'])}")
    for name, stats in q.items():
        if isinstance(stats, dict) and "p99_ms" in stats:
            print(f"query {name:<16} {_line(stats)}")
    print(f"snapshot at a past time: {_line(snap)}")
    print(f"memory size: {size['mb']} MB (target {size['target_mb']} MB)")
    return None


def _line(stats: dict) -> str:
    return f"median {stats['median_ms']:.3f} ms, p99 {stats['p99_ms']:.3f} ms (n={stats['n']})"
