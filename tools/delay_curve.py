"""Success against delay: policies (ablate columns) at 1x, 3x, 10x and 30x each task's default delay.

    python3 tools/delay_curve.py --column learned:explicit --column learned:none --task ShellGame-v0 \
        --episodes 20 --seed 9000 --out runs/delay [--factors 1,3,10,30]

Writes ``OUT/delay.json`` (one ablate report per factor) and ``OUT/delay.png``
(one panel per task: success against the delay, one line per column, chance
dashed). Each factor is an ``embodied ablate --option delay=N`` run on the same
seeds. ``delay.json`` is rewritten atomically after every point, and a rerun
with the same columns, episodes and seed skips the points it already holds, so a
killed run loses only the point it was measuring.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path

from embodied.eval.ablate import ablate
from embodied.tasks import get_task


def default_delay(task: str) -> int:
    fields = {f.name: f.default for f in dataclasses.fields(get_task(task).env_class().Options)}
    if "delay" not in fields:
        raise ValueError(f"{task} has no delay knob")
    return int(fields["delay"])


def save(result: dict, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(result, indent=2))
    os.replace(tmp, path)


def load_done(path: Path, columns: list[str], episodes: int, seed: int) -> list[dict]:
    """Rows of an earlier run into ``path`` measured the same way; [] if none."""
    if not path.exists():
        return []
    old = json.loads(path.read_text())
    if (old.get("columns"), old.get("episodes"), old.get("seed")) != (columns, episodes, seed):
        raise SystemExit(f"{path} holds a curve with other columns, episodes or seed: "
                         f"{old.get('columns')}, {old.get('episodes')}, {old.get('seed')}; use another --out")
    return old["rows"]


def curve(tasks: list[str], columns: list[str], factors: list[int], episodes: int, seed: int,
          out: Path | None = None) -> dict:
    rows = load_done(out, columns, episodes, seed) if out is not None else []
    done = {(r["task"], r["factor"]) for r in rows}
    result = {"columns": columns, "factors": factors, "episodes": episodes, "seed": seed, "rows": rows}
    for task in tasks:
        base = default_delay(task)
        for f in factors:
            if (task, f) in done:
                continue
            report = ablate([task], episodes=episodes, seed=seed, columns=tuple(columns),
                            options={"delay": base * f}, progress=False)
            row = report["tasks"][0]
            rows.append({"task": task, "factor": f, "delay": base * f, "chance": row["chance"],
                         **{c: row[c] for c in columns}, **{f"{c}_failed_seeds": row[f"{c}_failed_seeds"]
                                                            for c in columns}})
            print(json.dumps(rows[-1]), flush=True)
            if out is not None:
                save(result, out)
    order = {(t, f): i for i, (t, f) in enumerate((t, f) for t in tasks for f in factors)}
    rows.sort(key=lambda r: order.get((r["task"], r["factor"]), len(order)))
    return result


def plot(result: dict, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(r["task"] for r in result["rows"]))
    fig, axes = plt.subplots(1, len(tasks), figsize=(3.2 * len(tasks), 3.0), dpi=100, squeeze=False)
    for ax, task in zip(axes[0], tasks):
        rows = [r for r in result["rows"] if r["task"] == task]
        x = [r["factor"] for r in rows]
        for c in result["columns"]:
            ax.plot(x, [100 * r[c] for r in rows], marker="o", label=c)
        ax.plot(x, [100 * r["chance"] for r in rows], ls="--", c="grey", label="chance")
        ax.set_xscale("log")
        ax.set_xticks(x, [f"{f}x" for f in x])
        ax.set_ylim(-5, 105)
        ax.set_title(task.removesuffix("-v0"), fontsize=9)
        ax.set_xlabel("delay (x default)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"success % ({result['episodes']} seeds)")
    axes[0][-1].legend(fontsize=7, loc="center left")  # the middle band is empty: lines sit near 0 and 100
    fig.tight_layout()
    tmp = png.with_name(f".{png.name}.tmp.png")
    fig.savefig(tmp)
    plt.close(fig)
    os.replace(tmp, png)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--task", action="append", required=True)
    p.add_argument("--column", action="append", required=True, help="an ablate column, e.g. learned:explicit")
    p.add_argument("--factors", default="1,3,10,30")
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--seed", type=int, default=9000)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = curve(args.task, args.column, [int(f) for f in args.factors.split(",")], args.episodes, args.seed,
                   out / "delay.json")
    save(result, out / "delay.json")
    plot(result, out / "delay.png")
    print(f"wrote {out / 'delay.json'} and {out / 'delay.png'}")


if __name__ == "__main__":
    main()
