"""Ablations in one table: expert, agent, agent with memory wiped at recall, agent with a blank
cue (blank frames while observing), learned high-level policies (``learned:RUN[:wiped]`` columns),
and the chance rate, per task.

    rows = ablate(["PutBlockBack-v0"], episodes=20, seed=1000)

Every column runs the same seeds. The agent columns run perception on every
step (images on, ``image_size`` px, default the task's own: 128); the expert
column runs without images.
"""

from __future__ import annotations

import dataclasses

from embodied.envs.base import options_from
from embodied.envs.env_knobs import split_env_knobs
from embodied.eval.distributed import Batch, Parallel, evaluate
from embodied.eval.rollout import summarize
from embodied.tasks import TASKS, get_task

COLUMNS = ("expert", "agent", "agent:wiped", "agent:blank")
# With a head: the agent running the learned skills, and the same without aim correction.
HEAD_COLUMNS = ("agent:head", "agent:head:noaim")


def ablate(tasks: list[str] | None = None, episodes: int = 100, seed: int = 1000, image_size: int | None = None,
           columns: tuple[str, ...] = COLUMNS, options: dict | None = None, progress: bool = True,
           ablation_episodes: int | None = None, head: str | None = None, perception: str | None = None,
           parallel: Parallel | None = None) -> dict:
    """``ablation_episodes`` (default ``episodes``) runs the wiped and blank columns on the first that
    many seeds only: a memoryless agent that finds nothing to do idles to the horizon, which is slow.
    ``perception``: the agent columns' detector (masks, learned, geometric). ``parallel``: the
    episodes on local worker processes or Ray (embodied.eval.distributed); the same results."""
    names = [get_task(t).name for t in tasks] if tasks else list(TASKS)
    if head and not any(c in HEAD_COLUMNS for c in columns):
        columns = (*columns, "agent:head")
    for column in columns:
        if column not in COLUMNS + HEAD_COLUMNS + ("agent:noaim",) and not column.startswith("learned:"):
            raise ValueError(f"unknown ablation column {column!r}; known: "
                             f"{', '.join(COLUMNS + ('agent:noaim',) + HEAD_COLUMNS)}, learned:RUN[:wiped]")
        if column in HEAD_COLUMNS and not head:
            raise ValueError(f"column {column!r} runs a learned head: give --head KIND:RUN")
    options = dict(options or {})
    env_knobs, options = split_env_knobs(options)  # the scenery's look and the sensor: no task knobs
    env_knobs = {"visual": "default", "sensor": "ideal", **env_knobs}
    rows, cells, batches = [], [], []
    for name in names:
        entry = get_task(name)
        cls = entry.env_class()
        opts = options_from(cls.Options, options or {}, name)  # types the knobs, resolves preset=P
        rows.append({"task": name, "suite": entry.suite, "chance": cls.chance_rate(opts), "episodes": episodes})
        for column in columns:
            ablation = column in ("agent:wiped", "agent:blank") or column.endswith(":wiped")
            n = ablation_episodes if ablation_episodes and ablation else episodes
            size = {} if image_size is None else {"image_size": image_size}  # None: the task's default
            make = dict(images=column != "expert", **env_knobs, **size, **dataclasses.asdict(opts))
            if column in HEAD_COLUMNS:  # "agent:head[:variant]" is the agent variant with the head
                policy, knobs = "agent" + column[len("agent:head"):], {"head": head, "perception": perception}
            elif column.startswith("learned:"):  # the learned policy with the shipped (or --head) skill heads
                policy, knobs = column, {"head": head, "perception": perception}
            else:
                policy, knobs = column, {"perception": perception if column.startswith("agent") else None}
            cells.append((rows[-1], column, n))
            batches.append(Batch(entry.env_id, make, policy, tuple(range(seed, seed + n)), **knobs))
    for (row, column, n), (results, elapsed) in zip(cells, evaluate(batches, parallel or Parallel(), progress)):
        summary = summarize(results)
        row[column] = summary["success_rate"]
        row[f"{column}_episodes"] = n
        row[f"{column}_steps"] = summary["mean_steps"]
        # per worker: the steps over the seconds the episodes took, summed over the chunks that ran them
        row[f"{column}_steps_per_s"] = sum(r.steps for r in results) / max(elapsed, 1e-9)
        row[f"{column}_failed_seeds"] = [r.seed for r in results if not r.success][:20]
    return {"seed": seed, "episodes": episodes, "image_size": image_size, "columns": list(columns), "head": head,
            "perception": perception or "masks", **env_knobs,
            "tasks": rows}
