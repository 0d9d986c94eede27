"""The memoryless baseline: the expert's skill with none of its memory of the cue.

It measures a task's chance rate instead of assuming it. Until the recall
phase it is the ordinary expert. At the first recall step it draws a cue of
its own from the task's cue distribution (same seed, hence same layout),
brings a *shadow* copy of the env with that cue to the same recall step, and
from then on acts as the shadow's expert, sending every action to both envs.

Why this is fair: at the first recall step the observation does not depend
on the cue (the envs restore a canonical state; a conformance test checks
it), so no agent can tell the real episode from the shadow one. A perfect
agent without memory can do no better than commit to a guess drawn this
way; it succeeds exactly when the guess matches, or lands close enough.

What it does *not* guess: anything besides the cue. MultiGoal's later goals
are known to the shadow expert, so there it measures the first goal's chance
(1/13), an upper bound on the task's (1/13)^goals. Lifelong's cue is its first
goal's spot too; after a wrong guess the shadow's goals start at other steps
(and, drawn from what its robot was shown, may differ), so its later goals
measure little.
"""

from __future__ import annotations

import zlib

import gymnasium as gym
import numpy as np

from embodied.experts.registry import make_expert


class MemorylessExpert:
    def __init__(self, env: gym.Env, seed: int | None = None):
        if seed is None:
            raise ValueError("the memoryless baseline needs the episode's seed to rebuild the layout")
        self.env = env
        self.seed = int(seed)
        # Its guesses: apart from the env's draws, and apart per family (families that share a cue space
        # would otherwise make the same guesses on the same seeds, so their chance rates would not be
        # independent measurements).
        family = zlib.crc32(str(getattr(env.unwrapped, "family", "")).encode())
        self.rng = np.random.default_rng([self.seed, 0x6E6F6D656D, family])
        self.expert = make_expert(env)
        self.shadow: gym.Env | None = None
        self.shadow_expert = None
        self.shadow_done = False
        self.guess = None

    def reset(self) -> None:
        self.expert.reset()
        self.close()
        self.shadow_done = False
        self.guess = None

    def close(self) -> None:
        if self.shadow is not None:
            self.shadow.close()
        self.shadow, self.shadow_expert = None, None

    def act(self, obs) -> np.ndarray:
        real = self.env.unwrapped
        if real.phase != "recall":
            return self.expert.act(obs)
        if self.shadow is None:
            self._start_shadow(real.t)
        if self.shadow_done:
            return self._hold()
        action = self.shadow_expert.act(None)
        _, _, terminated, truncated, _ = self.shadow.step(action)
        self.shadow_done = terminated or truncated
        return action

    def _start_shadow(self, t: int) -> None:
        spec = self.env.spec
        kwargs = {**(spec.kwargs if spec else {}), "images": False, "render_mode": None}
        self.shadow = gym.make(spec.id, **kwargs)
        shadow = self.shadow.unwrapped
        shadow.reset(seed=self.seed)
        self.guess = shadow._sample_cue(self.rng)
        self.shadow.reset(seed=self.seed, options={"cue": self.guess})
        self.shadow_expert = make_expert(self.shadow)
        # Bring the shadow to the real env's step; the step that *enters* recall is the real one's next.
        while shadow.t < t:
            self.shadow.step(self.shadow_expert.act(None))
        if shadow.phase != "recall":
            raise RuntimeError(f"shadow env of {spec.id} is in phase {shadow.phase!r} at step {t}, not recall")

    def _hold(self) -> np.ndarray:
        """Stay still (keep the gripper as it is) once the shadow's episode is over."""
        space = self.env.action_space
        if space.shape == (5,):
            return np.array([0, 0, 0, 0, getattr(self.shadow_expert, "_grip", 0.0)], dtype=np.float32)
        return np.zeros(space.shape, dtype=np.float32)
