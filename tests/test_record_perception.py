"""record-demos --perception: the agent policies record on the detector asked for; the expert refuses one."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from embodied.cli.main import main
from embodied.data.workers import RecordConfig, record
from embodied.planner.calls import SKILL_IDS


def test_the_agent_records_on_the_learned_segmenter_and_the_dataset_says_so(tmp_path, monkeypatch):
    from embodied.perception.learned.segmenter import LearnedSegmenter

    frames = []
    segment = LearnedSegmenter.__call__

    def counted(self, *args, **kwargs):
        frames.append(1)
        return segment(self, *args, **kwargs)

    monkeypatch.setattr(LearnedSegmenter, "__call__", counted)  # in-process: one worker records here
    root = tmp_path / "ds"
    summary = record(RecordConfig(["RememberColor-v0"], 1, root, policy="agent", image_size=128, seed=4,
                                  perception="learned"), progress=False)
    assert summary["success_rate"] == 1.0
    table = pq.read_table(next((root / "data").rglob("*.parquet"))).to_pydict()
    assert len(frames) >= len(table["index"]), "every step's cameras went through the learned segmenter"
    touched = [row for row, i in zip(table["skill.params"], table["skill.id"]) if i == SKILL_IDS["touch"]]
    assert touched and all(0.3 < row[0] < 0.8 for row in touched)  # a block on the table, from memory
    info = json.loads((root / "meta/info.json").read_text())
    assert info["embodied"]["perception"] == "learned"


def test_the_masks_stay_the_default_and_never_call_the_segmenter(tmp_path, monkeypatch):
    from embodied.perception.learned.segmenter import LearnedSegmenter

    monkeypatch.setattr(LearnedSegmenter, "__call__", lambda *a, **k: pytest.fail("masks mode segmented"))
    root = tmp_path / "ds"
    record(RecordConfig(["RememberColor-v0"], 1, root, policy="agent", image_size=64, seed=4), progress=False)
    assert json.loads((root / "meta/info.json").read_text())["embodied"]["perception"] == "masks"


def test_a_policy_that_does_not_perceive_refuses_a_detector(tmp_path, capsys):
    with pytest.raises(ValueError, match="policy 'expert' does not perceive"):
        RecordConfig(["RememberColor-v0"], 1, tmp_path / "x", policy="expert", perception="learned").validate()
    assert main(["record-demos", "--task", "RememberColor", "--episodes", "1", "--out", str(tmp_path / "y"),
                 "--perception", "geometric"]) == 2
    assert "policy 'expert' does not perceive" in capsys.readouterr().err
    assert not (tmp_path / "y").exists(), "nothing is written before the error"
    with pytest.raises(ValueError, match="unknown perception 'lidar'"):
        RecordConfig(["RememberColor-v0"], 1, tmp_path / "z", policy="agent", perception="lidar").validate()


def test_eval_memory_takes_perception_and_keeps_mode_as_its_older_name():
    from embodied.cli.main import build_parser

    parse = build_parser().parse_args
    assert parse(["eval-memory", "--perception", "learned"]).mode == "learned"
    assert parse(["eval-memory", "--mode", "geometric"]).mode == "geometric"
    assert parse(["eval-memory"]).mode == "masks"
    assert parse(["record-demos", "--task", "ShellGame", "--episodes", "1", "--out", "x",
                  "--perception", "learned"]).perception == "learned"
