"""The whole agent on each perception mode, many seeds per task, in resumable cells (docs/perception.md).

    python3 tools/measure_perception_agent.py --out results/perception --mode masks --mode learned \\
        --first 930000 --last 930099 [--chunk 10] [--workers 2] [--option visual=randomized] [--suite manipulation]

One cell is one task on ``--chunk`` consecutive seeds (``embodied.eval.ablate``'s agent column). The cells run
chunk by chunk across every task and mode (all tasks on seeds 930000-930009, then 930010-930019, ...), so a
run stopped at any point has covered the tasks evenly. Each finished cell is one line of
``OUT/agent_KEY.jsonl`` (KEY: the mode, ``_visual`` added with ``visual=randomized``), the file rewritten
atomically, with the commit, the date and the load it ran at; a rerun skips the cells the file holds, so a
killed run loses only the cell it was in. ``tools/report_perception.py OUT`` merges the lines per task
(``tools/report_results.py --perception OUT`` writes the table into docs/perception.md).

Every task but Lifelong (one 20,700-step episode); ``--suite manipulation`` for geometric mode, which covers
the workcell only. Seeds 930000+ are used by no test and no training frame.
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as ``python3 tools/measure_perception_agent.py`` from a checkout
    sys.path.insert(0, str(ROOT))

MODES = ("masks", "learned", "geometric")


def cell_file(out: Path, mode: str, visual: str) -> Path:
    return out / f"agent_{mode}{'_visual' if visual == 'randomized' else ''}.jsonl"


def read_cells(path: Path) -> list[dict]:
    """The finished cells of one file; a line that is not JSON is an error naming the file and line."""
    if not path.exists():
        return []
    cells = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                cells.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise SystemExit(f"{path}:{number}: not JSON ({err})") from None
    return cells


def append_cell(path: Path, cell: dict) -> None:
    """Add one line to ``path``, rewriting it through a temp file renamed over it (never half written),
    under a lock, so runs of other tasks may share the file."""
    with open(path.with_name(f".{path.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        text = path.read_text() if path.exists() else ""
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text + json.dumps(cell, sort_keys=True) + "\n")
        os.replace(tmp, path)


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def tasks_of(suite: str | None) -> list[str]:
    from embodied.tasks import TASKS, get_task

    return [t for t in TASKS if t != "Lifelong-v0" and (suite is None or get_task(t).suite == suite)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder of the agent_KEY.jsonl files")
    parser.add_argument("--mode", action="append", choices=MODES, required=True, help="repeatable")
    parser.add_argument("--first", type=int, required=True, help="first seed")
    parser.add_argument("--last", type=int, required=True, help="last seed (included)")
    parser.add_argument("--chunk", type=int, default=10, help="seeds per cell")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--suite", choices=("manipulation", "navigation"))
    parser.add_argument("--task", action="append", default=[], help="only these tasks (repeatable)")
    parser.add_argument("--option", action="append", default=[], help="KEY=VALUE, e.g. visual=randomized")
    args = parser.parse_args(argv)
    if args.last < args.first or args.chunk < 1:
        parser.error("need --first <= --last and --chunk >= 1")
    from embodied.eval.ablate import ablate
    from embodied.eval.distributed import Parallel
    from embodied.tasks import get_task

    options = dict(o.split("=", 1) for o in args.option)
    visual = options.get("visual", "default")
    tasks = [get_task(t).name for t in args.task] or tasks_of(args.suite)
    args.out.mkdir(parents=True, exist_ok=True)
    commit = _commit()
    todo = []  # (start, n, mode, task) in run order: chunk by chunk, then mode, then task
    for start in range(args.first, args.last + 1, args.chunk):
        for mode in args.mode:
            done = {(c["task"], c["seed"]) for c in read_cells(cell_file(args.out, mode, visual))}
            todo += [(start, min(args.chunk, args.last + 1 - start), mode, t) for t in tasks if (t, start) not in done]
    bar = tqdm(todo, desc="cells (task x seeds)", unit="cell")
    for start, n, mode, task in bar:
        load = os.getloadavg()[0]
        report = ablate([task], n, start, columns=("agent",), options=options, progress=False, perception=mode,
                        parallel=Parallel(workers=args.workers))
        row = report["tasks"][0]
        cell = {"task": task, "suite": row["suite"], "seed": start, "episodes": n, "mode": mode, "visual": visual,
                "options": options, "success": row["agent"], "failed_seeds": row["agent_failed_seeds"],
                "mean_steps": row["agent_steps"], "commit": commit, "date": datetime.date.today().isoformat(),
                "load": round(load, 2)}
        append_cell(cell_file(args.out, mode, visual), cell)
        bar.write(f"{mode:<10} {task:<20} seeds {start}-{start + n - 1}: {row['agent']:.0%}"
                  f" (failed {row['agent_failed_seeds'] or '-'})")

if __name__ == "__main__":
    main()
