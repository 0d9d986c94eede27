"""Episode loop for the observation-only navigation agent (tests and tools/measure_navigate.py).

Each step: perceive -> memory.update -> freespace.integrate (head depth, small
objects masked out) . At the first recall step, and whenever
``obs["goal"]["text"]`` changes (MultiGoal's next goal), the goal is resolved
from memory with the planner into a ``SkillCall(skill="navigate")`` and a
``NavigateSkill`` drives. The agent side reads only ``obs``; the env's
``info`` is read here for the outcome (``is_success``) and the phase, which
the observation also carries (``obs["goal"]["phase"]``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np

from embodied.agent.skills.navigate import NavigateSkill, integrate_observation
from embodied.memory import SpatialMemory
from embodied.mapping.freespace import FreeSpaceMap
from embodied.planner.answer import plan_answer
from embodied.perception import Perceiver, PerceptionConfig
from embodied.planner.calls import SkillCall

# Classes that never move: everything else the label map names (the small objects) is masked out of the map.
STATIC = {"floor", "wall", "robot", "counter", "fridge", "table", "cabinet", "sofa", "coffee_table", "shelf", "bed",
          "nightstand", "dresser", "desk", "armchair"}
RECALL = 2  # obs["goal"]["phase"] in the recall phase


@dataclass
class NavEpisode:
    task: str
    seed: int
    success: bool
    steps: int  # env steps in the whole episode
    recall_steps: int  # steps from the first recall step to the end
    goals: list[dict] = field(default_factory=list)  # per goal: text, answer, node, skill outcome, log
    integrate_ms: list[float] = field(default_factory=list)
    plan_ms: list[float] = field(default_factory=list)
    freespace: FreeSpaceMap | None = None
    memory: SpatialMemory | None = None

    def summary(self) -> dict:
        return {"task": self.task, "seed": self.seed, "success": self.success, "steps": self.steps,
                "recall_steps": self.recall_steps,
                "goals": [{k: v for k, v in g.items() if k != "log"} for g in self.goals]}


def goal_call(memory: SpatialMemory, goal: dict) -> tuple[SkillCall | None, dict]:
    """The navigate call for the current goal, planned from memory (None when memory has no answer)."""
    answer = plan_answer(memory, goal)
    pos = answer.get("answer")
    if pos is None:
        return None, answer
    call = SkillCall("navigate", target=answer.get("node", ""), xyz=(float(pos[0]), float(pos[1]), 0.0),
                     note=goal.get("text", ""))
    return call, answer


def run_nav_episode(task: str, seed: int, options: dict | None = None, wipe_at_recall: bool = False,
                    max_attempts: int = 3, image_size: int = 128, keep: bool = False) -> NavEpisode:
    """One episode of ``task`` (e.g. "ObjectRevisit-v0") driven by memory + free-space map + NavigateSkill.

    ``wipe_at_recall`` (ablation): a fresh SpatialMemory and FreeSpaceMap at the first recall step.
    ``max_attempts``: skill starts per goal (a done-but-not-reached or failed skill starts again, with a
    6 cm smaller reach each time).
    """
    env = gym.make(f"embodied/{task}", image_size=image_size, **(options or {}))
    try:
        labels = env.unwrapped.labels
        small = np.array(sorted(i for i, c in labels.items() if c not in STATIC), dtype=np.int64)
        perceive = Perceiver(labels, PerceptionConfig(shuffle_ids=True, seed=seed))
        memory, freespace = SpatialMemory(), FreeSpaceMap()
        ep = NavEpisode(task, seed, False, 0, 0)
        obs, info = env.reset(seed=seed)
        skill: NavigateSkill | None = None
        asked, attempts, t, recall_t, done = "", 0, 0, None, False
        while True:
            phase = int(obs["goal"]["phase"])
            if phase == RECALL and recall_t is None:
                recall_t = t
                if wipe_at_recall:
                    memory, freespace = SpatialMemory(), FreeSpaceMap()
            memory.update(perceive(obs, t))
            t0 = time.perf_counter()
            integrate_observation(freespace, obs, np.isin(obs["segmentation/head"], small))
            ep.integrate_ms.append((time.perf_counter() - t0) * 1e3)
            if done:
                break
            action = np.zeros(2, dtype=np.float32)
            if phase == RECALL:
                text = obs["goal"]["text"]
                if text != asked:
                    asked, attempts, skill = text, 0, None
                    ep.goals.append({"text": text, "answer": None, "node": "", "outcome": "unresolved", "log": []})
                if (skill is None or skill.done or skill.failed) and attempts < max_attempts:
                    call, answer = goal_call(memory, obs["goal"])
                    g = ep.goals[-1]
                    g["answer"] = None if answer.get("answer") is None else [float(v) for v in answer["answer"]]
                    g["node"] = answer.get("node", "")
                    attempts += 1
                    g["attempts"] = attempts
                    if skill is not None:
                        g["replans_before"] = g.get("replans", 0)
                    if call is not None:
                        # A retry (the skill believed it arrived, or gave up) comes in closer.
                        reach = 0.45 - 0.06 * (attempts - 1)
                        skill = NavigateSkill(freespace, reach=reach, stand_max=reach)
                        _time_planning(skill, ep)
                        skill.start(call, obs)
                        g["outcome"] = "started"
                if skill is not None and not (skill.done or skill.failed):
                    action = skill.act(obs)
                    g = ep.goals[-1]
                    g["outcome"] = "done" if skill.done else "failed" if skill.failed else "running"
                    g["log"] = list(skill.log)
                    g["replans"] = g.get("replans_before", 0) + skill.replans
            obs, _, terminated, truncated, info = env.step(action)
            t += 1
            done = terminated or truncated
        ep.success = bool(info.get("is_success", False))
        ep.steps = t
        ep.recall_steps = t - (recall_t if recall_t is not None else t)
        if keep:
            ep.freespace, ep.memory = freespace, memory
        return ep
    finally:
        env.close()


def _time_planning(skill: NavigateSkill, ep: NavEpisode) -> None:
    """Record the wall time of every plan (graph rebuild + stand-off search + A*) into ``ep.plan_ms``."""
    inner = skill._plan

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            ep.plan_ms.append((time.perf_counter() - t0) * 1e3)
            if ep.goals:
                ep.goals[-1].setdefault("plan_ms", []).append(round(ep.plan_ms[-1], 1))

    skill._plan = timed
