import os

os.environ.setdefault("MUJOCO_GL", "egl")

import embodied  # noqa: E402,F401  (registers the tasks)
