"""Every task family's recall question, answered by perception + memory from observations alone.

Instance ids are shuffled every frame, so identities come from tracking;
privileged state is read only to check the answer.
"""

from __future__ import annotations

import numpy as np
import pytest

from embodied.eval.evaluate import eval_memory, run_episode
from embodied.eval.recall import QUESTIONS
from embodied.perception import PerceptionConfig
from embodied.tasks import TASKS

FAMILY_TASKS = [name for name, e in TASKS.items() if e.env_class().family in QUESTIONS]


@pytest.mark.parametrize("task", FAMILY_TASKS)
@pytest.mark.parametrize("seed", [0, 1])
def test_memory_answers_the_recall_question(task, seed):
    report = run_episode(task, seed, PerceptionConfig(shuffle_ids=True, seed=seed), accuracy=False, stop_at_recall=True)
    assert report.correct, f"{task} seed {seed}: {report.answer}"


def test_put_block_back_start_pose_within_2cm_with_shuffled_ids():
    report = run_episode("PutBlockBack-v0", 4, PerceptionConfig(shuffle_ids=True, seed=4), stop_at_recall=False)
    memory = report.memory
    block = report.answer["node"]
    start = np.asarray(report.answer["answer"])
    # The block was carried away, yet one node followed it the whole way.
    assert memory.find(cls="block") == [block]
    assert len(memory.trajectory(block)) > 5 and memory.when("grasp", block) and memory.when("release", block)
    acc = report.accuracy
    assert acc["duplicates"] == 0 and acc["merges"] == 0
    assert acc["position_error_median"] < 0.01
    assert acc["relation_precision"] == 1.0 and acc["relation_recall"] == 1.0
    assert report.correct and np.all(np.isfinite(start))


@pytest.mark.parametrize("task", ["PutBlockBack-v0", "RememberColor-v0", "SequenceRecall-v0"])
def test_geometric_mode_recalls_without_masks_or_classes(task):
    """No masks and no renderer's labels: the block by colour, the screen by its colour changes, and
    the buttons by their shape (a small square top just above the table) and their flashes."""
    config = PerceptionConfig(mode="geometric", seed=0)
    from embodied.memory import DetectorProfile, MemoryConfig

    memory = MemoryConfig(detector=DetectorProfile(strict_class=False))
    report = run_episode(task, 0, config, memory, accuracy=False, stop_at_recall=True)
    assert report.correct, report.answer
    assert not report.memory.find(cls="block")
    buttons = report.memory.find(cls="button")
    if task == "SequenceRecall-v0":
        # Named by shape alone: exactly the four buttons, nothing else sized like one.
        assert len(buttons) == 4, buttons
    else:
        assert not buttons, buttons


def test_eval_memory_reports_success_and_accuracy():
    result = eval_memory(["PutBlockBack-v0"], episodes=1, seed=5)
    row = result["tasks"][0]
    assert row["task"] == "PutBlockBack-v0" and row["recall_success"] == 1.0
    assert row["accuracy"]["duplicates"] == 0 and row["accuracy"]["position_error_median"] < 0.01
    assert result["settings"]["shuffle_ids"] is True


def test_moved_object_where_it_was_first_seen():
    report = run_episode(
        "MovedObject-v0",
        2,
        PerceptionConfig(shuffle_ids=True, seed=2),
        accuracy=False,
        options={"query": "first"},
        stop_at_recall=True,
    )
    assert report.correct, report.answer


def _seed_with_lit_colour(colour: str) -> int:
    import gymnasium as gym

    env = gym.make("embodied/SequenceRecall-v0", images=False)
    try:
        for seed in range(200):
            env.reset(seed=seed)
            if env.unwrapped.lit_colour == colour:
                return seed
    finally:
        env.close()
    raise AssertionError(f"no seed lights the buttons {colour}")


@pytest.mark.parametrize("colour", ["white", "yellow", "cyan", "orange"])
def test_button_order_whatever_the_light_colour(colour):
    """A white light on a grey button keeps the colour name "grey": memory must see the brightness change."""
    seed = _seed_with_lit_colour(colour)
    report = run_episode(
        "SequenceRecall-v0", seed, PerceptionConfig(shuffle_ids=True, seed=seed), accuracy=False, stop_at_recall=True
    )
    assert report.correct, f"{colour} light, seed {seed}: {report.answer}"
    tags = {e.tag for b in report.memory.find(cls="button") for e in report.memory.log.of_node(b)}
    assert {"brightened", "dimmed"} <= tags
