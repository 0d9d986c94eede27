"""The ``embodied`` command: listing, running, errors, video."""

from __future__ import annotations

import json
import subprocess
import sys

import imageio.v2 as imageio
import pytest

from embodied.cli.main import main
from embodied.tasks import TASKS


def test_tasks_json_lists_every_task(capsys):
    assert main(["tasks", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {row["name"] for row in rows} == set(TASKS)
    for row in rows:
        assert 0.0 <= row["chance_rate"] < 1.0
        assert row["horizon"] > 0 and row["knobs"] and row["family"]


def test_run_expert_json(capsys):
    assert main(["run", "--task", "PutBlockBack-v0", "--policy", "expert", "--episodes", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["success_rate"] == 1.0
    assert [e["seed"] for e in out["episodes"]] == [0, 1]


def test_run_option_is_applied(capsys):
    assert main(["run", "--task", "PutBlockBack", "--policy", "random", "--episodes", "1",
                 "--option", "delay=3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["options"]["delay"] == 3
    assert out["success_rate"] == 0.0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--task", "NoSuchTask"], "available tasks"),
        (["run", "--task", "PutBlockBack", "--option", "bogus=1"], "valid options"),
        (["run", "--task", "PutBlockBack", "--option", "delay=soon"], "delay"),
        (["run", "--task", "PutBlockBack", "--option", "delay"], "key=value"),
    ],
)
def test_bad_input_exits_with_clear_error(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_video_is_written(tmp_path):
    path = tmp_path / "run.mp4"
    assert main(["run", "--task", "PutBlockBack", "--policy", "expert", "--episodes", "1", "--video", str(path)]) == 0
    frames = imageio.mimread(path, memtest=False)
    assert len(frames) > 100
    assert frames[0].std() > 5  # not a blank frame
    assert not list(tmp_path.glob(".*partial*"))


def test_console_script_entry_point():
    result = subprocess.run([sys.executable, "-m", "embodied.cli.main", "tasks"], capture_output=True, text=True)
    assert result.returncode == 0
    assert "PutBlockBack-v0" in result.stdout
