"""Vector envs: ``gym.make_vec`` over a task, sync and async (one process per env), images included.

The async env passes observations through shared memory; the instruction is a
gymnasium ``Text`` observation, which gymnasium 1.4 reads back only once
(``embodied.vector_text`` registers a live reader). The test checks the
async observations step by step against single envs on the same seeds, and it
renders in this process first: worker processes forked after the parent
rendered must not hang (``embodied`` sets ``LP_NUM_THREADS=0`` for Mesa's
software EGL, whose render threads a fork does not carry over).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import embodied  # noqa: F401  (registers the tasks)

SEEDS = [11, 12, 13, 14]


def single_rollout(task: str, seed: int, actions: list[np.ndarray], **kwargs) -> list[dict]:
    env = gym.make(f"embodied/{task}", **kwargs)
    try:
        obs, _ = env.reset(seed=seed)
        out = [obs]
        for a in actions:
            obs, *_ = env.step(a)
            out.append(obs)
        return out
    finally:
        env.close()


@pytest.mark.parametrize("task", ["ShellGame-v0", "ObjectRevisit-v0"])
def test_async_vector_env_matches_single_envs(task):
    single_rollout(task, 0, [])  # the parent renders before it forks the workers
    envs = gym.make_vec(f"embodied/{task}", num_envs=len(SEEDS), vectorization_mode="async")
    try:
        rng = np.random.default_rng(0)
        shape = (len(SEEDS), *envs.single_action_space.shape)
        actions = [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(6)]
        obs, info = envs.reset(seed=SEEDS)
        batches = [obs]
        for a in actions:
            obs, reward, terminated, truncated, info = envs.step(a)
            batches.append(obs)
        assert reward.shape == (len(SEEDS),) and "is_success" in info
    finally:
        envs.close()
    cam = next(k for k in batches[0] if k.startswith("rgb/"))
    assert batches[0][cam].shape == (len(SEEDS), *envs.single_observation_space[cam].shape)
    for i, seed in enumerate(SEEDS):
        single = single_rollout(task, seed, [a[i] for a in actions])
        for t, (batch, one) in enumerate(zip(batches, single)):
            assert batch["goal"]["text"][i] == one["goal"]["text"], (t, i)
            assert batch["goal"]["text"][i].strip(), "blank instruction: the Text observation was not read back"
            np.testing.assert_array_equal(batch[cam][i], one[cam])
            np.testing.assert_allclose(batch["proprio"][i], one["proprio"], atol=1e-6)


def test_sync_vector_env_with_a_knob():
    envs = gym.make_vec("embodied/ShellGame-v0", num_envs=2, vectorization_mode="sync", images=False, delay=30)
    try:
        obs, _ = envs.reset(seed=[1, 2])
        assert not any(k.startswith("rgb/") for k in obs)
        assert all(e.unwrapped.options.delay == 30 for e in envs.envs)
    finally:
        envs.close()


def test_live_text_reader_copies_to_a_plain_tuple():
    import copy
    import multiprocessing as mp

    from gymnasium.spaces import Text
    from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

    space = Text(20, min_length=1, charset=" abcdefgh")
    shared = create_shared_memory(space, n=2, ctx=mp)
    view = read_from_shared_memory(space, shared, n=2)
    write_to_shared_memory(space, 0, "bad cafe", shared)
    write_to_shared_memory(space, 1, "ace", shared)
    assert tuple(view) == ("bad cafe", "ace") and view[1] == "ace" and len(view) == 2
    frozen = copy.deepcopy(view)
    write_to_shared_memory(space, 1, "head", shared)
    assert frozen == ("bad cafe", "ace") and isinstance(frozen, tuple)
    assert view[1] == "head"
