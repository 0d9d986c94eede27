"""``embodied benchmark`` end to end on a tiny protocol: results, leaderboard, plot, resume, your own policy."""

from __future__ import annotations

import json
import sys

import pytest

import embodied.eval.benchmark as benchmark
from embodied.cli.main import main
from embodied.eval.benchmark import TEST_SEED, BenchmarkConfig, load_results, run_benchmark

TINY = dict(tasks=("ShellGame-v0",), presets=("easy", "hard"), episodes=2)


def test_tiny_protocol_writes_results_leaderboard_and_plot(tmp_path, capsys):
    out = tmp_path / "bench"
    assert main(["benchmark", "--policy", "expert", "--policy", "memoryless", "--task", "ShellGame",
                 "--task", "RoomRecall", "--preset", "easy", "--preset", "hard", "--episodes", "2",
                 "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    saved = load_results(out)
    assert saved["cells"] == result["cells"]
    assert len(saved["cells"]) == 2 * 2 * 2
    for cell in saved["cells"]:
        assert cell["episodes"] == 2 and cell["preset"] in ("easy", "hard")
        if cell["policy"] == "expert":
            assert cell["success_rate"] == 1.0 and cell["failed_seeds"] == []
    hard = next(c for c in saved["cells"] if c["task"] == "ShellGame-v0" and c["preset"] == "hard")
    assert hard["knobs"]["n_swaps"] == 6 and hard["chance"] == pytest.approx(1 / 5)
    assert saved["seeds"] == [TEST_SEED, TEST_SEED + 1]
    table = (out / "leaderboard.md").read_text()
    assert "## `expert`" in table and "## `memoryless`" in table
    assert "| ShellGame | manipulation | 100 (33.3) | 100 (20.0) |" in table
    assert (out / "difficulty.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_rerun_resumes_and_a_different_protocol_is_refused(tmp_path, monkeypatch):
    out = tmp_path / "bench"
    run_benchmark(BenchmarkConfig(policies=("expert",), **TINY), out=out, progress=False)
    ran = []
    real = benchmark.run_cell
    monkeypatch.setattr(benchmark, "run_cell", lambda policy, *a, **k: ran.append(policy) or real(policy, *a, **k))
    result = run_benchmark(BenchmarkConfig(policies=("expert", "random"), **TINY), out=out, progress=False)
    assert ran == ["random", "random"], "the expert's cells were finished already"
    assert {c["policy"] for c in result["cells"]} == {"expert", "random"}
    assert "## `random`" in (out / "leaderboard.md").read_text()
    with pytest.raises(ValueError, match="give another output folder"):
        run_benchmark(BenchmarkConfig(policies=("expert",), **{**TINY, "episodes": 3}), out=out, progress=False)


def test_a_killed_run_keeps_its_finished_cells(tmp_path, monkeypatch):
    out = tmp_path / "bench"
    real, calls = benchmark.run_cell, []

    def dies_on_the_second(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(benchmark, "run_cell", dies_on_the_second)
    with pytest.raises(KeyboardInterrupt):
        run_benchmark(BenchmarkConfig(policies=("expert",), **TINY), out=out, progress=False)
    assert [c["preset"] for c in load_results(out)["cells"]] == ["easy"]


OWN_POLICY = '''
import numpy as np

class StandStill:
    """An outside policy: reads only observations, never moves."""
    def __init__(self, spec):
        self.spec, self.calls = spec, 0
    def act(self, obs):
        assert "privileged" not in obs and "rgb/scene" in obs
        return np.zeros(self.spec.action_space.shape, dtype=np.float32)

def make(spec):
    assert spec.task == "ShellGame-v0" and spec.labels
    return StandStill(spec)

def make_callable(spec):
    return lambda obs: np.zeros(spec.action_space.shape, dtype=np.float32)
'''


def test_your_own_policy_runs_through_import(tmp_path, monkeypatch):
    (tmp_path / "own_policy.py").write_text(OWN_POLICY)
    monkeypatch.syspath_prepend(str(tmp_path))
    for factory in ("make", "make_callable"):
        result = run_benchmark(BenchmarkConfig(policies=(f"import:own_policy:{factory}",), tasks=("ShellGame-v0",),
                                               presets=("easy",), episodes=1), progress=False)
        cell = result["cells"][0]
        assert cell["success_rate"] == 0.0 and cell["episodes"] == 1
        assert cell["mean_steps"] == 300, "standing still runs out the horizon"
    sys.modules.pop("own_policy", None)


@pytest.mark.parametrize("spec, message", [
    ("import:nosuchmodule_xyz:make", "cannot import module 'nosuchmodule_xyz'"),
    ("import:json:no_factory", "module 'json' has no callable 'no_factory'"),
    ("import:json", "expected import:MODULE:FACTORY"),
])
def test_bad_outside_policies_are_named(spec, message):
    with pytest.raises(ValueError, match=message):
        run_benchmark(BenchmarkConfig(policies=(spec,), tasks=("ShellGame-v0",), presets=("easy",), episodes=1),
                      progress=False)


@pytest.mark.parametrize("argv, message", [
    (["benchmark", "--preset", "brutal"], "invalid choice: 'brutal'"),
    (["benchmark", "--task", "ShellGame", "--suite", "navigation"], "no task of suite 'navigation'"),
    (["benchmark", "--episodes", "0"], "episodes must be >= 1"),
])
def test_bad_benchmark_arguments(argv, message, capsys, tmp_path):
    try:
        code = main([*argv, "--out", str(tmp_path / "b")])
    except SystemExit as exc:  # argparse's own choice check
        code = exc.code
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "b").exists()


def test_test_seeds_are_apart_from_every_seed_the_repository_uses():
    """No test, tool or doc runs episodes on the protocol's seeds: the band from 400000 (dev) to 600000 (test
    seeds and room for long protocol runs) is reserved; the segmenter's frames and the learned-perception
    checks use seeds above it (700000 and up)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    # docs/benchmark.md states the protocol's seeds; everything else must stay below them.
    files = [*root.glob("tests/*.py"), *root.glob("tools/*"), *root.glob("docs/*.md"), root / "README.md"]
    files = [f for f in files if f.name != "benchmark.md"]
    pattern = re.compile(r"(?:--seed[ =]|seed=|seeds? |range\()(\d{4,})")
    used = {int(m) for f in files if f.is_file() for m in pattern.findall(f.read_text(errors="ignore"))}
    reserved_end = TEST_SEED + 100_000
    inside = sorted(s for s in used if benchmark.DEV_SEED <= s < reserved_end)
    assert used and not inside, inside[-5:]
    seeds = BenchmarkConfig(episodes=50).seeds()
    assert seeds == list(range(TEST_SEED, TEST_SEED + 50)) and TEST_SEED > benchmark.DEV_SEED + 50_000
