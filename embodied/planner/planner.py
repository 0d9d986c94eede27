"""The planner: a parsed goal + memory -> a plan of skill calls; effect checks.

    planner = Planner()
    plan = planner.plan(goal, memory, target_rgb)        # list[SkillCall]
    call = planner.refresh(call, memory)                 # parameters from memory's latest estimate
    ok = planner.check(call, memory, since=t_start)      # did memory see the expected effect?

Plans by action (``Goal.action``):
    open / close D       open(D) / close(D)
    lift C               lift(C)
    touch X              touch(X)
    press Bs [in order]  press(B) for each, in the order they lit up
    retrieve X           uncover(X), pick(X)
    put_back X           uncover(X), pick(X), place(X @ where it was first seen)
    put_back everything  for each object away from where it was first seen:
                         uncover it, pick, open the drawer it came from, place
    go_to X              navigate(X now / X where first seen)
    observe              nothing
uncover(X): open the drawer X is in, or lift the cup over it and set the cup aside.
"""

from __future__ import annotations

import math

import numpy as np

from embodied.planner.calls import SkillCall
from embodied.planner.grammar import Goal, Ref
from embodied.planner.resolver import Resolver, ResolutionError

PLACE_TOL = 0.02  # m: a placed object's centre within this of the target (xy)
MOVED_TOL = 0.03  # m: an object farther than this from where it started has been displaced
LIFTED = 0.04  # m: a lifted cup's centre above where it stood


class Planner:
    """Deterministic, memory-only planning; no task names, no simulator state."""

    def __init__(self, workspace_low=(0.25, -0.45), workspace_high=(0.65, 0.45)):
        self.workspace_low = np.asarray(workspace_low, dtype=np.float64)
        self.workspace_high = np.asarray(workspace_high, dtype=np.float64)

    # --- planning --------------------------------------------------------------------
    def plan(self, goal: Goal, memory, target_rgb=None) -> list[SkillCall]:
        if goal.action == "observe":
            return []
        r = Resolver(memory, target_rgb)
        ref = goal.ref
        assert ref is not None
        if goal.action == "put_back" and ref.noun == "everything":
            return self._put_everything_back(r)
        nodes = r.resolve(ref)
        node = nodes[0]
        note = str(ref)
        if goal.action in ("open", "close"):
            return [self.call(goal.action, node, r, note)]
        if goal.action == "lift":
            return [self.call("lift", node, r, note)]
        if goal.action == "touch":
            return [self.call("touch", node, r, note)]
        if goal.action == "press":
            order = r.lit_order(nodes) if goal.order == "lit" else nodes
            return [self.call("press", n, r, note) for n in order]
        if goal.action == "retrieve":
            return self._uncover(node, r) + [self.call("pick", node, r, note, extra={"lift_to": 0.2})]
        if goal.action == "put_back":
            goal_xyz = r.position(node, "first")
            return self._uncover(node, r) + [
                self.call("pick", node, r, note),
                SkillCall("place", node, tuple(goal_xyz), 0.0, tuple(r.size(node)), note),
            ]
        if goal.action == "go_to":
            # Several nodes can look alike (a lost track leaves a stale one): where it is now is the
            # latest sighting; where it was first seen is the earliest.
            alike = r.resolve(Ref(**{**ref.__dict__, "plural": True}))
            if goal.when == "first":
                node = min(alike, key=lambda n: (r.memory.history(n)[0]["t"], n))
            else:
                node = max(alike, key=lambda n: (r.memory.last_seen(n), r.attrs(n)["n_obs"], n))
            return [self.navigate(r, node, goal.when, note)]
        raise ValueError(f"no plan for action {goal.action!r}")

    def call(self, skill: str, node: str, r: Resolver, note: str = "", extra: dict | None = None) -> SkillCall:
        """A call on ``node`` with its remembered box; drawers get their pull direction as yaw."""
        yaw = 0.0
        if skill in ("open", "close"):
            yaw = self._pull_heading(node, r)
        return SkillCall(skill, node, tuple(r.position(node)), yaw, tuple(r.size(node)), note, dict(extra or {}))

    def navigate(self, r: Resolver, node: str, when: str, note: str) -> SkillCall:
        xyz = r.position(node, when) if when == "first" else self._latest(r, node)
        return SkillCall("navigate", node, tuple(xyz), math.nan, tuple(r.size(node)), note, {"when": when})

    def _latest(self, r: Resolver, node: str) -> np.ndarray:
        return r.position(node)

    def _pull_heading(self, drawer: str, r: Resolver) -> float:
        """Heading (rad) from the drawer's housing to the drawer: the way it slides out."""
        housings = r.memory.related(drawer, "part_of")
        if not housings:
            return math.pi  # facing the robot, the usual mounting
        d = r.position(drawer)[:2] - r.position(housings[0])[:2]
        axis = int(np.argmax(np.abs(d)))  # drawers slide along a housing axis
        return float(math.atan2(np.sign(d[1]) if axis == 1 else 0.0, np.sign(d[0]) if axis == 0 else 0.0))

    def _uncover(self, node: str, r: Resolver) -> list[SkillCall]:
        holder = r.holder(node)
        if not holder:
            return []
        cls = r.attrs(holder)["cls"]
        if cls == "drawer" or r.attrs(holder)["kind"] == "articulated":
            if r.memory.where_is(holder)["state"] == "open":
                return []
            return [self.call("open", holder, r, f"drawer holding {r.attrs(node)['cls']}")]
        # A cup over it: lift the cup and set it down out of the way.
        aside = self._free_spot(r, avoid=[node, holder])
        return [
            self.call("lift", holder, r, f"cup over {r.attrs(node)['cls']}"),
            SkillCall("place", holder, tuple(aside), 0.0, tuple(r.size(holder)), "cup aside"),
        ]

    def _put_everything_back(self, r: Resolver) -> list[SkillCall]:
        plan: list[SkillCall] = []
        moved = []
        for n in r.candidates(Ref("everything")):
            first, now = r.position(n, "first"), r.position(n)
            if float(np.linalg.norm(first[:2] - now[:2])) > MOVED_TOL or abs(first[2] - now[2]) > MOVED_TOL:
                moved.append(n)
        for n in moved:
            note = f"{r.attrs(n).get('colour', '')} {r.attrs(n)['cls']}".strip()
            plan += self._uncover(n, r)
            plan.append(self.call("pick", n, r, note))
            plan.append(SkillCall("place", n, tuple(r.position(n, "first")), 0.0, tuple(r.size(n)), note))
        return plan

    def _free_spot(self, r: Resolver, avoid: list[str], clearance: float = 0.1) -> np.ndarray:
        """A table spot at least ``clearance`` from every remembered object (xy grid search)."""
        others = [
            r.position(n)[:2]
            for n in r.memory.find()
            if r.attrs(n)["kind"] in ("object", "container", "articulated", "surface")
            and r.attrs(n)["cls"] not in ("table",)
            and float(np.prod(r.size(n)[:2])) < 0.1
        ]
        best, best_d = None, -1.0
        for x in np.linspace(self.workspace_low[0], self.workspace_high[0], 9):
            for y in np.linspace(self.workspace_low[1], self.workspace_high[1], 19):
                p = np.array([x, y])
                d = min((float(np.linalg.norm(p - o)) for o in others), default=1.0)
                d = min(d, 0.3) - 0.01 * abs(y)  # prefer spots near the middle among the clear ones
                if d > best_d:
                    best, best_d = p, d
        if best is None or best_d < clearance - 0.05:
            raise ResolutionError("no free spot on the table to set something aside")
        return np.array([best[0], best[1], 0.0])

    # --- keeping parameters fresh ----------------------------------------------------
    def refresh(self, call: SkillCall, memory, target_rgb=None) -> SkillCall:
        """The call with its target's latest remembered box (targets move: drawers slide, blocks drop)."""
        if not call.target or call.target not in memory.graph or call.skill in ("place", "navigate"):
            return call
        r = Resolver(memory, target_rgb)
        return SkillCall(
            call.skill, call.target, tuple(r.position(call.target)), call.yaw, tuple(r.size(call.target)),
            call.note, call.extra,
        )

    # --- monitoring ------------------------------------------------------------------
    def check(self, call: SkillCall, memory, since: int) -> bool:
        """Whether memory shows the call's expected effect."""
        if call.skill == "navigate" or call.skill == "wait":
            return True  # the navigate skill checks its own arrival against the map
        if call.target not in memory.graph:
            return False
        where = memory.where_is(call.target)
        if call.skill == "open":
            return where["state"] == "open"
        if call.skill == "close":
            return where["state"] == "closed"
        if call.skill == "pick":
            return where["held"]
        if call.skill == "lift":
            return where["held"] or where["position"][2] > call.xyz[2] + LIFTED
        if call.skill == "place":
            p = np.asarray(where["position"])
            return not where["held"] and float(np.linalg.norm(p[:2] - np.asarray(call.xyz[:2]))) <= PLACE_TOL
        if call.skill == "press":
            return any(t >= since for t in memory.when("pressed", call.target))
        if call.skill == "touch":
            return True
        return True
