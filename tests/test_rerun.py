"""``embodied viz DIR --format rrd``: a recorded agent episode as a rerun recording, read back with rerun's reader."""

from __future__ import annotations

import json
import shutil
import sys

import numpy as np
import pytest

from embodied.cli.main import main
from embodied.data.recording import Recorder, load_recording
from embodied.memory import SpatialMemory

rr = pytest.importorskip("rerun", reason="the rerun extra (rerun-sdk) is not installed")
from rerun.chunk import RrdReader  # noqa: E402

ENTITIES = {
    "/world", "/world/memory/objects", "/world/memory/relations", "/world/robot/path",
    "/events", "/plan/log", "/plan/skill", "/plan/current", "/episode",
}


@pytest.fixture(scope="module")
def agent_rrd(tmp_path_factory):
    """A short memory-agent episode (ShellGame, ~100 steps) recorded, the depth it saw kept, exported to .rrd."""
    root = tmp_path_factory.mktemp("rerun")
    seen: dict[tuple[int, str], np.ndarray] = {}
    frame = Recorder.frame

    def keep_depth(self, t, obs, memory):
        for cam in self.cameras:
            seen.setdefault((int(t), cam), np.array(obs[f"depth/{cam}"], dtype=np.float32))
        frame(self, t, obs, memory)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Recorder, "frame", keep_depth)
        argv = ["run", "--task", "ShellGame-v0", "--policy", "agent", "--episodes", "1", "--seed", "3",
                "--image-size", "64", "--keyframe-every", "20", "--record", str(root / "rec"), "--json"]
        assert main(argv) == 0
    out = root / "out" / "episode.rrd"
    assert main(["viz", str(root / "rec"), "--format", "rrd", "-o", str(out)]) == 0
    return root / "rec", out, seen


def read_rrd(path) -> dict[str, list[dict]]:
    """Every row of every chunk, by entity path: {"step": step or None (static), "Archetype:field": value, ...}."""
    rows: dict[str, list[dict]] = {}
    for chunk in RrdReader(path).stream().to_chunks():
        assert set(chunk.timeline_names) <= {"step"}, (chunk.entity_path, chunk.timeline_names)
        batch = chunk.to_record_batch()
        for row in batch.to_pylist():
            row.setdefault("step", None)
            rows.setdefault(chunk.entity_path, []).append(row)
    return rows


def test_rrd_holds_cameras_memory_path_events_and_plan(agent_rrd, capsys):
    rec_dir, out, _ = agent_rrd
    rec = load_recording(rec_dir)
    rows = read_rrd(out)
    cams = rec.meta["cameras"]
    expected = ENTITIES | {f"/world/cameras/{c}{s}" for c in cams for s in ("", "/image", "/depth")}
    assert expected <= rows.keys(), sorted(rows)
    assert not [p for p in out.parent.iterdir() if p.name != out.name]  # no temporary file left beside it
    # The step timeline spans the episode: the reset (step 0) to the last step.
    steps = [r["step"] for rs in rows.values() for r in rs if r["step"] is not None]
    assert (min(steps), max(steps)) == (0, rec.meta["steps"])
    # Cameras: static pinhole from K (column-major) and width x height; a pose and an image per keyframe.
    for cam, c in cams.items():
        pinhole = [r for r in rows[f"/world/cameras/{cam}"] if r.get("Pinhole:image_from_camera")]
        assert len(pinhole) == 1 and pinhole[0]["step"] is None
        assert np.allclose(np.reshape(pinhole[0]["Pinhole:image_from_camera"], (3, 3)).T, c["K"], atol=1e-4)
        assert pinhole[0]["Pinhole:resolution"] == [[c["width"], c["height"]]]
        poses = {r["step"] for r in rows[f"/world/cameras/{cam}"] if r.get("Transform3D:translation")}
        assert poses == {k["t"] for k in rec.keyframes if k["camera"] == cam}
        assert {r["step"] for r in rows[f"/world/cameras/{cam}/image"]} == poses
    # Boxes: labelled with what memory remembered ("cyan cup"), in the memory file.
    memory = SpatialMemory.load(rec.path / "memory.json")
    remembered = {f"{a['colour']} {a['cls']}" for _, a in memory.snapshot(memory.t).nodes(data=True)
                  if a.get("kind") not in ("agent", "place", "room") and a.get("colour")}
    labels = {label for r in rows["/world/memory/objects"] for label in r["Boxes3D:labels"] or []}
    assert remembered and labels & remembered, (labels, remembered)
    assert {r["step"] for r in rows["/world/memory/objects"]} == set(memory.log.times)
    relations = {label for r in rows["/world/memory/relations"] for label in r["LineStrips3D:labels"] or []}
    assert relations and relations <= {"on", "in", "near"}
    # The robot's path grows; events and plan entries are all there.
    path = sorted(rows["/world/robot/path"], key=lambda r: r["step"])
    assert len(path[-1]["LineStrips3D:strips"][0]) == len(path) >= 2
    assert len(rows["/events"]) == len(rec.events)
    assert any("[plan]" in r["TextLog:text"][0] for r in rows["/plan/log"])
    assert any(r["TextLog:text"][0].startswith("running ") for r in rows["/plan/skill"])
    assert rec.plan["goal"] in rows["/plan/current"][0]["TextDocument:text"][0]
    # --json reports the same.
    assert main(["viz", str(rec_dir), "--format", "rrd", "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["rrd"] == str(out) and report["depth"] and report["steps"] == [0, rec.meta["steps"]]


def test_depth_matches_the_observation(agent_rrd):
    rec_dir, out, seen = agent_rrd
    rows = read_rrd(out)
    checked = 0
    for cam in load_recording(rec_dir).meta["cameras"]:
        for r in rows[f"/world/cameras/{cam}/depth"]:
            fmt = r["DepthImage:format"][0]
            assert fmt["channel_datatype"] == 8  # U16
            mm = np.frombuffer(bytes(r["DepthImage:buffer"][0]), dtype=np.uint16).reshape(fmt["height"], fmt["width"])
            metres = mm / r["DepthImage:meter"][0]
            truth = seen[(r["step"], cam)]
            assert abs(metres[32, 32] - truth[32, 32]) <= 1e-3
            near = truth < 65.0
            assert np.abs(metres[near] - truth[near]).max() <= 1e-3
            checked += 1
    assert checked >= 2


def test_old_recording_without_depth_still_exports(agent_rrd, tmp_path):
    rec_dir, _, _ = agent_rrd
    old = tmp_path / "old"
    shutil.copytree(rec_dir, old)
    meta_file = old / "episode_000" / "meta.json"
    meta = json.loads(meta_file.read_text())
    for k in meta["keyframes"]:
        (old / "episode_000" / k.pop("depth_file")).unlink()
    meta_file.write_text(json.dumps(meta))
    out = tmp_path / "old.rrd"
    assert main(["viz", str(old), "--format", "rrd", "-o", str(out)]) == 0
    rows = read_rrd(out)
    assert "/world/cameras/scene/image" in rows and "/world/memory/objects" in rows
    assert not [p for p in rows if p.endswith("/depth")]


def test_missing_folder_and_missing_rerun_are_clear_errors(tmp_path, capsys, monkeypatch):
    missing = tmp_path / "nowhere"
    assert main(["viz", str(missing), "--format", "rrd", "-o", str(tmp_path / "x.rrd")]) == 2
    assert str(missing) in capsys.readouterr().err
    assert not (tmp_path / "x.rrd").exists()
    from embodied.viz import rerun_export

    monkeypatch.setitem(sys.modules, "rerun", None)  # as if rerun-sdk were not installed
    with pytest.raises(ImportError, match=r"embodied\[rerun\]"):
        rerun_export.import_rerun()
