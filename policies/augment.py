"""Mirrored carries: training windows of the arm reflected in x and/or y about the gripper.

The arm's skills are waypoint followers whose translation command is, per axis,
``clip(error / step, -speed, speed)`` (:mod:`embodied.agent.skills.arm`): the x
action depends on the x error only, the y action on the y error only, and the
waypoint tolerances on the error's length. Reflect the call's target about the
current TCP along an axis, and the demonstrator would have moved exactly as
recorded with that axis's action negated. So a window of a free-space skill
(pick, place) reflected that way is a demonstration too, of a carry in the other
direction. The demos hold few carries toward the robot (-x): about 1% of the place
windows, where the head then moves in y only (docs/learned-policy.md).

Only the call's target and the actions change. The proprio (joint angles, TCP
pose) stays, as the controller that labelled the window never read it; the
target's yaw stays, so the yaw action is untouched.

    batch = mirror_windows(batch, skill_ids={0, 1})   # inside the training loop, under its seeded RNG

Shapes: ``observation.state`` (B, T_obs, 22), ``skill.params`` (B, 8) world frame
``[x, y, z, yaw, size(3), has_yaw]``, ``action`` (B, H, 5) ``[dx, dy, dz, dyaw, grip]``
in [-1, 1] per axis, ``skill.id`` (B,) or (B, 1).
"""

from __future__ import annotations

import torch

from policies.conditioning import ARM_STATE_DIM

TCP = slice(14, 17)  # TCP position in the arm's proprio (policies.conditioning)


def mirror_windows(batch: dict[str, torch.Tensor], skill_ids: set[int] | frozenset[int],
                   generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
    """The batch with each window of ``skill_ids`` reflected in x and in y, each with probability 1/2.

    Other windows are returned unchanged; the input tensors are not modified."""
    state, params, action = batch["observation.state"], batch["skill.params"], batch["action"]
    if state.shape[-1] != ARM_STATE_DIM:
        raise ValueError(f"mirrored windows are the arm's ({ARM_STATE_DIM} proprio values); "
                         f"observation.state has {state.shape[-1]}")
    b = params.shape[0]
    eligible = torch.isin(batch["skill.id"].reshape(b, -1)[:, 0], torch.tensor(sorted(skill_ids), dtype=torch.long))
    flips = torch.rand(b, 2, generator=generator) < 0.5
    sign = torch.where(flips & eligible[:, None], -1.0, 1.0).to(params.dtype)  # (B, 2): x, y
    tcp_xy = state[:, -1, TCP][:, :2]
    out = dict(batch)
    params = params.clone()
    params[:, :2] = torch.where(sign < 0, 2 * tcp_xy - params[:, :2], params[:, :2])  # kept rows stay bit-exact
    out["skill.params"] = params
    action = action.clone()
    action[..., :2] = action[..., :2] * sign[:, None, :]
    out["action"] = action
    return out
