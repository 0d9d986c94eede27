"""Exponential moving average of a model's weights (Diffusion Policy's warm-up schedule)."""

from __future__ import annotations

import torch
from torch import nn


class EMA:
    """``decay = min(max_decay, 1 - (1 + step) ** -power)``: early steps follow the weights closely."""

    def __init__(self, model: nn.Module, power: float = 0.75, max_decay: float = 0.9999):
        self.power, self.max_decay = power, max_decay
        self.step = 0
        self.shadow = {k: v.detach().clone() for k, v in model.state_dict().items()}

    def decay(self) -> float:
        return min(self.max_decay, max(0.0, 1 - (1 + self.step) ** -self.power))

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        d = self.decay()
        for k, v in model.state_dict().items():
            s = self.shadow[k]
            if v.dtype.is_floating_point:
                s.mul_(d).add_(v.detach(), alpha=1 - d)
            else:
                s.copy_(v)
        self.step += 1

    def state_dict(self) -> dict:
        return {"step": self.step, "power": self.power, "max_decay": self.max_decay, "shadow": self.shadow}

    def load_state_dict(self, state: dict) -> None:
        missing = set(self.shadow) - set(state["shadow"])
        if missing:
            raise KeyError(f"EMA state lacks {sorted(missing)[0]!r}")
        self.step, self.power, self.max_decay = int(state["step"]), float(state["power"]), float(state["max_decay"])
        # On this EMA's device (a checkpoint loads on the CPU; a resumed CUDA run averages on the GPU).
        self.shadow = {k: state["shadow"][k].to(self.shadow[k].device, copy=True) for k in self.shadow}
