"""The privileged expert of Rearrange: a queue of skills, each planned when it starts.

Per displaced object (from the place the scene left it in, back to its
original place) the plan is: open the drawers it leaves or enters, lift aside
the cups it leaves or goes under, pick it and place it, then shut those
drawers and put those cups back down (over it, when it started under one).
A skill's waypoints are computed only when the skill starts, from the
simulator state then: an object's pose in a drawer is known only once the
drawer is open, a cup's only once it has been set down.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import numpy as np

from embodied.envs.workcell import BLOCK_HALF
from embodied.experts.motion import CLOSED, OPEN, ScriptedExpert, Waypoint
from embodied.experts.reopen_drawer import pull_open, push_shut
from embodied.experts.shell_game import KNOB_GRASP_Z, lift_knob
from embodied.tasks.rearrange import N_DRAWERS, N_SPOTS, is_cup, is_drawer, place_index, place_name
from embodied.tasks.shell_game import BALL_R

# How far the expert pulls a drawer (it opens ~1 cm less: the fingers start off
# the bar). Enough to expose an object 6 cm behind the front; more would bring
# the handle over the nearer table spots.
PULL = 0.11
CARRY_HIGH = 0.16  # TCP while carrying an object: its bottom clears cup knobs (0.1)
CARRY_SPEED = 0.7  # a held object creeps along the pads faster in hard accelerations
NEAR_X = 0.29  # nearer the base, on its axis, the arm folds into its elbow limit and stalls
LOWER_FROM = 0.05  # the held object's centre this high over its goal before the last descent
CUP_HIGH = 0.22  # TCP while carrying a cup: its rim clears blocks, knobs and housings
CUP_DROP = 0.008  # let a cup go this far above the table rather than press it into it
# The collision pads span the TCP height +-12 mm. The arm settles 5-8 mm above
# low targets, so the TCP aims 5 mm below an object's centre, but never below
# 9 mm over its support: pads pressed onto the table jam and cannot close.
GRASP_LOW, PAD_FLOOR = 0.005, 0.009
# A held object creeps along the 2 cm wide pads while the arm moves, by
# +7 +- 6 mm (up to 22) per carry over 100 carries, and drops past ~25 mm:
# grasping it 7 mm off centre the other way centres where it ends up.
GRASP_LEAD = 0.007

Skill = Callable[[], list[Waypoint]]


def carry_cup(cup: np.ndarray, target_xy: np.ndarray) -> list[Waypoint]:
    """Grasp a cup's knob at ``cup`` (its body position), carry it to ``target_xy`` and set it down."""
    x, y = target_xy
    down = np.array([x, y, KNOB_GRASP_Z + CUP_DROP])
    return lift_knob(cup[0], cup[1], CUP_HIGH) + [
        Waypoint(np.array([x, y, CUP_HIGH]), CLOSED, 0.0, tol=0.006, speed=0.7),
        Waypoint(down, CLOSED, 0.0, tol=0.006, hold=1, speed=0.5, timeout=40),
        Waypoint(down, OPEN, 0.0, tol=1.0, hold=4),
        Waypoint(np.array([x, y, CUP_HIGH]), OPEN, 0.0, tol=0.01),
    ]


def pick(source: np.ndarray, half: float, high: float) -> list[Waypoint]:
    """Top-down grasp of an object (centre ``source``, half height ``half``), lifted to ``high``.

    PutBlockBack's ``pick_and_place`` with tolerances the arm can meet near the
    table: with its 4 mm tolerance every low waypoint ran into its timeout.
    """
    x, y, z = source
    x += GRASP_LEAD  # the pads' width runs along x (yaw 0)
    low = np.array([x, y, max(z - GRASP_LOW, z - half + PAD_FLOOR)])
    return [
        Waypoint(np.array([x, y, high]), OPEN, 0.0, tol=0.012),
        Waypoint(low, OPEN, 0.0, tol=0.008, hold=1, speed=0.8),
        Waypoint(low, CLOSED, 0.0, tol=1.0, hold=5),
        Waypoint(np.array([x, y, high]), CLOSED, 0.0, tol=0.012),
    ]


def lower(target: np.ndarray, offset: np.ndarray, high: float) -> list[Waypoint]:
    """From above ``target``, set the held object down there and let go.

    ``offset`` is where the object sits relative to the TCP (xy): it can have
    crept a centimetre or more along the pads during the carry, which would
    put it on a drawer's handle bar or out of tolerance. The correction is
    made on the way down (the arm reaches in nearer its base lower down) and
    cut short at NEAR_X, which leaves the object at most ~1 cm out.
    """
    x, y = np.asarray(target[:2]) - offset
    x = max(x, NEAR_X)
    down = np.array([x, y, target[2] - 0.003])
    return [
        Waypoint(np.array([x, y, target[2] + LOWER_FROM]), CLOSED, 0.0, tol=0.005, hold=1, speed=0.6),
        Waypoint(down, CLOSED, 0.0, tol=0.008, hold=2, speed=0.5),
        Waypoint(down, OPEN, 0.0, tol=1.0, hold=3),
        Waypoint(np.array([x, y, high]), OPEN, 0.0, tol=0.012),
    ]


class RearrangeExpert(ScriptedExpert):
    # Tests send an object to a wrong place: {object name: place name}.
    goal_override: dict[str, str] | None = None

    def plan(self, phase: str) -> list[Waypoint]:
        self.skills: deque[Skill] = deque()
        self.skill_names: list[str] = []
        if phase != "recall":
            return []
        overrides = self.goal_override or {}
        for o, obj in enumerate(self.env.privileged()["objects"]):
            goal = place_index(overrides.get(obj["name"], obj["start_place"]))
            here = place_index(obj["place"])
            if goal != here:
                self.skills.extend(self._restore(o, here, goal))
        return []

    def replan(self) -> list[Waypoint]:
        while getattr(self, "skills", None):
            waypoints = self.skills.popleft()()
            if waypoints:
                return waypoints
        return []

    # --- skills --------------------------------------------------------------
    def _restore(self, o: int, here: int, goal: int) -> list[Skill]:
        """Skills that bring object ``o`` from place ``here`` back to ``goal``; names go to ``skill_names``."""
        env, obj = self.env, self.env.object_names[o]
        before, after, names = [], [], []
        for p in (here, goal):
            if is_drawer(p):
                d = p - N_SPOTS
                before.append(lambda d=d: pull_open(env.hook_point(d), PULL))
                after.append(lambda d=d: push_shut(env.hook_point(d), env.opening(d)))
                names.append((f"open drawer{d}", f"shut drawer{d}"))
            elif is_cup(p):
                c = p - N_SPOTS - N_DRAWERS
                before.append(lambda c=c: carry_cup(env.privileged()["cup_pos"][c], env.privileged()["park_xy"][c]))
                after.append(lambda c=c: carry_cup(env.privileged()["cup_pos"][c], env.privileged()["cup_xy"][c]))
                names.append((f"lift cup{c} aside", f"put cup{c} back"))
        self.skill_names += [a for a, _ in names] + [f"pick {obj}", f"place {obj} at {place_name(goal)}"]
        self.skill_names += [b for _, b in names]
        # The place skill is two steps: the descent is planned once the object is over
        # its goal, from how it hangs in the grip then.
        pick_it = lambda: pick(self._pos(o), self._half(o), CARRY_HIGH)
        return before + [pick_it, lambda: self._carry(o, goal), lambda: self._lower(o, goal)] + after

    def _pos(self, o: int) -> np.ndarray:
        return self.env.privileged()["objects"][o]["pos"]

    def _half(self, o: int) -> float:
        return BALL_R if self.env.privileged()["objects"][o]["cls"] == "ball" else BLOCK_HALF

    def _carry(self, o: int, goal: int) -> list[Waypoint]:
        x, y, _ = self.env.rest_pose(goal, o)
        # At full speed a block held off the pads' middle can slip out on a sharp turn.
        return [Waypoint(np.array([x, y, CARRY_HIGH]), CLOSED, 0.0, tol=0.01, hold=2, speed=CARRY_SPEED)]

    def _lower(self, o: int, goal: int) -> list[Waypoint]:
        offset = self._pos(o)[:2] - self.env.arm.tcp_pos()[:2]
        return lower(self.env.rest_pose(goal, o), offset, CARRY_HIGH)
