"""The diffusion head's denoiser: a 1-D temporal U-Net over the action chunk, FiLM-conditioned per block.

Shapes: a trajectory is (B, T, C) (T the horizon, C the action channels); the condition (B, cond_dim).
Training runs the convolutions on (B, C, T); inference on one-row channels-last images (B, C, 1, T),
the same parameters (``RowConv1d``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from policies.conditioning import sinusoidal
from policies.diffusion.configuration import DiffusionConfig


class RowConv1d(nn.Conv1d):
    """``nn.Conv1d`` (same parameters) that also takes a one-row image (B, C, 1, L) in channels-last layout.

    At inference the U-Net runs on such rows. A batch-1 ``conv1d`` of these sizes takes torch's im2col
    fallback; the rows take oneDNN on one machine measured and a faster direct path on another (AMD, AVX2:
    12-102 us per convolution against 14-595 us, 32-256 channels)."""

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

    def forward(self, x: torch.Tensor, film: torch.Tensor) -> torch.Tensor:
        """x (B, C, T) or rows (B, C, 1, T); film (B, 2 * cout): this block's ``self.film`` of the condition."""
        h = self.conv1(x)
        scale, bias = film.reshape(*film.shape[:1], -1, *([1] * (x.dim() - 2))).chunk(2, dim=1)
        h = self.conv2(torch.addcmul(bias, h, 1 + scale))  # h * (1 + scale) + bias in one kernel
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
        self.film_sizes = [block.film[1].out_features for block in self.film_blocks()]  # how denoise splits F

    def film_blocks(self) -> list[FiLMResBlock]:
        """The residual blocks in the order ``denoise`` runs them (and in which ``films`` lays out their FiLM)."""
        return [m for m in self.modules() if isinstance(m, FiLMResBlock)]

    def films(self, t: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        """t (B,) diffusion steps, cond (B, cond_dim) -> (B, F): every block's FiLM scale and bias, concatenated."""
        c = torch.cat([self.step_features(t), cond], -1)
        return torch.cat([block.film(c) for block in self.film_blocks()], -1)

    def film_parts(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``films`` split by its two inputs: it equals Mish(step_features) @ w_step + Mish(cond) @ w_cond + bias
        (the FiLM's Mish acts per element on the concatenated step features and condition), with
        w_step (step_embed_dim, F), w_cond (cond_dim, F), bias (F,)."""
        linears = [block.film[1] for block in self.film_blocks()]
        weight = torch.cat([lin.weight for lin in linears]).t()
        return weight[:self.step_embed_dim], weight[self.step_embed_dim:], torch.cat([lin.bias for lin in linears])

    def step_features(self, t: torch.Tensor) -> torch.Tensor:
        """t (B,) -> (B, step_embed_dim): the diffusion step's embedding, the first part of the FiLM input."""
        return self.step_mlp(sinusoidal(t, self.step_embed_dim))

    def denoise(self, x: torch.Tensor, films: torch.Tensor) -> torch.Tensor:
        """x (B, T, C) noisy trajectory, films (B, F) from ``films`` -> (B, T, C) predicted noise."""
        film = iter(films.split(self.film_sizes, -1))
        h = x.transpose(1, 2)
        rows = not self.training  # inference: (B, C, 1, T) channels-last rows (RowConv1d); training: (B, C, T)
        if rows:
            h = h.unsqueeze(2).contiguous(memory_format=torch.channels_last)
        skips = []
        for res1, res2, down in self.down:
            h = res2(res1(h, next(film)), next(film))
            skips.append(h)
            h = down(h)
        for res in self.mid:
            h = res(h, next(film))
        for res1, res2, up in self.up:
            h = torch.cat([h, skips.pop()], 1)
            h = up(res2(res1(h, next(film)), next(film)))
        out = self.final(h)
        return (out.squeeze(2) if rows else out).transpose(1, 2)

    def forward(self, x: torch.Tensor, t: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        """x (B, T, C) noisy trajectory, t (B,) diffusion steps, cond (B, cond_dim) -> (B, T, C)."""
        return self.denoise(x, self.films(t, cond))
