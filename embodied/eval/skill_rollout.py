"""Run a learned skill inside a task episode: the scripted expert leads up to the call, the head runs it.

    result = handover_episode("RememberColor-v0", seed=3, skills=load_head("diffusion:runs/d1"))

The expert acts until its current call is one of ``skills``; from that step on
the learned skill is started with the expert's call (the same
:class:`~embodied.planner.calls.SkillCall` a planner hands over) and acts until
it reports done or failed; afterwards the arm holds still (the gripper as the
skill left it) until the episode ends. The episode's success is the env's own
check. This measures a head on exactly the situations its demonstrations came
from; the full memory agent with learned skills runs through ``embodied run``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


@dataclass
class HandoverResult:
    task: str
    seed: int
    success: bool
    handed_over: bool  # the expert reached a call of a learned skill
    skill: str | None
    skill_done: bool
    skill_failed: bool
    skill_steps: int
    steps: int
    target_distance: float | None  # m, TCP to the call's xyz when the skill ended (arm)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def handover_episode(task: str, seed: int, skills: dict[str, Any], env=None, **options) -> HandoverResult:
    from embodied.experts import make_expert
    from embodied.tasks import make

    own = env is None
    env = make(task, **options) if own else env
    try:
        expert = make_expert(env)
        obs, info = env.reset(seed=seed)
        expert.reset()
        skill, call, hold = None, None, None
        skill_steps, steps, distance = 0, 0, None
        done = False
        while not done:
            if skill is None and hold is None:
                action = expert.act(obs)
                c = getattr(expert, "current_call", None)
                if c is not None and c.skill in skills:
                    skill, call = skills[c.skill], c
                    skill.start(call, obs)
            if skill is not None:
                action = skill.act(obs)
                skill_steps += 1
                if skill.done or skill.failed:
                    hold = action.copy()
                    hold[:-1] = 0.0
                    proprio = np.asarray(obs["proprio"])
                    if proprio.shape[0] == 22:
                        distance = float(np.linalg.norm(proprio[14:17] - np.asarray(call.xyz)))
                    skill_result = (skill.done, skill.failed)
                    skill = None
            elif hold is not None:
                action = hold
            obs, _, terminated, truncated, info = env.step(action)
            steps += 1
            done = bool(terminated or truncated)
        if skill is not None:  # the episode ended while the skill still ran
            skill_result = (skill.done, skill.failed)
        elif call is None:
            skill_result = (False, False)
        return HandoverResult(task, seed, bool(info.get("is_success", False)), call is not None,
                              call.skill if call else None, skill_result[0], skill_result[1], skill_steps, steps,
                              distance)
    finally:
        if own:
            env.close()


def handover_success(task: str, seeds: list[int], skills: dict[str, Any], progress: bool = False,
                     **options) -> dict[str, Any]:
    """Success rate of ``handover_episode`` over ``seeds`` (one env, reused)."""
    from tqdm import tqdm

    from embodied.tasks import make

    env = make(task, **options)
    rows: list[HandoverResult] = []
    try:
        bar = tqdm(seeds, desc=f"{task} handover", unit="ep", disable=not progress)
        for s in bar:
            rows.append(handover_episode(task, s, skills, env=env))
            bar.set_postfix(success=f"{sum(r.success for r in rows) / len(rows):.2f}")
    finally:
        env.close()
    n = len(rows)
    return {"task": task, "episodes": n, "success_rate": sum(r.success for r in rows) / max(n, 1),
            "skill_done_rate": sum(r.skill_done for r in rows) / max(n, 1),
            "episodes_detail": [r.to_dict() for r in rows]}
