"""DDIM sampling of one action chunk as a single module, built to be traced and frozen.

At batch 1 on a CPU the denoising loop spends its time on dispatch and small kernels rather than
arithmetic, and the eager loop repeats work whose inputs never change between chunks:

- every block's FiLM is ``Linear(Mish([step features, condition]))``, so it splits into a step part and a
  condition part. The condition part is one matrix product per chunk; the step part, for the fixed DDIM
  timesteps, is a constant once the traced module is frozen;
- diffusers' DDIM step runs inside the trace, so its coefficients for those timesteps become constants too;
- the Python loop, the module calls and the scheduler's bookkeeping are gone from the traced graph.

Same numbers as the step-by-step loop with ``ConditionalUnet1d.forward`` (``tests/test_heads.py``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from diffusers import DDIMScheduler
from torch import nn

from policies.diffusion.unet import ConditionalUnet1d


class DDIMSampler(nn.Module):
    """forward(x (B, T, C) starting noise, cond (B, cond_dim)) -> (B, T, C) denoised trajectory (normalised).

    The scheduler is a private copy with its timesteps set, so the head's own scheduler keeps no state."""

    def __init__(self, unet: ConditionalUnet1d, scheduler: DDIMScheduler, num_inference_steps: int):
        super().__init__()
        self.unet = unet
        self.scheduler = DDIMScheduler.from_config(scheduler.config)
        self.scheduler.set_timesteps(num_inference_steps)

    def forward(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        w_step, w_cond, bias = self.unet.film_parts()  # read here, so an eager sampler follows new weights
        film_cond = torch.addmm(bias, F.mish(cond), w_cond)
        for t in self.scheduler.timesteps:
            film_step = F.mish(self.unet.step_features(t.reshape(1))) @ w_step  # (1, F): constant once frozen
            noise = self.unet.denoise(x, film_cond + film_step)
            x = self.scheduler.step(noise, t, x).prev_sample
        return x
