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


def int_list(text: str) -> list[int]:
    """``--steps 10000,30000`` -> [10000, 30000] (an argparse type)."""
    try:
        values = [int(v.replace("_", "")) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers separated by commas, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected integers >= 1, got {text!r}")
    return values


def bench_memory(args: argparse.Namespace) -> dict | None:
    steps, objects = args.steps, args.objects
    if args.grid or len(steps or ()) > 1 or len(objects or ()) > 1:
        return _bench_memory_grid(args)
    from embodied.eval.bench import bench_memory as run_bench

    task = get_task(args.task).name
    report = run_bench(task=task, frames=args.frames, steps=(steps or [10_000])[0], objects=(objects or [50])[0],
                       queries=args.queries, seed=args.seed, options=task_knobs(args.option, [task]))
    if args.json:
        return report
    up, lr, q, snap, size, io = (report[k] for k in ("update", "long_run", "queries", "snapshot", "size", "save_load"))
    print(f"perception + update per frame ({args.task}): {_line(up.get('total', up))}")
    print(f"synthetic house: {lr['steps']} steps, {lr['objects']} objects ({lr['objects_seen']} seen, {lr['nodes']} "
          f"nodes, where_is right for {100 * lr['where_is_right']:.1f}%), {lr['events']} events")
    print(f"  update (thread CPU) {_line(lr['update'])}; wall {_line(lr['update_wall'])}")
    for name, stats in q.items():
        if isinstance(stats, dict) and "p99_ms" in stats and name not in ("worst", "all"):
            print(f"  query {name:<16} {_line(stats)}")
    print(f"  snapshot at a past time: {_line(snap)}")
    print(f"  save {io['save_s']:.2f} s, load {io['load_s']:.2f} s, {io['disk_mb']} MB on disk")
    print(f"  held: {size['mb']} MB (deep size), {size['traced_mb']} MB (tracemalloc of a load); target "
          f"{size['target_mb']} MB at 100k steps x 500 objects")
    return None


def _bench_memory_grid(args: argparse.Namespace) -> dict | None:
    from pathlib import Path

    from embodied.eval.memory_scale import MEASURES, run_grid

    if args.option:
        raise ValueError("--option sets knobs of the expert episode's task; the grid runs no task (only the house)")

    out = Path(args.out or "runs/bench-memory")
    report = run_grid(args.steps or [10_000, 30_000, 100_000], args.objects or [50, 150, 500], seed=args.seed,
                      out=out, queries=args.queries, progress=True)
    if args.json:
        return report
    print(f"memory at scale (synthetic house; thread CPU times; load {report['machine_before']['load_avg_1_5_15']} "
          f"-> {report['machine_after']['load_avg_1_5_15']} on {report['machine_after']['cpus']} CPUs)")
    print(f"{'steps':>7} {'objects':>7} {'seen':>5} {'nodes':>5} {'events':>7} {'update':>7} {'p99':>7} "
          f"{'query p99 (worst)':>28} {'snapshot':>8} {'save s':>6} {'load s':>6} {'held MB':>7} {'disk MB':>7}")
    for p in report["grid"]:
        w = p["queries"]["worst"]
        print(f"{p['steps']:>7} {p['objects']:>7} {p['objects_seen']:>5} {p['nodes']:>5} {p['events']:>7} "
              f"{p['update']['median_ms']:>7.3f} {p['update']['p99_ms']:>7.3f} "
              f"{w['p99_ms']:>10.3f} {w['query']:>17} {p['snapshot']['median_ms']:>8.2f} {p['save_s']:>6.2f} "
              f"{p['load_s']:>6.2f} {p['held_mb']:>7.1f} {p['disk_mb']:>7.1f}")
    check = report["target_check"]
    at = check["at"]
    print(f"targets (set for 100000 steps x 500 objects; checked at {at['steps']} x {at['objects']}):")
    for name, row in check.items():
        if name != "at":
            print(f"  {name:<20} {row['value']:>9} (target {row['target']}): {'met' if row['met'] else 'MISSED'}")
    print("growth (log-log slope; 1 = linear):")
    for name in MEASURES:
        g = report["growth"][name]
        vs_s = ", ".join(f"{k} obj {v}" for k, v in g["slope_vs_steps"].items() if v is not None) or "-"
        vs_o = ", ".join(f"{k} steps {v}" for k, v in g["slope_vs_objects"].items() if v is not None) or "-"
        print(f"  {name:<28} vs steps: {vs_s}; vs objects: {vs_o}")
    print(f"wrote {report['files']['results']} and {report['files']['plot']}")
    return None


def _line(stats: dict) -> str:
    return f"median {stats['median_ms']:.3f} ms, p99 {stats['p99_ms']:.3f} ms (n={stats['n']})"
