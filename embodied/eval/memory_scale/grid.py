"""The grid of ``embodied bench memory --grid``: house runs over steps x object counts, the growth of
each measure fitted (log-log slopes), checked against the targets, plotted and written out.

    report = run_grid(steps=[10_000, 100_000], objects=[50, 500], out=Path("runs/bench-memory"))
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from embodied.eval.memory_scale.measure import TARGETS, scale_run

MEASURES = {  # name -> (value of a grid point, unit)
    "update_median_ms": (lambda p: p["update"]["median_ms"], "ms"),
    "update_p99_ms": (lambda p: p["update"]["p99_ms"], "ms"),
    "update_last_1000_median_ms": (lambda p: p["update_last_1000"]["median_ms"], "ms"),
    "edge_refresh_median_ms": (lambda p: p["edge_refresh"]["median_ms"], "ms"),
    "query_p99_ms": (lambda p: p["queries"]["worst"]["p99_ms"], "ms"),
    "snapshot_median_ms": (lambda p: p["snapshot"]["median_ms"], "ms"),
    "snapshot_p99_ms": (lambda p: p["snapshot"]["p99_ms"], "ms"),
    "save_s": (lambda p: p["save_s"], "s"),
    "load_s": (lambda p: p["load_s"], "s"),
    "held_mb": (lambda p: p["held_mb"], "MB"),
    "held_traced_mb": (lambda p: p["held_traced_mb"], "MB"),
    "disk_mb": (lambda p: p["disk_mb"], "MB"),
    "events": (lambda p: p["events"], ""),
}


def _slope(x, y) -> float | None:
    """Least-squares slope of log y against log x (None with fewer than two usable points)."""
    pts = [(a, b) for a, b in zip(x, y) if a and b and a > 0 and b > 0]
    if len({a for a, _ in pts}) < 2:
        return None
    lx, ly = np.log([a for a, _ in pts]), np.log([b for _, b in pts])
    return round(float(np.polyfit(lx, ly, 1)[0]), 3)


def fit_growth(points: list[dict]) -> dict:
    """Per measure: the log-log slope against steps at each object count, and against objects at each
    step count (1: linear, 0: flat, 2: quadratic)."""
    steps = sorted({p["steps"] for p in points})
    objects = sorted({p["objects"] for p in points})
    out = {}
    for name, (get, unit) in MEASURES.items():
        at = {(p["steps"], p["objects"]): get(p) for p in points}
        vs_steps = {str(o): _slope([s for s in steps if (s, o) in at], [at[s, o] for s in steps if (s, o) in at])
                    for o in objects}
        vs_objects = {str(s): _slope([o for o in objects if (s, o) in at], [at[s, o] for o in objects if (s, o) in at])
                      for s in steps}
        out[name] = {"unit": unit, "slope_vs_steps": vs_steps, "slope_vs_objects": vs_objects}
    return out


def check_targets(point: dict) -> dict:
    """Each target against a measured grid point: value, target, met."""
    values = {
        "update_median_ms": point["update"]["median_ms"],
        "query_p99_ms": point["queries"]["worst"]["p99_ms"],
        "snapshot_median_ms": point["snapshot"]["median_ms"],
        "held_mb": point["held_mb"],
        "save_s": point["save_s"],
        "load_s": point["load_s"],
    }
    return {k: {"value": v, "target": TARGETS[k], "met": bool(v <= TARGETS[k])} for k, v in values.items()}


def plot_growth(points: list[dict], path: Path) -> Path:
    """One panel per measure against steps (log-log), one line per object count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(MEASURES)
    cols = 4
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows))
    objects = sorted({p["objects"] for p in points})
    target_of = {"update_median_ms": "update_median_ms", "query_p99_ms": "query_p99_ms",
                 "snapshot_median_ms": "snapshot_median_ms", "held_mb": "held_mb", "held_traced_mb": "held_mb",
                 "save_s": "save_s", "load_s": "load_s"}
    for ax, name in zip(axes.ravel(), names):
        get, unit = MEASURES[name]
        for o in objects:
            pts = sorted((p["steps"], get(p)) for p in points if p["objects"] == o)
            ax.plot([s for s, _ in pts], [v for _, v in pts], "o-", label=f"{o} objects")
        if name in target_of:
            ax.axhline(TARGETS[target_of[name]], color="grey", ls="--", lw=1, label="target")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{name}" + (f" ({unit})" if unit else ""), fontsize=9)
        ax.set_xlabel("steps", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes.ravel()[len(names):]:
        ax.axis("off")
    axes.ravel()[0].legend(fontsize=7)
    fig.suptitle("SpatialMemory at scale: synthetic house (embodied bench memory --grid)", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def machine() -> dict:
    """Where the numbers were taken: load averages, CPUs, Python."""
    import os
    import platform

    load = os.getloadavg() if hasattr(os, "getloadavg") else (None, None, None)
    return {"load_avg_1_5_15": [round(x, 2) for x in load], "cpus": os.cpu_count(), "python": platform.python_version(),
            "machine": platform.machine()}


def run_grid(steps: list[int], objects: list[int], seed: int = 0, out: Path | None = None, queries: int = 100,
             snapshots: int = 50, progress: bool = True, stream_knobs: dict | None = None) -> dict:
    """The grid steps x objects: one house per object count, run to the most steps and measured at each
    step count. Writes ``out``/results.json and ``out``/growth.png when ``out`` is given."""
    import json

    from tqdm import tqdm

    steps, objects = sorted(set(int(s) for s in steps)), sorted(set(int(o) for o in objects))
    if not steps or min(steps) < 1 or not objects or min(objects) < 1:
        raise ValueError(f"steps and objects must be >= 1, got {steps} and {objects}")
    started = machine()
    t0 = time.perf_counter()
    points: list[dict] = []
    with tqdm(total=len(objects) * steps[-1], desc="bench memory grid", unit="step", disable=not progress,
              smoothing=0.05) as bar:
        for o in objects:
            points += scale_run(o, steps, seed, queries=queries, snapshots=snapshots, bar=bar,
                                stream_knobs=stream_knobs)
    largest = max(points, key=lambda p: (p["steps"], p["objects"]))
    report = {
        "bench": "memory scale (synthetic house)",
        "steps": steps,
        "objects": objects,
        "seed": seed,
        "targets": {"at": {"steps": 100_000, "objects": 500}, **TARGETS},
        "target_check": {"at": {"steps": largest["steps"], "objects": largest["objects"]},
                         **check_targets(largest)},
        "grid": points,
        "growth": fit_growth(points),
        "wall_s": round(time.perf_counter() - t0, 1),
        "machine_before": started,
        "machine_after": machine(),
    }
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(report, indent=1))
        plot_growth(points, out / "growth.png")
        report["files"] = {"results": str(out / "results.json"), "plot": str(out / "growth.png")}
    return report
