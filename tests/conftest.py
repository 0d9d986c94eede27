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


@pytest.fixture(scope="module")
def frames_dir(tmp_path_factory):
    """Labelled segmenter frames of two short expert episodes (a ShellGame and an ObjectRevisit)."""
    from embodied.data.seg_frames import FrameJob, make_frames

    out = tmp_path_factory.mktemp("frames")
    make_frames(FrameJob(out=str(out), episodes=2, tasks=("ShellGame-v0", "ObjectRevisit-v0"), every=40,
                         max_frames=3), progress=False)
    return out
