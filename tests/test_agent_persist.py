"""Saving and restoring the memory agent (embodied.agent.persist): an agent saved mid-episode and loaded into a
fresh MemoryAgent takes exactly the actions the uninterrupted one takes; bad files name themselves; and
`embodied run --resume-memory` starts an episode from a saved memory."""

from __future__ import annotations

import json
import os

import gymnasium as gym
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from embodied.agent.drift import DriftFix
from embodied.agent.memory_agent import AgentConfig, MemoryAgent
from embodied.agent.persist import AGENT_FILE, ARRAYS_FILE, EPISODE_GAP, MEMORY_FILE, AgentStateError
from embodied.cli.main import main
from embodied.memory import SpatialMemory
from tests.agent_helpers import SensorsOnly

WORKCELL = dict(image_size=96, delay=5)


def _copy(obs: dict) -> dict:
    """The observation with its own arrays: no agent can change what another one is given."""
    return {k: _copy(v) if isinstance(v, dict) else np.array(v) if isinstance(v, np.ndarray) else v
            for k, v in obs.items()}


class Saves:
    """When ``lockstep`` saves: at fixed ``steps``; ``into`` steps into a call of a skill in ``skills`` (the first
    call of each, or with ``every`` every call); and on the first step a skill has ended with its effect check
    still due (the settle)."""

    def __init__(self, steps=(), skills=(), into=(5,), settle=True, every=False):
        self.steps, self.skills, self.into, self.settle, self.every = set(steps), skills, into, settle, every
        self.marker, self.n, self.seen = -1, 0, set()

    def __call__(self, step: int, agent: MemoryAgent) -> bool:
        if len(agent.trace) != self.marker:  # a call started or ended (each adds a trace entry)
            self.marker, self.n = len(agent.trace), 0
        else:
            self.n += 1
        if agent.skill is not None and (agent.skill.done or agent.skill.failed):
            if self.settle and "settle" not in self.seen:
                self.seen.add("settle")
                return True
        elif agent.skill is not None and agent.current_call.skill in self.skills and self.n in self.into:
            key = (agent.current_call.skill, self.n) + ((self.marker,) if self.every else ())
            if key not in self.seen:
                self.seen.add(key)
                return True
        return step in self.steps


def lockstep(task: str, seed: int, save_when, tmp_path, config: AgentConfig | None = None, on_step=None, **env):
    """One episode of the agent. Whenever ``save_when(step, agent)`` says so it is saved and loaded into a fresh
    MemoryAgent, which from that step on is given the same observations. Returns (agent, last info, actions,
    restored): per restored agent its step, the call running when it was saved, the agent and the first
    (step, action, its action) where it acted otherwise, or None."""
    raw = gym.make(f"embodied/{task}", **env)
    sensors = SensorsOnly(raw)
    agent = MemoryAgent(raw.unwrapped.labels, config)
    agent.reset(seed)
    obs, info = sensors.reset(seed=seed)
    actions, restored, step, done = [], [], 0, False
    while not done:
        if save_when(step, agent):
            path = agent.save(tmp_path / f"step_{step}")
            restored.append({"step": step, "running": agent.current_call if agent.skill else None,
                             "agent": MemoryAgent.load(path), "mismatch": None})
        action = agent.act(_copy(obs))
        for r in restored:
            theirs = r["agent"].act(_copy(obs))
            if r["mismatch"] is None and not np.array_equal(action, theirs):
                r["mismatch"] = (step, action, theirs)
        actions.append(action)
        obs, _, terminated, truncated, info = sensors.step(action)
        if on_step is not None:
            on_step(raw, agent)
        step += 1
        done = terminated or truncated
    raw.close()
    return agent, info, actions, restored


def check_restored(agent: MemoryAgent, restored: list, skills: tuple[str, ...]) -> None:
    assert restored, "nothing was saved"
    for r in restored:
        assert r["mismatch"] is None, f"restored at step {r['step']}: first other action {r['mismatch']}"
        other = r["agent"]
        assert other.memory.state()[0] == agent.memory.state()[0], f"restored at step {r['step']}: memory differs"
        assert other.plan_record() == agent.plan_record()
    for skill in skills:
        assert any(r["running"] is not None and r["running"].skill == skill for r in restored), \
            f"never saved while {skill} ran"


def test_workcell_agent_restored_mid_skill_acts_exactly_as_the_uninterrupted_one(tmp_path):
    """PutBlockBack: saved while observing, 5 and 30 steps into the pick and the place, and while a finished
    skill's effect check waits; with the decision log on. Saving leaves the agent as it was: a run that never
    saves acts the same."""
    config = lambda: AgentConfig(record_decisions=True)  # noqa: E731  (one each: reset writes the seed in)
    saves = Saves(steps=(10,), skills=("pick", "place"), into=(5, 30))
    agent, info, actions, restored = lockstep("PutBlockBack-v0", 11, saves, tmp_path, config(), **WORKCELL)
    assert info["is_success"], agent.log
    check_restored(agent, restored, ("pick", "place"))
    assert len(restored) >= 5
    for r in restored:
        a, b = agent.decisions.pack(), r["agent"].decisions.pack()
        assert a[1] == b[1] and all(np.array_equal(a[0][k], b[0][k]) for k in a[0])
    _, _, never_saved, _ = lockstep("PutBlockBack-v0", 11, lambda *_: False, tmp_path, config(), **WORKCELL)
    assert len(never_saved) == len(actions) and all(np.array_equal(a, b) for a, b in zip(actions, never_saved))


def test_workcell_agent_restored_after_a_failed_call_keeps_its_retries_and_aim(tmp_path):
    """The block is knocked out of the gripper while carried: the place fails, the agent replans and picks it
    again. Saved at every call's 3rd step and at the settle: attempts, replans and aim offsets carry over."""
    knocked = {}

    def knock(raw, agent):
        env = raw.unwrapped
        if knocked or agent.current_call is None or agent.current_call.skill != "place":
            return
        if env.body_pos("block")[2] > 0.1:  # carried high: drop it back on the table, away from the goal
            env.place("block", (0.40, -0.05 if env.start_xy[1] > 0 else 0.05, 0.02))
            knocked["at"] = env.t

    saves = Saves(skills=("pick", "place"), into=(3,), every=True)
    agent, info, _, restored = lockstep("PutBlockBack-v0", 8, saves, tmp_path, on_step=knock, image_size=96)
    assert knocked and info["is_success"], agent.log
    assert "replan" in [e["tag"] for e in agent.log]
    check_restored(agent, restored, ("pick", "place"))
    assert any(r["step"] > knocked["at"] for r in restored), "never saved after the knock"


def test_apartment_agent_restored_mid_navigation_acts_exactly_as_the_uninterrupted_one(tmp_path):
    """ObjectRevisit with odometry noise (the drift correction at work): saved twice on the tour and 5 and 60
    steps into the navigation; every restored agent drives the same way to the goal, its map, localiser track
    and memory the same at the end."""
    saves = Saves(steps=(3, 250), skills=("navigate",), into=(5, 60))
    agent, info, _, restored = lockstep("ObjectRevisit-v0", 12, saves, tmp_path, odom_noise=0.05)
    assert info["is_success"], agent.log
    assert agent.localiser.stats()["accepted"] > 0
    check_restored(agent, restored, ("navigate",))
    for r in restored:
        a, b = agent.localiser.trajectory(), r["agent"].localiser.trajectory()
        assert all(np.array_equal(a[k], b[k]) for k in a)
        assert np.array_equal(agent.freespace.hits, r["agent"].freespace.hits)


def test_drift_fix_keeps_whether_the_dock_re_anchored_it():
    """Lifelong: only the first recall phase re-zeroes odometry on the dock; an agent restored between two later
    recall phases must not re-anchor at the next one (checked in lockstep on Lifelong-v0 too, 60 s: not here)."""
    fix = DriftFix()
    fix._phase, fix._anchored = 1, True  # past the first recall phase, back in another one
    doc, arrays = fix.state()
    again = DriftFix.from_state(json.loads(json.dumps(doc)), arrays)
    assert (again._phase, again._anchored) == (1, True)
    with pytest.raises(ValueError, match="anchored"):
        DriftFix.from_state({**doc, "anchored": 1}, arrays)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A workcell agent saved 8 steps into its pick (as the file corruption tests' starting point)."""
    path = tmp_path_factory.mktemp("saved")
    found = {}

    def when(step, agent):
        if agent.current_call is not None and agent.current_call.skill == "pick" and not found:
            found["at"] = step + 8
        return step == found.get("at")

    lockstep("PutBlockBack-v0", 11, when, path, **WORKCELL)
    return path / f"step_{found['at']}"


@pytest.fixture(scope="module")
def saved_apartment(tmp_path_factory):
    """A mobile robot's agent saved 40 steps into its tour (map, drift fix, rooms)."""
    raw = gym.make("embodied/ObjectRevisit-v0", odom_noise=0.05)
    env = SensorsOnly(raw)
    agent = MemoryAgent(raw.unwrapped.labels)
    agent.reset(4)
    obs, _ = env.reset(seed=4)
    for _ in range(40):
        obs = env.step(agent.act(obs))[0]
    raw.close()
    return agent.save(tmp_path_factory.mktemp("saved_apartment") / "agent")


@pytest.mark.parametrize("which", ["saved", "saved_apartment"])
def test_save_load_save_writes_the_same_files(which, tmp_path, request):
    saved = request.getfixturevalue(which)
    again = MemoryAgent.load(saved).save(tmp_path / "again")
    for name in (AGENT_FILE, MEMORY_FILE, ARRAYS_FILE):
        assert (again / name).read_bytes() == (saved / name).read_bytes(), name
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "a temporary folder was left behind"
    assert SpatialMemory.load(saved / MEMORY_FILE).t == MemoryAgent.load(saved).memory.t  # memory.json alone


def _edit_json(name, change):
    def edit(folder):
        doc = json.loads((folder / name).read_text())
        change(doc)
        (folder / name).write_text(json.dumps(doc))
    return edit


def _drop_array(key):
    def edit(folder):
        arrays = load_file(folder / ARRAYS_FILE)
        del arrays[key]
        save_file(arrays, folder / ARRAYS_FILE)
    return edit


def _cut(name):
    def edit(folder):
        data = (folder / name).read_bytes()
        (folder / name).write_bytes(data[: len(data) // 2])
    return edit


CORRUPTIONS = {
    "agent.json truncated": (_cut(AGENT_FILE), AGENT_FILE, "corrupt"),
    "agent.json not an agent": (_edit_json(AGENT_FILE, lambda d: d.update(format="x")), AGENT_FILE, "format"),
    "counter retyped": (_edit_json(AGENT_FILE, lambda d: d["counters"].update(_settle="x")), AGENT_FILE,
                        "counters._settle"),
    "counter dropped": (_edit_json(AGENT_FILE, lambda d: d["counters"].pop("attempts")), AGENT_FILE,
                        "counters.attempts"),
    "skill state broken": (_edit_json(AGENT_FILE, lambda d: d["skills"]["pick"].update(queue=5)), AGENT_FILE,
                           "skills.pick"),
    "plan call broken": (_edit_json(AGENT_FILE, lambda d: d["plan"][0].update(skill="fly")), AGENT_FILE, "plan"),
    "config option retyped": (_edit_json(AGENT_FILE, lambda d: d["config"]["perception"].update(voxel="x")),
                              AGENT_FILE, "config"),
    "rng broken": (_edit_json(AGENT_FILE, lambda d: d["perception_rng"].update(state={})), AGENT_FILE,
                   "perception_rng"),
    "running skill unknown": (_edit_json(AGENT_FILE, lambda d: d.update(skill="fly")), AGENT_FILE, "skill"),
    "memory.json missing": (lambda f: (f / MEMORY_FILE).unlink(), MEMORY_FILE, "missing"),
    "memory time retyped": (_edit_json(MEMORY_FILE, lambda d: d.update(t="x")), MEMORY_FILE, "memory"),
    "arrays truncated": (_cut(ARRAYS_FILE), ARRAYS_FILE, "corrupt"),
    "arrays missing": (lambda f: (f / ARRAYS_FILE).unlink(), ARRAYS_FILE, "missing"),
    "track keys dropped": (_drop_array("memory.tracks.0.keys"), ARRAYS_FILE, "memory.tracks.0.keys: missing"),
}
APARTMENT_CORRUPTIONS = {
    "map grid dropped": (_drop_array("freespace.hits"), ARRAYS_FILE, "freespace.hits"),
    "map parameter dropped": (_edit_json(AGENT_FILE, lambda d: d["freespace"].pop("res")), AGENT_FILE, "freespace"),
    "localiser map dropped": (_drop_array("drift.map.points"), ARRAYS_FILE, "drift.map.points"),
    "localiser poses dropped": (_drop_array("drift.poses"), ARRAYS_FILE, "drift.times, poses, raw"),
    "localiser log retyped": (_edit_json(AGENT_FILE, lambda d: d["drift"]["localiser"]["log"][0].update(rmse="x")),
                              AGENT_FILE, "drift"),
    "navigate state broken": (_edit_json(AGENT_FILE, lambda d: d["skills"]["navigate"].update(target=[1])),
                              AGENT_FILE, "skills.navigate"),
}


@pytest.mark.parametrize("case", [*CORRUPTIONS, *APARTMENT_CORRUPTIONS])
def test_a_bad_file_raises_an_error_naming_the_file_and_field(tmp_path, case, request):
    apartment = case in APARTMENT_CORRUPTIONS
    edit, name, field = (APARTMENT_CORRUPTIONS if apartment else CORRUPTIONS)[case]
    saved = request.getfixturevalue("saved_apartment" if apartment else "saved")
    folder = tmp_path / "agent"
    MemoryAgent.load(saved).save(folder)
    edit(folder)
    with pytest.raises(AgentStateError) as err:
        MemoryAgent.load(folder)
    assert str(folder / name) in str(err.value) and field in str(err.value), str(err.value)


def test_saving_refuses_a_folder_that_is_not_a_saved_agent(saved, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        MemoryAgent.load(saved).save(tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    with pytest.raises(AgentStateError, match="missing"):
        MemoryAgent.load(tmp_path / "nowhere")


def _run(capsys, *argv) -> dict:
    assert main(["run", "--policy", "agent", "--episodes", "1", "--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_run_resumes_a_saved_apartment_memory(tmp_path, capsys):
    """MovedObject, day 1 saves the agent; day 2 (same seed: the same apartment) starts with its memory, free-space
    map and localiser map, its clock past day 1's. Overnight the object day 1 saw moved is back where it started
    (day 2 moves it again): day 2 takes it for the node it remembers, not a new one, and finds it."""
    day1, day2 = tmp_path / "day1", tmp_path / "day2"
    task = ["--task", "MovedObject-v0", "--seed", "5"]
    first = _run(capsys, *task, "--save-agent", str(day1))
    assert first["success_rate"] == 1.0 and first["saved"] == [str(day1)]
    second = _run(capsys, *task, "--resume-memory", str(day1), "--save-agent", str(day2))
    assert second["success_rate"] == 1.0
    a, b = SpatialMemory.load(day1 / MEMORY_FILE), SpatialMemory.load(day2 / MEMORY_FILE)
    before = [e for e in b.log.events if e.t <= a.t]
    assert [e.to_list() for e in before] == [e.to_list() for e in a.log.events], "day 2 began with day 1's memory"
    assert min(e.t for e in b.log.events if e.t > a.t) >= a.t + EPISODE_GAP
    assert set(a.graph.nodes) <= set(b.graph.nodes)
    objects = sorted(n for n, d in a.graph.nodes(data=True) if d["kind"] == "object")
    assert objects == sorted(n for n, d in b.graph.nodes(data=True) if d["kind"] == "object"), "duplicates on day 2"
    jumped = [n for n in objects if (path := b.log.trajectory(n)) and any(t > a.t for t, _ in path)
              and np.linalg.norm(np.subtract([p for t, p in path if t <= a.t][-1],
                                             [p for t, p in path if t > a.t][0])) > 0.3]
    assert jumped, "no object was found moved overnight"
    assert b.rooms() == a.rooms()
    day2_agent = json.loads((day2 / AGENT_FILE).read_text())
    assert day2_agent["counters"]["t0"] == a.t + EPISODE_GAP
    assert all(e["t"] < second["episodes"][0]["steps"] for e in day2_agent["log"]), "the log keeps episode steps"


def test_run_resumes_a_saved_memory_file_in_the_workcell(tmp_path, capsys):
    memory = tmp_path / "memory.json"
    task = ["--task", "PutBlockBack-v0", "--seed", "3", "--image-size", "96", "--option", "delay=5"]
    assert _run(capsys, *task, "--save-memory", str(memory))["success_rate"] == 1.0
    second = _run(capsys, *task, "--resume-memory", str(memory), "--save-memory", str(tmp_path / "day2.json"))
    assert second["success_rate"] == 1.0
    a, b = SpatialMemory.load(memory), SpatialMemory.load(tmp_path / "day2.json")
    assert set(a.graph.nodes) <= set(b.graph.nodes) and b.t > a.t + EPISODE_GAP


def test_run_refuses_agent_files_for_other_policies(tmp_path, capsys):
    argv = ["run", "--task", "PutBlockBack-v0", "--episodes", "1"]
    assert main([*argv, "--policy", "expert", "--save-agent", str(tmp_path / "a")]) == 2
    assert "only for the memory agent" in capsys.readouterr().err
    assert main([*argv, "--policy", "agent", "--resume-memory", str(tmp_path / "none")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main([*argv, "--policy", "agent", "--workers", "2", "--save-memory", str(tmp_path / "m.json")]) == 2
    assert "without --workers" in capsys.readouterr().err
    assert main([*argv, "--policy", "learned:explicit", "--save-agent", str(tmp_path / "a")]) == 2
    assert "--save-memory saves their memory" in capsys.readouterr().err
    assert not os.listdir(tmp_path)
