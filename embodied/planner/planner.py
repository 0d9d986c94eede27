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
    press B as many times as S flashed
                         press(B), once per flash memory saw of S
    retrieve X           uncover(X), pick(X)
    put_back X           uncover(X), pick(X), place(X @ where it was first seen)
    put_back everything  for each object away from where it was first seen:
                         uncover it, pick, open the drawer it came from, place;
                         each object's calls carry ``extra[UNIT]`` (its node): units run in any order;
                         first, shut any drawer left open that no unit opens; a unit begun
                         (its object in hand, its drawer open: extra[RESUMED]) goes first
    go_to X              navigate(X now / X where first seen)
    go_to_room X         navigate(the room memory has X in: its centre on the floor)
    go_to_room most X    navigate(the room memory holds the most X in)
    as_told              the plan of the goal memory noted as told for later ("remember this instruction:
                         at the end, <goal>"), the earliest one
    observe              nothing
uncover(X): open the drawer X is in, or lift the cup over it and set the cup aside.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from embodied.planner.calls import RESUMED, UNIT, SkillCall
from embodied.planner.grammar import Goal, Ref
from embodied.planner.resolver import ResolutionError, Resolver, heard_at, told_for_later

PLACE_TOL = 0.02  # m: a placed object's centre within this of the target (xy)
MOVED_TOL = 0.03  # m: an object farther than this from where it started has been displaced
LIFTED = 0.04  # m: a lifted cup's centre above where it stood
NAV_REACH = 0.55  # m: the head camera this close to a goal point (the base is 0.1 m behind it)
# A touch ended with the hand over its target: memory logs the hand's position at every 5 cm of
# travel (MemoryConfig.agent_log_tol), so these allow that lag on top of a fingertip on the top.
TOUCH_REACH = 0.08  # m (xy) from the target's centre
TOUCH_ABOVE = 0.10  # m above the target's top
IN_DRAWER = 0.10  # m: where a drawer's tray holds an object, behind the drawer's outer edge (its handle)
TRAY_FLOOR = 0.012  # m: a drawer tray's floor above the drawer's lowest point
TRAY_BEHIND = 0.1  # m: a tray reaches this far back into the housing behind what is seen of its drawer


class Planner:
    """Deterministic, memory-only planning; no task names, no simulator state."""

    def __init__(self, workspace_low=(0.32, -0.45), workspace_high=(0.62, 0.45)):
        self.workspace_low = np.asarray(workspace_low, dtype=np.float64)
        self.workspace_high = np.asarray(workspace_high, dtype=np.float64)

    # --- planning --------------------------------------------------------------------
    def plan(self, goal: Goal, memory, target_rgb=None) -> list[SkillCall]:
        if goal.action == "observe":
            return []
        if goal.action == "as_told":
            return self.plan(told_for_later(memory), memory, target_rgb)
        r = Resolver(memory, target_rgb)
        ref = goal.ref
        assert ref is not None
        if goal.action == "put_back" and ref.noun == "everything":
            return self._put_everything_back(r, heard_at(memory, goal.text))
        nodes = r.resolve(ref)
        node = nodes[0]
        note = str(ref)
        if goal.action in ("open", "close"):
            return [self.call(goal.action, node, r, note)]
        if goal.action == "lift":
            return [self.call("lift", node, r, note)]
        if goal.action == "touch":
            return [self.call("touch", node, r, note)]
        if goal.action == "press" and goal.times_of is not None:
            # What flashed is the one of them memory saw flash most: a detector that split the screen
            # from its frame named both pieces a screen.
            times = max(r.flash_count(n) for n in r.resolve(dataclasses.replace(goal.times_of, plural=True)))
            return [self.call("press", node, r, f"{note} ({k + 1} of {times})") for k in range(times)]
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
        if goal.action == "put_in":
            container = r.resolve(goal.into)[0]
            dest = self._spot_inside(r, container, node)
            return [self.call("pick", node, r, note),
                    SkillCall("place", node, tuple(dest), 0.0, tuple(r.size(node)), f"{note} into the {goal.into}",
                              {"into": container})]
        if goal.action == "go_to":
            # Several nodes can look alike (a lost track leaves a stale one): where it is now is the
            # latest sighting; where it was first seen is the earliest.
            alike = r.resolve(Ref(**{**ref.__dict__, "plural": True}))
            if ref.moved is not None or ref.gone:  # "the object that was moved": the clause has ranked them
                node = alike[0]
            elif goal.when == "first":
                node = min(alike, key=lambda n: (r.memory.history(n)[0]["t"], n))
            else:
                node = max(alike, key=lambda n: (r.memory.last_seen(n), r.attrs(n)["n_obs"], n))
            return [self.navigate(r, node, goal.when, note)]
        if goal.action == "go_to_room":
            alike = r.resolve(Ref(**{**ref.__dict__, "plural": True}))
            if goal.order == "most":
                room, why = r.room_with_most(alike), f"the room with the most {ref}"
            else:
                # The latest sighting decides, as for "go to": a stale duplicate may sit in another room.
                node = max(alike, key=lambda n: (r.memory.last_seen(n), r.attrs(n)["n_obs"], n))
                room, why = r.memory.room_of(node), f"where the {ref} was"
            if not room:
                raise ResolutionError(f"memory knows no room for the {ref} (no rooms segmented yet?)")
            name = r.attrs(room).get("name", "")
            return [SkillCall("navigate", room, tuple(r.position(room)), math.nan, tuple(r.size(room)),
                              f"{name or room} ({why})", {"room": True})]
        raise ValueError(f"no plan for action {goal.action!r}")

    def call(self, skill: str, node: str, r: Resolver, note: str = "", extra: dict | None = None) -> SkillCall:
        """A call on ``node`` with its remembered box; drawers get their pull direction as yaw."""
        yaw = 0.0
        if skill in ("open", "close"):
            yaw = self._pull_heading(node, r)
        return SkillCall(skill, node, tuple(r.position(node)), yaw, tuple(r.size(node)), note, dict(extra or {}))

    def navigate(self, r: Resolver, node: str, when: str, note: str) -> SkillCall:
        xyz = r.position(node, when)
        return SkillCall("navigate", node, tuple(xyz), math.nan, tuple(r.size(node)), note, {"when": when})

    def _pull_heading(self, drawer: str, r: Resolver) -> float:
        """Heading (rad) the drawer slides out along: as memory's votes have it (``slide_direction``),
        else from the housing's centre to the drawer's (which a housing seen merged with its neighbour
        moves sideways)."""
        out = r.memory.slide_direction(drawer)
        if out is not None:
            return float(math.atan2(out[1], out[0]))
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
        if _is_drawer(r, holder):
            if r.memory.where_is(holder)["state"] == "open":
                return []
            return [self.call("open", holder, r, f"drawer holding {r.attrs(node)['cls']}")]
        # A cup over it: lift the cup and set it down out of the way.
        aside = self._free_spot(r, near=r.position(holder)[:2])  # every remembered footprint is avoided
        return [
            self.call("lift", holder, r, f"cup over {r.attrs(node)['cls']}"),
            SkillCall("place", holder, (aside[0], aside[1], r.position(holder)[2]), 0.0, tuple(r.size(holder)),
                      "cup aside"),
        ]

    def _put_everything_back(self, r: Resolver, told: int | None = None) -> list[SkillCall]:
        """Every object away from where it was first seen goes back there, one at a time: open the
        drawer it is in or goes into, lift aside a cup over it or over its place, pick, place, then
        shut the drawers this opened (an open drawer's handle reaches over the table). With ``told``
        (the memory time the instruction came), only objects first seen before it: what was watched
        has a place it was; a node first seen since (geometric perception's bits of an open drawer's
        insides, a cup set aside taken for a block) has none, and plans for it run into dead ends."""
        objects = r.candidates(Ref("everything"))
        watched = [n for n in objects if told is None or r.attrs(n)["first_seen"] < told]
        moved = [n for n in watched if _displaced(r, n)]
        # Spots a cup set aside must keep clear of: every object now and every place one goes back to.
        keep_clear = [r.position(n)[:2] for n in objects] + [r.position(n, "first")[:2] for n in moved]
        plan: list[SkillCall] = []
        units_open: set[str] = set()
        held = [n for n in r.memory.find() if r.memory.where_is(n)["held"]]
        # Whatever the hand holds (a replan after a failed place) is set down first: the hand must be
        # free to open, lift or pick, and a held object's unit is half done.
        moved.sort(key=lambda n: n not in held)
        for n in moved:
            start = len(plan)
            note = f"{r.attrs(n).get('colour', '')} {r.attrs(n)['cls']}".strip()
            dest = r.position(n, "first")
            if n in held:
                into = self._container_at_first_sight(r, n)
                extra = {"into": into} if into and _is_drawer(r, into) else {}
                plan.append(SkillCall("place", n, tuple(dest), 0.0, tuple(r.size(n)), f"{note} back",
                                      {**extra, UNIT: n, RESUMED: True}))
                if extra and r.memory.where_is(into)["state"] == "open":  # its unit opened it: shut it after
                    plan.append(self.call("close", into, r, "drawer", {UNIT: n, RESUMED: True}))
                    units_open.add(into)
                continue
            opened: list[str] = []
            resumed = False  # its drawer stands open already: the unit was begun (a replan cut it short)
            for holder in (r.holder(n), self._container_at_first_sight(r, n)):
                if holder and _is_drawer(r, holder) and holder not in opened:
                    # Pulled again even if open: memory sees the contents anew as it slides (a pick aimed
                    # where memory last saw them, under the housing, misses until then).
                    resumed = resumed or r.memory.where_is(holder)["state"] == "open"
                    plan.append(self.call("open", holder, r, f"drawer for {note}"))
                    opened.append(holder)
            for cup in self._cups_over(r, n, dest):
                aside = self._free_spot(r, keep_clear, near=r.position(cup)[:2])
                keep_clear.append(aside[:2])
                plan.append(self.call("lift", cup, r, f"cup over {note}"))
                plan.append(SkillCall("place", cup, (aside[0], aside[1], r.position(cup)[2]), 0.0,
                                      tuple(r.size(cup)), "cup aside"))
            plan.append(self.call("pick", n, r, note))
            into = self._container_at_first_sight(r, n)
            extra = {"into": into} if into and _is_drawer(r, into) else {}
            plan.append(SkillCall("place", n, tuple(dest), 0.0, tuple(r.size(n)), f"{note} back", extra))
            plan += [self.call("close", d, r, "drawer") for d in opened]
            # One object's calls form a unit; units may run in any order (a learned policy is not
            # taught this plan's arbitrary order: policies.memory_policy any_order).
            tag = {UNIT: n, RESUMED: True} if resumed else {UNIT: n}
            plan[start:] = [dataclasses.replace(c, extra={**c.extra, **tag}) for c in plan[start:]]
            units_open.update(opened)
        # A drawer left open (its unit cut short by a replan, its object already back) is shut first,
        # as its unit would have: the same state always gets the same next call.
        left_open = [d for d in r.memory.find(kind="container")
                     if _is_drawer(r, d) and d not in units_open and r.memory.where_is(d)["state"] == "open"]
        shut = [self.call("close", d, r, "drawer left open") for d in left_open]
        # A cup held up (its unit cut short) is set down out of the way before anything else.
        cups = [n for n in held if n not in moved and r.attrs(n)["kind"] == "container"]
        if cups:
            spot = self._free_spot(r, keep_clear, near=r.position(cups[0])[:2])
            return [SkillCall("place", cups[0], (spot[0], spot[1], r.position(cups[0], "first")[2]), 0.0,
                              tuple(r.size(cups[0])), "cup aside")] + shut + plan
        # Units begun come first: the held object's, then the drawers left open, then units whose drawer
        # stands open, then the rest (each unit's calls stay together; the sort is stable).
        first = [c for c in plan if c.extra.get(UNIT) in held]
        rest = [c for c in plan if c.extra.get(UNIT) not in held]
        rest.sort(key=lambda c: not c.extra.get(RESUMED, False))
        return first + shut + rest

    def _spot_inside(self, r: Resolver, container: str, node: str) -> np.ndarray:
        """Where ``node``'s centre goes to rest in ``container`` (3,) m: on a drawer's tray, ``IN_DRAWER``
        behind its front; else on the middle of the container's top face."""
        lo, hi = (np.asarray(r.attrs(container)[k], dtype=np.float64) for k in ("box_min", "box_max"))
        half = r.size(node)[2] / 2
        if not _is_drawer(r, container):
            return np.array([*(lo[:2] + hi[:2]) / 2, hi[2] + half])
        return np.array([*self._in_drawer_xy(r, container), lo[2] + TRAY_FLOOR + half])

    def _in_drawer_xy(self, r: Resolver, drawer: str) -> np.ndarray:
        """(2,) m: where the drawer's tray holds an object as the drawer stands now (``IN_DRAWER`` m behind
        its front, along its pull direction)."""
        heading = self._pull_heading(drawer, r)
        out = np.array([math.cos(heading), math.sin(heading)])
        c, size = r.position(drawer)[:2], r.size(drawer)[:2]
        front = c + out * (abs(out[0]) * size[0] + abs(out[1]) * size[1]) / 2
        return front - out * IN_DRAWER

    def _container_at_first_sight(self, r: Resolver, node: str) -> str:
        """The container the node was in when first seen (from the graph as it stood then), if memory still
        holds it (a container deleted since, a merged duplicate, has nothing left to open)."""
        first = r.memory.history(node)[0]["t"]
        then = r.memory.snapshot(first)
        now = r.memory.graph
        inside = [v for _, v, k in then.out_edges(node, keys=True) if k == "in" and v in now] if node in then else []
        if inside:
            return inside[0]
        # Seen first as a drawer slid open: the drawer whose box held it then, reaching back into the housing
        # (a block at the back of a tray sliding out lies behind what is seen of it).
        p = r.position(node, "first")
        for d in r.memory.find(kind="container"):
            if d in then and d in now and _is_drawer(r, d):
                lo, hi = np.array(then.nodes[d]["box_min"][:2]), np.array(then.nodes[d]["box_max"][:2])
                out = r.memory.slide_direction(d)
                if out is not None:
                    lo, hi = lo + np.minimum(-out, 0) * TRAY_BEHIND, hi + np.maximum(-out, 0) * TRAY_BEHIND
                if np.all(p[:2] >= lo - 0.01) and np.all(p[:2] <= hi + 0.01):
                    return d
        return ""

    def _cups_over(self, r: Resolver, node: str, dest: np.ndarray) -> list[str]:
        """Cups covering the node now, or standing on the place it goes back to."""
        cups = []
        holder = r.holder(node)
        if holder and not _is_drawer(r, holder):
            cups.append(holder)
        for c in r.memory.find(kind="container"):
            if c in cups or _is_drawer(r, c) or c == node:
                continue
            if float(np.linalg.norm(r.position(c)[:2] - dest[:2])) < 0.04:
                cups.append(c)
        return cups

    def _free_spot(self, r: Resolver, keep_clear=(), near=None, clearance: float = 0.09) -> np.ndarray:
        """A table spot (xy grid search in the workspace) at least ``clearance`` from every remembered
        object's footprint and from ``keep_clear`` points; the one nearest ``near`` among the clear."""
        boxes = [
            (np.asarray(r.attrs(n)["box_min"])[:2], np.asarray(r.attrs(n)["box_max"])[:2])
            for n in r.memory.find()
            if r.attrs(n)["kind"] in ("object", "container", "articulated", "surface")
            and float(np.prod(r.size(n)[:2])) < 0.2  # not the table itself
        ]
        points = [np.asarray(p, dtype=np.float64)[:2] for p in keep_clear]
        near = np.asarray(near if near is not None else (self.workspace_low + self.workspace_high) / 2)[:2]
        best, best_key = None, None
        for x in np.linspace(self.workspace_low[0], self.workspace_high[0], 16):
            for y in np.linspace(self.workspace_low[1], self.workspace_high[1], 31):
                p = np.array([x, y])
                gaps = [_box_distance(p, lo, hi) for lo, hi in boxes] + [float(np.linalg.norm(p - q)) for q in points]
                if min(gaps, default=1.0) < clearance:
                    continue
                key = float(np.linalg.norm(p - near))
                if best_key is None or key < best_key:
                    best, best_key = p, key
        if best is None:
            raise ResolutionError("no free spot on the table to set something aside")
        return np.array([best[0], best[1], 0.0])

    # --- keeping parameters fresh ----------------------------------------------------
    def refresh(self, call: SkillCall, memory, target_rgb=None) -> SkillCall:
        """The call with its target's latest remembered box (targets move: drawers slide, blocks drop).
        A place into a drawer aims at the drawer as it stands now (``_in_drawer_xy``)."""
        r = Resolver(memory, target_rgb)
        into = call.extra.get("into", "")
        if call.skill == "place" and into in memory.graph:
            xyz = (*self._in_drawer_xy(r, into), call.xyz[2])
            return SkillCall(call.skill, call.target, tuple(xyz), call.yaw, call.size, call.note, call.extra)
        if call.skill == "navigate" and call.target in memory.graph and call.extra.get("when") == "now":
            # Where an object is now: memory's latest estimate (where it was first lies in the past, and a
            # room's centre stays).
            return SkillCall(call.skill, call.target, tuple(r.position(call.target)), call.yaw, call.size, call.note,
                             call.extra)
        if not call.target or call.target not in memory.graph or call.skill in ("place", "navigate"):
            return call
        return SkillCall(
            call.skill, call.target, tuple(r.position(call.target)), call.yaw, tuple(r.size(call.target)),
            call.note, call.extra,
        )

    # --- monitoring ------------------------------------------------------------------
    def check(self, call: SkillCall, memory, since: int) -> bool:
        """Whether memory shows the call's expected effect."""
        if call.skill == "wait":
            return True
        if call.skill == "navigate":
            # The agent node is the head camera; within reach of the goal point, seen from memory.
            if "agent" not in memory.graph:
                return False
            here = np.asarray(memory.graph.nodes["agent"]["position"])[:2]
            return float(np.linalg.norm(here - np.asarray(call.xyz[:2]))) <= NAV_REACH
        if call.skill == "touch":
            return _hand_on(memory, call)
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
        return True


def _hand_on(memory, call: SkillCall) -> bool:
    """Whether memory has the hand (the workcell agent node, the TCP) over the touched target."""
    if "agent" not in memory.graph:
        return False
    hand = np.asarray(memory.graph.nodes["agent"]["position"], dtype=np.float64)
    top = call.xyz[2] + call.size[2] / 2
    return float(np.linalg.norm(hand[:2] - np.asarray(call.xyz[:2]))) <= TOUCH_REACH and hand[2] <= top + TOUCH_ABOVE


def _is_drawer(r: Resolver, node: str) -> bool:
    """A container that is part of a housing slides (a drawer); a free one is lifted (a cup)."""
    return r.attrs(node)["cls"] == "drawer" or bool(r.memory.related(node, "part_of"))


def _displaced(r: Resolver, node: str) -> bool:
    first, now = r.position(node, "first"), r.position(node)
    return float(np.linalg.norm(first[:2] - now[:2])) > MOVED_TOL or abs(first[2] - now[2]) > MOVED_TOL


def _box_distance(p: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """Distance (m) from the point ``p`` (2,) to the rectangle [lo, hi] (0 inside)."""
    return float(np.linalg.norm(np.maximum(np.maximum(lo - p, p - hi), 0.0)))
