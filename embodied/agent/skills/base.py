"""The skill interface: one policy per skill call, scripted or learned.

A skill is started with a :class:`~embodied.planner.calls.SkillCall` and the
current observation, then asked for one action per control step until it says
it is ``done`` or ``failed``:

    skill.start(call, obs)
    while not (skill.done or skill.failed):
        obs, ... = env.step(skill.act(obs))

``obs`` is the env's observation dict (sensors only). ``act`` returns the env's
action: ``(5,) float32`` in [-1, 1] for the arm (``[dx, dy, dz, dyaw, grip]``),
``(2,) float32`` for the base (``[forward, yaw rate]``). ``done`` means the skill
believes it finished; the planner then checks the effect in memory. ``failed``
means it gave up (timeout, target lost); the planner retries or replans.
The learned heads (``policies/``) implement this same protocol.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from embodied.planner.calls import SkillCall


@runtime_checkable
class Skill(Protocol):
    name: str

    def start(self, call: SkillCall, obs: dict[str, Any]) -> None: ...

    def act(self, obs: dict[str, Any]) -> np.ndarray: ...

    @property
    def done(self) -> bool: ...

    @property
    def failed(self) -> bool: ...
