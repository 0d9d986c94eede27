"""Diffusion head: denoise an action chunk conditioned on observations and the call; predict where it ends.

The trajectory holds the normalised actions in [-1, 1] (``action_dim``
channels). The done flag of each step comes from a classifier on the same
condition (``done_head="classifier"``, binary cross-entropy), or is denoised
as one more channel mapped to {-1, +1} (``"sampled"``). The global condition is the
flattened per-step observation features (proprio, optional image features),
the skill embedding and the call's parameters in the robot's frame; it
modulates every residual block through FiLM (a per-channel scale and bias).
Training adds DDPM noise (diffusers' ``DDPMScheduler``) and regresses it;
inference runs diffusers' ``DDIMScheduler`` for ``num_inference_steps``.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from diffusers import DDIMScheduler, DDPMScheduler
from torch import nn

from policies.diffusion.configuration import DiffusionConfig
from policies.diffusion.sampling import DDIMSampler
from policies.diffusion.unet import ConditionalUnet1d
from policies.head import HeadBase, done_targets, elapsed_feature


class DiffusionHead(HeadBase):
    name = "diffusion"

    def __init__(self, config: DiffusionConfig, stats: dict[str, dict]):
        super().__init__(config, stats)
        self.config: DiffusionConfig = config
        cond_dim = config.obs_horizon * self.obs_step_dim + self.call_dim
        self.sampled_done = config.done_head == "sampled"
        self.unet = ConditionalUnet1d(config.action_dim + int(self.sampled_done), cond_dim, config)
        self.done_elapsed = not self.sampled_done and config.done_elapsed
        if not self.sampled_done:
            self.done_out = nn.Sequential(nn.Linear(cond_dim + int(self.done_elapsed), config.done_hidden), nn.Mish(),
                                          nn.Linear(config.done_hidden, config.horizon))
        kw = dict(num_train_timesteps=config.num_train_timesteps, beta_schedule=config.beta_schedule,
                  clip_sample=config.clip_sample, prediction_type=config.prediction_type)
        self.train_scheduler = DDPMScheduler(**kw)
        self.infer_scheduler = DDIMScheduler(**kw)
        # Traced, frozen DDIM samplers by (input shapes, steps); a plain dict keeps them out of the state_dict.
        self._samplers: dict[tuple, torch.jit.ScriptModule] = {}

    # The whole DDIM loop traced and frozen (policies/diffusion/sampling.py) runs a batch-1 chunk on a CPU
    # about 4.5x faster than the same loop eager; tracing it takes 3-4 s, once per head. The traces hold the
    # weights as constants: they are dropped on new weights (load_state_dict) and on entering or leaving
    # training, but kept by an eval() of a head already in eval mode (each LearnedSkill calls it).
    def train(self, mode: bool = True) -> DiffusionHead:
        if mode or self.training:
            self._samplers = {}
        return super().train(mode)

    def load_state_dict(self, state_dict, *args, **kwargs):
        self._samplers = {}
        has_classifier = any(k.startswith("done_out.") for k in state_dict)
        if has_classifier == self.sampled_done:
            raise ValueError(
                f"diffusion weights {'with' if has_classifier else 'without'} a done classifier, but the config's "
                f"done_head is {self.config.done_head!r}; heads trained before done_head existed denoise the done "
                f"flag: set \"done_head\": \"sampled\" in their config.json")
        return super().load_state_dict(state_dict, *args, **kwargs)

    def sample(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        """x (B, T, C) starting noise, cond (B, cond_dim) -> (B, T, C): DDIM for ``num_inference_steps``."""
        steps = self.config.num_inference_steps
        # Tracing pays at batch 1 (acting), where dispatch dominates; a batch of windows is mostly arithmetic
        # (1.15-1.35x faster traced at 16-128 here) and one-off, so it runs eagerly instead of paying the trace.
        if self.training or not self.config.trace_inference or len(x) != 1:
            return DDIMSampler(self.unet, self.infer_scheduler, steps)(x, cond)
        key = (tuple(x.shape), tuple(cond.shape), steps)
        if key not in self._samplers:
            sampler = DDIMSampler(self.unet, self.infer_scheduler, steps).eval()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the tracer notes the fixed timesteps it records as constants
                self._samplers[key] = torch.jit.freeze(torch.jit.trace(sampler, (x, cond), check_trace=False))
        return self._samplers[key](x, cond)

    def global_cond(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        skill, params = self.call_features(batch)
        return torch.cat([self.obs_steps(batch).flatten(1), skill, params], -1)

    def done_logits(self, batch: dict[str, torch.Tensor], cond: torch.Tensor) -> torch.Tensor:
        """(B, horizon) logits of the done classifier (``done_head="classifier"``)."""
        if self.done_elapsed:
            cond = torch.cat([cond, elapsed_feature(batch["skill.elapsed"]).reshape(len(cond), 1)], -1)
        return self.done_out(cond)

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        self.check_batch(batch, with_actions=True)
        cfg = self.config
        traj = self.normalizer.norm("action", batch["action"].float())
        done = done_targets(batch, cfg.horizon)
        if self.sampled_done:
            traj = torch.cat([traj, done.unsqueeze(-1) * 2 - 1], -1)
        cond = self.global_cond(batch)
        noise = torch.randn_like(traj)
        t = torch.randint(0, cfg.num_train_timesteps, (traj.shape[0],), device=traj.device)
        noisy = self.train_scheduler.add_noise(traj, noise, t)
        pred = self.unet(noisy, t, cond)
        target = noise if cfg.prediction_type == "epsilon" else traj
        err = F.mse_loss(pred, target, reduction="none")
        if self.sampled_done:
            return {"loss": err.mean(), "action_loss": err[..., :-1].mean().detach(),
                    "done_loss": err[..., -1].mean().detach()}
        pos_weight = torch.tensor(cfg.done_pos_weight, device=done.device)
        done_loss = F.binary_cross_entropy_with_logits(self.done_logits(batch, cond), done, pos_weight=pos_weight)
        return {"loss": err.mean() + cfg.done_weight * done_loss, "action_loss": err.mean().detach(),
                "done_loss": done_loss.detach()}

    @torch.no_grad()
    def predict_chunk(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        self.check_batch(batch, with_actions=False)
        cfg = self.config
        cond = self.global_cond(batch)
        x = torch.randn(cond.shape[0], cfg.horizon, cfg.action_dim + int(self.sampled_done), device=cond.device)
        x = self.sample(x * cfg.init_noise_scale, cond)
        if self.sampled_done:
            action = self.normalizer.unnorm("action", x[..., :-1].clamp(-1, 1))
            return {"action": action, "done": ((x[..., -1] + 1) / 2).clamp(0, 1)}
        action = self.normalizer.unnorm("action", x.clamp(-1, 1))
        return {"action": action, "done": torch.sigmoid(self.done_logits(batch, cond))}
