"""What a learned head is conditioned on, in the robot's own frame, and the normaliser it carries.

A skill call's parameters (:meth:`embodied.planner.calls.SkillCall.params`,
``[x, y, z, yaw, size_x, size_y, size_z, has_yaw]``, world frame) are turned
into features relative to the robot at the current observation:

* arm (workcell proprio, 22 values: TCP position [14:17], quaternion (w,x,y,z) [17:21]):
  ``[x - tcp_x, y - tcp_y, z - tcp_z, sin(yaw - tcp_yaw), cos(yaw - tcp_yaw), size(3), has_yaw]``
  (the arm's ``ee_delta`` actions move along world axes, so the offset keeps world axes);
* base (apartment proprio, 5 values: odometry ``[x, y, yaw]`` first): the goal offset rotated
  into the base's heading frame, ``[forward, left, z, sin(dyaw), cos(dyaw), size(3), has_yaw]``
  (the base's actions are body-frame forward speed and yaw rate).

Without a yaw (``has_yaw == 0``) the sine and cosine are zero. :class:`Normalizer`
keeps the dataset statistics as buffers, so they are saved inside the model.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

ARM_STATE_DIM, BASE_STATE_DIM = 22, 5
PARAM_FEATURES = 9


def robot_kind(state_dim: int) -> str:
    """"arm" or "base" from the proprio width (22 workcell, 5 apartment)."""
    if state_dim == ARM_STATE_DIM:
        return "arm"
    if state_dim == BASE_STATE_DIM:
        return "base"
    raise ValueError(f"observation.state has {state_dim} values; heads know the arm ({ARM_STATE_DIM}) "
                     f"and the base ({BASE_STATE_DIM})")


def _quat_yaw(q: torch.Tensor) -> torch.Tensor:
    w, x, y, z = q.unbind(-1)
    return torch.atan2(2 * (x * y + w * z), 1 - 2 * (y * y + z * z))


def relative_params(state: torch.Tensor, params: torch.Tensor, robot: str) -> torch.Tensor:
    """(B, 9) call features in the robot's frame from the current state (B, D) and params (B, 8)."""
    if params.shape[-1] != 8:
        raise ValueError(f"skill.params must have 8 values per frame, got shape {tuple(params.shape)}")
    xyz, yaw, size, has_yaw = params[..., 0:3], params[..., 3], params[..., 4:7], params[..., 7]
    if robot == "arm":
        offset = xyz - state[..., 14:17]
        robot_yaw = _quat_yaw(state[..., 17:21])
    elif robot == "base":
        d = xyz[..., :2] - state[..., :2]
        robot_yaw = state[..., 2]
        c, s = torch.cos(robot_yaw), torch.sin(robot_yaw)
        offset = torch.stack([c * d[..., 0] + s * d[..., 1], -s * d[..., 0] + c * d[..., 1], xyz[..., 2]], -1)
    else:
        raise ValueError(f"robot must be 'arm' or 'base', got {robot!r}")
    dyaw = yaw - robot_yaw
    # The gripper is symmetric under half turns; the base is not.
    turns = 2.0 if robot == "arm" else 1.0
    angle = torch.stack([torch.sin(turns * dyaw), torch.cos(turns * dyaw)], -1) * has_yaw.unsqueeze(-1)
    return torch.cat([offset, angle, size, has_yaw.unsqueeze(-1)], -1)


class Normalizer(nn.Module):
    """Mean/std for state and call features; min/max (to [-1, 1]) or mean/std for actions.

    ``stats``: {feature: {"mean", "std", "min", "max"}} as tensors or lists; the keys used are
    ``observation.state``, ``action`` and ``skill.params_rel`` (computed at training start), and
    those of ``optional`` that the head uses (``skill.guide``: route features).
    """

    KEYS = ("observation.state", "action", "skill.params_rel")

    def __init__(self, stats: dict[str, dict], action_mode: str = "min_max", eps: float = 1e-2,
                 optional: tuple[str, ...] = ()):
        super().__init__()
        self.keys = self.KEYS + tuple(optional)
        if action_mode not in ("min_max", "mean_std"):
            raise ValueError(f"action normalisation must be 'min_max' or 'mean_std', got {action_mode!r}")
        self.action_mode = action_mode
        for key in self.keys:
            if key not in stats:
                raise ValueError(f"normaliser statistics lack {key!r}; have {sorted(stats)}")
            for s in ("mean", "std", "min", "max"):
                if s not in stats[key]:
                    raise ValueError(f"normaliser statistics of {key!r} lack {s!r}")
                value = torch.as_tensor(stats[key][s], dtype=torch.float32).reshape(-1)
                # Checked in numpy: a head built on the meta device (a shape probe, see registry) has no values.
                with np.errstate(over="ignore"):  # a value past float32's range becomes inf and is refused here
                    finite = np.isfinite(np.asarray(stats[key][s], dtype=np.float32)).all()
                if not finite:
                    raise ValueError(f"normaliser statistic {key}.{s} is not finite")
                self.register_buffer(f"{key.replace('.', '_')}_{s}", value.clone())
        self.eps = eps

    def _get(self, key: str, s: str) -> torch.Tensor:
        return getattr(self, f"{key.replace('.', '_')}_{s}")

    def norm(self, key: str, x: torch.Tensor) -> torch.Tensor:
        if key == "action" and self.action_mode == "min_max":
            lo, hi = self._get(key, "min"), self._get(key, "max")
            return (x - lo) / (hi - lo).clamp_min(self.eps) * 2 - 1
        return (x - self._get(key, "mean")) / self._get(key, "std").clamp_min(self.eps)

    def unnorm(self, key: str, x: torch.Tensor) -> torch.Tensor:
        if key == "action" and self.action_mode == "min_max":
            lo, hi = self._get(key, "min"), self._get(key, "max")
            return (x + 1) / 2 * (hi - lo).clamp_min(self.eps) + lo
        return x * self._get(key, "std").clamp_min(self.eps) + self._get(key, "mean")

    def to_json(self) -> dict:
        return {k: {s: self._get(k, s).tolist() for s in ("mean", "std", "min", "max")} for k in self.keys}


def feature_stats(x: torch.Tensor) -> dict[str, list[float]]:
    """mean/std/min/max over axis 0 of ``x`` (N, F)."""
    x = x.double()
    return {"mean": x.mean(0).tolist(), "std": x.std(0, unbiased=False).tolist(),
            "min": x.min(0).values.tolist(), "max": x.max(0).values.tolist()}


def sinusoidal(t: torch.Tensor, dim: int) -> torch.Tensor:
    """(B,) -> (B, dim) sinusoidal embedding of a scalar (diffusion step)."""
    half = dim // 2
    freq = torch.exp(torch.arange(half, device=t.device, dtype=torch.float32) * (-math.log(10000.0) / (half - 1)))
    arg = t.float().unsqueeze(-1) * freq
    return torch.cat([arg.sin(), arg.cos()], -1)
