"""Turn the JSON written by ``tools/measure.sh`` into the tables of docs/results.md.

    python3 tools/report.py out/measure > measured.md

Each table is printed only when its JSON files exist, so a partial run still
reports what it measured.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _load(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as exc:
        raise SystemExit(f"report: {path} is not valid JSON ({exc}); rerun tools/measure.sh") from None


def _pct(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{100 * x:.2f}%" if 0 < x < 0.001 else f"{100 * x:.1f}%"


def runs_table(out: Path) -> list[str]:
    rows = []
    tasks = [path.name.removeprefix("run_").removesuffix("_expert.json") for path in out.glob("run_*_expert.json")]
    order = [r["task"] for r in _load(out / "bench_env.json") or []]  # registry order, where known
    for task in sorted(tasks, key=lambda t: (order.index(t) if t in order else len(order), t)):
        expert = _load(out / f"run_{task}_expert.json")
        random = _load(out / f"run_{task}_random.json")
        memoryless = _load(out / f"run_{task}_memoryless.json")
        n = expert["n_episodes"]
        rows.append(
            f"| {task} | {round(expert['success_rate'] * n)}/{n} | {_pct(expert['chance_rate'])} "
            f"| {_pct(memoryless and memoryless['success_rate'])} | {_pct(random and random['success_rate'])} "
            f"| {expert['mean_steps']:.0f} |"
        )
    if not rows:
        return []
    return [
        "| task | expert | chance (formula) | memoryless expert | random | expert steps |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
    ]


def env_table(out: Path) -> list[str]:
    rows = _load(out / "bench_env.json")
    if not rows:
        return []
    lines = [
        "| task | steps/s, no render | steps/s, RGB-D+seg | cameras | render ms | step / render |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['steps_per_s_no_render']:.0f} | {r['steps_per_s_render']:.0f} "
            f"| {len(r['cameras'])} × {r['image_size']} px | {r['render_ms']:.1f} | {r['step_over_render']:.2f} |"
        )
    return lines


def memory_bench_lines(out: Path) -> list[str]:
    b = _load(out / "bench_memory.json")
    if not b:
        return []
    up, lr, q, snap, size = b["update"], b["long_run"], b["queries"], b["snapshot"], b["size"]
    return [
        "| measurement | median | p99 | target |",
        "| --- | --- | --- | --- |",
        f"| perception + update, {len(up['cameras'])}-camera {up['image_size']} px frame ({up['task']}) "
        f"| {up['total']['median_ms']:.2f} ms | {up['total']['p99_ms']:.2f} ms | ≤ 5 ms median |",
        f"| of which perception | {up['perceive']['median_ms']:.2f} ms | {up['perceive']['p99_ms']:.2f} ms | |",
        f"| memory update, {lr['objects']} objects ({lr['steps']}-step run) "
        f"| {lr['update']['median_ms']:.2f} ms | {lr['update']['p99_ms']:.2f} ms | |",
        f"| any query, {lr['events']} events | {q['all']['median_ms']:.3f} ms | {q['all']['p99_ms']:.3f} ms "
        f"| ≤ 1 ms p99 |",
        f"| snapshot at a past time | {snap['median_ms']:.2f} ms | {snap['p99_ms']:.2f} ms | ≤ 2 ms |",
        f"| memory held after the run | {size['mb']:.2f} MB | | ≤ 10 MB |",
    ]


def eval_table(out: Path) -> list[str]:
    masks = _load(out / "eval_memory_masks.json")
    if not masks:
        return []
    geometric = _load(out / "eval_memory_geometric.json") or {"tasks": []}
    geo = {row["task"]: row for row in geometric["tasks"]}
    lines = [
        "| task | recall, masks | recall, geometric | chance | position error (median) | on/in precision | "
        "on/in recall | duplicates | merges |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in masks["tasks"]:
        acc = row["accuracy"]
        g = geo.get(row["task"])
        err = acc.get("position_error_median")
        lines.append(
            f"| {row['task']} | {_pct(row['recall_success'])} | {_pct(g and g['recall_success'])} "
            f"| {_pct(row['chance'])} | {'-' if err is None else f'{100 * err:.1f} cm'} "
            f"| {_fmt(acc.get('relation_precision'))} | {_fmt(acc.get('relation_recall'))} "
            f"| {acc.get('duplicates', '-')} | {acc.get('merges', '-')} |"
        )
    return lines


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def viz_line(out: Path) -> list[str]:
    v = _load(out / "bench_viz.json")
    if not v:
        return []
    ready = v.get("ready_ms")
    return [
        f"Viewer page of a {v['steps']}-step, {v['objects']}-object run ({v['events']} events, "
        f"{v['keyframes_in_page']} keyframes): {v['page_mb']:.2f} MB (target < 20 MB), built in {v['build_s']:.1f} s, "
        + ("interactive in headless Chromium after " + f"{ready:.0f} ms median (target < 2000 ms)." if ready else
           "no browser timing (Chromium missing).")
    ]


CAPTIONS = {
    "runs": """
`embodied run --task NAME --policy expert|memoryless|random --episodes 100 --json`,
seeds 0–99, default knobs. *Chance* is the task's formula for an agent that
acts perfectly with no memory. *Memoryless expert* measures it: the scripted
expert with a cue guessed at the first recall step. *Random* samples uniform
actions; it fails even where chance is 33%, because it lacks the skill
(grasping, pressing), not only the memory. In the apartment the memoryless
expert still knows the layout it toured, so it is an upper bound there:
MovedObject's move stays among at most three spots of one room (hence about
1/3, against 1/13 for an agent that remembers nothing), and MultiGoal's
counts only the first goal.
""",
    "env": """
`embodied bench env --json`: control steps per second with random actions,
without images and with every camera at 128×128 RGB + depth + segmentation,
and the bare cost of rendering one observation (all cameras).
""",
    "eval": """
`embodied eval-memory --episodes 100 --json` (masks, ids shuffled every frame)
and `embodied eval-memory --mode geometric --task NAME ... --episodes 100 --json`
(no masks, no class labels; manipulation only). Recall: the memory's answer
to the task's question at the first recall step is right. Geometric mode
recognises drawers and cups from shape (see Perception). Accuracy, against simulator truth
over whole expert episodes, masks mode: the median object position error and
on/in relation precision and recall (medians over episodes), and duplicated
or merged objects summed over all 100 episodes.
""",
    "memory": """
`embodied bench memory --json`: perception + memory update on a recorded
expert episode (200 frames, rendering excluded); queries, snapshots and size
on a synthetic 10k-step run with 50 objects, one moving at a time.
""",
    "viz": """
`embodied bench viz --json`: the page of a synthetic 10k-step, 50-object
recording, built and loaded three times in headless Chromium.
""",
}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    if not out.is_dir():
        print(f"report: {out} is not a folder of measurements (run tools/measure.sh first)", file=sys.stderr)
        return 2
    sections = [
        ("Experts and baselines", runs_table(out), CAPTIONS["runs"]),
        ("Environment speed", env_table(out), CAPTIONS["env"]),
        ("Memory answers the recall question", eval_table(out), CAPTIONS["eval"]),
        ("Memory speed and size", memory_bench_lines(out), CAPTIONS["memory"]),
        ("Viewer", viz_line(out), CAPTIONS["viz"]),
    ]
    for title, lines, caption in sections:
        if lines:
            print(f"### {title}\n")
            print(caption.strip() + "\n")
            print("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
