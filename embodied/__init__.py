"""embodied: memory agents for simulated robots.

Importing the package registers every task with gymnasium as
``embodied/<Name>-v0``.
"""

import os

# Headless machines render through EGL; this must be set before mujoco loads.
os.environ.setdefault("MUJOCO_GL", "egl")
# Mesa's software EGL (llvmpipe) renders on helper threads, which a forked child does not inherit: a process
# forked after its parent rendered (gym.make_vec(..., vectorization_mode="async"), multiprocessing pools)
# then hangs at its first render. Rendering on the calling thread avoids that; at 128 px it costs nothing
# measurable here (the same pixels, render time within noise). Set LP_NUM_THREADS yourself to override.
os.environ.setdefault("LP_NUM_THREADS", "0")

__version__ = "0.1.0"

from embodied import vector_text  # noqa: E402, F401  (Text observations through async vector envs)
from embodied.tasks import TASKS, get_task, make  # noqa: E402  (registers the tasks)

__all__ = ["TASKS", "get_task", "make", "__version__"]
