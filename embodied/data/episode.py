"""One recorded episode: roll a policy out in a task and pack the result as plain bytes.

:func:`record_episode` is what workers run (a local process or a Ray task).
It returns an :class:`EpisodeBlob`: JSON metadata, the per-frame arrays as
safetensors, and one mp4 per camera, so that nothing crosses a process or
machine boundary but bytes, and nothing is pickled to disk.

Per frame ``t`` the arrays hold the observation ``o_t`` the policy acted on,
the action ``a_t`` it took (clipped to the action space, as the env applied
it), the skill call the policy was executing when it chose ``a_t``
(``policy.current_call``, read with ``getattr`` so any policy works), the
phase of ``o_t``, and what stepping gave: ``next.reward``, ``next.done`` and
``next.success`` (the env's ``is_success`` after the step: true on the last
frame of a successful episode).

Mobile-base episodes of a policy with a ``current_guide`` attribute (the memory
agent) also keep ``skill.guide``: the running skill's route features after each
``act`` (:meth:`embodied.agent.skills.navigate.NavigateSkill.guide_features`,
base frame; zeros when the skill has none), what a learned navigate head is
conditioned on besides the call. Other recordings are unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from safetensors.numpy import load as st_load
from safetensors.numpy import save as st_save

from embodied.data.layout import DEPTH_PREFIX, DEPTH_SCALE, IMAGE_PREFIX, plain
from embodied.data.stats import image_stats
from embodied.data.video import EpisodeEncoder
from embodied.planner.calls import NO_SKILL, PARAM_DIM

GUIDE_DIM = 6  # = embodied.agent.skills.navigate.GUIDE_DIM (the data layer does not import the agent)


@dataclass(frozen=True)
class EpisodeJob:
    """What to record: one episode of ``task`` with ``seed``."""

    task: str
    seed: int
    policy: str = "expert"
    image_size: int = 96
    cameras: tuple[str, ...] = ()  # () = the task's default cameras
    depth: bool = False
    options: dict = field(default_factory=dict)
    perception: str = "masks"  # the agent policies' detector (embodied.perception.types.MODES)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["cameras"] = list(self.cameras)
        return d


@dataclass
class EpisodeBlob:
    """A finished episode as bytes: ``meta`` (JSON), ``arrays`` (safetensors), ``videos`` {camera: mp4}."""

    meta: bytes
    arrays: bytes
    videos: dict[str, bytes]
    decisions: bytes = b""  # safetensors of the policy's DecisionLog (b"": the policy keeps none)

    def meta_dict(self) -> dict:
        return json.loads(self.meta)

    def array_dict(self) -> dict[str, np.ndarray]:
        return st_load(self.arrays)


STATE_NAMES = {
    "panda": [f"joint{i}.pos" for i in range(7)] + [f"joint{i}.vel" for i in range(7)]
    + ["tcp.x", "tcp.y", "tcp.z", "tcp.qw", "tcp.qx", "tcp.qy", "tcp.qz", "gripper.width"],
    "mobile_base": ["odom.x", "odom.y", "odom.yaw", "odom.v", "odom.w"],
}
ACTION_NAMES = {
    "panda": ["dx", "dy", "dz", "dyaw", "gripper"],
    "mobile_base": ["forward", "yaw_rate"],
}


def robot_type(env) -> str:
    from embodied.envs.workcell import WorkcellEnv

    return "panda" if isinstance(env.unwrapped, WorkcellEnv) else "mobile_base"


def _make_env(job: EpisodeJob):
    from embodied.tasks import make

    kwargs: dict[str, Any] = dict(job.options)
    kwargs["image_size"] = job.image_size
    if job.cameras:
        kwargs["cameras"] = tuple(job.cameras)
    return make(job.task, **kwargs)


_ENVS: dict[str, Any] = {}  # per process: building a scene costs more than resetting it


def env_for(job: EpisodeJob):
    key = json.dumps([job.task, job.image_size, list(job.cameras), job.options], sort_keys=True, default=str)
    if key not in _ENVS:
        _ENVS[key] = _make_env(job)
    return _ENVS[key]


def record_episode(job: EpisodeJob, make_policy: Callable | None = None) -> EpisodeBlob:
    """Run one episode of ``job`` and pack it (see the module docstring)."""
    from embodied.data.policies import make_policy as default_factory

    env = env_for(job)
    u = env.unwrapped
    fps = round(1.0 / u.control_dt)
    policy = make_policy(job.policy, env, job.seed) if make_policy else \
        default_factory(job.policy, env, job.seed, job.perception)
    obs, info = env.reset(seed=job.seed)
    if hasattr(policy, "reset"):
        policy.reset()
    cams = list(u.cameras)
    encoders = {cam: EpisodeEncoder(job.image_size, fps) for cam in cams}
    low, high = env.action_space.low, env.action_space.high
    cols: dict[str, list] = {k: [] for k in ("state", "action", "reward", "done", "success", "phase", "sid", "sparams", "sindex", "task")}
    depth: dict[str, list] = {cam: [] for cam in cams} if job.depth else {}
    img_samples: dict[str, list] = {cam: [] for cam in cams}
    tasks: list[str] = []
    calls: list[dict] = []
    last_call = None
    guided = robot_type(u) == "mobile_base" and hasattr(policy, "current_guide")
    guides: list[np.ndarray] = []
    done, t = False, 0
    while not done:
        for cam in cams:
            rgb = obs[f"rgb/{cam}"]
            encoders[cam].add(rgb)
            if t % 10 == 0:
                img_samples[cam].append(rgb)
            if job.depth:
                d = np.nan_to_num(obs[f"depth/{cam}"], nan=0.0, posinf=0.0) * DEPTH_SCALE
                depth[cam].append(np.clip(np.round(d), 0, 65535).astype(np.uint16))
        action = np.asarray(policy.act(obs), dtype=np.float32)
        call = getattr(policy, "current_call", None)
        if call is not None and call != last_call:
            calls.append(call.to_dict())
        last_call = call
        phase = int(obs["goal"]["phase"])
        if phase == 2:
            text = obs["goal"]["text"]
            if text not in tasks:
                tasks.append(text)
        cols["task"].append(len(tasks) - 1 if phase == 2 else -1)
        cols["state"].append(np.asarray(obs["proprio"], dtype=np.float32))
        cols["action"].append(np.clip(action, low, high).astype(np.float32))
        cols["phase"].append(phase)
        cols["sid"].append(NO_SKILL if call is None else call.skill_id)
        cols["sparams"].append(np.zeros(PARAM_DIM, np.float32) if call is None else call.params())
        cols["sindex"].append(-1 if call is None else len(calls) - 1)
        if guided:
            guide = policy.current_guide
            guides.append(np.zeros(GUIDE_DIM, np.float32) if guide is None
                          else np.asarray(guide, np.float32).reshape(GUIDE_DIM))
        obs, reward, terminated, truncated, info = env.step(action)
        done = bool(terminated or truncated)
        cols["reward"].append(float(reward))
        cols["done"].append(done)
        cols["success"].append(bool(info["is_success"]))
        t += 1
    if hasattr(policy, "close"):
        policy.close()
    decisions = getattr(policy, "decisions", None)
    if not tasks:  # ended before the recall phase: the goal is still the recall instruction
        tasks.append(u._instruction("recall"))
    task_local = np.array([max(k, 0) for k in cols["task"]], dtype=np.int64)
    arrays = {
        "observation.state": np.stack(cols["state"]),
        "action": np.stack(cols["action"]),
        "next.reward": np.array(cols["reward"], np.float32),
        "next.done": np.array(cols["done"], bool),
        "next.success": np.array(cols["success"], bool),
        "phase": np.array(cols["phase"], np.int64),
        "skill.id": np.array(cols["sid"], np.int64),
        "skill.params": np.stack(cols["sparams"]).astype(np.float32),
        "skill.index": np.array(cols["sindex"], np.int64),
        "task_local": task_local,
    }
    if guided:
        arrays["skill.guide"] = np.stack(guides)
    for cam, frames in depth.items():
        arrays[f"{DEPTH_PREFIX}{cam}"] = np.stack(frames)
    meta = {
        "job": job.to_dict(),
        "length": t,
        "fps": fps,
        "success": bool(info["is_success"]),
        "failure": bool(info.get("is_failure", False)),
        "tasks": tasks,
        "calls": calls,
        "robot_type": robot_type(u),
        "cameras": cams,
        "image_stats": {f"{IMAGE_PREFIX}{cam}": image_stats(np.stack(s), count=t) for cam, s in img_samples.items()},
    }
    videos = {cam: enc.close() for cam, enc in encoders.items()}
    packed = b""
    if decisions is not None and hasattr(decisions, "pack"):
        d_arrays, d_meta = decisions.pack()
        packed = st_save(d_arrays, metadata={"decisions": json.dumps(d_meta, default=plain)})
    return EpisodeBlob(json.dumps(meta, default=plain).encode(), st_save(arrays), videos, packed)
