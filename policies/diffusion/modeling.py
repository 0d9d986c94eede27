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

from policies.conditioning import sinusoidal
from policies.diffusion.configuration import DiffusionConfig
from policies.head import HeadBase, done_targets, elapsed_feature


class RowConv1d(nn.Conv1d):
    """``nn.Conv1d`` (same parameters) that also takes a one-row image (B, C, 1, L) in channels-last layout.

    At inference the U-Net runs on such rows: a CPU then convolves with oneDNN instead of the im2col
    fallback that a batch-1 ``conv1d`` of these sizes takes (several times faster per convolution)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 3:
            return super().forward(x)
        w = self.weight.unsqueeze(2).contiguous(memory_format=torch.channels_last)
        return F.conv2d(x, w, self.bias, (1, self.stride[0]), (0, self.padding[0]), (1, self.dilation[0]), self.groups)


class RowConvTranspose1d(nn.ConvTranspose1d):
    """``nn.ConvTranspose1d`` that also takes a one-row channels-last image, as :class:`RowConv1d`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 3:
            return super().forward(x)
        w = self.weight.unsqueeze(2).contiguous(memory_format=torch.channels_last)
        return F.conv_transpose2d(x, w, self.bias, (1, self.stride[0]), (0, self.padding[0]),
                                  (0, self.output_padding[0]), self.groups, (1, self.dilation[0]))


class Conv1dBlock(nn.Sequential):
    def __init__(self, cin: int, cout: int, kernel: int, groups: int):
        super().__init__(RowConv1d(cin, cout, kernel, padding=kernel // 2), nn.GroupNorm(groups, cout), nn.Mish())


class FiLMResBlock(nn.Module):
    """Two conv blocks; the condition scales and shifts the first one's output per channel."""

    def __init__(self, cin: int, cout: int, cond_dim: int, kernel: int, groups: int):
        super().__init__()
        self.conv1 = Conv1dBlock(cin, cout, kernel, groups)
        self.conv2 = Conv1dBlock(cout, cout, kernel, groups)
        self.film = nn.Sequential(nn.Mish(), nn.Linear(cond_dim, 2 * cout))
        self.skip = RowConv1d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        h = self.conv1(x)
        film = self.film(cond).reshape(*cond.shape[:1], -1, *([1] * (x.dim() - 2)))  # (B, 2C, 1[, 1])
        scale, bias = film.chunk(2, dim=1)
        h = self.conv2(h * (1 + scale) + bias)
        return h + self.skip(x)


class ConditionalUnet1d(nn.Module):
    def __init__(self, channels: int, cond_dim: int, cfg: DiffusionConfig):
        super().__init__()
        k, g, e = cfg.kernel_size, cfg.n_groups, cfg.step_embed_dim
        self.step_embed_dim = e
        self.step_mlp = nn.Sequential(nn.Linear(e, 4 * e), nn.Mish(), nn.Linear(4 * e, e))
        c = cond_dim + e
        dims = [channels, *cfg.down_dims]
        self.down = nn.ModuleList()
        for i, (cin, cout) in enumerate(zip(dims[:-1], dims[1:])):
            last = i == len(cfg.down_dims) - 1
            self.down.append(nn.ModuleList([
                FiLMResBlock(cin, cout, c, k, g), FiLMResBlock(cout, cout, c, k, g),
                RowConv1d(cout, cout, 3, 2, 1) if not last else nn.Identity()]))
        mid = cfg.down_dims[-1]
        self.mid = nn.ModuleList([FiLMResBlock(mid, mid, c, k, g), FiLMResBlock(mid, mid, c, k, g)])
        self.up = nn.ModuleList()
        rev = list(reversed(cfg.down_dims))
        for i, (cout, cin) in enumerate(zip(rev[:-1], rev[1:])):
            self.up.append(nn.ModuleList([
                FiLMResBlock(2 * cout, cin, c, k, g), FiLMResBlock(cin, cin, c, k, g),
                RowConvTranspose1d(cin, cin, 4, 2, 1)]))
        self.final = nn.Sequential(Conv1dBlock(cfg.down_dims[0], cfg.down_dims[0], k, g),
                                   RowConv1d(cfg.down_dims[0], channels, 1))

    def forward(self, x: torch.Tensor, t: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        """x (B, T, C) noisy trajectory, t (B,) diffusion steps, cond (B, cond_dim) -> (B, T, C)."""
        c = torch.cat([self.step_mlp(sinusoidal(t, self.step_embed_dim)), cond], -1)
        h = x.transpose(1, 2)
        rows = not self.training  # inference: (B, C, 1, T) channels-last rows (RowConv1d); training: (B, C, T)
        if rows:
            h = h.unsqueeze(2).contiguous(memory_format=torch.channels_last)
        skips = []
        for res1, res2, down in self.down:
            h = res2(res1(h, c), c)
            skips.append(h)
            h = down(h)
        for res in self.mid:
            h = res(h, c)
        for res1, res2, up in self.up:
            h = torch.cat([h, skips.pop()], 1)
            h = up(res2(res1(h, c), c))
        out = self.final(h)
        return (out.squeeze(2) if rows else out).transpose(1, 2)


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
        self._traced: torch.jit.ScriptModule | None = None

    # A traced and frozen U-Net on channels-last rows runs batch-1 inference on a CPU about twice as fast
    # as the traced one on (B, C, T) and four times the eager one (dispatch overhead and the im2col
    # convolution fallback dominate at this size). The trace is dropped whenever the weights or the mode change.
    def train(self, mode: bool = True) -> DiffusionHead:
        self._traced = None
        return super().train(mode)

    def load_state_dict(self, state_dict, *args, **kwargs):
        self._traced = None
        has_classifier = any(k.startswith("done_out.") for k in state_dict)
        if has_classifier == self.sampled_done:
            raise ValueError(
                f"diffusion weights {'with' if has_classifier else 'without'} a done classifier, but the config's "
                f"done_head is {self.config.done_head!r}; heads trained before done_head existed denoise the done "
                f"flag: set \"done_head\": \"sampled\" in their config.json")
        return super().load_state_dict(state_dict, *args, **kwargs)

    def _denoiser(self, x: torch.Tensor, t: torch.Tensor, cond: torch.Tensor):
        if self.training or not self.config.trace_inference:
            return self.unet
        if self._traced is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # Frozen: the weights become constants, so their one-row channels-last copies are made once.
                self._traced = torch.jit.freeze(torch.jit.trace(self.unet, (x, t, cond), check_trace=False))
        return self._traced

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
        x = x * cfg.init_noise_scale
        sched = self.infer_scheduler
        sched.set_timesteps(cfg.num_inference_steps)
        for t in sched.timesteps:
            step = t.expand(x.shape[0]).to(x.device)
            out = self._denoiser(x, step, cond)(x, step, cond)
            x = sched.step(out, t, x).prev_sample
        if self.sampled_done:
            action = self.normalizer.unnorm("action", x[..., :-1].clamp(-1, 1))
            return {"action": action, "done": ((x[..., -1] + 1) / 2).clamp(0, 1)}
        action = self.normalizer.unnorm("action", x.clamp(-1, 1))
        return {"action": action, "done": torch.sigmoid(self.done_logits(batch, cond))}
