"""``--option KEY=VALUE`` on every ``embodied`` subcommand that builds envs: the flag, its check, and the
knobs reaching the envs and the ``--json`` output. A new subcommand must be classified below."""

from __future__ import annotations

import argparse
import json

import gymnasium
import pytest

from embodied.cli.main import build_parser, main
from embodied.eval.benchmark import BenchmarkConfig, run_benchmark
from embodied.eval.leaderboard import markdown

BUILDS_ENVS = {
    "run", "ablate", "demo", "eval-memory", "eval-rooms", "eval-head", "benchmark", "record-demos",
    "perception make-data", "bench env", "bench perception", "bench memory", "bench data", "bench drift",
}
BUILDS_NO_ENV = {
    "tasks", "viz", "bench viz", "bench head", "data info", "data check", "data video", "train", "pack-windows",
    "export-head", "perception train", "perception train-classifier", "perception train-grouper", "perception eval",
    "perception export",
}


def _leaves(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every runnable subcommand ("bench env", "data info", ...) and its parser."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {prefix: parser}
    out = {}
    for name, child in subs[0].choices.items():
        out.update(_leaves(child, f"{prefix} {name}".strip()))
    return out


def test_every_env_building_command_takes_option_and_every_command_is_classified():
    leaves = _leaves(build_parser())
    assert not BUILDS_ENVS & BUILDS_NO_ENV
    assert set(leaves) == BUILDS_ENVS | BUILDS_NO_ENV, "classify the new subcommand in one of the two lists"
    for name, parser in leaves.items():
        option = [a for a in parser._actions if "--option" in a.option_strings]
        if name in BUILDS_ENVS:
            assert option, f"{name} builds envs but takes no --option"
            assert isinstance(option[0], argparse._AppendAction) and option[0].default == [], name
        else:
            assert not option, f"{name} is listed as building no env yet takes --option"


@pytest.fixture
def made(monkeypatch) -> list[dict]:
    """The keyword arguments of every ``gym.make`` (the knobs the envs really got)."""
    calls, real = [], gymnasium.make

    def spy(env_id, **kwargs):
        calls.append({"id": env_id, **kwargs})
        return real(env_id, **kwargs)

    monkeypatch.setattr(gymnasium, "make", spy)
    return calls


def test_eval_memory_applies_and_records_the_option(made, capsys):
    assert main(["eval-memory", "--task", "TouchAsTold", "--episodes", "1", "--option", "delay=5",
                 "--no-accuracy", "--image-size", "64", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["options"] == {"delay": 5}
    assert out["tasks"][0]["task"] == "TouchAsTold-v0" and out["tasks"][0]["episodes"] == 1
    assert made and all(call["delay"] == 5 for call in made)


def test_demo_applies_and_records_the_option(made, capsys):
    assert main(["demo", "--task", "ShellGame-v0", "--episodes", "1", "--policy", "expert", "--option", "delay=5",
                 "--option", "n_cups=4", "--video", "", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["options"] == {"delay": 5, "n_cups": 4} and out["video"] == ""
    row = out["tasks"][0]
    assert row["options"] == {"delay": 5, "n_cups": 4} and row["success_rate"] == 1.0
    assert row["chance_rate"] == pytest.approx(1 / 4), "chance at the knobs run, not the defaults"
    assert [(c["delay"], c["n_cups"]) for c in made] == [(5, 4)]


@pytest.mark.parametrize("argv", [
    ["eval-memory", "--task", "TouchAsTold"],
    ["eval-rooms", "--task", "RoomRecall"],
    ["demo", "--task", "ShellGame", "--policy", "expert", "--video", "OUT"],
    ["bench", "env", "--task", "ShellGame"],
    ["bench", "perception", "--task", "ShellGame"],
    ["bench", "memory", "--task", "ShellGame"],
    ["bench", "data", "--task", "ShellGame", "--keep", "OUT"],
    ["bench", "drift", "--task", "ObjectRevisit", "--out", "OUT"],
    ["eval-head", "--head", "act:nowhere", "--task", "ShellGame"],
    ["benchmark", "--task", "ShellGame", "--policy", "expert", "--out", "OUT"],
    ["ablate", "--task", "ShellGame"],
    ["record-demos", "--task", "ShellGame", "--episodes", "1", "--out", "OUT"],
    ["perception", "make-data", "--task", "ShellGame", "--out", "OUT"],
])
def test_a_wrong_knob_names_itself_and_the_valid_ones(argv, tmp_path, capsys, made):
    out = tmp_path / "out"
    assert main([str(out) if a == "OUT" else a for a in argv] + ["--option", "nonsense=1"]) == 2
    err = capsys.readouterr().err
    assert "nonsense" in err and "valid options" in err and "delay" in err, err
    assert not made, "the knob is checked before any env is built"
    assert not out.exists(), "nor any output written"


def test_drift_leaves_odom_noise_to_its_flag(capsys):
    assert main(["bench", "drift", "--option", "odom_noise=0.1"]) == 2
    assert "--noise" in capsys.readouterr().err


def test_benchmark_options_go_on_top_of_the_preset_and_are_not_the_standard_protocol(tmp_path, capsys):
    out = tmp_path / "bench"
    assert main(["benchmark", "--policy", "expert", "--task", "ShellGame", "--preset", "hard", "--episodes", "1",
                 "--option", "delay=5", "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    saved = json.loads((out / "results.json").read_text())
    for res in (result, saved):
        assert res["standard"] is False and res["options"] == {"delay": 5} and res["key"]["options"] == {"delay": 5}
    cell = saved["cells"][0]
    assert cell["knobs"]["delay"] == 5 and cell["knobs"]["n_swaps"] == 6, "the knob on top of the hard preset"
    assert "**Not the standard protocol**: `--option delay=5`" in (out / "leaderboard.md").read_text()
    with pytest.raises(ValueError, match="give another output folder"):  # no resuming into other knobs
        run_benchmark(BenchmarkConfig(policies=("expert",), tasks=("ShellGame",), presets=("hard",), episodes=1),
                      out=out, progress=False)
    assert main(["benchmark", "--option", "preset=easy"]) == 2
    assert "--preset" in capsys.readouterr().err
    standard = {**saved, "options": {}, "standard": True}
    assert "Not the standard protocol" not in markdown(standard)
