"""``embodied run --record DIR``: the directory layout, interrupts, bad input; ``--overlay graph`` videos."""

from __future__ import annotations

import json
import shutil

import gymnasium as gym
import imageio.v2 as imageio
import numpy as np
import pytest

from embodied.data.recording import load_recording
from embodied.agent.ride import MemoryRider
from embodied.cli.main import main
from embodied.memory import SpatialMemory
from embodied.viz.build import sample_stops
from embodied.viz.video import OverlayVideo

RUN = ["run", "--task", "PutBlockBack", "--policy", "expert", "--option", "delay=2", "--image-size", "64"]


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """Two short expert episodes recorded with perception + memory riding along."""
    root = tmp_path_factory.mktemp("rec") / "run"
    assert main([*RUN, "--episodes", "2", "--record", str(root), "--keyframe-every", "25", "--json"]) == 0
    return root


def test_record_layout(recording, capsys):
    run = json.loads((recording / "run.json").read_text())
    assert run["task"] == "PutBlockBack-v0" and run["seeds"] == [0, 1] and run["complete"]
    assert [e["dir"] for e in run["episodes"]] == ["episode_000", "episode_001"]
    for k, entry in enumerate(run["episodes"]):
        folder = recording / entry["dir"]
        meta = json.loads((folder / "meta.json").read_text())
        assert meta["seed"] == k and meta["complete"] and meta["success"] is True
        assert meta["steps"] == entry["steps"] > 100
        assert set(meta["cameras"]) == {"scene", "wrist"}
        assert np.asarray(meta["cameras"]["scene"]["K"]).shape == (3, 3)
        assert meta["perception"] == {"mode": "masks", "shuffle_ids": True}
        times = sorted({kf["t"] for kf in meta["keyframes"]})
        assert times[0] == 0 and np.all(np.diff(times) >= 25) and len(times) >= 4
        for kf in meta["keyframes"]:
            assert np.asarray(kf["cam_to_world"]).shape == (4, 4)
            assert (folder / kf["file"]).read_bytes()[:2] == b"\xff\xd8"  # JPEG
        memory = SpatialMemory.load(folder / "memory.json")
        lines = (folder / "events.jsonl").read_text().splitlines()
        assert len(lines) == len(memory.log) == meta["events"] > 0
        assert memory.t == meta["memory_t"] == meta["steps"]
        assert memory.find(cls="block")  # perception found the block from the images alone
    assert not list(recording.rglob("*.partial"))


def test_recording_loads_and_samples(recording):
    rec = load_recording(recording, episode=1)
    assert rec.path.name == "episode_001" and rec.meta["seed"] == 1
    assert len(rec.events) == len(rec.memory.log)
    assert all(k["path"].is_file() for k in rec.keyframes)


def test_sample_stops_caps_and_keeps_event_times():
    times = [0] * 5 + list(range(10, 2000, 1)) + [5000] * 50 + [9000]
    stops = sample_stops(times, 9500, 100)
    assert len(stops) <= 100 and stops[0] == 0 and stops[-1] == 9500
    assert set(stops) <= set(times) | {9500}
    assert sample_stops([0, 3, 3, 7], 9, 50) == [0, 3, 7, 9]  # few events: every one is a stop
    with pytest.raises(ValueError):
        sample_stops(times, 10, 1)


def _corrupt(recording, tmp_path, name, how):
    copy = tmp_path / "copy"
    shutil.copytree(recording, copy)
    target = copy / "episode_000" / name
    how(target)
    return copy, target


@pytest.mark.parametrize(
    "name, how",
    [
        ("meta.json", lambda p: p.write_text(p.read_text()[:100])),
        ("memory.json", lambda p: p.write_text(p.read_text()[:-50])),
        ("memory.json", lambda p: p.unlink()),
        ("events.jsonl", lambda p: p.write_text(p.read_text() + "{not json\n")),
        ("events.jsonl", lambda p: p.unlink()),
        ("keyframes/000025_scene.jpg", lambda p: p.unlink()),
        ("keyframes/000025_scene.jpg", lambda p: p.write_bytes(p.read_bytes()[:40])),
    ],
)
def test_bad_recording_is_a_clear_error(recording, tmp_path, capsys, name, how):
    copy, target = _corrupt(recording, tmp_path, name, how)
    assert main(["viz", str(copy), "-o", str(tmp_path / "out.html")]) == 2
    err = capsys.readouterr().err
    assert str(target) in err, err
    assert not (tmp_path / "out.html").exists()


def test_not_a_recording(tmp_path, capsys):
    assert main(["viz", str(tmp_path / "missing")]) == 2
    assert "not found" in capsys.readouterr().err
    (tmp_path / "other").mkdir()
    assert main(["viz", str(tmp_path / "other")]) == 2
    assert "no meta.json or run.json" in capsys.readouterr().err


def test_bad_flags(tmp_path, capsys):
    assert main([*RUN, "--episodes", "1", "--overlay", "graph"]) == 2
    assert "--video" in capsys.readouterr().err
    assert main([*RUN, "--episodes", "1", "--record", str(tmp_path / "r"), "--keyframe-every", "0"]) == 2
    assert "--keyframe-every" in capsys.readouterr().err
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    assert main([*RUN, "--episodes", "1", "--record", str(tmp_path / "busy")]) == 2
    assert "not empty" in capsys.readouterr().err
    assert (tmp_path / "busy" / "notes.txt").exists()


def test_ctrl_c_leaves_a_usable_recording(tmp_path, monkeypatch, capsys):
    step = MemoryRider.step

    def interrupted(self, obs, info):
        if info["step"] == 60:
            raise KeyboardInterrupt
        step(self, obs, info)

    monkeypatch.setattr(MemoryRider, "step", interrupted)
    root = tmp_path / "rec"
    assert main([*RUN, "--episodes", "2", "--record", str(root), "--keyframe-every", "20"]) == 130
    meta = json.loads((root / "episode_000" / "meta.json").read_text())
    assert meta["complete"] is False and meta["interrupted"] is True and meta["steps"] == 59
    assert json.loads((root / "run.json").read_text())["complete"] is False
    assert not (root / "episode_001").exists()
    assert not list(root.rglob("*.partial"))
    rec = load_recording(root)
    assert rec.memory.t == 59 and len(rec.events) == len(rec.memory.log)
    assert main(["viz", str(root), "-o", str(tmp_path / "page.html")]) == 0
    assert (tmp_path / "page.html").stat().st_size > 1e6


def test_overlay_video_via_cli(tmp_path):
    path = tmp_path / "overlay.mp4"
    assert main([*RUN, "--episodes", "1", "--video", str(path), "--overlay", "graph"]) == 0
    frames = imageio.mimread(path, memtest=False)
    assert len(frames) > 100 and frames[0].shape == (240, 480, 3)


class _Frames:
    def __init__(self):
        self.frames = []

    def add(self, frame):
        self.frames.append(frame)

    def close(self):
        pass


def _overlaid(task: str, steps: int, **options):
    env = gym.make(f"embodied/{task}", image_size=64, render_mode="rgb_array", **options)
    try:
        rider = MemoryRider(env)
        sink = _Frames()
        video = OverlayVideo(sink, rider, navigation=task.startswith("ObjectRevisit"))
        obs, info = env.reset(seed=0)
        rider.reset(0, obs, info)
        action = np.zeros(env.action_space.shape, np.float32)
        for _ in range(steps):
            obs, _, _, _, info = env.step(action)
            rider.step(obs, info)
        plain = env.render()
        video.add(plain)
        return plain, sink.frames[-1], rider.memory
    finally:
        env.close()


def test_overlay_draws_remembered_nodes_on_the_cameras():
    plain, drawn, memory = _overlaid("PutBlockBack-v0", 3)
    assert drawn.shape == plain.shape
    changed = np.any(drawn != plain, axis=2)
    assert changed.sum() > 200  # dots, labels and the block-on-pad edge
    assert changed[:, :240].any() and memory.find(cls="block")


def test_navigation_overlay_adds_a_memory_map():
    plain, drawn, _ = _overlaid("ObjectRevisit-v0", 8, delay=1, objects=4)
    assert drawn.shape == (plain.shape[0], plain.shape[1] + plain.shape[0], 3)
    panel = drawn[:, plain.shape[1]:]
    assert panel.std() > 5  # nodes and path on the map background
    assert np.array_equal(drawn[:, 240:plain.shape[1]], plain[:, 240:])  # the env's own map is kept as is
