"""Recorded demonstrations in the LeRobotDataset v3.0 layout.

    record (workers) -> EpisodeBlob -> DatasetWriter.commit -> data/, videos/, meta/
    DemoDataset(root, obs_horizon, action_horizon)  -> torch windows
    check_dataset(root), dataset_info(root), render_episode(root, e, out)

And the viewer's recording of a run (``embodied run --record DIR``):
``embodied.data.recording`` (Recorder, load_recording). Importing this package
loads neither the simulator nor torch.

See docs/data.md for the layout and the columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from embodied.data.layout import DatasetError

if TYPE_CHECKING:
    from embodied.data.reader import DemoDataset

__all__ = ["DatasetError", "DemoDataset"]


def __getattr__(name: str):
    if name == "DemoDataset":  # torch is imported only when the reader is used
        from embodied.data.reader import DemoDataset

        return DemoDataset
    raise AttributeError(name)
