"""LeRobot's own v3.0 reader, ``LeRobotDataset``, opens a recorded dataset as it is (no conversion, no network)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from embodied.data.workers import RecordConfig, record

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a hub call would fail the test instead of hanging on the network


def _lerobot():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from lerobot.datasets.lerobot_dataset import LeRobotDataset
    except (ImportError, RuntimeError, OSError) as exc:  # torchvision fails with RuntimeError without its ops
        pytest.skip(f"lerobot cannot be imported here ({type(exc).__name__}: {exc}); tools/setup.sh installs it")
    try:
        import torchcodec  # noqa: F401
    except (ImportError, RuntimeError, OSError) as exc:
        pytest.skip(f"torchcodec (LeRobot's video decoder) cannot be imported ({exc}); tools/setup.sh installs it")
    return LeRobotDataset


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lerobot") / "ds"
    record(RecordConfig(["RememberColor-v0"], 2, root, image_size=32, depth=True), progress=False)
    return root


def test_lerobot_dataset_reads_rows_videos_and_windows(recorded: Path):
    LeRobotDataset = _lerobot()
    fps = 20
    ds = LeRobotDataset("local/embodied-demo", root=recorded, video_backend="torchcodec",
                        delta_timestamps={"action": [k / fps for k in range(4)],
                                          "observation.state": [-1 / fps, 0.0]})
    table = pq.read_table(recorded / "data/chunk-000/file-000.parquet").to_pydict()
    assert len(ds) == len(table["index"]) and ds.num_episodes == 2 and ds.fps == fps
    assert ds.meta.video_keys == ["observation.images.scene", "observation.images.wrist"]
    from embodied.data import DemoDataset

    ours = DemoDataset(recorded, obs_horizon=2, action_horizon=4, depth=True)
    second = int(pq.read_table(recorded / "meta/episodes/chunk-000/file-000.parquet")["dataset_from_index"][1].as_py())
    for i in (0, 7, second, second + 3, len(ds) - 1):  # the second episode sits later in the same mp4
        item, mine = ds[i], ours[i]
        np.testing.assert_array_equal(item["observation.state"].numpy(), mine["observation.state"].numpy())
        np.testing.assert_array_equal(item["action"].numpy(), mine["action"].numpy())
        assert item["action_is_pad"].tolist() == mine["action_is_pad"].tolist()
        assert item["observation.state_is_pad"].tolist() == mine["observation_is_pad"].tolist()
        assert int(item["skill.id"]) == int(mine["skill.id"]) and int(item["phase"]) == int(mine["phase"])
        assert item["task"] == ours.task_text(int(mine["task_index"]))
        for cam in ("scene", "wrist"):
            theirs = item[f"observation.images.{cam}"].numpy()
            np.testing.assert_allclose(theirs, mine[f"observation.images.{cam}"][-1].numpy(), atol=2 / 255)
        depth = item["observation.depth.scene"].numpy().astype(np.float32) / 1000.0
        np.testing.assert_allclose(depth, mine["observation.depth.scene"][-1].numpy(), atol=1e-6)
    assert set(ds.meta.stats) >= {"observation.state", "action", "observation.images.scene"}
    np.testing.assert_allclose(ds.meta.stats["action"]["mean"], ours.stats["action"]["mean"].numpy(), atol=1e-6)


def test_lerobot_opens_an_agent_recording_with_its_decision_points(tmp_path):
    """The decision points stored beside an agent's episodes (meta/decisions/) leave LeRobot's reader
    undisturbed, and our reader finds one file per episode."""
    LeRobotDataset = _lerobot()
    root = tmp_path / "agent"
    record(RecordConfig(["ShellGame-v0"], 2, root, policy="agent", image_size=32), progress=False)
    from embodied.data.decisions import load_decisions

    decisions = load_decisions(root)
    assert [d.episode for d in decisions] == [0, 1] and all(len(d) >= 2 for d in decisions)
    ds = LeRobotDataset("local/embodied-agent", root=root, video_backend="torchcodec")
    assert ds.num_episodes == 2 and len(ds) == sum(d.length for d in decisions)
    assert ds[len(ds) - 1]["observation.images.scene"].shape[-1] == 32
