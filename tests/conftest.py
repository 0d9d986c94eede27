import os

os.environ.setdefault("MUJOCO_GL", "egl")

import pytest  # noqa: E402

import embodied  # noqa: E402,F401  (registers the tasks)


@pytest.fixture(scope="module")
def house():
    """The memory-scale benchmark's house, for test_memory_scale and test_memory_fast_paths: 2,000 steps
    of a 150-object house (more objects than looks: many look-alikes)."""
    from embodied.eval.memory_scale import HouseStream
    from embodied.memory.memory import SpatialMemory

    stream = HouseStream(150, seed=0)
    memory = SpatialMemory()
    for t in range(2000):
        memory.update(stream.frame(t))
    return stream, memory
