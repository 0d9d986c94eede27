"""Markdown tables for docs/perception.md from tools/measure_perception.sh's JSON files.

    python3 tools/report_perception.py runs/seg

``tools/report_results.py --perception DIR`` writes the same tables into docs/perception.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _load(path: Path):
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as err:  # e.g. a run still writing it
        raise SystemExit(f"{path}: not JSON ({err}); is the run that writes it finished?") from None


def quality(result: dict, title: str) -> str:
    lines = [f"**{title}** ({result['frames']} frames; true instances of at least {result['min_pixels']} px): "
             f"mean IoU over classes {result['mean_iou']:.2f}, over instances {result['instance_iou']:.2f}; "
             f"recall {result['recall']:.2f}, precision {result['precision']:.2f}; class right "
             f"{result['class_right']:.2f}, colour right {result['colour_right']:.2f}; "
             f"{result['ms_median']:.1f} ms per frame (median, one thread).", "",
             "| class | instances | IoU | recall | precision | class right | colour right |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    for cls, row in result["per_class"].items():
        if row["instances"]:
            lines.append(f"| {cls} | {row['instances']} | {fmt(row['iou'])} | {fmt(row['recall'])} | "
                         f"{fmt(row['precision'])} | {fmt(row['class_right'])} | {fmt(row['colour_right'])} |")
    return "\n".join(lines)


# What each step of the pipeline adds: eval file stem (see tools/measure_perception.sh) and row label. The
# first four are the pipeline without the region grouper (``--without grouper``), step by step.
STEPS = (("eval_network_only", "the network alone"), ("eval_no_classifier", "+ snapping to regions, split by class"),
         ("eval_no_proposals", "+ the crop classifier"), ("eval_no_grouper", "+ its proposals"),
         ("eval_shipped", "regions named and joined by the grouper (shipped)"))


def steps(out: Path) -> str | None:
    """One table over both looks: the pipeline step by step (None if a file is missing)."""
    lines = ["| look | pipeline | mean IoU | instance IoU | recall | precision | class right |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for look, suffix in (("default", ""), ("randomized", "_vis")):
        for stem, label in STEPS:
            r = _load(out / f"{stem}{suffix}.json")
            if r is None:
                return None
            lines.append(f"| {look} | {label} | {r['mean_iou']:.2f} | {r['instance_iou']:.2f} | {r['recall']:.2f} | "
                         f"{r['precision']:.2f} | {r['class_right']:.2f} |")
    return "\n".join(lines)


def speed(rows: list[dict]) -> str:
    """ms per camera frame per (task, mode); where the rows carry the learned segmenter's stages
    (``stages_ms``, from ``embodied bench perception``), one more column splits its share by stage."""
    stages = next((list(r["stages_ms"]) for r in rows if r.get("stages_ms")), None)
    head = "| task | mode | ms per camera frame | of which the segmenter |"
    rule = "| --- | --- | ---: | ---: |"
    if stages:
        head, rule = head + f" its stages ({' / '.join(stages)}) |", rule + " --- |"
    lines = [head, rule]
    for r in rows:
        ms = "-" if r["ms_per_camera"] is None else f"{r['ms_per_camera']:.1f}"
        seg = "" if r.get("segment_ms") is None else f"{r['segment_ms']:.1f}"
        line = f"| {r['task']} | {r['mode']} | {ms} | {seg} |"
        if stages:
            line += " " + " / ".join(f"{r['stages_ms'][k]:.1f}" for k in stages) + " |" if r.get("stages_ms") \
                else "  |"
        lines.append(line)
    return "\n".join(lines)


def agent(runs: dict[str, dict]) -> str:
    """Success % per task and run, and each run's episodes of the task; with both a masks and a learned
    run, learned minus masks (on the seeds both ran, where the runs come in cells) and the seeds learned
    perception failed on."""
    names = list(runs)
    first = next(iter(runs.values()))
    compare = "masks" in runs and "learned" in runs
    extra = ["learned − masks", "learned: failed seeds"] if compare else []
    lines = ["| task | suite | " + " | ".join(names + ["episodes"] + extra) + " |",
             "| --- | --- | " + " | ".join(["---:"] * (len(names) + 1 + bool(extra)) + ["---"] * bool(extra)) + " |"]
    means = {n: [] for n in names}
    by_task = {n: {t["task"]: t for t in runs[n]["tasks"]} for n in names}
    for row in first["tasks"]:
        cells = []
        for n in names:
            value = by_task[n].get(row["task"], {}).get("agent")
            if value is None:
                cells.append("-")
                continue
            means[n].append(value)
            cells.append(f"{100 * value:.0f}")
        cells.append("/".join(str(by_task[n].get(row["task"], {}).get("episodes", "-")) for n in names))
        if compare:
            masks, learned = by_task["masks"].get(row["task"]), by_task["learned"].get(row["task"])
            if masks and learned:
                failed = ", ".join(str(s) for s in learned.get("agent_failed_seeds") or []) or "-"
                diff = _difference(masks, learned)
                cells += ["-" if diff != diff else f"{100 * diff:+.0f}", failed]
            else:
                cells += ["-", "-"]
        lines.append(f"| {row['task']} | {row['suite'][:5]} | " + " | ".join(cells) + " |")
    # A run that covers only some of the tasks (a measurement under way) gives its mean over those, so marked.
    tail = [f"**{100 * sum(v) / len(v):.1f}**" if len(v) == len(first["tasks"]) else
            (f"{100 * sum(v) / len(v):.1f} ({len(v)} tasks)" if v else "-") for v in means.values()]
    if compare:
        both = [_difference(by_task["masks"][t], by_task["learned"][t]) for t in by_task["masks"]
                if t in by_task["learned"]]  # over the tasks (and seeds) both runs cover
        both = [d for d in both if d == d]
        tail += [f"{100 * sum(both) / len(both):+.1f}" if both else "-", ""]
    lines.append("| mean | | " + " | ".join(tail[:len(names)] + [""] + tail[len(names):]) + " |")
    return "\n".join(lines)


# The held-out evaluations: file and title; the agent runs: file key and column label.
QUALITY = (("eval_shipped.json", "Held-out frames, default look"),
           ("eval_shipped_vis.json", "Held-out frames, visual=randomized"))
AGENT_RUNS = (("masks", "masks"), ("learned", "learned"), ("learned_visual", "learned, visual=randomized"),
              ("geometric", "geometric (workcell)"))


def _agent_report(out: Path, key: str) -> dict | None:
    """``agent_KEY.json``, or its parts ``agent_KEY_a.json``, ``agent_KEY_b.json``, ... together: one
    evaluation split over processes by ``--task``, by seed range (``--seed``), or both. A task in several
    parts gets the episode-weighted success and every part's failed seeds."""
    whole = _load(out / f"agent_{key}.json")
    if whole:
        return whole
    cells = out / f"agent_{key}.jsonl"
    if cells.exists():
        return _cells_report(cells)
    parts = [_load(p) for p in sorted(out.glob(f"agent_{key}_?.json"))]
    parts = [p for p in parts if p]
    if not parts:
        return None
    merged: dict[str, dict] = {}
    for row in (t for p in parts for t in p["tasks"]):
        if row["task"] not in merged:
            merged[row["task"]] = dict(row, agent_failed_seeds=list(row.get("agent_failed_seeds") or []))
            continue
        into = merged[row["task"]]
        for key in ("agent_steps", "agent_steps_per_s"):  # per-part means, not merged: left out
            into.pop(key, None)
        n, m = into["episodes"], row["episodes"]
        into["agent"] = (into["agent"] * n + row["agent"] * m) / (n + m)
        into["episodes"] = into["agent_episodes"] = n + m
        into["agent_failed_seeds"] = sorted(into["agent_failed_seeds"] + list(row.get("agent_failed_seeds") or []))
    return {"tasks": list(merged.values())}


def _cells_report(path: Path) -> dict:
    """``tools/measure_perception_agent.py``'s cells (one task on a run of seeds per line) merged per task,
    in the order the tasks first appear; seeds counted twice are an error naming the file and task."""
    merged: dict[str, dict] = {}
    seen: dict[str, set[int]] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            cell = json.loads(line)
        except json.JSONDecodeError as err:
            raise SystemExit(f"{path}:{number}: not JSON ({err})") from None
        task, seeds = cell["task"], set(range(cell["seed"], cell["seed"] + cell["episodes"]))
        if seeds & seen.setdefault(task, set()):
            raise SystemExit(f"{path}:{number}: {task} seeds {min(seeds & seen[task])}... counted twice")
        seen[task] |= seeds
        row = merged.setdefault(task, {"task": task, "suite": cell["suite"], "agent": 0.0, "episodes": 0,
                                       "agent_episodes": 0, "agent_failed_seeds": []})
        n, m = row["episodes"], cell["episodes"]
        row["agent"] = (row["agent"] * n + cell["success"] * m) / (n + m)
        row["episodes"] = row["agent_episodes"] = n + m
        row["agent_failed_seeds"] = sorted(row["agent_failed_seeds"] + list(cell["failed_seeds"]))
        row.setdefault("cells", {})[cell["seed"]] = (cell["episodes"], cell["success"])
    return {"tasks": list(merged.values())}


def _difference(masks: dict, learned: dict) -> float:
    """Learned minus masks success of one task: over the seed runs both measured where both come in cells
    (a measurement under way), else over each run's own episodes."""
    a, b = masks.get("cells"), learned.get("cells")
    if not (a and b):
        return learned["agent"] - masks["agent"]
    common = [s for s in a if s in b and a[s][0] == b[s][0]]
    if not common:
        return float("nan")
    n = sum(a[s][0] for s in common)
    return sum(a[s][0] * (b[s][1] - a[s][1]) for s in common) / n


def agent_runs(out: Path) -> dict[str, dict]:
    """The ``agent_*.json`` reports present in ``out``, by column label."""
    runs = {label: _agent_report(out, key) for key, label in AGENT_RUNS}
    return {k: v for k, v in runs.items() if v}


def main(root: str) -> None:
    out = Path(root)
    for name, title in QUALITY:
        result = _load(out / name)
        if result:
            print(quality(result, title), end="\n\n")
    table = steps(out)
    if table:
        print(table, end="\n\n")
    rows = _load(out / "bench_perception.json")
    if rows:
        print(speed(rows), end="\n\n")
    runs = agent_runs(out)
    if runs:
        print(agent(runs))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
