"""tools/delay_curve.py: a killed curve keeps its measured points, and a rerun measures only the rest."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_tool():
    spec = importlib.util.spec_from_file_location("delay_curve", ROOT / "tools" / "delay_curve.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Killed(Exception):
    pass


def fake_ablate(calls: list, kill_after: int | None = None):
    # Stands in for the simulator so the test checks the curve's bookkeeping in milliseconds.
    def run(tasks, episodes, seed, columns, options, progress):
        if kill_after is not None and len(calls) == kill_after:
            raise Killed
        calls.append((tasks[0], options["delay"]))
        row = {"chance": 0.5, **{c: 1.0 / options["delay"] for c in columns},
               **{f"{c}_failed_seeds": [] for c in columns}}
        return {"tasks": [row]}
    return run


def test_a_rerun_measures_only_the_points_a_killed_run_did_not_save(tmp_path, monkeypatch):
    tool = load_tool()
    out = tmp_path / "delay.json"
    calls: list = []
    monkeypatch.setattr(tool, "ablate", fake_ablate(calls, kill_after=3))
    with pytest.raises(Killed):
        tool.curve(["ShellGame-v0"], ["learned:none"], [1, 3, 10, 30], 4, 9000, out)
    saved = json.loads(out.read_text())
    assert [r["factor"] for r in saved["rows"]] == [1, 3, 10]

    calls.clear()
    monkeypatch.setattr(tool, "ablate", fake_ablate(calls))
    result = tool.curve(["ShellGame-v0"], ["learned:none"], [1, 3, 10, 30], 4, 9000, out)
    base = tool.default_delay("ShellGame-v0")
    assert calls == [("ShellGame-v0", 30 * base)]
    assert [r["factor"] for r in result["rows"]] == [1, 3, 10, 30]
    assert result["rows"][-1]["learned:none"] == pytest.approx(1.0 / (30 * base))


def test_a_curve_measured_otherwise_is_not_mixed_in(tmp_path, monkeypatch):
    tool = load_tool()
    out = tmp_path / "delay.json"
    monkeypatch.setattr(tool, "ablate", fake_ablate([]))
    tool.curve(["ShellGame-v0"], ["learned:none"], [1], 4, 9000, out)
    with pytest.raises(SystemExit, match="other columns, episodes or seed"):
        tool.curve(["ShellGame-v0"], ["learned:none"], [1], 8, 9000, out)
