"""Perception + memory riding along a rollout, fed the observations only.

    rider = MemoryRider(env, recorder=None)
    run_episodes(env, "expert", seeds, on_reset=rider.reset, on_step=rider.step, on_end=rider.end)
    rider.memory  # the SpatialMemory of the current (or last) episode

(``run_episodes`` is ``embodied.eval.rollout.run_episodes``; the rider itself
sees observations only and imports nothing from the simulator side.)

As in ``embodied.eval.evaluate.run_episode``: a fresh ``Perceiver`` (masks
mode, instance ids shuffled every frame so they carry no identity) and a fresh
``SpatialMemory`` per episode, and images are perceived only on steps the env
renders (``render_every``). Between renders the env repeats old images next
to *current* extrinsics, so perceiving those would misplace what a moving
camera sees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import gymnasium as gym
import numpy as np

from embodied.agent.drift import DriftFix, moving_mask
from embodied.agent.skills.navigate import CAMERA as HEAD_CAMERA
from embodied.memory import MemoryConfig, SpatialMemory
from embodied.memory.config import kind_of
from embodied.perception import Perceiver, PerceptionConfig

BASE_PROPRIO = 5  # the mobile base's proprio width

if TYPE_CHECKING:
    from embodied.data.recording import EpisodeOutcome, Recorder


class MemoryRider:
    """Keeps a memory of each episode from its observations; optionally records it."""

    def __init__(self, env: gym.Env, recorder: Recorder | None = None):
        self.env = env.unwrapped
        if not getattr(self.env, "images", False):
            raise ValueError("perception needs an env made with images=True")
        self.render_every = int(self.env.render_every)
        self.cameras = tuple(self.env.cameras)
        self.recorder = recorder
        self.memory: SpatialMemory | None = None
        self.perceiver: Perceiver | None = None
        self.obs: dict | None = None  # the latest observation (extrinsics are current on every step)
        self.t = 0
        self.seed = 0
        self.policy = None  # a policy with its own memory (the MemoryAgent) is recorded from that memory
        self.drift: DriftFix | None = None  # the mobile robot's drift correction (per episode)

    def set_policy(self, policy) -> None:
        """Record the policy's own memory when it keeps one: one memory, the agent's own ids and notes."""
        self.policy = policy if isinstance(getattr(policy, "memory", None), SpatialMemory) else None

    def reset(self, seed: int, obs: dict, info: dict) -> None:
        if self.recorder is not None and self.memory is not None and self.recorder.open:
            self.recorder.end_episode(self.memory, None)  # the previous episode ended without end()
        self.seed = int(seed)
        self.perceiver = Perceiver(self.env.labels, PerceptionConfig(mode="masks", shuffle_ids=True, seed=self.seed))
        self.memory = SpatialMemory(MemoryConfig())
        # A mobile robot's odometry drifts: its head camera's pose is corrected as the agent corrects it.
        mobile = f"depth/{HEAD_CAMERA}" in obs and np.shape(obs.get("proprio")) == (BASE_PROPRIO,)
        self.drift = DriftFix() if mobile else None
        if self.recorder is not None:
            self.recorder.begin_episode(self.seed, self.memory)
        self._fold(obs, int(info.get("step", 0)))

    def step(self, obs: dict, info: dict) -> None:
        self._fold(obs, int(info["step"]))

    def end(self, result: EpisodeOutcome) -> None:
        if self.recorder is not None and self.memory is not None:
            self.recorder.end_episode(self.memory, result)

    def _fold(self, obs: dict, t: int) -> None:
        self.obs, self.t = obs, t
        if t % self.render_every:
            return
        if self.policy is not None:
            # The agent folds each observation in when it acts on it, one step after this hook.
            self.memory = self.policy.memory
        else:
            segments = self.perceiver.segment(obs)
            if self.drift is not None:
                obs = self.obs = self.drift(obs, t, moving_mask(segments, kind_of))
            self.memory.update(self.perceiver(obs, t, segments))
            self.memory.hear(t, obs["goal"]["text"])
        if self.recorder is not None:
            self.recorder.frame(t, obs, self.memory)

    def camera(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Intrinsics (3,3) at the observation size and camera-to-world (4,4) of ``name`` now."""
        return (
            np.asarray(self.obs[f"intrinsics/{name}"], dtype=np.float64),
            np.asarray(self.obs[f"extrinsics/{name}"], dtype=np.float64),
        )
