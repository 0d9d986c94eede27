"""Render labelled frames for the learned segmenter (``embodied perception make-data``).

Each episode runs one task's scripted expert (or the memory agent) on a fresh
seed and keeps every camera's RGB, depth, instance ids and camera matrices
every ``every`` steps (from a random offset), so the frames cover the arm's and
the base's poses along real episodes, in every phase. The memory agent's
episodes show what it looks at itself: its own approach paths, retries and
close-ups (``policy="agent"`` on the renderer's masks, ``"agent:learned"`` on
the learned segmenter, whose mistakes lead it to other views still). The format
is ``embodied.perception.learned.frames``. The simulator is imported only when
frames are made, so reading them does not need it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from embodied.perception.learned.frames import FrameWriter

DATA_SEED = 700_000  # training frames: DATA_SEED + episode; held-out frames use HELD_OUT_SEED
HELD_OUT_SEED = 800_000
POLICIES = ("expert", "agent", "agent:learned")  # who acts in the episodes frames are kept from
AGENT_MAX_STEPS = 5000  # the agent's default tasks: episodes at most this long


@dataclass
class FrameJob:
    out: str
    episodes: int = 40
    tasks: tuple[str, ...] = ()  # default: every registered task, both suites, in turn
    every: int = 25  # control steps between kept frames
    max_frames: int = 24  # per episode and camera: a uniform sample of the episode's kept steps
    seed: int = DATA_SEED
    image_size: int = 128
    options: dict | None = None  # task knobs, e.g. {"preset": "hard"}
    policy: str = "expert"  # one of POLICIES
    segmenter: str = ""  # "agent:learned": the weights file or run the agent perceives with ("": the shipped)

    def validate(self) -> None:
        if self.episodes < 1 or self.every < 1 or self.max_frames < 1 or self.image_size < 16:
            raise ValueError("episodes, every and max_frames must be >= 1, image_size >= 16")
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {self.policy!r}")
        if self.segmenter and self.policy != "agent:learned":
            raise ValueError(f"segmenter {self.segmenter!r} is for policy 'agent:learned', not {self.policy!r}")
        if self.segmenter and not Path(self.segmenter).exists():
            raise FileNotFoundError(f"segmenter weights {self.segmenter} do not exist")


def _task_names(tasks: tuple[str, ...], policy: str = "expert") -> list[str]:
    """The named tasks, or every task of both suites; the agent renders every step, so its default leaves
    out episodes longer than ``AGENT_MAX_STEPS`` (Lifelong's day) unless named."""
    from embodied.tasks import TASKS, get_task

    if tasks:
        return [get_task(t).name for t in tasks]
    names = sorted(TASKS, key=lambda n: (TASKS[n].suite, n))
    if policy != "expert":
        names = [n for n in names if (TASKS[n].max_episode_steps or 0) <= AGENT_MAX_STEPS]
    return names


def render_episode(task: str, seed: int, job: FrameJob) -> tuple[dict[str, np.ndarray], dict]:
    """One expert episode's kept frames (arrays as in the frames format) and their JSON sidecar."""
    import gymnasium as gym

    from embodied.experts import make_expert
    from embodied.tasks import get_task

    entry = get_task(task)
    # The agent perceives every step; the expert needs the cameras only on the kept ones.
    every = 1 if job.policy != "expert" else job.every
    env = gym.make(entry.env_id, image_size=job.image_size, render_every=every, **(job.options or {}))
    try:
        obs, info = env.reset(seed=seed)
        actor = make_expert(env) if job.policy == "expert" else _agent(env, seed, job.policy, job.segmenter)
        cams = sorted(k.split("/", 1)[1] for k in obs if k.startswith("segmentation/"))
        offset = int(np.random.default_rng(seed).integers(job.every))
        # A uniform sample of at most max_frames of the episode's kept steps, wherever they fall (reservoir
        # sampling): the recall at the end of a long episode is as likely to be kept as its start.
        draw = np.random.default_rng([seed, 1])
        slots: list[tuple[int, int, dict]] = []  # (step, phase, {camera: arrays})
        seen, t, done = 0, 0, False
        while not done:
            if t % job.every == 0 and t >= offset:
                snap = (t, int(obs["goal"]["phase"]), {cam: _camera_arrays(obs, cam) for cam in cams})
                if len(slots) < job.max_frames:
                    slots.append(snap)
                else:
                    j = int(draw.integers(seen + 1))
                    if j < job.max_frames:
                        slots[j] = snap
                seen += 1
            obs, _, terminated, truncated, _ = env.step(actor.act(obs))
            t += 1
            done = terminated or truncated
        kept: dict[str, list] = {k: [] for k in ("rgb", "depth", "instance", "intrinsics", "extrinsics")}
        frames: list[dict] = []
        for step, phase, by_camera in sorted(slots, key=lambda s: s[0]):
            for cam in cams:
                for key, value in by_camera[cam].items():
                    kept[key].append(value)
                frames.append({"step": step, "camera": cam, "phase": phase})
        labels = {str(k): str(v) for k, v in env.unwrapped.labels.items()}
        sidecar = {"task": entry.name, "suite": entry.suite, "seed": seed, "classes": labels, "frames": frames,
                   "policy": job.policy}
        return {k: np.stack(v) for k, v in kept.items()}, sidecar
    finally:
        env.close()


def _camera_arrays(obs: dict, cam: str) -> dict[str, np.ndarray]:
    """One camera's kept arrays (copies: the next step may reuse the observation's buffers)."""
    return {"rgb": np.array(obs[f"rgb/{cam}"]), "depth": np.nan_to_num(obs[f"depth/{cam}"], nan=0.0, posinf=0.0),
            "instance": np.array(obs[f"segmentation/{cam}"]), "intrinsics": np.array(obs[f"intrinsics/{cam}"]),
            "extrinsics": np.array(obs[f"extrinsics/{cam}"])}


def _agent(env, seed: int, policy: str, segmenter: str = ""):
    """The memory agent on the renderer's masks ("agent") or on the learned segmenter ("agent:learned", with
    the weights ``segmenter``, "" for the shipped ones)."""
    from embodied.eval.rollout import make_agent

    agent = make_agent(env, seed=seed, perception="learned" if policy == "agent:learned" else "masks")
    agent.config.perception.segmenter = segmenter
    agent.reset(seed=seed)
    return agent


def make_frames(job: FrameJob, progress: bool = True) -> dict:
    """Render ``job.episodes`` episodes into ``job.out`` (resuming after the last finished one)."""
    job.validate()
    writer = FrameWriter(job.out, job.image_size)
    names = _task_names(job.tasks, job.policy)
    start = writer.episodes_done
    n_frames = 0
    for i in tqdm(range(start, job.episodes), initial=start, total=job.episodes, desc="frames", disable=not progress):
        arrays, sidecar = render_episode(names[i % len(names)], job.seed + i, job)
        writer.add_episode(arrays, sidecar)
        n_frames += len(sidecar["frames"])
    return {"out": job.out, "episodes": writer.episodes_done, "new_frames": n_frames, "classes": writer.meta["classes"]}
