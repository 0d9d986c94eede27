"""The data commands: record-demos, data info|check|video, bench data (all with --json)."""

from __future__ import annotations

import json
from pathlib import Path

import av
import pytest

from embodied.cli.main import main


def run_json(capsys, *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_record_info_check_video(tmp_path: Path, capsys):
    out = tmp_path / "ds"
    summary = run_json(capsys, "record-demos", "--task", "RememberColor", "--episodes", "2", "--out", str(out),
                       "--image-size", "32", "--cameras", "scene", "--seed", "5", "--json")
    assert summary["episodes_recorded"] == 2 and summary["success_rate"] == 1.0
    info = run_json(capsys, "data", "info", str(out), "--json")
    assert info["episodes"] == 2 and info["cameras"] == ["scene"] and info["success_rate"] == 1.0
    assert list(info["per_task"]) == ["RememberColor-v0"] and info["mb_per_100_episodes"] > 0
    check = run_json(capsys, "data", "check", str(out), "--decode", "--json")
    assert check == {"dataset": str(out), "ok": True, "problems": []}
    video = tmp_path / "ep.mp4"
    result = run_json(capsys, "data", "video", str(out), "--episode", "1", "-o", str(video), "--json")
    with av.open(str(video)) as c:
        assert sum(1 for _ in c.decode(video=0)) == result["frames"]
    # resuming with more episodes appends only the new seeds
    more = run_json(capsys, "record-demos", "--task", "RememberColor", "--episodes", "3", "--out", str(out),
                    "--image-size", "32", "--cameras", "scene", "--seed", "5", "--resume", "--json")
    assert more["episodes_recorded"] == 1 and more["episodes_total"] == 3


def test_record_into_a_relative_folder(tmp_path: Path, capsys, monkeypatch):
    """--out given relative to the working directory: the commit journal names paths inside it."""
    monkeypatch.chdir(tmp_path)
    summary = run_json(capsys, "record-demos", "--task", "RememberColor", "--episodes", "2", "--out", "runs/ds",
                       "--image-size", "32", "--cameras", "scene", "--json")
    assert summary["episodes_recorded"] == 2
    assert run_json(capsys, "data", "check", "runs/ds", "--json")["ok"]


def test_errors_are_clear(tmp_path: Path, capsys):
    assert main(["record-demos", "--task", "NoSuchTask", "--episodes", "1", "--out", str(tmp_path / "x")]) == 2
    assert "unknown task" in capsys.readouterr().err
    assert main(["data", "info", str(tmp_path)]) == 2
    assert "meta/info.json" in capsys.readouterr().err
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta/info.json").write_text("{not json")
    with pytest.raises(SystemExit) as exc:
        main(["data", "check", str(tmp_path)])
    assert exc.value.code == 1
    assert f"{tmp_path}/meta/info.json: not valid JSON" in capsys.readouterr().out


def test_bench_data(capsys):
    result = run_json(capsys, "bench", "data", "--task", "RememberColor", "--episodes", "3", "--workers", "1",
                      "--image-size", "32", "--json")
    assert result["bare_frames_per_s"] > 0 and result["record"]["1"]["frames_per_s"] > 0
    assert result["mb_per_100_episodes"] > 0 and "overhead_pct" in result
