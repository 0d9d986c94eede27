"""The viewer's plan panel: a memory agent's plan.json in the page, and the running skill per step."""

from __future__ import annotations

import json
import re
import shutil
from types import SimpleNamespace

import pytest

from embodied.agent.memory_agent import MemoryAgent
from embodied.data.recording import load_recording
from embodied.cli.main import main
from embodied.planner.calls import SkillCall
from embodied.viz.browser import find_chromium, open_page, trace_points
from embodied.viz.build import build_timeline, plan_data

CHROMIUM = find_chromium()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium binary (tools/setup.sh installs Debian's)")


@pytest.fixture(scope="module")
def agent_rec(tmp_path_factory):
    """A short memory-agent episode (ShellGame, ~100 steps) recorded with its plan.json."""
    root = tmp_path_factory.mktemp("vizplan") / "rec"
    argv = ["run", "--task", "ShellGame-v0", "--policy", "agent", "--episodes", "1", "--seed", "3",
            "--image-size", "64", "--record", str(root), "--json"]
    assert main(argv) == 0
    return root


def _page(rec, out) -> dict:
    assert main(["viz", str(rec), "-o", str(out), "--json"]) == 0
    text = out.read_text(encoding="utf-8")
    return json.loads(re.search(r'<script id="timeline" type="application/json">(.*?)</script>', text, re.DOTALL).group(1))


def _variant(agent_rec, tmp_path, plan: dict | str | None):
    """A copy of the agent recording with plan.json replaced (a dict or raw text) or removed (None)."""
    rec = tmp_path / "rec"
    shutil.copytree(agent_rec, rec)
    path = rec / "episode_000" / "plan.json"
    if plan is None:
        path.unlink()
    else:
        path.write_text(plan if isinstance(plan, str) else json.dumps(plan), encoding="utf-8")
    return rec


def _synthetic_plan(rec) -> tuple[dict, dict]:
    """Two lifts, the second failing once and replanned, in MemoryAgent's own plan.json shape.

    As the agent writes them, log times are one step after the trace's (the agent counts the
    step it has just perceived). Returns the plan and the times {"first", "second", "retry", "end"}.
    """
    recording = load_recording(rec)
    cups = sorted(recording.memory.find(cls="cup"))
    assert len(cups) >= 2, cups
    graph = recording.memory.snapshot(recording.memory.t)
    calls = [SkillCall("lift", target=c, xyz=graph.nodes[c]["position"], yaw=0.0, note=f"cup {c}") for c in cups[:2]]
    goal = "lift the cups"

    def plan_text(done, todo):  # the agent's own formatting (it logs the plan as this text)
        return MemoryAgent.plan_text(SimpleNamespace(goal_text=goal, done_calls=list(done), plan=list(todo), skill=None))

    steps = recording.meta["steps"]
    at = {"first": steps // 5, "second": 2 * steps // 5, "retry": 3 * steps // 5, "end": 4 * steps // 5}
    a, b, c, d = at["first"], at["second"], at["retry"], at["end"]
    first, second = calls
    log = [
        {"t": a + 1, "tag": "plan", "text": plan_text([], calls)},
        {"t": b + 1, "tag": "skill_done", "text": str(first)},
        {"t": c + 1, "tag": "skill_failed", "text": f"{second} (attempt 1)"},
        {"t": c + 1, "tag": "replan", "text": plan_text([first], [second])},
        {"t": d + 1, "tag": "skill_done", "text": str(second)},
    ]
    trace = [
        {"t": a, "call": first.to_dict(), "text": str(first)},
        {"t": b, "call": None, "text": ""},
        {"t": b, "call": second.to_dict(), "text": str(second)},
        {"t": c, "call": None, "text": ""},
        {"t": c, "call": second.to_dict(), "text": str(second)},
        {"t": d, "call": None, "text": ""},
    ]
    plan = {"goal": goal, "plan": [], "done": [first.to_dict(), second.to_dict()], "log": log, "trace": trace}
    return plan, at


def test_agent_recording_puts_its_plan_in_the_page(agent_rec, tmp_path):
    recorded = json.loads((agent_rec / "episode_000" / "plan.json").read_text())
    rec = load_recording(agent_rec)
    assert rec.plan == recorded and rec.plan["goal"] and rec.plan["trace"]
    data = _page(agent_rec, tmp_path / "page.html")
    plan = data["plan"]
    assert plan["goal"] == recorded["goal"]
    assert [p[1] for p in plan["plans"]][:1] == ["plan"] and plan["plans"][0][3]  # the first plan and its calls
    first = next(e for e in recorded["trace"] if e["call"])
    assert [first["t"], first["call"]["skill"], first["call"]["target"], first["text"]] in [r[:4] for r in plan["trace"]]
    assert first["t"] in [f["t"] for f in data["frames"]]  # a skill start is a slider stop
    small = build_timeline(rec, max_stops=12, max_keyframes=2)
    assert len(small.frames) <= 12 and small.plan == plan  # plan stops count against max_stops


def test_plan_text_parses_into_calls_with_done_marks(agent_rec):
    plan, _ = _synthetic_plan(agent_rec)
    data = plan_data(plan)
    (t0, tag0, goal0, items0, _), (t1, tag1, _, items1, index1) = data["plans"]
    assert (tag0, tag1, goal0) == ("plan", "replan", "lift the cups")
    assert [it[0].split("(")[0] for it in items0] == ["lift", "lift"] and not any(it[2] for it in items0)
    assert [it[2] for it in items1] == [True, False]  # the replan lists the first lift as done
    assert items1[1][1] == items0[1][1] == plan["trace"][2]["text"].split(" @ ")[0]
    assert data["log"][index1][1] == "replan" and data["log"][0][2] == "2 calls: lift, lift"
    # Two changes in one step (a call ends, the next starts): the later one holds.
    assert len(data["trace"]) == 4 and all(r[1] == "lift" for r in data["trace"][:3]) and data["trace"][3][1] is None


def test_recording_without_plan_still_builds(agent_rec, tmp_path):
    rec = _variant(agent_rec, tmp_path, None)
    assert load_recording(rec).plan is None
    data = _page(rec, tmp_path / "page.html")
    assert data["plan"] is None and data["frames"]


@pytest.mark.parametrize("text, why", [('{"goal": "x", "log": [', "corrupt or truncated"),
                                       ('{"log": [], "trace": {"t": 1}}', "'trace' must be a list"),
                                       ('{"log": [{"t": "soon", "tag": "plan", "text": ""}]}', "log[0]")])
def test_corrupt_plan_json_names_the_file(agent_rec, tmp_path, text, why):
    rec = _variant(agent_rec, tmp_path, text)
    with pytest.raises(ValueError, match="plan file .*plan.json") as err:
        load_recording(rec)
    assert why in str(err.value)


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("no Chromium binary at /usr/bin/chromium (tools/setup.sh installs Debian's chromium)")
    from embodied.viz.browser import chromium

    with chromium(CHROMIUM) as b:
        yield b


def _slide_to(page, index: int) -> None:
    """Move the slider the way a user does (value + input event) and wait for the redraw."""
    page.evaluate(
        "(i) => { const s = document.getElementById('slider'); s.value = String(i);"
        " s.dispatchEvent(new Event('input', {bubbles: true})); }",
        index,
    )
    page.wait_for_function("(i) => document.getElementById('graph').dataset.drawn === String(i)", arg=index)


def _panel(page) -> dict:
    return page.evaluate(
        """() => ({
            skill: document.getElementById('skill').dataset.skill,
            running: Array.from(document.querySelectorAll('#plansteps li.running')).map((li) => li.textContent),
            done: Array.from(document.querySelectorAll('#plansteps li.done')).map((li) => li.textContent),
            steps: document.querySelectorAll('#plansteps li').length,
            goal: document.getElementById('goal').textContent,
            source: document.getElementById('plansource').textContent,
            outcomes: Array.from(document.querySelectorAll('#outcomes li')).map((li) => li.className),
            target: document.getElementById('graph').dataset.skillTarget,
        })"""
    )


@needs_chromium
def test_slider_across_a_skill_boundary_changes_the_running_skill(agent_rec, tmp_path, browser):
    """The real agent episode: idle while watching, then its first skill call runs."""
    out = tmp_path / "page.html"
    data = _page(agent_rec, out)
    start = next(r for r in data["plan"]["trace"] if r[1])
    times = [f["t"] for f in data["frames"]]
    before, after = times.index(start[0]) - 1, times.index(start[0])
    assert before >= 0
    page = open_page(browser, out)
    try:
        _slide_to(page, before)
        idle = _panel(page)
        _slide_to(page, after)
        running = _panel(page)
        assert idle["skill"] == "" and idle["running"] == [] and idle["target"] == ""
        assert running["skill"] == start[3] and data["plan"]["goal"] in running["goal"]
        if start[2] in data["frames"][after]["nodes"]:
            assert running["target"] == start[2] and trace_points(page, "skill target")["ids"] == [start[2]]
        # The plan is logged at its own step (one after the call starts, as the agent counts steps).
        _slide_to(page, times.index(data["plan"]["plans"][0][0]))
        planned = _panel(page)
        assert planned["steps"] >= 1 and planned["running"] == [data["plan"]["plans"][0][3][0][0]]
        assert planned["running"][0].startswith(start[3].split(" @ ")[0]) and planned["outcomes"][0] == "plan"
        assert page.errors == []
    finally:
        page.close()


@needs_chromium
def test_plan_panel_follows_calls_failures_and_replans(agent_rec, tmp_path, browser):
    plan, at = _synthetic_plan(agent_rec)
    rec = _variant(agent_rec, tmp_path, plan)
    out = tmp_path / "page.html"
    data = _page(rec, out)
    times = [f["t"] for f in data["frames"]]
    first, second = plan["trace"][0], plan["trace"][2]
    page = open_page(browser, out)
    try:
        _slide_to(page, times.index(at["first"]) - 1)
        assert _panel(page)["source"] == "no plan yet at this step"
        _slide_to(page, times.index(at["first"] + 1))  # the plan is logged: first call running
        now = _panel(page)
        assert now["skill"] == first["text"] and now["steps"] == 2 and now["done"] == []
        assert now["running"] == [first["text"]] and now["target"] == first["call"]["target"]
        assert now["outcomes"] == ["plan"]
        _slide_to(page, times.index(at["second"]))  # across the boundary: the second call runs
        now = _panel(page)
        assert now["skill"] == second["text"] and now["running"] == [second["text"]]
        assert now["done"] == [first["text"]] and now["target"] == second["call"]["target"]
        _slide_to(page, times.index(at["retry"] + 1))  # failed once, replanned: it runs again
        now = _panel(page)
        assert now["source"].startswith(f"replan at t={at['retry'] + 1}")
        assert now["outcomes"] == ["plan", "skill_done", "skill_failed", "replan"]
        assert now["running"] == [second["text"]] and now["done"] == [first["text"]]
        _slide_to(page, times.index(at["end"] + 1))  # both done, idle
        now = _panel(page)
        assert now["skill"] == "" and now["running"] == [] and len(now["done"]) == 2 and now["target"] == ""
        assert trace_points(page, "skill target")["ids"] == []
        assert page.errors == []
    finally:
        page.close()


@needs_chromium
def test_page_without_plan_says_so(agent_rec, tmp_path, browser):
    rec = _variant(agent_rec, tmp_path, None)
    out = tmp_path / "page.html"
    _page(rec, out)
    page = open_page(browser, out)
    try:
        assert "No plan recorded" in page.inner_text("#plan")
        assert trace_points(page, "skill target")["ids"] == [] and page.errors == []
    finally:
        page.close()
