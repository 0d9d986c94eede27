"""The memoryless baseline succeeds exactly when its guess of the cue is right."""

import gymnasium as gym
import numpy as np
import pytest

import embodied  # noqa: F401
from embodied.experts.memoryless import MemorylessExpert


def _episode(env, seed):
    policy = MemorylessExpert(env, seed)
    obs, _ = env.reset(seed=seed)
    policy.reset()
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(policy.act(obs))
        done = terminated or truncated
    guess = policy.guess
    policy.close()
    return guess, info


@pytest.mark.parametrize("task", ["ReopenDrawer-v0", "RememberColor-v0", "StoodOn-v0", "StashAndFetch-v0"])
def test_success_iff_the_guess_matches_the_cue(task):
    env = gym.make(f"embodied/{task}", images=False)
    outcomes = []
    for seed in range(8):
        guess, info = _episode(env, seed)
        right = int(guess) == int(env.unwrapped.cue)
        assert info["is_success"] == right, (seed, guess, env.unwrapped.cue)
        outcomes.append(right)
    env.close()
    assert 0 < sum(outcomes) < len(outcomes)  # it guesses, and it is not always wrong


def test_families_with_one_cue_space_guess_apart():
    """ReopenDrawer and HiddenObject both guess one of three drawers: on the same seeds their guesses
    must not be one shared sequence (that would make their chance rates one measurement, not two)."""
    envs = [gym.make(f"embodied/{task}", images=False) for task in ("ReopenDrawer-v0", "HiddenObject-v0")]
    guesses = [[int(MemorylessExpert(env, seed).rng.integers(3)) for seed in range(20)] for env in envs]
    assert guesses[0] != guesses[1]
    assert guesses[0] == [int(MemorylessExpert(envs[0], seed).rng.integers(3)) for seed in range(20)]  # reproducible
    for env in envs:
        env.close()


def test_put_block_back_guess_lands_at_the_guessed_spot():
    env = gym.make("embodied/PutBlockBack-v0", images=False)
    guess, info = _episode(env, seed=3)
    truth, block = info["privileged"]["start_xy"], info["privileged"]["block_pos"][:2]
    assert np.linalg.norm(np.asarray(guess) - truth) > 0.05  # a wrong guess (checked for this seed) ...
    assert np.linalg.norm(block - np.asarray(guess)) < 0.03  # ... carried out: the block sits where it guessed
    assert not info["is_success"]
    env.close()
