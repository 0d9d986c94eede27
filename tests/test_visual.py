"""visual="randomized": the scenery's look changes per episode, the task's truth does not."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import embodied.tasks  # noqa: F401  (registers the tasks)
from tests.helpers import run_expert


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and not (a and isinstance(a[0], int | float)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray | list | tuple | float | int) and not isinstance(a, bool):
        return np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), atol=1e-6)
    return a == b


@pytest.mark.parametrize("task,camera", [("ShellGame-v0", "scene"), ("ObjectRevisit-v0", "head")])
def test_randomized_look_keeps_the_truth(task, camera):
    plain, varied = gym.make(f"embodied/{task}"), gym.make(f"embodied/{task}", visual="randomized")
    obs_a, _ = plain.reset(seed=11)
    obs_b, _ = varied.reset(seed=11)
    truth_a, truth_b = plain.unwrapped.privileged(), varied.unwrapped.privileged()
    truth_a.pop("camera_pose", None), truth_b.pop("camera_pose", None)  # the mount is jittered on purpose
    assert _same(truth_a, truth_b)
    assert obs_a["goal"]["text"] == obs_b["goal"]["text"]
    assert np.array_equal(obs_a[f"segmentation/{camera}"] > 0, obs_b[f"segmentation/{camera}"] > 0) or \
        camera == "scene"  # a jittered fixed camera sees the same things from a slightly moved mount
    labels = plain.unwrapped.labels
    scenery = set(plain.unwrapped.scenery_classes)
    seg = obs_a[f"segmentation/{camera}"]
    back = np.isin(seg, [0] + [i for i, c in labels.items() if c in scenery])
    diff = np.abs(obs_a[f"rgb/{camera}"].astype(int) - obs_b[f"rgb/{camera}"].astype(int)).sum(-1)
    assert (diff[back] > 30).mean() > 0.5, "the scenery looks the same"
    # the task's objects keep their own colours (they are cues); only the scenery is recoloured
    m_a, m_b = plain.unwrapped.model, varied.unwrapped.model
    for entity in plain.unwrapped.entities:
        if entity.cls not in scenery:
            assert np.array_equal(m_a.geom_rgba[entity.geom_ids], m_b.geom_rgba[entity.geom_ids]), entity.name
    # another episode, another look
    obs_c, _ = varied.reset(seed=12)
    assert not np.array_equal(m_b.geom_rgba, gym.make(f"embodied/{task}").unwrapped.model.geom_rgba)
    # the base knows its camera mount: the reported pose is the true one
    truth = varied.unwrapped.rig.extrinsics(varied.unwrapped.data)[camera]
    if task == "ShellGame-v0":
        assert np.allclose(obs_c[f"extrinsics/{camera}"], truth, atol=1e-5)


@pytest.mark.parametrize("task", ["ShellGame-v0", "ObjectRevisit-v0"])
def test_expert_succeeds_under_randomized_look(task):
    env = gym.make(f"embodied/{task}", visual="randomized", images=False)
    info, _ = run_expert(env, seed=21)
    assert info["is_success"] and not info["is_failure"]


def test_unknown_visual_is_named():
    with pytest.raises(ValueError, match="visual must be one of"):
        gym.make("embodied/ShellGame-v0", visual="fancy")
