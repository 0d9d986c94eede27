"""embodied: memory agents for simulated robots.

Importing the package registers every task with gymnasium as
``embodied/<Name>-v0``.
"""

import os

# Headless machines render through EGL; this must be set before mujoco loads.
os.environ.setdefault("MUJOCO_GL", "egl")

__version__ = "0.1.0"

from embodied.tasks import TASKS, get_task, make  # noqa: E402  (registers the tasks)

__all__ = ["TASKS", "get_task", "make", "__version__"]
