"""Leaderboard tables of `embodied benchmark` runs merged for docs/benchmark.md (tools/report_results.py
--benchmark DIR reads them through ``merged_table``): a later run's cell replaces an earlier one's."""

from __future__ import annotations

import json
from pathlib import Path


def results(path: Path) -> dict:
    """One ``embodied benchmark --out`` results.json (read here: embodied.eval.benchmark imports the envs);
    ValueError naming the file when it is not one."""
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list) or "protocol" not in data:
        raise ValueError(f"{path} holds no benchmark results (no protocol and cells)")
    return data


def merged_table(folder: Path, policy: str, runs: tuple[str, ...]) -> str | None:
    """The leaderboard table of ``policy`` over the benchmark runs ``runs`` (sub-folders of ``folder``),
    merged: a later run's cell (same policy, task and preset) replaces an earlier one's; families in the
    registry's order. None when none of the runs is there; ValueError when only some are, or they mix
    protocols or splits."""
    from embodied.envs.base import PRESET_NAMES
    from embodied.eval.leaderboard import policy_table
    from embodied.tasks import TASKS

    present = [r for r in runs if (folder / r / "results.json").exists()]
    if not present:
        return None
    if len(present) < len(runs):
        missing = ", ".join(str(folder / r / "results.json") for r in runs if r not in present)
        raise ValueError(f"this table merges {', '.join(runs)}; missing: {missing}")
    loaded = [results(folder / r / "results.json") for r in runs]
    for what in ("protocol", "split"):
        values = {r["protocol"] if what == "protocol" else r["key"]["split"] for r in loaded}
        if len(values) > 1:
            raise ValueError(f"runs {', '.join(runs)} mix the {what}s {sorted(values)}")
    cells: dict[tuple, dict] = {}
    for result in loaded:
        for cell in result["cells"]:
            if cell["policy"] == policy:
                cells[(cell["task"], cell["preset"])] = cell
    if not cells:
        raise ValueError(f"no `{policy}` cells in {', '.join(runs)}")
    order = {t: i for i, t in enumerate(TASKS)}
    first_met: dict[str, int] = {}
    for task, _ in cells:
        first_met.setdefault(task, len(first_met))
    merged = sorted(cells.values(), key=lambda c: (order.get(c["task"], len(order)), first_met[c["task"]]))
    known = [p for r in loaded for p in r["presets"]]
    presets = [p for p in dict.fromkeys(known) if any(c["preset"] == p for c in merged)]
    presets.sort(key=lambda p: PRESET_NAMES.index(p) if p in PRESET_NAMES else len(PRESET_NAMES))
    return "\n".join(policy_table({**loaded[0], "cells": merged, "presets": presets}, policy))
