"""Benchmark results as a markdown leaderboard and a PNG of success against difficulty per family.

    paths = write_reports(load_results("runs/bench"), "runs/bench")   # leaderboard.md, difficulty.png

Input: the results dict of :func:`embodied.eval.benchmark.run_benchmark` (``cells``: one per policy,
task and preset, with ``success_rate``, ``chance`` and ``episodes``).
"""

from __future__ import annotations

import io
from pathlib import Path


def _grid(result: dict) -> dict[tuple[str, str, str], dict]:
    return {(c["policy"], c["task"], c["preset"]): c for c in result["cells"]}


def _tasks(result: dict) -> list[dict]:
    """One entry per task, in the order first met: task, family, suite."""
    seen: dict[str, dict] = {}
    for c in result["cells"]:
        seen.setdefault(c["task"], {"task": c["task"], "family": c["family"], "suite": c["suite"]})
    return list(seen.values())


def markdown(result: dict) -> str:
    """One table per policy (:func:`policy_table`) under a heading with the split and seeds."""
    lo, hi = result["seeds"]
    lines = [f"# Benchmark: {result['protocol']}", "",
             f"Split `{result['key']['split']}`, seeds {lo}-{hi}, {result['key']['episodes']} episodes per family "
             "and preset. Each cell: success rate (chance at that preset's knobs), in percent.", ""]
    if result.get("options"):  # knobs beyond the presets': these numbers are not comparable with the protocol's
        knobs = " ".join(f"`--option {k}={v}`" for k, v in result["options"].items())
        lines += [f"**Not the standard protocol**: {knobs} on top of each preset's knobs.", ""]
    for policy in result["policies"]:
        lines += [f"## `{policy}`", "", *policy_table(result, policy), ""]
    return "\n".join(lines)


def policy_table(result: dict, policy: str) -> list[str]:
    """A row per family, a column per preset, each cell ``success (chance)`` in percent (``—``: not run);
    the last row is the mean over families."""
    grid, presets, tasks = _grid(result), result["presets"], _tasks(result)
    lines = ["| family | suite | " + " | ".join(presets) + " |",
             "| --- | --- | " + " | ".join("---:" for _ in presets) + " |"]
    sums = {p: [] for p in presets}
    for t in tasks:
        row = []
        for preset in presets:
            cell = grid.get((policy, t["task"], preset))
            if cell is None:
                row.append("—")
                continue
            sums[preset].append(cell["success_rate"])
            row.append(f"{100 * cell['success_rate']:.0f} ({100 * cell['chance']:.1f})")
        lines.append(f"| {t['family']} | {t['suite']} | " + " | ".join(row) + " |")
    means = [f"**{100 * sum(v) / len(v):.1f}**" if v else "—" for v in sums.values()]
    return [*lines, "| mean | | " + " | ".join(means) + " |"]


def plot(result: dict) -> bytes:
    """PNG bytes: a panel per family, success against preset, a line per policy, chance dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid, presets, tasks = _grid(result), result["presets"], _tasks(result)
    cols = min(4, len(tasks))
    rows = -(-len(tasks) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False, sharey=True)
    x = range(len(presets))
    for ax, t in zip(axes.flat, tasks):
        for policy in result["policies"]:
            cells = [grid.get((policy, t["task"], p)) for p in presets]
            ys = [c["success_rate"] if c else float("nan") for c in cells]
            ax.plot(x, ys, marker="o", label=policy)
        chance = [next((grid[(q, t["task"], p)]["chance"] for q in result["policies"] if (q, t["task"], p) in grid),
                       float("nan")) for p in presets]
        ax.plot(x, chance, "k--", linewidth=0.8, label="chance")
        ax.set_title(f"{t['family']} ({t['suite'][:3]})", fontsize=9)
        ax.set_xticks(list(x), presets, fontsize=7)
        ax.set_ylim(-0.03, 1.03)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(tasks):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7, loc="lower left")
    fig.supylabel("success rate")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


def write_reports(result: dict, out: str | Path) -> dict[str, str]:
    from policies.checkpoint import atomic_write_bytes  # torch: imported only to write, not to print a table

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    md, png = out / "leaderboard.md", out / "difficulty.png"
    atomic_write_bytes(md, markdown(result).encode())
    atomic_write_bytes(png, plot(result))
    return {"leaderboard": str(md), "plot": str(png)}
