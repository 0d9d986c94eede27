"""The task registry: every memory task, its family, horizon, chance rate and knobs.

Tasks register with gymnasium as ``embodied/<Name>-v0`` when ``embodied`` is
imported. ``TASKS`` maps the short name (``PutBlockBack-v0``) to its entry.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass

import gymnasium as gym


@dataclass(frozen=True)
class TaskEntry:
    name: str  # e.g. "PutBlockBack-v0"
    entry_point: str  # "module:Class"
    suite: str  # "manipulation" or "navigation"
    max_episode_steps: int
    description: str

    @property
    def env_id(self) -> str:
        return f"embodied/{self.name}"

    def env_class(self):
        module, cls = self.entry_point.split(":")
        return getattr(importlib.import_module(module), cls)

    def describe(self) -> dict:
        from embodied.envs.base import PRESET_NAMES, options_from, preset_knobs  # not at import: no simulator

        cls = self.env_class()
        knobs = {f.name: f.default for f in dataclasses.fields(cls.Options)}
        presets = {}
        for preset in PRESET_NAMES:
            options = options_from(cls.Options, {"preset": preset}, self.name)
            presets[preset] = {"knobs": preset_knobs(cls.Options, preset, self.name),
                               "chance_rate": cls.chance_rate(options)}
        return {
            "name": self.name,
            "env_id": self.env_id,
            "family": cls.family,
            "memory_skill": cls.memory_skill,
            "suite": self.suite,
            "horizon": self.max_episode_steps,
            "chance": cls.chance,
            "chance_rate": cls.default_chance_rate(),
            "knobs": knobs,
            "presets": presets,
            "description": self.description,
        }


TASKS: dict[str, TaskEntry] = {}


def register(entry: TaskEntry) -> None:
    TASKS[entry.name] = entry
    if entry.env_id not in gym.registry:
        # The env truncates itself at its horizon (the default one plus any longer delay), so
        # gymnasium's TimeLimit is not used; see MemoryTaskEnv.horizon.
        gym.register(id=entry.env_id, entry_point=entry.entry_point, kwargs={"base_horizon": entry.max_episode_steps})


def get_task(name: str) -> TaskEntry:
    """Look up a task by short name or env id; unknown names list the available ones."""
    key = name.removeprefix("embodied/")
    if key not in TASKS and f"{key}-v0" in TASKS:
        key = f"{key}-v0"
    if key not in TASKS:
        raise ValueError(f"unknown task {name!r}; available tasks: {', '.join(sorted(TASKS))}")
    return TASKS[key]


def make(name: str, **kwargs) -> gym.Env:
    """``gym.make`` for a task by short name, with a clear error for unknown names."""
    return gym.make(get_task(name).env_id, **kwargs)


_MANIPULATION = [
    ("PutBlockBack-v0", "embodied.tasks.put_block_back:PutBlockBack", 300,
     "a block is carried off its start pose; put it back there"),
    ("ReopenDrawer-v0", "embodied.tasks.reopen_drawer:ReopenDrawer", 200, "one drawer stands open and is shut; reopen the same drawer"),
    ("HiddenObject-v0", "embodied.tasks.hidden_object:HiddenObject", 300, "a block is hidden in one of several drawers; retrieve it"),
    ("ShellGame-v0", "embodied.tasks.shell_game:ShellGame", 300, "a ball is hidden under one of identical cups that swap places; lift that cup"),
    ("RememberColor-v0", "embodied.tasks.remember_color:RememberColor", 200, "a screen flashes the colour of one of several blocks; touch that block"),
    ("SequenceRecall-v0", "embodied.tasks.sequence_recall:SequenceRecall", 300, "buttons light up one after another; press them in the same order"),
    ("Rearrange-v0", "embodied.tasks.rearrange:Rearrange", 2500,
     "k objects are moved between table spots, drawers and cups; put everything back where it was"),
    ("CountFlashes-v0", "embodied.tasks.count_flashes:CountFlashes", 400,
     "a screen flashes some number of times among distractor flashes; press a button that many times"),
    ("TouchAsTold-v0", "embodied.tasks.touch_as_told:TouchAsTold", 200,
     "which block to touch is said only at the start, among decoy lines; at the end, do as told"),
    ("MoveOrder-v0", "embodied.tasks.move_order:MoveOrder", 250,
     "blocks are moved one after another; touch the one moved first (or last)"),
    ("StoodOn-v0", "embodied.tasks.stood_on:StoodOn", 300,
     "blocks stand on coloured pads, then all move off; touch the one that stood on the named pad"),
    ("StashAndFetch-v0", "embodied.tasks.stash_fetch:StashAndFetch", 500,
     "the robot itself puts a block in the open drawer; much later, it fetches the block back"),
]

for _name, _entry, _steps, _desc in _MANIPULATION:
    register(TaskEntry(_name, _entry, "manipulation", _steps, _desc))

# Navigation: horizons cover the longest tour (about 1000 steps at 10 Hz) plus the default recall budget.
_NAVIGATION = [
    ("ObjectRevisit-v0", "embodied.tasks.object_revisit:ObjectRevisit", 2000,
     "a tour of the apartment, then: go to an object named only now"),
    ("MovedObject-v0", "embodied.tasks.moved_object:MovedObject", 2000,
     "an object is moved in view during the tour; go where it is now (or where it was first)"),
    ("MultiGoal-v0", "embodied.tasks.multi_goal:MultiGoal", 3000,
     "several objects to reach one after another in the same apartment; steps per goal in info"),
    ("RoomRecall-v0", "embodied.tasks.room_recall:RoomRecall", 2000,
     "a tour of the apartment, then: go to the room where an object (now gone) was seen"),
    ("GoAsTold-v0", "embodied.tasks.go_as_told:GoAsTold", 2000,
     "the object to go to is named only as the tour starts, among decoy lines; after the tour, do as told"),
    ("ChangedObject-v0", "embodied.tasks.changed_object:ChangedObject", 2000,
     "an object is moved in view during the tour; go to the one that moved (or where it was first)"),
    ("CountPerRoom-v0", "embodied.tasks.count_per_room:CountPerRoom", 2000,
     "a tour of the apartment, then: go to the room that had the most objects (all gone now)"),
    ("VanishedObject-v0", "embodied.tasks.vanished_object:VanishedObject", 2000,
     "an object disappears while the robot looks away during the tour; go to where it was"),
    # The longest tour (under 1500 steps), the delay and 20 goals of 1050 steps each.
    ("Lifelong-v0", "embodied.tasks.lifelong:Lifelong", 23000,
     "one long episode: 40 objects that move, go and come between 20 goals; one memory throughout"),
]

for _name, _entry, _steps, _desc in _NAVIGATION:
    register(TaskEntry(_name, _entry, "navigation", _steps, _desc))
