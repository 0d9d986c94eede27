"""Run episodes of a policy in a task; optionally write a video.

Videos are written to a temporary file and renamed into place when done, so
a crash never leaves a half-written file under the final name. Ctrl-C
finishes the video with the frames recorded so far before re-raising.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import gymnasium as gym
import imageio.v2 as imageio
import numpy as np
from tqdm import tqdm

from embodied.agent.memory_agent import AgentConfig, MemoryAgent
from embodied.eval.external import PREFIX, external_policy
from embodied.experts import make_expert
from embodied.experts.memoryless import MemorylessExpert
from embodied.perception import PerceptionConfig
from policies import RandomPolicy

POLICIES = ("expert", "random", "memoryless", "agent")
# Agent variants for ablations: "agent:wiped" forgets at the first recall step,
# "agent:blank" perceives blank frames during the observe phase, "agent:noaim" retries a missed
# skill at the same point (no aim correction, embodied.agent.aim).
AGENT_VARIANTS = {"agent": {}, "agent:wiped": {"wipe_at_recall": True}, "agent:blank": {"blank_observe": True},
                  "agent:noaim": {"aim": None}}


@dataclass
class EpisodeResult:
    seed: int
    success: bool
    failure: bool
    steps: int
    episode_return: float
    goals: list[bool] | None = None  # per-goal outcomes, for tasks that report them (info["goal_success"])
    goal_kinds: list[str] | None = None  # the kind of each of those goals (info["goal_kinds"]), where reported

    def to_dict(self) -> dict:
        return asdict(self)


def perception_config(mode: str | None, seed: int | None) -> PerceptionConfig:
    """The agent's perception: ``mode`` masks (default; instance ids shuffled every frame), learned (the
    shipped segmenter on RGB-D, no masks) or geometric (no masks)."""
    mode = mode or "masks"
    return PerceptionConfig(mode=mode, shuffle_ids=mode == "masks", seed=int(seed or 0))


def make_agent(env: gym.Env, seed: int | None = None, head: str | None = None, perception: str | None = None,
               **knobs) -> MemoryAgent:
    """The memory agent for ``env``'s task. It gets the detector's vocabulary (instance id -> class),
    nothing else of the simulator; perception is seeded per episode (shuffled instance ids).
    ``head`` ("diffusion:RUN" / "act:RUN") runs the skills that trained run learned in place of the
    scripted ones."""
    config = AgentConfig(perception=perception_config(perception, seed), **knobs)
    return MemoryAgent(env.unwrapped.labels, config, skills=learned_skills(head) if head else None)


_HEADS: dict[str, dict] = {}


def learned_skills(spec: str) -> dict:
    """The learned skills of a trained run, loaded once per process (one torch thread: two thrash on
    two shared cores); each episode's agent gets them fresh from ``reset``."""
    if spec not in _HEADS:
        import torch

        from policies.skill_head import load_head

        torch.set_num_threads(1)
        _HEADS[spec] = load_head(spec)
    return _HEADS[spec]


def head_for(env: gym.Env, specs: Iterable[str]) -> str | None:
    """The first head spec among ``specs`` trained for ``env``'s robot (arm or base, told by the
    proprio width), or None: a manipulation head never drives the mobile base and vice versa."""
    from policies.conditioning import robot_kind

    robot = robot_kind(int(env.observation_space["proprio"].shape[0]))
    for spec in specs:
        skills = learned_skills(spec)
        if skills and next(iter(skills.values())).policy.robot == robot:
            return spec
    return None


# "learned:RUN" runs the high-level policy of a trained or shipped run (policies.memory_policy) in place of
# the planner; "learned:RUN:wiped" forgets at the first recall step. RUN: a run folder or a shipped name
# ("explicit" is policies/checkpoints/memory_explicit).
LEARNED_VARIANTS = {"": {}, "wiped": {"wipe_at_recall": True}}
_DECIDERS: dict[str, object] = {}


def learned_policy(run: str):
    """The trained high-level policy of ``run`` (loaded once per process, one torch thread)."""
    if run not in _DECIDERS:
        import torch

        from policies.export import load_run, resolve_run

        torch.set_num_threads(1)
        policy = load_run(resolve_run("memory", run))
        if policy.name != "memory":
            raise ValueError(f"{run} holds a {policy.name!r} head, not a high-level (memory) policy")
        _DECIDERS[run] = policy
    return _DECIDERS[run]


def make_learned(env: gym.Env, spec: str, seed: int | None = None, head: str | None = None,
                 relabel_mix: float | None = None, perception: str | None = None) -> MemoryAgent:
    """``spec`` "learned:RUN[:wiped]": the agent's perception and memory, the learned policy deciding every
    call, and the shipped learned skill heads for this robot executing them (``head``: another head spec;
    "none": the scripted skills). Retries are the policy's own: no aim correction.
    ``relabel_mix``: record decisions labelled by the planner (:mod:`embodied.agent.relabel`), the
    planner's call running at that share of them."""
    from embodied.agent.learned import LearnedDecider
    from embodied.agent.relabel import RelabellingDecider

    body = spec.removeprefix("learned:")
    run, variant = (body.rsplit(":", 1) if body.rsplit(":", 1)[-1] in LEARNED_VARIANTS else (body, ""))
    if not run:
        raise ValueError(f"policy {spec!r}: expected learned:RUN or learned:RUN:wiped")
    if head is None:
        from policies.export import agent_spec, shipped_heads

        head = head_for(env, [agent_spec(short) for short in shipped_heads()])
    elif head == "none":
        head = None
    config = AgentConfig(perception=perception_config(perception, seed), aim=None,
                         record_decisions=relabel_mix is not None, **LEARNED_VARIANTS[variant])
    decider = LearnedDecider(learned_policy(run))
    if relabel_mix is not None:
        decider = RelabellingDecider(decider, mix=relabel_mix, seed=int(seed or 0))
    return MemoryAgent(env.unwrapped.labels, config, skills=learned_skills(head) if head else None,
                       decider=decider)


def make_policy(name: str, env: gym.Env, seed: int | None = None, head: str | None = None,
                perception: str | None = None):
    """``perception``: the agent's detector (masks, learned, geometric); only agent policies perceive."""
    if perception not in (None, "masks") and not (name.startswith("learned:") or name in AGENT_VARIANTS):
        raise ValueError(f"--perception {perception} changes the agent's detector: not with policy {name!r}")
    if name.startswith(PREFIX):  # import:MODULE:FACTORY, a policy of the user's own
        if head:
            raise ValueError(f"--head runs learned skills inside the agent: not with {name!r}")
        return external_policy(name, env, seed)
    if name.startswith("learned:"):
        return make_learned(env, name, seed, head, perception=perception)
    if name in AGENT_VARIANTS:
        return make_agent(env, seed, head, perception, **AGENT_VARIANTS[name])
    if head:
        raise ValueError(f"--head runs learned skills inside the agent: use --policy agent, not {name!r}")
    if name == "expert":
        return make_expert(env)
    if name == "random":
        return RandomPolicy(env, seed=seed)
    if name == "memoryless":
        return MemorylessExpert(env, seed=seed)
    raise ValueError(f"unknown policy {name!r}; available: {', '.join(POLICIES + tuple(AGENT_VARIANTS))}, "
                     "learned:RUN[:wiped], import:MODULE:FACTORY")


class VideoWriter:
    """mp4 writer that renames its temp file into place on close."""

    def __init__(self, path: str | os.PathLike, fps: int):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.path.with_name(f".{self.path.stem}.partial{self.path.suffix}")
        self.writer = imageio.get_writer(self.tmp, fps=fps, codec="libx264", macro_block_size=8, quality=7)
        self.frames = 0

    def add(self, frame: np.ndarray) -> None:
        self.writer.append_data(frame)
        self.frames += 1

    def close(self) -> None:
        self.writer.close()
        if self.frames:
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)


def _seed_sampling(seed: int) -> None:
    """A learned head that samples (diffusion's starting noise) draws from torch's global generator: seeded
    per episode, an episode's result depends on its seed alone, not on the episodes run before it."""
    import torch

    torch.manual_seed(int(seed))


def run_episodes(
    env: gym.Env,
    policy_name: str,
    seeds: Iterable[int],
    video: VideoWriter | None = None,
    progress: bool = True,
    on_step: Callable[[dict, dict], None] | None = None,
    on_reset: Callable[[int, dict, dict], None] | None = None,
    on_end: Callable[[EpisodeResult], None] | None = None,
    on_policy: Callable[[object], None] | None = None,
    head: str | None = None,
    perception: str | None = None,
) -> list[EpisodeResult]:
    """Run one episode per seed.

    ``on_policy(policy)`` gets each episode's fresh policy (video captions, plan records),
    ``on_reset(seed, obs, info)`` sees each first observation, ``on_step(obs, info)``
    every later one, ``on_end(result)`` each finished episode. The hooks run before
    the video frame of the same step is added, so a video overlay can draw what
    they computed from that very observation.
    """
    seeds = list(seeds)
    results: list[EpisodeResult] = []
    bar = tqdm(seeds, desc=env.spec.id if env.spec else "episodes", disable=not progress, leave=False)
    for seed in bar:
        policy = make_policy(policy_name, env, seed, head, perception)
        if head:
            _seed_sampling(seed)
        if on_policy is not None:
            on_policy(policy)
        obs, info = env.reset(seed=seed)
        policy.reset()
        if on_reset is not None:
            on_reset(seed, obs, info)
        total, steps, done = 0.0, 0, False
        if video is not None:
            video.add(env.render())
        while not done:
            obs, reward, terminated, truncated, info = env.step(policy.act(obs))
            total += float(reward)
            steps += 1
            done = terminated or truncated
            if on_step is not None:
                on_step(obs, info)
            if video is not None:
                video.add(env.render())
        if hasattr(policy, "close"):
            policy.close()
        goals = info.get("goal_success")
        kinds = info.get("goal_kinds")
        results.append(EpisodeResult(seed, bool(info["is_success"]), bool(info["is_failure"]), steps, total,
                                     None if goals is None else [bool(g) for g in goals],
                                     None if goals is None or kinds is None else [str(k) for k in kinds[:len(goals)]]))
        if on_end is not None:
            on_end(results[-1])
        bar.set_postfix(success=f"{np.mean([r.success for r in results]):.2f}")
    return results


def summarize(results: list[EpisodeResult]) -> dict:
    """Episode rates; for tasks with several goals per episode (Lifelong) also the goals' success rate over
    every goal of every episode (``goal_success_rate``), the number of goals (``n_goals``) and, where the
    task names each goal's kind, both per kind (``goals_by_kind``: kind -> {n, success_rate})."""
    n = len(results)
    out = {
        "n_episodes": n,
        "success_rate": float(np.mean([r.success for r in results])) if n else 0.0,
        "failure_rate": float(np.mean([r.failure for r in results])) if n else 0.0,
        "mean_steps": float(np.mean([r.steps for r in results])) if n else 0.0,
    }
    goals = [g for r in results if r.goals is not None for g in r.goals]
    if goals:
        out.update(n_goals=len(goals), goal_success_rate=float(np.mean(goals)))
        by_kind: dict[str, list[bool]] = {}
        for r in results:
            for kind, ok in zip(r.goal_kinds or (), r.goals or ()):
                by_kind.setdefault(kind, []).append(ok)
        if by_kind:
            out["goals_by_kind"] = {
                k: {"n": len(v), "success_rate": float(np.mean(v))} for k, v in sorted(by_kind.items())
            }
    return out
