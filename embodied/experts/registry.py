"""Which scripted expert solves which task: an explicit table, read by ``make_expert``.

Tasks do not know their experts (``embodied.tasks`` never imports
``embodied.experts``; a boundary test checks it), so the pairing lives here,
keyed by the task's registered name (as in :data:`embodied.tasks.TASKS`). The
expert classes are given as ``"module:Class"`` strings and imported only when
asked for: importing the registry does not load every task module and the
simulator with it.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from embodied.planner.calls import SkillCall
from embodied.tasks import TASKS


class Expert(Protocol):
    """What every expert offers: ``act`` in the env's action space, and the skill call it is executing."""

    current_call: SkillCall | None

    def reset(self) -> None: ...

    def act(self, obs: Any = None) -> np.ndarray: ...


EXPERTS: dict[str, str] = {
    # Manipulation.
    "PutBlockBack-v0": "embodied.experts.put_block_back:PutBlockBackExpert",
    "ReopenDrawer-v0": "embodied.experts.reopen_drawer:ReopenDrawerExpert",
    "HiddenObject-v0": "embodied.experts.hidden_object:HiddenObjectExpert",
    "ShellGame-v0": "embodied.experts.shell_game:ShellGameExpert",
    "RememberColor-v0": "embodied.experts.remember_color:RememberColorExpert",
    "SequenceRecall-v0": "embodied.experts.sequence_recall:SequenceRecallExpert",
    "Rearrange-v0": "embodied.experts.rearrange:RearrangeExpert",
    "CountFlashes-v0": "embodied.experts.count_flashes:CountFlashesExpert",
    # These three end as RememberColor does: touch the block the privileged state names.
    "TouchAsTold-v0": "embodied.experts.remember_color:RememberColorExpert",
    "MoveOrder-v0": "embodied.experts.remember_color:RememberColorExpert",
    "StoodOn-v0": "embodied.experts.remember_color:RememberColorExpert",
    "StashAndFetch-v0": "embodied.experts.stash_fetch:StashAndFetchExpert",
    # Navigation: go to the goal object the env names, or to the goal room.
    "ObjectRevisit-v0": "embodied.experts.navigation:NavigationExpert",
    "MovedObject-v0": "embodied.experts.navigation:NavigationExpert",
    "MultiGoal-v0": "embodied.experts.navigation:NavigationExpert",
    "RoomRecall-v0": "embodied.experts.room_recall:RoomExpert",
    "GoAsTold-v0": "embodied.experts.navigation:NavigationExpert",
    "ChangedObject-v0": "embodied.experts.navigation:NavigationExpert",
    "CountPerRoom-v0": "embodied.experts.room_recall:RoomExpert",
    "VanishedObject-v0": "embodied.experts.navigation:NavigationExpert",
    "Lifelong-v0": "embodied.experts.lifelong:LifelongExpert",
}


def _registered() -> str:
    return ", ".join(sorted(EXPERTS))


def expert_class(task: str) -> type:
    """The expert class of ``task`` (its registered name, e.g. ``"ShellGame-v0"``), imported now."""
    if task not in EXPERTS:
        raise ValueError(f"no scripted expert registered for task {task!r}; registered: {_registered()}")
    module, name = EXPERTS[task].split(":")
    return getattr(importlib.import_module(module), name)


def task_name(env: gym.Env) -> str:
    """The registered task name of ``env`` (wrapped or not, made with ``gym.make`` or from its class).

    Found from the env's class, not from ``env.spec``: an env built directly
    from its class has no spec. The nearest class in the MRO that a task
    registers as its entry point wins, so a subclass (a test's variant of a
    task) counts as the task it derives from, as a registered subclass task
    (ChangedObject of MovedObject) counts as itself.
    """
    by_entry_point = {entry.entry_point: name for name, entry in TASKS.items()}
    for cls in type(env.unwrapped).__mro__:
        name = by_entry_point.get(f"{cls.__module__}:{cls.__qualname__}")
        if name is not None:
            return name
    raise ValueError(f"{type(env.unwrapped).__name__} is not a registered task; tasks with an expert: {_registered()}")


def make_expert(env: gym.Env) -> Expert:
    """The scripted expert of ``env``'s task, built on ``env``."""
    return expert_class(task_name(env))(env)
