"""A learned navigate skill: the agent's own planner says *where*, the head decides *how to move*.

A head conditioned only on the goal's pose cannot know the walls. So the
learned navigate skill keeps a route that the agent lends it (:class:`Route`;
the agent's is its scripted navigate skill run on its own free-space map
built from head depth): the stand-off point near the target,
the A* path to it on the map, replanning when stuck, the step and replan
budgets, and the depth safety check (an obstacle in the swept corridor
stops the base, backs it off and replans). Each step it hands the head the
route's features in the base frame (``skill.guide``: the waypoint being
driven to, the one after it, whether it is the path's end, whether the
path is finished) besides the call's target in the robot's frame; the head
returns the base's ``[forward, yaw rate]`` action and decides, through its
done channel, when the skill is over (the scripted rule, within reach and
facing the target, is not used).

    skills = load_head("act:policies/checkpoints/act_nav")   # {"navigate": LearnedNavigateSkill}
    agent = MemoryAgent(labels, skills=skills)                # the agent lends it a route (use_route)

This module imports nothing from the agent or the memory: the route comes in
through :class:`Route`, built by the agent with ``route_options``.

While the route overrides the head (backing off, a replan step) the head's
queues are reset, so it does not continue a plan made before the override.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from embodied.planner.calls import SkillCall

if TYPE_CHECKING:
    from policies.skill_head import LearnedSkill

# The route counts the path's end as reached within 8 cm (the scripted controller: 4 cm): a learned driver
# that circles the last few centimetres then turns to face the target instead. At the path's end out of
# reach, the route adds a waypoint toward the target (the scripted controller creeps there by itself).
ROUTE_DEFAULTS: dict[str, Any] = {"last_tol": 0.08, "creep_waypoint": True}


class Route(Protocol):
    """The route half of a navigate skill, lent by the agent (its ``NavigateSkill`` on its own map).

    ``guide`` is the (G,) float32 route features of the last step in the base frame (G = the head's
    ``guide_dim``); ``guide_step`` plans this step and returns the base pose (x, y, yaw) with either None
    (the head drives) or the route's own ``[forward, yaw rate]`` action (backing off, a replan);
    ``drive`` turns the head's speeds into the base action with the route's safety checks.
    """

    guide: np.ndarray
    steps: int

    @property
    def done(self) -> bool: ...

    @property
    def failed(self) -> bool: ...

    def start(self, call: SkillCall, obs: dict[str, Any]) -> None: ...

    def act(self, obs: dict[str, Any]) -> np.ndarray: ...

    def guide_step(self, obs: dict[str, Any], scripted_done: bool = True) -> tuple[np.ndarray, np.ndarray | None]: ...

    def drive(self, obs: dict[str, Any], pose: np.ndarray, v: float, w: float) -> np.ndarray: ...


class LearnedNavigateSkill:
    """Skill protocol for ``navigate`` calls: route from the agent's map, motion and done from ``head``."""

    name = "navigate"

    def __init__(self, head: LearnedSkill, **route_options):
        if head.name != "navigate":
            raise ValueError(f"LearnedNavigateSkill drives with a navigate head, got a {head.name!r} head")
        if not head.policy.config.guide_dim:
            raise ValueError("LearnedNavigateSkill needs a navigate head trained on route features (guide_dim > 0)")
        self.head = head
        self.head.budget = 10**9  # the route's step budget (max_steps) bounds the skill
        self.route_options = {**ROUTE_DEFAULTS, **route_options}  # how the agent builds the route it lends
        self.route: Route | None = None
        self._done = False
        self.overrides = 0  # steps the route acted instead of the head (back-off, replans) since start
        self.scripted = False  # this call runs on the route's scripted driver (see start)

    def use_route(self, route: Route) -> None:
        """The agent's route on its own map (lent at its first step and whenever it renews the map)."""
        dim = self.head.policy.config.guide_dim
        if len(route.guide) != dim:
            raise ValueError(f"the navigate head takes {dim} route features; the route gives {len(route.guide)}")
        self.route = route

    @property
    def policy(self):
        """The trained head (:class:`policies.head.HeadBase`) that moves the base."""
        return self.head.policy

    @property
    def done(self) -> bool:
        return self._done

    @property
    def failed(self) -> bool:
        return self.route is not None and self.route.failed or self.head.failed

    @property
    def guide(self) -> np.ndarray:
        """(guide_dim,) route features of the last step (zeros before the first)."""
        if self.route is None:
            return np.zeros(self.head.policy.config.guide_dim, dtype=np.float32)
        return self.route.guide

    def start(self, call: SkillCall, obs: dict[str, Any]) -> None:
        if self.route is None:
            raise RuntimeError("LearnedNavigateSkill has no route: the agent lends it one on its map (use_route) "
                               "before start")
        self.route.start(call, obs)
        self.head.start(call, obs)
        self._done = False
        self.overrides = 0
        # The shipped head learned object goals only (stand off, face the object); a room goal (stand
        # anywhere inside) is out of its training data, so the route's own scripted driver runs it.
        self.scripted = bool(call.extra.get("room")) and not self.head.policy.config.room_goals

    def act(self, obs: dict[str, Any]) -> np.ndarray:
        if self.route is None:
            raise RuntimeError("LearnedNavigateSkill: act() before use_route() and start()")
        if self._done or self.failed:
            return np.zeros(2, dtype=np.float32)
        if self.scripted:
            action = self.route.act(obs)
            self._done = self.route.done
            return action
        pose, override = self.route.guide_step(obs, scripted_done=False)
        if override is not None:
            self.overrides += 1
            self.head.policy.reset()
            return override
        action = self.head.act(obs, self.route.guide)
        if self.head.done:
            self._done = True
        return self.route.drive(obs, pose, float(action[0]), float(action[1]))
