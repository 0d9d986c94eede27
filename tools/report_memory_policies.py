"""The learned high-level policies' results table, from ``tools/reproduce_memory_policies.sh`` output.

    python3 tools/report_memory_policies.py runs/memory [--no-timing]

Reads ``eval_*.json`` (ablate reports), ``train_*.json`` and ``train_*.time``;
times one decision of each exported policy (median over recorded decision
points, one torch thread) and prints markdown.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import numpy as np


def decision_ms(policy_dir: Path, data_roots: list[str], n: int = 100) -> float:
    import torch

    from policies.memory_policy.data import DecisionData
    from policies.registry import load_run

    torch.set_num_threads(1)
    policy = load_run(policy_dir)
    data = DecisionData(data_roots, policy.config, progress=False)
    idx = np.linspace(0, len(data) - 1, min(n, len(data))).astype(int)
    times = []
    for i in idx:
        batch = data.batch([i], train=False)
        t0 = time.perf_counter()
        policy.decide(batch)
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def main(root: str, timing: bool = True) -> None:
    work = Path(root)
    reports = [json.loads(p.read_text()) for p in sorted(work.glob("eval_*.json"))]
    if not reports:
        sys.exit(f"no eval_*.json in {root}")
    columns = reports[0]["columns"]
    names = {c: c.replace(f"learned:{work}/memory_", "").replace(f"learned:{root}/memory_", "") for c in columns}
    print("| task | suite | " + " | ".join(names[c] for c in columns) + " | chance |")
    print("| --- | --- | " + " | ".join("---" for _ in columns) + " | --- |")
    means: dict[tuple[str, str], list[float]] = {}
    for rep in reports:
        for row in rep["tasks"]:
            cells = []
            for c in columns:
                cells.append(f"{100 * row[c]:.0f}%")
                means.setdefault((row["suite"], c), []).append(row[c])
            print(f"| {row['task']} | {row['suite']} | " + " | ".join(cells) + f" | {100 * row['chance']:.1f}% |")
    for suite in ("manipulation", "navigation"):
        if (suite, columns[0]) in means:
            print(f"| **mean** | {suite} | " + " | ".join(f"{100 * np.mean(means[(suite, c)]):.1f}%" for c in columns)
                  + " | |")
    print(f"\n{reports[0]['episodes']} episodes per task, seeds {reports[0]['seed']}+.\n")
    print("| memory | decisions | train steps | train wall | ms per decision |")
    print("| --- | --- | --- | --- | --- |")
    for path in sorted(work.glob("train_*.json")):
        m = path.stem.removeprefix("train_")
        result = json.loads(path.read_text())
        wall = "-"
        timefile = work / f"train_{m}.time"
        if timefile.exists():
            found = re.search(r"real\s+([\d.]+)", timefile.read_text())
            wall = f"{float(found.group(1)) / 60:.1f} min" if found else "-"
        ms = "-"
        if timing and (work / f"memory_{m}").is_dir():
            roots = json.loads((work / m / "config.json").read_text())["train"].get("data_roots", [])
            ms = f"{decision_ms(work / f'memory_{m}', roots):.1f}"
        print(f"| {m} | {result['decisions']} | {result['steps']} | {wall} | {ms} |")


if __name__ == "__main__":
    main(sys.argv[1], timing="--no-timing" not in sys.argv)
