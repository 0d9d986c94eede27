"""What every learned head shares: config fields, the observation encoder and the action queue.

The interface follows LeRobot's policies:

    out = head(batch)                       # training: {"loss", ...}
    chunk = head.predict_action_chunk(b)    # (B, horizon, A) actions in env units
    head.reset(); a = head.select_action(obs)   # one step; the head keeps its own queues

``batch`` is a dict of tensors as :class:`embodied.data.DemoDataset` yields them
(``observation.state`` (B, To, D), ``skill.id`` (B,), ``skill.params`` (B, 8),
``observation.images.<cam>`` (B, To, 3, H, W) in [0, 1], ``action`` (B, H, A),
``action_is_pad`` (B, H)) plus ``action_done`` (B, H), 1 where the frame lies past the
end of the skill segment (:mod:`policies.data`), and, for heads with ``guide_dim``,
``skill.guide`` (B, guide_dim): the route features of the current step (the agent's
planner on its own map supplies them; :mod:`policies.nav_skill`), and, for heads with
``use_elapsed``, ``skill.elapsed`` (B,): control steps since the skill call started (0 at its first step). ``select_action`` takes one step of
the same keys without the time axis.

Besides actions every head predicts a *done* channel: the probability that a
step lies past the end of the running skill. :class:`policies.skill_head.LearnedSkill`
reports ``done`` when the step it is about to execute crosses it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from embodied.planner.calls import SKILLS
from policies.conditioning import PARAM_FEATURES, Normalizer, relative_params, robot_kind

IMAGE_PREFIX = "observation.images."


@dataclass
class HeadConfig:
    state_dim: int = 22
    action_dim: int = 5
    obs_horizon: int = 2  # observation steps the head sees
    horizon: int = 16  # actions predicted per chunk (from the current step on)
    n_action_steps: int = 8  # of those, executed before predicting again
    cameras: tuple[str, ...] = ()  # e.g. ("wrist",): image features from a small CNN trained from scratch
    image_size: int = 64
    image_features: int = 64
    skill_embed_dim: int = 32
    skills: tuple[str, ...] = ()  # skills the head was trained on (filled in by training)
    done_threshold: float = 0.9  # LearnedSkill: next-step done probability that ends the skill
    done_patience: int = 1  # ... for this many steps in a row
    done_confirm: bool = False  # ... re-predicted from the current observation first (sampled done channels)
    # Skills that end at ``skill_done_threshold`` instead: a place's done probability peaks at about 0.4 once
    # it has let go and lifted away, while a press needs the high threshold not to turn back before the click.
    done_threshold_skills: tuple[str, ...] = ()
    skill_done_threshold: float = 0.9
    action_norm: str = "min_max"
    guide_dim: int = 0  # route features per step (``skill.guide``, base frame; 0: none; set from the data)
    ignore_pose: bool = False  # base: drop the odometry pose (x, y, yaw) from the state, keep the velocities
    room_goals: bool = False  # navigate: trained on "go to the room" calls too (else the scripted driver runs them)
    # Steps since the skill call started (``skill.elapsed``) as one more call feature: a press passes the
    # same pose going down and coming back up, and only the time into the skill tells the two apart.
    use_elapsed: bool = False
    temporal_ensemble_coeff: float | None = None  # e.g. 0.01: predict every step, average overlapping chunks
    # Skills that run with temporal ensembling even when the head runs chunks otherwise: averaging the
    # overlapping chunks steadies where a pick or place comes down (for a diffusion head it also averages
    # out the spread of single samples), and would slow a press's turn-around.
    ensemble_skills: tuple[str, ...] = ()
    skill_ensemble_coeff: float = 0.01

    def needs_elapsed(self) -> bool:
        """Whether the head reads ``skill.elapsed`` (as a call feature, or elsewhere in a subclass)."""
        return self.use_elapsed

    def validate(self) -> None:
        if self.obs_horizon < 1 or self.horizon < 1:
            raise ValueError(f"obs_horizon and horizon must be >= 1, got {self.obs_horizon}, {self.horizon}")
        if not 1 <= self.n_action_steps <= self.horizon:
            raise ValueError(f"n_action_steps must be in 1..horizon ({self.horizon}), got {self.n_action_steps}")
        robot_kind(self.state_dim)
        if self.guide_dim < 0:
            raise ValueError(f"guide_dim must be >= 0, got {self.guide_dim}")
        if self.ignore_pose and robot_kind(self.state_dim) != "base":
            raise ValueError("ignore_pose applies to the mobile base only")
        unknown = [s for s in self.skills if s not in SKILLS]
        if unknown:
            raise ValueError(f"unknown skill {unknown[0]!r}; skills: {', '.join(SKILLS)}")
        unknown = [k for k in self.ensemble_skills if k not in SKILLS]
        if unknown:
            raise ValueError(f"ensemble_skills: unknown skill {unknown[0]!r}; skills: {', '.join(SKILLS)}")
        unknown = [k for k in self.done_threshold_skills if k not in SKILLS]
        if unknown:
            raise ValueError(f"done_threshold_skills: unknown skill {unknown[0]!r}; skills: {', '.join(SKILLS)}")
        for name in ("done_threshold", "skill_done_threshold"):
            if not 0.0 < getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be a probability in (0, 1), got {getattr(self, name)}")
        if self.temporal_ensemble_coeff is not None and self.n_action_steps != 1:
            raise ValueError("temporal ensembling predicts every step: set n_action_steps=1")


class SpatialSoftmax(nn.Module):
    """Feature map (B, C, H, W) -> expected keypoint coordinates (B, 2K)."""

    def __init__(self, channels: int, keypoints: int):
        super().__init__()
        self.proj = nn.Conv2d(channels, keypoints, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.proj(x)
        b, k, h, w = x.shape
        ys = torch.linspace(-1, 1, h, device=x.device)
        xs = torch.linspace(-1, 1, w, device=x.device)
        attn = F.softmax(x.reshape(b, k, h * w), -1).reshape(b, k, h, w)
        ex = (attn.sum(2) * xs).sum(-1)
        ey = (attn.sum(3) * ys).sum(-1)
        return torch.cat([ex, ey], -1)


class ImageEncoder(nn.Module):
    """A small CNN trained from scratch: (B, 3, H, W) in [0, 1] -> (B, features)."""

    def __init__(self, features: int, keypoints: int = 32):
        super().__init__()
        def block(i: int, o: int, k: int, s: int) -> list[nn.Module]:
            return [nn.Conv2d(i, o, k, s, k // 2), nn.GroupNorm(8, o), nn.Mish()]
        self.net = nn.Sequential(*block(3, 32, 5, 2), *block(32, 64, 3, 2), *block(64, 64, 3, 1))
        self.pool = SpatialSoftmax(64, keypoints)
        self.out = nn.Sequential(nn.Linear(2 * keypoints, features), nn.Mish())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.pool(self.net((x - 0.5) / 0.25)))


class HeadBase(nn.Module):
    """Normaliser, skill embedding, call features and image encoders; the select_action queue."""

    name = "head"

    def __init__(self, config: HeadConfig, stats: dict[str, dict]):
        super().__init__()
        config.validate()
        self.config = config
        self.robot = robot_kind(config.state_dim)
        self.normalizer = Normalizer(stats, config.action_norm, optional=("skill.guide",) if config.guide_dim else ())
        if self.normalizer.observation_state_mean.numel() != config.state_dim:
            raise ValueError(f"statistics give {self.normalizer.observation_state_mean.numel()} state values, "
                             f"config says {config.state_dim}")
        if self.normalizer.action_mean.numel() != config.action_dim:
            raise ValueError(f"statistics give {self.normalizer.action_mean.numel()} action values, "
                             f"config says {config.action_dim}")
        self.skill_embed = nn.Embedding(len(SKILLS) + 1, config.skill_embed_dim)  # row 0: no skill
        self.images = nn.ModuleDict({cam: ImageEncoder(config.image_features) for cam in config.cameras})
        self.reset()

    # --- features ----------------------------------------------------------------------
    @property
    def obs_step_dim(self) -> int:
        return self.config.state_dim + len(self.config.cameras) * self.config.image_features

    @property
    def call_dim(self) -> int:
        return self.config.skill_embed_dim + PARAM_FEATURES + self.config.guide_dim + int(self.config.use_elapsed)

    def check_batch(self, batch: dict[str, torch.Tensor], with_actions: bool) -> None:
        need = ["observation.state", "skill.id", "skill.params"] + [IMAGE_PREFIX + c for c in self.config.cameras]
        need += ["skill.guide"] if self.config.guide_dim else []
        need += ["skill.elapsed"] if self.config.needs_elapsed() else []
        if with_actions:
            need += ["action"]
        missing = [k for k in need if k not in batch]
        if missing:
            raise ValueError(f"{self.name} batch lacks {missing[0]!r}; it needs {', '.join(need)}")
        state = batch["observation.state"]
        cfg = self.config
        if state.ndim != 3 or state.shape[1] != cfg.obs_horizon or state.shape[2] != cfg.state_dim:
            raise ValueError(f"observation.state must be (B, {cfg.obs_horizon}, {cfg.state_dim}), "
                             f"got {tuple(state.shape)}")
        if with_actions:
            a = batch["action"]
            if a.ndim != 3 or a.shape[1] != cfg.horizon or a.shape[2] != cfg.action_dim:
                raise ValueError(f"action must be (B, {cfg.horizon}, {cfg.action_dim}), got {tuple(a.shape)}")
        if cfg.guide_dim and batch["skill.guide"].shape[-1] != cfg.guide_dim:
            raise ValueError(f"skill.guide must have {cfg.guide_dim} values per sample, "
                             f"got shape {tuple(batch['skill.guide'].shape)}")

    def obs_steps(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """(B, To, state_dim + cameras * image_features): normalised proprio and image features per step."""
        state = self.normalizer.norm("observation.state", batch["observation.state"].float())
        if self.config.ignore_pose:
            state = torch.cat([torch.zeros_like(state[..., :3]), state[..., 3:]], -1)
        parts = [state]
        b, to = state.shape[:2]
        for cam, enc in self.images.items():
            img = batch[IMAGE_PREFIX + cam].float()
            if img.shape[-2:] != (self.config.image_size, self.config.image_size):
                img = F.interpolate(img.flatten(0, 1), size=self.config.image_size, mode="bilinear",
                                    align_corners=False).unflatten(0, (b, to))
            parts.append(enc(img.flatten(0, 1)).unflatten(0, (b, to)))
        return torch.cat(parts, -1)

    def call_features(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """(skill embedding (B, E), normalised call parameters in the robot frame (B, 9 + guide_dim [+ 1 elapsed]))."""
        sid = batch["skill.id"].long().reshape(-1)
        if ((sid < -1) | (sid >= len(SKILLS))).any():
            raise ValueError(f"skill.id out of range -1..{len(SKILLS) - 1}: {sid.tolist()}")
        rel = relative_params(batch["observation.state"][:, -1].float(), batch["skill.params"].float(), self.robot)
        params = self.normalizer.norm("skill.params_rel", rel)
        if self.config.guide_dim:
            guide = self.normalizer.norm("skill.guide", batch["skill.guide"].float().reshape(len(sid), -1))
            params = torch.cat([params, guide], -1)
        if self.config.use_elapsed:
            params = torch.cat([params, elapsed_feature(batch["skill.elapsed"]).reshape(len(sid), 1)], -1)
        return self.skill_embed(sid + 1), params

    # --- inference -------------------------------------------------------------------
    def predict_chunk(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """{"action": (B, horizon, A) in env units, "done": (B, horizon) probabilities}."""
        raise NotImplementedError

    @torch.no_grad()
    def predict_action_chunk(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.predict_chunk(batch)["action"]

    def reset(self) -> None:
        """Forget the observation history and the queued actions (call at every skill start)."""
        self._obs: deque[dict[str, torch.Tensor]] = deque(maxlen=self.config.obs_horizon)
        self._queue: deque[tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]] = deque()
        self._call: dict[str, torch.Tensor] = {}
        self.last_done = torch.zeros(1)  # done probability of the step just returned
        self.next_done = torch.zeros(1)  # ... and of the step after it: the skill ends with this one
        self.chunk_age = 0  # steps since the chunk the last action came from was predicted
        self._chunks: deque[tuple[torch.Tensor, torch.Tensor]] = deque(maxlen=self.config.horizon)
        self._ensemble = self.config.temporal_ensemble_coeff  # None: run chunks of n_action_steps

    def begin_skill(self, name: str) -> None:
        """Called after ``reset`` when a skill call starts: temporal ensembling for the skills in
        ``ensemble_skills`` (and for all with ``temporal_ensemble_coeff``)."""
        cfg = self.config
        self._ensemble = cfg.temporal_ensemble_coeff
        if self._ensemble is None and name in cfg.ensemble_skills:
            self._ensemble = cfg.skill_ensemble_coeff

    def _push_obs(self, obs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Add one step to the history; return the stacked (B, To, ...) observation batch."""
        keys = ["observation.state"] + [IMAGE_PREFIX + c for c in self.config.cameras]
        step = {k: obs[k] for k in keys}
        if not self._obs:
            for _ in range(self.config.obs_horizon - 1):
                self._obs.append(step)
        self._obs.append(step)
        self._call = {k: obs[k] for k in ("skill.id", "skill.params", "skill.guide", "skill.elapsed") if k in obs}
        return self._history()

    def _history(self) -> dict[str, torch.Tensor]:
        keys = list(self._obs[-1])
        return {**{k: torch.stack([s[k] for s in self._obs], 1) for k in keys}, **self._call}

    def _fill(self, batch: dict[str, torch.Tensor]) -> None:
        chunk = self.predict_chunk(batch)
        ones = torch.ones_like(chunk["done"][:, 0])
        h = self.config.horizon
        for k in range(self.config.n_action_steps):
            nxt = chunk["done"][:, k + 1] if k + 1 < h else ones
            self._queue.append((chunk["action"][:, k], chunk["done"][:, k], nxt, k))

    def _pop(self) -> torch.Tensor:
        action, self.last_done, self.next_done, self.chunk_age = self._queue.popleft()
        return action

    @torch.no_grad()
    def select_action(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """One step: (B, A) action in env units; ``last_done``/``next_done`` (B,) done probabilities."""
        batch = self._push_obs(obs)
        if self._ensemble is not None:
            return self._ensembled(batch, self._ensemble)
        if not self._queue:
            self._fill(batch)
        return self._pop()

    def _ensembled(self, batch: dict[str, torch.Tensor], coeff: float) -> torch.Tensor:
        # Temporal ensembling (ACT): a chunk every step; the chunk predicted k steps ago offers its
        # k-th action; the oldest gets the largest weight exp(-coeff * i), i = 0 for the oldest.
        chunk = self.predict_chunk(batch)
        self._chunks.append((chunk["action"], chunk["done"]))
        n = len(self._chunks)
        acts = torch.stack([a[:, n - 1 - i] for i, (a, _) in enumerate(self._chunks)], 0)
        dones = torch.stack([d[:, n - 1 - i] for i, (_, d) in enumerate(self._chunks)], 0)
        w = torch.exp(-coeff * torch.arange(n, dtype=acts.dtype, device=acts.device))
        w = (w / w.sum()).reshape(n, *([1] * (acts.ndim - 1)))
        self.last_done = (w.squeeze(-1) * dones).sum(0)
        self.next_done, self.chunk_age = chunk["done"][:, 1] if self.config.horizon > 1 else self.last_done, 0
        return (w * acts).sum(0)

    @torch.no_grad()
    def repredict(self) -> torch.Tensor:
        """Drop the queued actions and predict afresh from the current history; the new first action."""
        if not self._obs:
            raise RuntimeError("repredict() before any select_action()")
        if self._ensemble is not None:
            self._chunks.pop()  # this step's chunk is fresh already: predict it again without the ensemble's history
            chunk = self.predict_chunk(self._history())
            self._chunks.append((chunk["action"], chunk["done"]))
            self.last_done, self.next_done, self.chunk_age = chunk["done"][:, 0], chunk["done"][:, 1], 0
            return chunk["action"][:, 0]
        self._queue.clear()
        self._fill(self._history())
        return self._pop()


ELAPSED_UNIT = 100.0  # control steps per unit of the elapsed feature
ELAPSED_CAP = 4.0  # units: skills run at most a few hundred steps; later steps all look alike


def elapsed_feature(steps: torch.Tensor) -> torch.Tensor:
    """Steps since the skill call started (B,) -> the head's feature: steps / 100, capped at 4."""
    return (steps.float() / ELAPSED_UNIT).clamp(0.0, ELAPSED_CAP)


def done_targets(batch: dict[str, torch.Tensor], horizon: int) -> torch.Tensor:
    """(B, H) float: 1 past the skill segment's end (``action_done``, else ``action_is_pad``)."""
    if "action_done" in batch:
        return batch["action_done"].float()
    if "action_is_pad" in batch:
        return batch["action_is_pad"].float()
    return torch.zeros(batch["action"].shape[0], horizon, device=batch["action"].device)
