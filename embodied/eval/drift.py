"""Odometry drift and its correction, measured against the simulator (evaluation only: reads privileged).

    row = drift_episode("ObjectRevisit-v0", seed=2000, noise=0.05, correct=True)
    report = drift_sweep(tasks, noises=(0, 0.02, 0.05, 0.1), seeds=range(2000, 2020))

Each episode runs the :class:`~embodied.agent.MemoryAgent` (masks perception,
ids shuffled every frame) with ``odom_noise=noise``, with the agent's drift
correction on (``correct=True``) or off (``AgentConfig.localise=None``). Per
episode, from ``info["privileged"]``:

* ``odom_drift`` m: the odometry camera position's xy error at the end of
  the tour (the last step before the recall phase re-zeroes odometry on the
  dock), and ``odom_drift_max`` over the whole episode;
* ``pose_error`` m: the same for the pose the agent used (corrected, or the
  odometry when correction is off), and ``pose_error_max``;
* ``object_errors`` m: per object shown, the xy distance between the memory's
  node of its class and the true object, at the end of the tour (objects
  memory has no node for are counted in ``objects_missing``);
* ``recall``: every recall question (first recall step, and each new goal)
  answered within the task's reach from memory (``embodied.eval.recall``);
* ``success``: the env's own ``is_success`` at the end.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import gymnasium as gym
import numpy as np
from tqdm import tqdm

from embodied.agent.memory_agent import RECALL
from embodied.eval.recall import answer_question, check_answer
from embodied.eval.rollout import make_agent
from embodied.tasks import get_task

NAV_TASKS = ("ObjectRevisit-v0", "MovedObject-v0", "MultiGoal-v0")


def _xy_error(T_a, T_b) -> float:
    return float(np.linalg.norm(np.asarray(T_a)[:2, 3] - np.asarray(T_b)[:2, 3]))


def drift_episode(task: str, seed: int, noise: float, correct: bool = True, image_size: int | None = None,
                  options: dict | None = None) -> dict:
    """One agent episode of ``task`` at ``odom_noise=noise``; the measurements listed in the module doc.
    ``options``: other task knobs (``delay``, ``preset``: ``noise`` overrides the preset's odom_noise)."""
    entry = get_task(task)
    if entry.env_class().Options.__dataclass_fields__.get("odom_noise") is None:
        raise ValueError(f"{task} has no odom_noise knob: drift is measured on the navigation tasks {NAV_TASKS}")
    kwargs = dict(options or {}) | {"odom_noise": float(noise)} | ({"image_size": image_size} if image_size else {})
    env = gym.make(entry.env_id, **kwargs)
    try:
        agent = make_agent(env, seed, **({} if correct else {"localise": None}))
        obs, info = env.reset(seed=seed)
        agent.reset()
        family = entry.name.split("-")[0]
        row = {"task": entry.name, "seed": int(seed), "noise": float(noise), "correct": bool(correct)}
        drift_max = err_max = 0.0
        asked, answers, done, steps = None, [], False, 0
        last = None  # (odometry, used, privileged) of the latest pre-recall step
        ms = 0.0
        while not done:
            phase = int(obs["goal"]["phase"])
            if phase == RECALL and "odom_drift" not in row and last is not None:
                row["odom_drift"], row["pose_error"] = _xy_error(last[0], last[2]), _xy_error(last[1], last[2])
                row.update(_object_errors(agent.memory, last[3]))
            if phase == RECALL and obs["goal"]["text"] != asked:
                asked = obs["goal"]["text"]
                answers.append(check_answer(family, answer_question(family, agent.memory, obs["goal"]),
                                            info["privileged"]))
            start = time.perf_counter()
            action = agent.act(obs)
            ms += time.perf_counter() - start
            truth = info["privileged"]["camera_pose"]["head"]
            used = agent.localiser.poses[-1] if agent.localiser is not None else obs["extrinsics/head"]
            drift_max = max(drift_max, _xy_error(obs["extrinsics/head"], truth))
            err_max = max(err_max, _xy_error(used, truth))
            if phase != RECALL:
                last = (obs["extrinsics/head"], used, truth, info["privileged"]["objects"])
            obs, _, terminated, truncated, info = env.step(action)
            steps += 1
            done = terminated or truncated
        row.update({"odom_drift_max": drift_max, "pose_error_max": err_max, "recall": bool(answers) and all(answers),
                    "success": bool(info["is_success"]), "steps": steps, "agent_ms_per_step": 1e3 * ms / steps})
        if agent.localiser is not None:
            row["localiser"] = agent.localiser.stats()
        return row
    finally:
        env.close()


def _object_errors(memory, truth: dict) -> dict:
    errors, missing = [], 0
    for cls, xy in truth.items():
        nodes = memory.find(cls=cls)
        if not nodes:
            missing += 1
            continue
        pos = memory.where_is(nodes[0])["position"]
        errors.append(float(np.linalg.norm(np.asarray(pos[:2], dtype=np.float64) - np.asarray(xy)[:2])))
    return {"object_errors": errors, "objects_missing": missing}


def summarise(rows: list[dict]) -> list[dict]:
    """Per (task, noise, correct): episodes, medians of drift / pose error (m), median and p90 object
    error (cm, pooled over objects), recall and success rates."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["task"], r["noise"], r["correct"]), []).append(r)
    out = []
    for (task, noise, correct), rs in sorted(groups.items()):
        objects = np.concatenate([r.get("object_errors", []) for r in rs]) if rs else np.zeros(0)
        out.append({
            "task": task, "noise": noise, "correct": correct, "episodes": len(rs),
            "seeds": [r["seed"] for r in rs],
            "odom_drift_m": float(np.median([r.get("odom_drift", np.nan) for r in rs])),
            "pose_error_m": float(np.median([r.get("pose_error", np.nan) for r in rs])),
            "pose_error_max_m": float(np.median([r["pose_error_max"] for r in rs])),
            "object_error_cm": 100 * float(np.median(objects)) if len(objects) else None,
            "object_error_p90_cm": 100 * float(np.percentile(objects, 90)) if len(objects) else None,
            "objects_missing": int(sum(r.get("objects_missing", 0) for r in rs)),
            "recall": float(np.mean([r["recall"] for r in rs])),
            "success": float(np.mean([r["success"] for r in rs])),
            "agent_ms_per_step": float(np.median([r["agent_ms_per_step"] for r in rs])),
            "registration_ms": float(np.median([r["localiser"]["median_ms"] for r in rs])) if correct else None,
            "localiser_cpu_ms_per_frame": float(np.median([r["localiser"]["cpu_ms_per_frame"] for r in rs]))
            if correct else None,
            "failed_seeds": [r["seed"] for r in rs if not r["success"]],
        })
    return out


def drift_sweep(tasks: Iterable[str] = NAV_TASKS, noises: Iterable[float] = (0.0, 0.02, 0.05, 0.1),
                seeds: Iterable[int] = range(2000, 2010), modes: Iterable[bool] = (True, False),
                image_size: int | None = None, progress: bool = True, on_row=None,
                options: dict | None = None) -> dict:
    """Every (task, noise, correction on/off, seed), seeds outermost (a cut-short run covers every setting);
    ``on_row(rows)`` after each episode; ``options``: other task knobs of every env.
    Returns ``{"rows": [...], "summary": [...]}``."""
    jobs = [(t, n, c, s) for s in seeds for t in tasks for n in noises for c in modes]
    rows = []
    for task, noise, correct, seed in tqdm(jobs, desc="drift", disable=not progress):
        rows.append(drift_episode(task, seed, noise, correct, image_size, options))
        if on_row is not None:
            on_row(rows)
    return {"rows": rows, "summary": summarise(rows)}
