"""``embodied bench drift``: odometry drift, the corrected pose and memory accuracy against ``odom_noise``.

    embodied bench drift --noise 0 0.02 0.05 0.1 --episodes 5 --seed 2000 --out out/drift/sweep [--option K=V] [--json]
    embodied bench drift --noise 0.05 --episodes 20 --seed 2000 --out out/drift/main --pool out/drift/sweep/drift.json

Writes ``OUT/drift.json`` (every episode's row and the per-setting summary,
this run's rows pooled with those of the ``--pool`` files) and
``OUT/drift.png`` (pose error, object error and success against noise, with
correction on and off), both atomically.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from embodied.cli.options import add_option_argument, task_knobs
from embodied.eval.drift import NAV_TASKS, drift_sweep, summarise


def register(bench_sub: argparse._SubParsersAction) -> None:
    b = bench_sub.add_parser("drift", help="odometry drift vs the corrected pose, memory error and recall against noise")
    b.add_argument("--task", action="append", help=f"navigation task (repeatable; default: {', '.join(NAV_TASKS)})")
    b.add_argument("--noise", type=float, nargs="+", default=[0.0, 0.02, 0.05, 0.1], help="odom_noise values")
    b.add_argument("--episodes", type=int, default=5, help="seeds per (task, noise, mode)")
    b.add_argument("--seed", type=int, default=2000, help="first seed (no test uses 2000+)")
    b.add_argument("--mode", choices=["both", "on", "off"], default="both", help="drift correction on, off or both")
    b.add_argument("--out", default="out/drift", help="folder for drift.json and drift.png")
    b.add_argument("--pool", nargs="*", default=[], help="earlier drift.json files whose rows join this run's")
    add_option_argument(b, help="other task knob, repeatable: KEY=VALUE, e.g. delay=300 (odom_noise: --noise)")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=bench_drift)


def bench_drift(args: argparse.Namespace) -> dict | None:
    if args.episodes < 0 or (args.episodes == 0 and not args.pool):
        raise ValueError("--episodes must be >= 1 (or 0 with --pool: only pool earlier runs)")
    modes = {"both": (True, False), "on": (True,), "off": (False,)}[args.mode]
    options = task_knobs(args.option, args.task or NAV_TASKS, reserved={"odom_noise": "--noise"})
    pooled = []
    for path in args.pool:
        if not Path(path).exists():
            raise ValueError(f"--pool file {path} does not exist")
        pooled += json.loads(Path(path).read_text())["rows"]
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)

    def save(rows: list[dict]) -> dict:
        """drift.json after every episode (a cut-short run keeps what it measured)."""
        out = {"command": "embodied bench drift", "options": options, "rows": rows + pooled,
               "summary": summarise(rows + pooled)}
        _write_atomic(folder / "drift.json", json.dumps(out, indent=1).encode())
        return out

    seeds = range(args.seed, args.seed + args.episodes) if args.episodes > 0 else range(0)
    report = drift_sweep(args.task or NAV_TASKS, args.noise, seeds, modes, progress=True, on_row=save,
                         options=options)
    out = save(report["rows"])
    plot(out["summary"], folder / "drift.png")
    if args.json:
        return {"out": str(folder), "options": options, "summary": out["summary"]}
    print(table(out["summary"]))
    print(f"wrote {folder / 'drift.json'} and {folder / 'drift.png'}")
    return None


def table(summary: list[dict]) -> str:
    """The markdown table of docs/results.md."""
    header = ("| task | odom_noise | correction | episodes | odometry drift (m) | pose error (m) | object error, "
              "median / p90 (cm) | recall | success |")
    lines = [header, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s in sorted(summary, key=lambda s: (s["task"], s["noise"], not s["correct"])):
        obj = "-" if s["object_error_cm"] is None else f"{s['object_error_cm']:.1f} / {s['object_error_p90_cm']:.1f}"
        lines.append(f"| {s['task']} | {s['noise']:g} | {'on' if s['correct'] else 'off'} | {s['episodes']} | "
                     f"{s['odom_drift_m']:.3f} | {s['pose_error_m']:.3f} | {obj} | {100 * s['recall']:.0f}% | "
                     f"{100 * s['success']:.0f}% |")
    return "\n".join(lines)


def plot(summary: list[dict], path: Path) -> None:
    """Three panels against odom_noise: pose error at the end of the tour, median object error, success."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    panels = [("pose_error_m", "pose error at end of tour (m)"), ("object_error_cm", "median object error (cm)"),
              ("success", "success rate")]
    for task in sorted({s["task"] for s in summary}):
        for correct, style in ((True, "-o"), (False, "--x")):
            pts = sorted((s["noise"], s) for s in summary if s["task"] == task and s["correct"] == correct)
            if not pts:
                continue
            label = f"{task.removesuffix('-v0')}, {'corrected' if correct else 'odometry'}"
            for ax, (key, _) in zip(axes, panels):
                ax.plot([n for n, _ in pts], [s[key] if s[key] is not None else float("nan") for _, s in pts],
                        style, label=label)
    for ax, (_, title) in zip(axes, panels):
        ax.set_xlabel("odom_noise")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.partial.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.partial")
    tmp.write_bytes(data)
    os.replace(tmp, path)
