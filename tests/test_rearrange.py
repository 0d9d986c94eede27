"""Rearrange end to end: the expert restores every object; a wrong place fails; moves are seen; knobs checked."""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest

from embodied.experts import make_expert
from embodied.tasks.rearrange import (
    N_DRAWERS,
    N_PLACES,
    N_SPOTS,
    Rearrange,
    RearrangeOptions,
    _n_cues,
    is_drawer,
    place_name,
)
from tests.helpers import run_expert


@pytest.fixture(scope="module")
def env():
    env = gym.make("embodied/Rearrange-v0", images=False)
    yield env
    env.close()


@pytest.mark.parametrize("seed", [0, 1])
def test_expert_puts_everything_back(env, seed):
    info, steps = run_expert(env, seed)
    assert info["is_success"] and not info["is_failure"], steps
    for obj in info["privileged"]["objects"]:
        if not obj["start_container"].startswith("drawer"):
            assert np.linalg.norm(obj["pos"][:2] - obj["start_pos"][:2]) <= 0.03, obj["name"]


def test_privileged_describes_every_object(env):
    _, info = env.reset(seed=2)
    objects = info["privileged"]["objects"]
    assert len(objects) == env.unwrapped.options.n_objects
    assert sorted(o["cls"] for o in objects).count("ball") == 1
    assert len({o["colour"] for o in objects}) == len(objects)
    assert sum(o["moved"] for o in objects) == env.unwrapped.options.k
    for o in objects:
        assert o["start_container"] in ("", o["start_place"])
        assert o["start_container"] == "" or o["start_container"][:-1] in ("drawer", "cup")
        assert o["start_pos"].shape == (3,) and o["pos"].shape == (3,)


def test_a_wrong_place_fails(env):
    """Send one displaced object to a free spot that is not its origin: everything else is restored, no success."""
    obs, info = env.reset(seed=3)
    e = env.unwrapped
    objects = info["privileged"]["objects"]
    mover = next(o for o, obj in enumerate(objects) if obj["moved"])
    taken = set(e.start) | set(e.final)
    wrong = next(p for p in range(N_SPOTS) if p not in taken)
    expert = make_expert(env)
    expert.goal_override = {objects[mover]["name"]: place_name(wrong)}
    idle = 0
    while idle < 20:
        obs, _, terminated, truncated, info = env.step(expert.act(obs))
        assert not (terminated or truncated)
        busy = info["phase"] != "recall" or expert.queue or expert.skills
        idle = 0 if busy else idle + 1
    assert not info["is_success"] and not info["is_failure"]
    pos = info["privileged"]["objects"]
    assert not e.placed(mover, pos[mover]["pos"])
    assert all(e.placed(o, pos[o]["pos"]) for o in range(len(pos)) if o != mover)


def test_observe_shows_the_moves_along_a_path():
    env = gym.make("embodied/Rearrange-v0", images=False, k=3)
    _, info = env.reset(seed=4)
    moved = [o for o, obj in enumerate(info["privileged"]["objects"]) if obj["moved"]]
    track = [np.array([info["privileged"]["objects"][o]["pos"] for o in moved])]
    while info["phase"] == "observe":
        _, _, _, _, info = env.step(np.zeros(5, dtype=np.float32))
        track.append(np.array([info["privileged"]["objects"][o]["pos"] for o in moved]))
    track = np.array(track)  # (steps, movers, 3)
    start = np.array([info["privileged"]["objects"][o]["start_pos"] for o in moved])
    assert np.all(np.linalg.norm(track[0] - start, axis=1) < 0.005)
    # Each mover ends far from its start, after a lift (not a jump): small steps, high in between.
    assert np.all(np.linalg.norm(track[-1, :, :2] - start[:, :2], axis=1) > 0.05)
    assert np.linalg.norm(np.diff(track, axis=0), axis=2).max() < 0.07
    assert np.all(track[:, :, 2].max(axis=0) > 0.1)
    env.close()


def test_recall_scene_is_the_final_layout(env):
    """Drawers shut, cups down, every object at its final place, whatever the cue."""
    e = env.unwrapped
    env.reset(seed=5)
    finals = []
    for cue in e.cue_variants():
        obs, info = env.reset(seed=5, options={"cue": cue})
        while info["phase"] != "recall":
            obs, _, _, _, info = env.step(np.zeros(5, dtype=np.float32))
        assert np.all(info["privileged"]["openings"] < 1e-6)
        assert np.allclose(info["privileged"]["cup_pos"][:, :2], info["privileged"]["cup_xy"], atol=0.002)
        finals.append(np.array([o["pos"] for o in info["privileged"]["objects"]]))
        assert obs["goal"]["text"] == "put everything back where it was"
    assert np.allclose(finals[0], finals[1], atol=1e-3)


def test_chance_formula_counts_the_cues():
    """The closed form for #cues matches enumeration, and chance is small but not zero."""
    env = gym.make("embodied/Rearrange-v0", images=False, n_objects=4, k=2)
    env.reset(seed=6)
    e = env.unwrapped
    free = e.free_places()
    ball = e.options.n_objects - 1
    count = 0
    for movers in itertools.combinations(range(e.options.n_objects), e.options.k):
        for origins in itertools.permutations(free, e.options.k):
            count += not any(o == ball and is_drawer(p) for o, p in zip(movers, origins))
    free_drawers = sum(is_drawer(p) for p in free)
    assert count == _n_cues(4, 2, free_drawers)
    assert N_PLACES == N_SPOTS + N_DRAWERS + 2
    rate = Rearrange.chance_rate(RearrangeOptions())
    assert 0 < rate < 0.001
    assert Rearrange.chance_rate(RearrangeOptions(k=1)) > rate
    env.close()


@pytest.mark.parametrize(
    "knobs, name",
    [
        ({"k": 0}, "k"),
        ({"n_objects": 6, "k": 7}, "k"),
        ({"n_objects": 4, "k": 5}, "k"),
        ({"n_objects": 3}, "n_objects"),
        ({"n_objects": 7}, "n_objects"),
        ({"tolerance": 0.1}, "tolerance"),
        ({"delay": -1}, "delay"),
    ],
)
def test_knobs_are_checked(knobs, name):
    with pytest.raises(ValueError, match=name):
        gym.make("embodied/Rearrange-v0", images=False, **knobs)


def test_bad_cue_names_the_valid_ones(env):
    env.reset(seed=0)
    with pytest.raises(ValueError, match="free places"):
        env.reset(seed=0, options={"cue": ((0, 0),)})
