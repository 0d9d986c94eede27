"""The learned high-level policies' results table, from ``tools/reproduce_memory_policies.sh`` output.

    python3 tools/report_memory_policies.py runs/memory [MORE_DIRS...] [--no-timing]

Reads every ``eval*.json`` (``embodied ablate --json`` reports) in the folders and merges them per task and
column: reports over disjoint seed ranges add up (a 100-seed run split in halves); of overlapping ones the
one with the most episodes is kept, so a 100-seed run of one column and a shorter ablation run of others
make one table (``table_markdown``: what ``tools/report_results.py --memory-policies DIR`` writes into
docs/learned-policy.md). Then ``train_*.json`` and ``train_*.time`` of the first
folder, timing one decision of each exported policy (median over recorded decision points, one torch
thread). Prints markdown.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import numpy as np

SUITES = ("manipulation", "navigation")


def decision_ms(policy_dir: Path, data_roots: list[str], n: int = 50) -> float:
    """Median ms of one decision (one torch thread). Explicit: recorded decision points (their real node
    sets). None and implicit: the network's cost depends only on the input shapes, so a full-length history
    of blank frames stands in for decoding the dataset's videos."""
    import torch

    from policies.memory_policy.data import DecisionData
    from policies.memory_policy.inputs import pad_state
    from policies.export import load_run

    torch.set_num_threads(1)
    policy = load_run(policy_dir)
    c = policy.config
    if c.memory == "explicit":
        data = DecisionData(data_roots, c, progress=False)
        batches = [data.batch([i], train=False) for i in np.linspace(0, len(data) - 1, min(n, len(data))).astype(int)]
    else:
        s, cams = c.image_size, c.camera_slots
        batch = {"goal_ids": torch.ones(1, c.max_goal_words, dtype=torch.long),
                 "goal_mask": torch.ones(1, c.max_goal_words, dtype=torch.bool),
                 "state": torch.from_numpy(pad_state(np.zeros(c.state_dim), c.state_dim))[None]}
        if c.memory == "none":
            batch.update(frames=torch.rand(1, cams, 3, s, s), frame_mask=torch.ones(1, cams, dtype=torch.bool))
        else:
            h = c.history_len
            batch.update(history=torch.rand(1, h, cams, 3, s, s), history_mask=torch.ones(1, h, dtype=torch.bool),
                         history_age=torch.arange(h, 0, -1, dtype=torch.float32)[None] * c.history_stride)
        batches = [batch] * n
    times = []
    for batch in batches:
        t0 = time.perf_counter()
        policy.decide(batch)
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def short(column: str) -> str:
    """``learned:/x/memory_explicit:wiped`` -> ``explicit:wiped``; ``learned:none`` -> ``none``."""
    if not column.startswith("learned:"):
        return column
    run, _, variant = column.removeprefix("learned:").partition(":")
    name = Path(run).name.removeprefix("memory_")
    return f"{name}:{variant}" if variant else name


def merge(folders: list[Path]) -> tuple[dict[str, dict], list[str]]:
    """Per task: suite, chance and per short column (success, episodes, seed, failed seeds)."""
    rows: dict[str, dict] = {}
    order: list[str] = []
    for folder in folders:
        for path in sorted(folder.glob("eval*.json")):
            text = path.read_text()
            if not text.strip():
                continue  # a run still going
            report = json.loads(text)
            for row in report["tasks"]:
                entry = rows.setdefault(row["task"], {"suite": row["suite"], "chance": row["chance"], "cells": {}})
                for c in report["columns"]:
                    name = short(c)
                    if name not in order:
                        order.append(name)
                    part = {"seed": report["seed"], "episodes": row[f"{c}_episodes"],
                            "wins": round(row[c] * row[f"{c}_episodes"]), "failed": row.get(f"{c}_failed_seeds", [])}
                    entry["cells"][name] = _add(entry["cells"].get(name), part)
    return rows, order


def _add(cell: dict | None, part: dict) -> dict:
    """A cell (success, episodes, seed, failed, parts) with one more report's ``part`` added: summed when
    its seeds are disjoint from every part's, else the larger of it and the overlapping parts."""
    parts = cell["parts"] if cell else []
    lo, hi = part["seed"], part["seed"] + part["episodes"]
    overlap = [q for q in parts if q["seed"] < hi and lo < q["seed"] + q["episodes"]]
    if overlap:
        if part["episodes"] <= sum(q["episodes"] for q in overlap):
            return cell
        parts = [q for q in parts if q not in overlap]
    parts = sorted([*parts, part], key=lambda q: q["seed"])
    episodes = sum(q["episodes"] for q in parts)
    return {"success": sum(q["wins"] for q in parts) / episodes, "episodes": episodes, "seed": parts[0]["seed"],
            "failed": [f for q in parts for f in q["failed"]], "parts": parts}


def table_markdown(rows: dict[str, dict], order: list[str]) -> str:
    """The results table, its seeds line and the failed seeds worth reading (``table`` prints it)."""
    lines = ["| task | " + " | ".join(order) + " | chance |",
             "| --- | " + " | ".join("---" for _ in order) + " | --- |"]
    for suite in SUITES:
        tasks = [t for t in rows if rows[t]["suite"] == suite]
        for task in tasks:
            cells = []
            for c in order:
                cell = rows[task]["cells"].get(c)
                if cell is None:
                    cells.append("-")
                else:
                    wins = round(cell["success"] * cell["episodes"])
                    cells.append(f"{100 * cell['success']:.0f}% ({wins}/{cell['episodes']})")
            lines.append(f"| {task} | " + " | ".join(cells) + f" | {100 * rows[task]['chance']:.1f}% |")
        if tasks:
            means = []
            for c in order:
                vals = [rows[t]["cells"][c]["success"] for t in tasks if c in rows[t]["cells"]]
                means.append(f"{100 * np.mean(vals):.1f}%" if len(vals) == len(tasks) else "-")
            chance = np.mean([rows[t]["chance"] for t in tasks])
            lines.append(f"| **{suite} mean** | " + " | ".join(means) + f" | {100 * chance:.1f}% |")
    seeds = sorted({cell["seed"] for r in rows.values() for cell in r["cells"].values()})
    lines.append(f"\nSeeds from {', '.join(map(str, seeds))}; (wins/episodes) per cell.\n")
    for task, row in rows.items():
        # Failures worth reading: a column that mostly succeeds (the rest fail nearly everywhere).
        failed = {c: cell["failed"] for c, cell in row["cells"].items()
                  if 0 < len(cell["failed"]) <= cell["episodes"] // 4}
        if failed:
            lines.append(f"- {task} failed seeds: "
                         + "; ".join(f"{c}: {', '.join(map(str, s))}" for c, s in failed.items()))
    return "\n".join(lines)


def table(rows: dict[str, dict], order: list[str]) -> None:
    print(table_markdown(rows, order))


def training(work: Path, timing: bool) -> None:
    print("\n| memory | decisions (episodes) | train steps | params | train wall | CPU (user) | ms per decision |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for path in sorted(work.glob("train_*.json")):
        m = path.stem.removeprefix("train_")
        result = json.loads(path.read_text())
        wall = cpu = "-"
        timefile = work / f"train_{m}.time"
        if timefile.exists():
            text = timefile.read_text()
            found = re.search(r"^real\s+([\d.]+)", text, re.M)
            user = re.search(r"^user\s+([\d.]+)", text, re.M)
            wall = f"{float(found.group(1)) / 60:.1f} min" if found else "-"
            cpu = f"{float(user.group(1)) / 60:.1f} min" if user else "-"
        ms = "-"
        if timing and (work / f"memory_{m}").is_dir():
            roots = json.loads((work / m / "config.json").read_text())["train"].get("data_roots", [])
            ms = f"{decision_ms(work / f'memory_{m}', roots):.1f}"
        print(f"| {m} | {result['decisions']} ({result['episodes']}) | {result['steps']} | {result['params']:,} "
              f"| {wall} | {cpu} | {ms} |")


def main(argv: list[str]) -> None:
    folders = [Path(a) for a in argv if not a.startswith("--")]
    if not folders:
        sys.exit(__doc__)
    rows, order = merge(folders)
    if not rows:
        sys.exit(f"no eval*.json in {', '.join(map(str, folders))}")
    table(rows, order)
    training(folders[0], timing="--no-timing" not in argv)


if __name__ == "__main__":
    main(sys.argv[1:])
