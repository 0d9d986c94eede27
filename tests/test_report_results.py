"""tools/report_results.py: the generated sections of the docs pages, rewritten from small synthetic JSON.

Every test works on a copy of the pages in tmp_path (``--docs``); the repository's pages are only read.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("results.md", "perception.md", "learned-policy.md", "benchmark.md")


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_test_{name}", ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


tool = _load("report_results")


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for page in PAGES:
        shutil.copy(ROOT / "docs" / page, folder / page)
    return folder


def split(text: str, name: str) -> tuple[str, str, str]:
    """(before the section's body, its body, after it): the markers stay in before/after."""
    begin = next(i for i, line in enumerate(text.splitlines(keepends=True))
                 if line.startswith(f"<!-- generated: {name} ("))
    lines = text.splitlines(keepends=True)
    end = next(i for i in range(begin, len(lines)) if lines[i].strip() == "<!-- end generated -->")
    return "".join(lines[:begin + 1]), "".join(lines[begin + 1:end]), "".join(lines[end:])


def ablate_json(folder: Path, task: str, agent: float, chance: float = 1 / 3) -> None:
    """What ``embodied ablate --task T --json`` writes (the keys tools/report_agent.py reads)."""
    row = {"task": task, "suite": "manipulation", "chance": chance, "episodes": 10}
    for column, value in (("expert", 1.0), ("agent", agent), ("agent:wiped", 0.0), ("agent:blank", 0.2)):
        row |= {column: value, f"{column}_episodes": 10 if column in ("expert", "agent") else 5,
                f"{column}_failed_seeds": [], f"{column}_steps_per_s": 123.4}
    (folder / f"ablate_{task}.json").write_text(json.dumps({"seed": 1000, "episodes": 10, "tasks": [row],
                                                            "columns": ["expert", "agent", "agent:wiped",
                                                                        "agent:blank"]}))
    delay = {"seed": 2000, "episodes": 4, "columns": ["agent"], "tasks": [{"task": task, "agent": 0.75}]}
    (folder / f"delay10_{task}.json").write_text(json.dumps(delay))


def test_the_agent_section_is_replaced_and_nothing_else(docs, tmp_path, capsys):
    agent = tmp_path / "agent"
    agent.mkdir()
    ablate_json(agent, "ShellGame-v0", 0.9)
    ablate_json(agent, "RememberColor-v0", 0.8)
    before = {page: (docs / page).read_bytes() for page in PAGES}

    assert tool.main(["--agent", str(agent), "--docs", str(docs)]) == 0
    out = capsys.readouterr().out
    assert "regenerated agent-ablation" in " ".join(out.split())
    assert "kept drift" in " ".join(out.split()) and "no --drift" in out

    old_head, old_body, old_tail = split(before["results.md"].decode(), "agent-ablation")
    new_head, new_body, new_tail = split((docs / "results.md").read_text(), "agent-ablation")
    assert (new_head, new_tail) == (old_head, old_tail)  # every other byte of the page kept
    expected = _load("report_agent").markdown(agent)
    assert new_body == f"\n{expected}\n\n" and new_body != old_body
    assert "| ShellGame-v0 | 100% (10) | 90% (10) | 0% (5) | 20% (5) | 33.3% | 75% (4) | 123 |" in new_body
    assert "mean agent success over 2 tasks: 85.0%" in new_body
    for page in PAGES[1:]:
        assert (docs / page).read_bytes() == before[page]
    assert not list(docs.glob(".*.tmp"))  # the temp file was renamed, none left behind

    # --check: up to date now; stale (exit 1, nothing written) once the JSON changes.
    assert tool.main(["--agent", str(agent), "--docs", str(docs), "--check"]) == 0
    written = (docs / "results.md").read_bytes()
    ablate_json(agent, "ShellGame-v0", 0.5)
    capsys.readouterr()
    assert tool.main(["--agent", str(agent), "--docs", str(docs), "--check"]) == 1
    out = capsys.readouterr().out
    assert "stale" in out and "agent-ablation" in out and "+| ShellGame-v0 | 100% (10) | 50% (10)" in out
    assert (docs / "results.md").read_bytes() == written


def test_a_bad_folder_or_failing_reporter_is_an_error_naming_it(docs, tmp_path, capsys):
    before = (docs / "results.md").read_bytes()
    missing = tmp_path / "nowhere"
    assert tool.main(["--agent", str(missing), "--docs", str(docs)]) == 2
    assert f"--agent {missing}: not a folder" in capsys.readouterr().err

    empty = tmp_path / "empty"
    empty.mkdir()
    assert tool.main(["--measure", str(empty), "--docs", str(docs)]) == 2
    err = capsys.readouterr().err
    assert f"--measure {empty}: feeds none of its sections" in err and "bench_env.json" in err

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "ablate_ShellGame-v0.json").write_text(json.dumps({"tasks": [{"task": "ShellGame-v0"}]}))
    assert tool.main(["--agent", str(broken), "--docs", str(docs)]) == 2
    err = capsys.readouterr().err
    assert f"section agent-ablation (--agent {broken}): the reporter failed" in err
    assert (docs / "results.md").read_bytes() == before


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("<!-- generated: drift (", "<!-- generated: drifts ("), "unknown marker 'drifts'"),
    (lambda t: t.replace("<!-- generated: drift (python3 tools/report_results.py --drift DIR)",
                         "<!-- generated: drift (python3 tools/report_results.py --agent DIR)"),
     "its section is regenerated with --drift"),
    (lambda t: t.replace("<!-- end generated -->", "", 1), "opens inside 'agent-ablation'"),
    (lambda t: t + "\n<!-- end generated -->\n", "without an opening"),
    (lambda t: "".join(t.rsplit("<!-- end generated -->", 1)), "'viewer' is never closed"),
])
def test_unknown_or_unmatched_markers_are_errors_naming_them(docs, capsys, edit, message):
    page = docs / "results.md"
    page.write_text(edit(page.read_text()))
    assert tool.main(["--check", "--docs", str(docs)]) == 2
    err = capsys.readouterr().err
    assert message in err and str(page) in err


def test_perception_drift_and_merged_benchmark_sections(docs, tmp_path, capsys):
    # perception (docs/perception.md): the speed table from bench_perception.json; the other inputs absent: kept
    seg = tmp_path / "seg"
    seg.mkdir()
    (seg / "bench_perception.json").write_text(json.dumps([
        {"task": "ShellGame-v0", "mode": "masks", "ms_per_camera": 1.25, "segment_ms": None},
        {"task": "ShellGame-v0", "mode": "learned", "ms_per_camera": 9.0, "segment_ms": 7.5}]))
    # drift (docs/results.md): OUT/all/drift.json's summary, as tools/measure_drift.sh leaves it
    (tmp_path / "drift" / "all").mkdir(parents=True)
    summary = [{"task": "MultiGoal-v0", "noise": 0.05, "correct": c, "episodes": 2, "odom_drift_m": 0.5,
                "pose_error_m": 0.01 if c else 0.5, "object_error_cm": 2.0, "object_error_p90_cm": 4.0,
                "recall": 1.0, "success": 1.0 if c else 0.5} for c in (True, False)]
    (tmp_path / "drift" / "all" / "drift.json").write_text(json.dumps({"rows": [], "summary": summary}))
    # benchmark (docs/benchmark.md): the wiped agent's table merges three runs; a later run's cell wins
    bench = tmp_path / "bench"

    def run(name, cells):
        (bench / name).mkdir(parents=True)
        result = {"protocol": "embodied-memory-v1", "key": {"split": "test", "episodes": 5}, "options": {},
                  "policies": ["agent:wiped"], "presets": ["easy"], "seeds": [500000, 500004],
                  "cells": [{"policy": "agent:wiped", "task": t, "family": f, "suite": s, "preset": "easy",
                             "success_rate": r, "chance": 0.25, "episodes": 5} for t, f, s, r in cells]}
        (bench / name / "results.json").write_text(json.dumps(result))

    run("wiped_manip", [("ShellGame-v0", "ShellGame", "manipulation", 0.2)])
    run("wiped_nav", [("RoomRecall-v0", "RoomRecall", "navigation", 0.4)])
    run("wiped_rearrange", [("ShellGame-v0", "ShellGame", "manipulation", 0.0),
                            ("PutBlockBack-v0", "PutBlockBack", "manipulation", 0.0)])
    before = {page: (docs / page).read_text() for page in PAGES}
    assert tool.main(["--perception", str(seg), "--drift", str(tmp_path / "drift"), "--benchmark", str(bench),
                      "--docs", str(docs)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "regenerated perception-speed" in out and "kept perception-agent" in out
    assert "kept benchmark-agent-test" in out and "regenerated benchmark-wiped" in out

    speed = split((docs / "perception.md").read_text(), "perception-speed")[1]
    assert speed == "\n| task | mode | ms per camera frame | of which the segmenter |\n" \
                    "| --- | --- | ---: | ---: |\n| ShellGame-v0 | masks | 1.2 |  |\n" \
                    "| ShellGame-v0 | learned | 9.0 | 7.5 |\n\n"
    drift = split((docs / "results.md").read_text(), "drift")[1]
    assert "| MultiGoal-v0 | 0.05 | on | 2 | 0.500 | 0.010 | 2.0 / 4.0 | 100% | 100% |" in drift
    assert "| MultiGoal-v0 | 0.05 | off | 2 | 0.500 | 0.500 | 2.0 / 4.0 | 100% | 50% |" in drift
    wiped = split((docs / "benchmark.md").read_text(), "benchmark-wiped")[1]
    assert wiped == ("\n| family | suite | easy |\n| --- | --- | ---: |\n"
                     "| PutBlockBack | manipulation | 0 (25.0) |\n| ShellGame | manipulation | 0 (25.0) |\n"
                     "| RoomRecall | navigation | 40 (25.0) |\n| mean | | **13.3** |\n\n")  # registry order
    for page, name in (("perception.md", "perception-agent"), ("benchmark.md", "benchmark-agent-dev"),
                       ("learned-policy.md", "memory-policies")):
        assert split((docs / page).read_text(), name)[1] == split(before[page], name)[1]
    assert (docs / "learned-policy.md").read_text() == before["learned-policy.md"]

    # A run missing from a merged table is named.
    shutil.rmtree(bench / "wiped_nav")
    assert tool.main(["--benchmark", str(bench), "--docs", str(docs)]) == 2
    assert "benchmark-wiped" in (err := capsys.readouterr().err) and str(bench / "wiped_nav") in err


def test_the_repository_pages_carry_every_marker(capsys):
    """The committed pages parse: every section has its marker pair, no unknown marker (no folder: no check)."""
    assert tool.main(["--check"]) == 0
    out = capsys.readouterr().out
    assert all(f" {s.name} " in out for s in tool.SECTIONS)


def test_the_perception_speed_table_splits_the_segmenter_by_stage_where_the_bench_measured_it():
    report = _load("report_perception")
    rows = [{"task": "A-v0", "mode": "masks", "ms_per_camera": 0.7, "segment_ms": None, "stages_ms": None},
            {"task": "A-v0", "mode": "learned", "ms_per_camera": 6.84, "segment_ms": 5.79,
             "stages_ms": {"network": 2.74, "regions": 0.72, "graph": 1.63}}]
    lines = report.speed(rows).splitlines()
    assert lines[0].endswith("| of which the segmenter | its stages (network / regions / graph) |")
    assert lines[2] == "| A-v0 | masks | 0.7 |  |  |"
    assert lines[3] == "| A-v0 | learned | 6.8 | 5.8 | 2.7 / 0.7 / 1.6 |"
    # an older bench file, with no stages: the table as before, one column fewer
    for r in rows:
        del r["stages_ms"]
    assert report.speed(rows).splitlines()[0] == "| task | mode | ms per camera frame | of which the segmenter |"


def test_the_perception_agent_table_compares_learned_with_masks():
    """With a masks and a learned run, each task's row gives learned minus masks and the seeds learned
    perception failed on; the mean row the mean difference."""
    report = _load("report_perception")
    task = lambda name, agent, failed=(): {"task": name, "suite": "manipulation", "agent": agent,  # noqa: E731
                                           "episodes": 10, "agent_failed_seeds": list(failed)}
    runs = {"masks": {"tasks": [task("A-v0", 1.0), task("B-v0", 0.9, [7])]},
            "learned": {"tasks": [task("A-v0", 0.8, [3, 5]), task("B-v0", 0.9, [8])]}}
    lines = report.agent(runs).splitlines()
    assert lines[0] == "| task | suite | masks | learned | episodes | learned − masks | learned: failed seeds |"
    assert lines[2] == "| A-v0 | manip | 100 | 80 | 10/10 | -20 | 3, 5 |"
    assert lines[3] == "| B-v0 | manip | 90 | 90 | 10/10 | +0 | 8 |"
    assert lines[4].startswith("| mean | | **95.0** | **85.0** |  | -10.0 |")
    # a run under way, on some of the tasks: its mean is over those, so marked, and the difference too
    runs["learned"]["tasks"] = runs["learned"]["tasks"][:1]
    lines = report.agent(runs).splitlines()
    assert lines[3] == "| B-v0 | manip | 90 | - | 10/- | - | - |"
    assert lines[4].startswith("| mean | | **95.0** | 80.0 (1 tasks) |  | -20.0 |")


def test_measured_cells_merge_per_task_and_a_seed_counted_twice_is_an_error(tmp_path):
    """tools/measure_perception_agent.py's lines (one task on a run of seeds each) merge per task, episode
    weighted, with every failed seed; a line repeating seeds names the file and line."""
    report = _load("report_perception")
    cell = lambda task, seed, success, failed=(): json.dumps({  # noqa: E731
        "task": task, "suite": "manipulation", "seed": seed, "episodes": 10, "success": success,
        "failed_seeds": list(failed)})
    path = tmp_path / "agent_learned.jsonl"
    path.write_text("\n".join([cell("A-v0", 100, 0.9, [104]), cell("B-v0", 100, 1.0), cell("A-v0", 110, 0.8, [111, 117])])
                    + "\n")
    tasks = {t["task"]: t for t in report.agent_runs(tmp_path)["learned"]["tasks"]}
    assert tasks["A-v0"]["episodes"] == 20 and abs(tasks["A-v0"]["agent"] - 0.85) < 1e-9
    assert tasks["A-v0"]["agent_failed_seeds"] == [104, 111, 117] and tasks["B-v0"]["episodes"] == 10
    # learned − masks over the seed runs both measured: masks has A on 100 and 110, learned on 100 alone
    (tmp_path / "agent_masks.jsonl").write_text(cell("A-v0", 100, 1.0) + "\n" + cell("A-v0", 110, 0.5) + "\n")
    path.write_text(cell("A-v0", 100, 0.9, [104]) + "\n")
    runs = report.agent_runs(tmp_path)
    row = [line for line in report.agent(runs).splitlines() if line.startswith("| A-v0")][0]
    assert row == "| A-v0 | manip | 75 | 90 | 20/10 | -10 | 104 |"
    path.write_text("\n".join([cell("A-v0", 100, 0.9, [104]), cell("B-v0", 100, 1.0)]) + "\n")
    path.write_text(path.read_text() + cell("B-v0", 105, 1.0) + "\n")
    with pytest.raises(SystemExit, match="agent_learned.jsonl:3: B-v0 seeds 105"):
        report.agent_runs(tmp_path)


def test_agent_parts_split_by_seeds_are_merged_per_task(tmp_path):
    """Parts of one evaluation, split by task and by seed range, give each task's episode-weighted
    success and all its failed seeds."""
    report = _load("report_perception")
    row = lambda name, agent, episodes, failed=(): {"task": name, "suite": "navigation", "agent": agent,  # noqa: E731
                                                   "episodes": episodes, "agent_failed_seeds": list(failed)}
    (tmp_path / "agent_learned_a.json").write_text(json.dumps({"tasks": [row("A-v0", 0.9, 10, [4]),
                                                                         row("B-v0", 1.0, 10)]}))
    (tmp_path / "agent_learned_b.json").write_text(json.dumps({"tasks": [row("A-v0", 0.8, 20, [12, 19, 25, 27])]}))
    tasks = {t["task"]: t for t in report.agent_runs(tmp_path)["learned"]["tasks"]}
    assert tasks["A-v0"]["episodes"] == 30 and abs(tasks["A-v0"]["agent"] - 25 / 30) < 1e-9
    assert tasks["A-v0"]["agent_failed_seeds"] == [4, 12, 19, 25, 27]
    assert tasks["B-v0"]["agent"] == 1.0 and tasks["B-v0"]["episodes"] == 10


def test_the_agent_measurement_writes_one_line_a_cell_and_a_rerun_resumes(tmp_path, capsys):
    """tools/measure_perception_agent.py runs the agent a cell (task, seed run) at a time and adds each
    finished cell's line; a rerun runs only the cells the file lacks (a killed run loses one cell)."""
    measure = _load("measure_perception_agent")
    args = ["--out", str(tmp_path), "--mode", "masks", "--task", "ShellGame-v0", "--first", "930000",
            "--last", "930001", "--chunk", "1", "--workers", "1"]
    path = tmp_path / "agent_masks.jsonl"
    measure.main(args[:-6] + ["--last", "930000", "--chunk", "1", "--workers", "1"])  # the first cell only
    first = measure.read_cells(path)
    assert [(c["task"], c["seed"], c["episodes"]) for c in first] == [("ShellGame-v0", 930000, 1)]
    measure.main(args)  # resumes: the second cell alone
    cells = measure.read_cells(path)
    assert cells[0] == first[0] and [(c["seed"], c["mode"]) for c in cells] == [(930000, "masks"), (930001, "masks")]
    assert all(c["success"] == 1.0 and c["failed_seeds"] == [] for c in cells)
    measure.main(args)  # nothing left to run
    assert measure.read_cells(path) == cells
    path.write_text(path.read_text() + "{not json\n")
    with pytest.raises(SystemExit, match="agent_masks.jsonl:3"):
        measure.main(args)
