"""The standard benchmark protocol: every family at every difficulty preset, on fixed test seeds.

    result = run_benchmark(BenchmarkConfig(policies=("agent",), presets=("easy", "hard")), out="runs/bench")

Protocol ``embodied-memory-v1``:
- every task family of the chosen suite, at each preset (``easy | medium | hard | extreme``, the knob
  sets in each task's ``Options.PRESETS``), ``episodes`` episodes each (50 by default);
- episode i runs on seed ``TEST_SEED + i`` (``DEV_SEED + i`` with ``split="dev"``); the same seeds for
  every family, preset and policy. No test, demo or tuning run in this repository uses them;
- success is the env's own (``info["is_success"]``); chance is the family's formula at the preset's knobs.

``BenchmarkConfig.options`` (``embodied benchmark --option KEY=VALUE``) adds knobs on top of every
preset's: such a run is not the standard protocol, and its results (``"standard": false``,
``"options"``), resume key and leaderboard say so.

A policy is any name ``embodied run --policy`` takes, or ``import:module:factory`` for one of your own
(see :mod:`embodied.eval.external`). Results go to ``out/results.json`` after every (policy, family,
preset) cell, so a killed run keeps every finished cell and a rerun with the same ``out`` resumes.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from embodied.envs.base import PRESET_NAMES, options_from
from embodied.envs.env_knobs import split_env_knobs
from embodied.eval.distributed import Batch, Parallel, evaluate, run_batch
from embodied.eval.rollout import summarize
from embodied.tasks import TASKS, get_task
from policies.checkpoint import atomic_write_json

PROTOCOL = "embodied-memory-v1"
TEST_SEED = 500_000  # the protocol's test seeds: TEST_SEED + i
DEV_SEED = 400_000  # development seeds, for tuning before a test run
SPLITS = {"test": TEST_SEED, "dev": DEV_SEED}
SUITES = ("manipulation", "navigation")


@dataclass
class BenchmarkConfig:
    policies: tuple[str, ...] = ("agent",)
    presets: tuple[str, ...] = PRESET_NAMES
    suite: str | None = None  # "manipulation", "navigation" or None: both
    tasks: tuple[str, ...] = ()  # only these (short names); default: every task of the suite
    episodes: int = 50
    split: str = "test"
    head: str | None = None  # learned skills for agent / learned policies (KIND:RUN)
    perception: str | None = None  # the agent policies' detector (masks, learned, geometric; None: masks)
    image_size: int | None = None  # None: the task's own (128)
    # Task knobs on top of every preset's (the env's ``visual`` and ``sensor`` too). Any at all: not the standard protocol, and
    # the results, their resume key and the leaderboard say so.
    options: dict = field(default_factory=dict)

    def validate(self) -> None:
        if not self.policies:
            raise ValueError("give at least one policy")
        unknown = [p for p in self.presets if p not in PRESET_NAMES]
        if unknown or not self.presets:
            raise ValueError(f"unknown preset(s) {unknown}; presets: {', '.join(PRESET_NAMES)}")
        if self.suite not in (None, *SUITES):
            raise ValueError(f"unknown suite {self.suite!r}; suites: {', '.join(SUITES)}")
        if self.split not in SPLITS:
            raise ValueError(f"unknown split {self.split!r}; splits: {', '.join(SPLITS)}")
        if self.episodes < 1:
            raise ValueError(f"episodes must be >= 1, got {self.episodes}")
        if "preset" in self.options:
            raise ValueError("the protocol fixes the presets: choose them with --preset; --option adds knobs on top")

    @property
    def standard(self) -> bool:
        """The protocol as published: every preset's knobs and nothing else."""
        return not self.options

    def task_names(self) -> list[str]:
        names = [get_task(t).name for t in self.tasks] if self.tasks else list(TASKS)
        return [n for n in names if self.suite is None or TASKS[n].suite == self.suite]

    def seeds(self) -> list[int]:
        return [SPLITS[self.split] + i for i in range(self.episodes)]

    def key(self) -> dict:
        """What a saved result must match to be resumed."""
        key = {"protocol": PROTOCOL, "split": self.split, "episodes": self.episodes, "head": self.head,
               "image_size": self.image_size}
        if self.perception not in (None, "masks"):  # only when given: earlier results (masks) still resume
            key["perception"] = self.perception
        # Only when given: results of the standard protocol saved before options existed still resume.
        return key | ({"options": dict(self.options)} if self.options else {})


@dataclass
class Cell:
    """One (policy, task, preset) entry of the results."""

    policy: str
    task: str
    family: str
    suite: str
    preset: str
    knobs: dict
    chance: float
    success_rate: float
    episodes: int
    mean_steps: float
    failed_seeds: list[int] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def id(self) -> tuple[str, str, str]:
        return self.policy, self.task, self.preset


def cell_batch(policy: str, task: str, preset: str, config: BenchmarkConfig) -> tuple[Batch, object]:
    """The episodes of one cell (env, policy, seeds) and the task's typed knobs at ``preset``."""
    entry = get_task(task)
    cls = entry.env_class()
    env_knobs, extra = split_env_knobs(config.options)  # the scenery's look and the sensor: no task knobs
    options = options_from(cls.Options, {"preset": preset, **extra}, entry.name)  # extra knobs beat the preset's
    needs_images = policy != "expert" and policy != "memoryless"
    size = {} if config.image_size is None else {"image_size": config.image_size}
    make = dict(images=needs_images, **size, **env_knobs, **dataclasses.asdict(options))
    perception = config.perception if policy.startswith(("agent", "learned:")) else None  # the expert's is the truth
    return Batch(entry.env_id, make, policy, tuple(config.seeds()), head=config.head, perception=perception), options


def make_cell(policy: str, task: str, preset: str, options, results: list, seconds: float) -> Cell:
    entry = get_task(task)
    cls = entry.env_class()
    summary = summarize(results)
    return Cell(policy=policy, task=entry.name, family=cls.family, suite=entry.suite, preset=preset,
                knobs=dataclasses.asdict(options), chance=cls.chance_rate(options),
                success_rate=summary["success_rate"], episodes=len(results), mean_steps=summary["mean_steps"],
                failed_seeds=[r.seed for r in results if not r.success], seconds=seconds)


def run_cell(policy: str, task: str, preset: str, config: BenchmarkConfig, progress: bool = True) -> Cell:
    batch, options = cell_batch(policy, task, preset, config)
    t0 = time.perf_counter()
    results, _ = run_batch(batch, progress)
    return make_cell(policy, task, preset, options, results, time.perf_counter() - t0)


def load_results(path: str | Path) -> dict:
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"no benchmark results at {path}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc})") from None
    if data.get("protocol") != PROTOCOL or not isinstance(data.get("cells"), list):
        raise ValueError(f"{path} does not hold {PROTOCOL} benchmark results")
    return data


def run_benchmark(config: BenchmarkConfig, out: str | Path | None = None, progress: bool = True,
                  on_cell=None, parallel: Parallel | None = None) -> dict:
    """Run every (policy, task, preset) cell not already in ``out/results.json`` (same protocol key);
    write results, ``leaderboard.md`` and ``difficulty.png`` to ``out``. Returns the results dict.
    ``parallel``: the episodes on local worker processes or Ray (embodied.eval.distributed), every
    cell's chunks in flight at once; the same results (``seconds``: the cell's episodes' seconds
    summed over the workers that ran them), each cell saved as its last chunk finishes."""
    from embodied.eval.leaderboard import write_reports

    config.validate()
    names = config.task_names()
    if not names:
        raise ValueError(f"no task of suite {config.suite!r} among {list(config.tasks)}")
    out = Path(out) if out is not None else None
    done: dict[tuple, Cell] = {}
    if out is not None and (out / "results.json").exists():
        saved = load_results(out)
        if saved["key"] != config.key():
            raise ValueError(f"{out / 'results.json'} holds results run with {saved['key']}, not "
                             f"{config.key()}; give another output folder")
        done = {cell.id: cell for cell in (Cell(**c) for c in saved["cells"])}
    ids = [(policy, task, preset) for policy in config.policies for task in names for preset in config.presets]
    if parallel is not None and parallel.distributed:
        cells = _run_parallel(config, ids, done, out, progress, on_cell, parallel)
    else:
        cells = []
        for policy, task, preset in ids:
            cell = done.get((policy, task, preset)) or run_cell(policy, task, preset, config, progress)
            cells.append(cell)
            _save(config, out, cells, done)
            if on_cell is not None:
                on_cell(cell)
    # Cells of earlier runs into ``out`` (other policies or presets) stay in the file and the reports.
    result = _result(config, _merged(cells, done))
    if out is not None:
        result["reports"] = write_reports(result, out)
    return result


def _run_parallel(config: BenchmarkConfig, ids: list[tuple], done: dict[tuple, Cell], out: Path | None,
                  progress: bool, on_cell, parallel: Parallel) -> list[Cell]:
    """Every missing cell's chunks at once; cells saved (in protocol order) as they finish."""
    finished: dict[tuple, Cell] = {key: done[key] for key in ids if key in done}
    todo = [key for key in ids if key not in done]
    specs = [cell_batch(*key, config) for key in todo]
    if on_cell is not None:
        for key in ids:
            if key in finished:
                on_cell(finished[key])

    def finish(i: int, results: list, seconds: float) -> None:
        key = todo[i]
        finished[key] = make_cell(*key, specs[i][1], results, seconds)
        _save(config, out, [finished[k] for k in ids if k in finished], done)
        if on_cell is not None:
            on_cell(finished[key])

    evaluate([batch for batch, _ in specs], parallel, progress, on_batch=finish)
    return [finished[key] for key in ids]


def _save(config: BenchmarkConfig, out: Path | None, cells: list[Cell], done: dict[tuple, Cell]) -> None:
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_json(out / "results.json", _result(config, _merged(cells, done)))


def _merged(cells: list[Cell], done: dict[tuple, Cell]) -> list[Cell]:
    ran = {cell.id for cell in cells}
    return [c for key, c in done.items() if key not in ran] + cells


def _result(config: BenchmarkConfig, cells: list[Cell]) -> dict:
    policies = list(dict.fromkeys(c.policy for c in cells))
    presets = [p for p in PRESET_NAMES if any(c.preset == p for c in cells)]
    return {"protocol": PROTOCOL, "key": config.key(), "standard": config.standard, "options": dict(config.options),
            "policies": policies, "presets": presets, "seeds": [config.seeds()[0], config.seeds()[-1]],
            "cells": [dataclasses.asdict(c) for c in cells]}
