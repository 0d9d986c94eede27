"""Memory evaluation: run each task's expert, feed only observations to
perception + memory, ask the task's recall question from memory at the start
of the recall phase, and compare with the simulator's privileged state.

    eval_memory(["PutBlockBack-v0"], episodes=5)   # -> JSON-ready dict

Images are perceived only on steps the env renders (``render_every``):
between renders the env repeats old images next to *current* extrinsics, so
perceiving those would misplace everything a moving camera sees.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
from tqdm import tqdm

from embodied.agent.drift import DriftFix, moving_mask
from embodied.agent.skills.navigate import CAMERA as HEAD
from embodied.agent.skills.navigate import integrate_observation
from embodied.eval.accuracy import AccuracyRecorder
from embodied.eval.recall import QUESTIONS, answer_question, check_answer
from embodied.experts import make_expert
from embodied.memory.config import MemoryConfig, kind_of
from embodied.mapping.freespace import FreeSpaceMap
from embodied.memory.memory import SpatialMemory
from embodied.perception import Perceiver, PerceptionConfig
from embodied.tasks import TASKS, get_task


@dataclass
class EpisodeReport:
    task: str
    family: str
    seed: int
    answer: dict
    correct: bool | None  # None: the family has no recall question yet
    steps: int
    frames: int
    perceive_ms: float  # median per frame
    update_ms: float  # median per frame
    accuracy: dict = field(default_factory=dict)
    memory: SpatialMemory | None = None

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("memory")
        d["answer"] = _plain(self.answer)
        return d


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def run_episode(
    task: str,
    seed: int,
    perception: PerceptionConfig | None = None,
    memory_config: MemoryConfig | None = None,
    image_size: int = 96,
    render_every: int = 1,
    options: dict | None = None,
    accuracy: bool = True,
    accuracy_every: int = 5,
    stop_at_recall: bool = False,
) -> EpisodeReport:
    """One expert episode with perception + memory riding along.

    The recall question is asked once, right after the first recall-phase
    frame is folded in. ``stop_at_recall`` ends the episode there (enough for
    the question; the full episode is needed for whole-episode accuracy).
    """
    entry = get_task(task)
    env = gym.make(entry.env_id, image_size=image_size, render_every=render_every, **(options or {}))
    try:
        family = env.unwrapped.family
        perceive = Perceiver(env.unwrapped.labels, perception or PerceptionConfig(shuffle_ids=True, seed=seed))
        memory = SpatialMemory(memory_config)
        recorder = AccuracyRecorder() if accuracy else None
        obs, info = env.reset(seed=seed)
        # A mobile robot's own free-space map, as the agent keeps it: the memory cuts it into rooms.
        freespace = FreeSpaceMap() if f"depth/{HEAD}" in obs and np.shape(obs["proprio"]) == (5,) else None
        drift = DriftFix() if freespace is not None else None
        expert = make_expert(env)
        t, answer, correct = 0, {}, None
        p_ms, u_ms = [], []
        asked, done, answers = "", False, []
        while True:
            if t % render_every == 0:
                t0 = time.perf_counter()
                segments = perceive.segment(obs)
                moving = moving_mask(segments, kind_of)
                # A mobile robot's head pose is drift-corrected as the agent corrects it.
                seen = drift(obs, t, moving) if drift is not None else obs
                frame = perceive(seen, t, segments)
                t1 = time.perf_counter()
                memory.update(frame)
                memory.hear(t, obs["goal"]["text"])
                t2 = time.perf_counter()
                if freespace is not None:
                    integrate_observation(freespace, seen, moving)
                p_ms.append((t1 - t0) * 1e3)
                u_ms.append((t2 - t1) * 1e3)
                if recorder is not None and (len(p_ms) % accuracy_every == 0):
                    recorder.record(memory, env)
            # Ask at the first recall step, and again whenever the goal changes (MultiGoal's next goal).
            if info["phase"] == "recall" and obs["goal"]["text"] != asked:
                asked = obs["goal"]["text"]
                if freespace is not None:
                    memory.update_rooms(freespace)
                if family in QUESTIONS:
                    answer = answer_question(family, memory, obs["goal"])
                    ok = check_answer(family, answer, info["privileged"])
                    answers.append(answer)
                    correct = ok if correct is None else (correct and ok)
                if stop_at_recall:
                    break
            if done:
                break  # the last observation is folded in too
            obs, _, terminated, truncated, info = env.step(expert.act(obs))
            t += 1
            done = terminated or truncated
        acc = {}
        if recorder is not None:
            recorder.record(memory, env)
            acc = recorder.score(memory)
        if len(answers) > 1:
            answer = {"answer": [a.get("answer") for a in answers], "answers": answers}
        return EpisodeReport(
            entry.name,
            family,
            seed,
            answer,
            correct,
            t,
            len(p_ms),
            float(np.median(p_ms)),
            float(np.median(u_ms)),
            acc,
            memory,
        )
    finally:
        env.close()


def eval_memory(
    tasks: list[str] | None = None,
    episodes: int = 10,
    seed: int = 0,
    image_size: int = 96,
    render_every: int = 1,
    shuffle_ids: bool = True,
    mode: str = "masks",
    accuracy: bool = True,
    perception: dict | None = None,
    stop_at_recall: bool = False,
    progress: bool = True,
    options: dict | None = None,
) -> dict:
    """Recall-question success and memory accuracy per task (JSON-ready).

    Tasks default to every registered task; families without a recall
    question are listed under ``"skipped"``. ``perception`` holds extra
    :class:`PerceptionConfig` knobs for robustness runs, e.g.
    ``{"depth_noise": 0.004, "dropout": 0.1, "mask_erosion": 1}``.
    ``stop_at_recall`` skips the rest of each episode (faster; accuracy then
    covers the episode up to the question). ``options``: task knobs for every env (``delay``,
    ``preset``, ``visual``; the same for every task), so memory can be scored away from the defaults.
    """
    if tasks is None:
        tasks = list(TASKS)
    rows, skipped = [], []
    for name in tasks:
        entry = get_task(name)
        cls = entry.env_class()
        if cls.family not in QUESTIONS:
            skipped.append(entry.name)
            continue
        reports = []
        bar = tqdm(range(episodes), desc=f"eval-memory {entry.name}", disable=not progress, leave=False)
        for k in bar:
            config = PerceptionConfig(
                mode=mode, shuffle_ids=shuffle_ids and mode == "masks", seed=seed + k, **(perception or {})
            )
            mem_cfg = MemoryConfig.for_detector(mode)  # what the detector gets wrong, as the agent allows for it
            reports.append(
                run_episode(
                    entry.name,
                    seed + k,
                    config,
                    mem_cfg,
                    image_size,
                    render_every,
                    options=options,
                    accuracy=accuracy,
                    stop_at_recall=stop_at_recall,
                )
            )
            bar.set_postfix(recall=f"{np.mean([r.correct for r in reports if r.correct is not None] or [0]):.2f}")
        bar.close()
        rows.append(_summarise(entry.name, cls, reports))
    return {
        "settings": {
            "episodes": episodes,
            "seed": seed,
            "image_size": image_size,
            "render_every": render_every,
            "shuffle_ids": shuffle_ids,
            "mode": mode,
            "perception": dict(perception or {}),
            "options": dict(options or {}),
        },
        "tasks": rows,
        "skipped": skipped,
    }


def _summarise(name: str, cls, reports: list[EpisodeReport]) -> dict:
    correct = [r.correct for r in reports if r.correct is not None]
    acc_keys = reports[0].accuracy.keys() if reports and reports[0].accuracy else []
    accuracy = {}
    for key in acc_keys:
        values = [r.accuracy[key] for r in reports if r.accuracy.get(key) is not None]
        if values:
            accuracy[key] = float(np.median(values)) if "error" in key or "relation" in key else int(np.sum(values))
    # Edges pooled over all episodes: a median of per-episode ratios hides the rare wrong edge.
    if accuracy.get("edges_remembered"):
        accuracy["relation_precision_pooled"] = accuracy["edges_hit"] / accuracy["edges_remembered"]
    if accuracy.get("edges_true"):
        accuracy["relation_recall_pooled"] = accuracy["edges_hit"] / accuracy["edges_true"]
    return {
        "task": name,
        "family": cls.family,
        "question": QUESTIONS[cls.family][2],
        "episodes": len(reports),
        "recall_success": float(np.mean(correct)) if correct else None,
        "chance": cls.default_chance_rate(),
        "perceive_ms_median": float(np.median([r.perceive_ms for r in reports])),
        "update_ms_median": float(np.median([r.update_ms for r in reports])),
        "accuracy": accuracy,
        "failures": [{"seed": r.seed, "answer": _plain(r.answer)} for r in reports if r.correct is False],
    }


def memory_accuracy(task: str = "PutBlockBack-v0", episodes: int = 3, seed: int = 0, **kwargs) -> dict:
    """Accuracy of the memory against simulator truth over full expert episodes (a tool for the lead).

    Median object position error (m), on/in relation precision and recall,
    duplicates and merges; see ``embodied.eval.accuracy``. ``kwargs`` go to
    :func:`eval_memory` (image_size, render_every, mode, perception, ...).
    """
    row = eval_memory([task], episodes=episodes, seed=seed, accuracy=True, **kwargs)["tasks"]
    if not row:
        raise ValueError(f"{task} has no recall question, so no memory evaluation")
    return {"task": row[0]["task"], "episodes": episodes, **row[0]["accuracy"]}
