"""Scripted arm skills: waypoints from a skill call's remembered box, followed on proprioception.

Each skill turns its call (target box centre ``xyz`` and ``size`` from memory,
``yaw``) into tool-centre-point (TCP) waypoints and follows them in the
``ee_delta`` action space, reading only ``obs["proprio"]`` (workcell layout:
TCP position [14:17] m, TCP quaternion [17:21] (w,x,y,z), gripper width [21] m).

Heights are taken relative to the remembered box: a handle is hooked a fixed
distance below a drawer's top, a cup is grasped by the knob on its top, a
button is pushed a little below its cap. These offsets describe the prop
designs the skills are written for (as a real robot's grasp library would),
never where a particular episode put them.

Action (5,) float32 in [-1, 1]: [dx, dy, dz, dyaw, grip]; one unit is ``POS_STEP``
m / ``YAW_STEP`` rad per control step; grip -1 closed, +1 open.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from embodied.planner.calls import SkillCall

OPEN, CLOSED = 1.0, -1.0
POS_STEP, YAW_STEP = 0.02, 0.15  # the workcell's ee_delta scale (docs/tasks.md, "Control")
SAFE_Z = 0.15  # m: carrying height, clear of drawer fronts and handles
HOOK_BELOW_TOP = 0.034  # m: closed fingertips between a drawer's handle bar and its front
HOOK_INSIDE = 0.026  # m: from the handle's outer edge back toward the front
PULL = 0.15  # m: how far a drawer is pulled open
KNOB_BELOW_TOP = 0.015  # m: a cup's knob is grasped just under the cup's top
# m: the arm settles about 7 mm short of a low target, so this pushes a cap about 11 mm: past its 6 mm click by
# more than a camera's calibration can misplace its top (3-4 mm), short of its 12 mm stop
PRESS_BELOW_TOP = 0.006
# m: the fingertips reach 12 mm below the TCP, so this aims them 16 mm into the top: settled short, they still
# meet a top a camera's calibration misplaced by 4 mm
TOUCH_ABOVE_TOP = -0.004
EMPTY_WIDTH = 0.006  # m: a gripper closed this far holds nothing
STILL = 0.0007  # m per step: the TCP has stopped
SETTLED_NEAR = 0.012  # m: a stopped TCP this close to its waypoint has reached it
RETARGET_SHIFT = 0.005  # m: a target that moved less than this in memory keeps the old path


@dataclass
class Waypoint:
    pos: np.ndarray  # (3,) m, TCP target
    grip: float = OPEN
    yaw: float | None = 0.0
    tol: float = 0.006  # m
    hold: int = 0  # steps to stay once reached
    timeout: int = 60  # steps before moving on anyway
    speed: float = 1.0  # fraction of the full step
    check_grasp: bool = False  # fail if the gripper closed on nothing by the end of this waypoint


def _waypoint_json(w: Waypoint) -> dict:
    return {**{f: getattr(w, f) for f in Waypoint.__dataclass_fields__}, "pos": [float(v) for v in w.pos]}


def _waypoint(d: dict) -> Waypoint:
    yaw = None if d["yaw"] is None else float(d["yaw"])
    return Waypoint(_vec3(d["pos"]), float(d["grip"]), yaw, float(d["tol"]), int(d["hold"]), int(d["timeout"]),
                    float(d["speed"]), bool(d["check_grasp"]))


def _vec3(values) -> np.ndarray:
    """(3,) float64 from JSON; ValueError unless three finite numbers."""
    v = np.asarray(values, dtype=np.float64)
    if v.shape != (3,) or not np.isfinite(v).all():
        raise ValueError(f"expected 3 finite numbers, got {values!r}")
    return v


def tcp_state(proprio: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(TCP position (3,) m, TCP yaw rad, gripper width m) from workcell proprio (22,)."""
    p = np.asarray(proprio, dtype=np.float64)
    w, x, y, z = p[17:21]
    yaw = math.atan2(2 * (x * y + w * z), 1 - 2 * (y * y + z * z))
    return p[14:17].copy(), yaw, float(p[21])


def _equivalent_yaw(target: float, current: float) -> float:
    """The gripper is symmetric under half turns: the closest equivalent of ``target``."""
    return current + (target - current + math.pi / 2) % math.pi - math.pi / 2


class WaypointSkill:
    """Base of the arm skills: ``waypoints(call, obs)`` gives the path; ``act`` follows it."""

    name = "waypoints"
    budget = 400  # steps before the skill gives up

    def __init__(self, hand: dict | None = None):
        self.hand = hand if hand is not None else {}  # shared with the other arm skills: grasp offset
        self.queue: deque[Waypoint] = deque()
        self._done = self._failed = False
        self._grip = OPEN

    @property
    def done(self) -> bool:
        return self._done

    @property
    def failed(self) -> bool:
        return self._failed

    def waypoints(self, call: SkillCall, obs: dict) -> list[Waypoint]:
        raise NotImplementedError

    def start(self, call: SkillCall, obs: dict) -> None:
        if call.skill != self.name:
            raise ValueError(f"{type(self).__name__} runs {self.name!r} calls, got {call.skill!r}")
        self.call = call
        self.queue = deque(self.waypoints(call, obs))
        self.stage = 0  # waypoints passed
        self._done = self._failed = False
        self._elapsed = self._held = self._steps = self._still = 0
        self._last_pos = None
        _, _, width = tcp_state(obs["proprio"])
        self._grip = OPEN if width > 0.07 else CLOSED

    def state(self) -> dict:
        """JSON-plain: the call, the waypoints left and the counters (``started`` false before the first
        ``start``), and the hand's grasp state shared with the other arm skills."""
        out = {"started": hasattr(self, "call"), "grip": float(self._grip), "hand": dict(self.hand)}
        if out["started"]:
            out.update(call=self.call.to_dict(), queue=[_waypoint_json(w) for w in self.queue], stage=self.stage,
                       done=self._done, failed=self._failed, elapsed=self._elapsed, held=self._held,
                       steps=self._steps, still=self._still,
                       last_pos=None if self._last_pos is None else [float(v) for v in self._last_pos])
        return out

    def load_state(self, d: dict) -> None:
        """Take up where ``state`` was taken (the skill built as the saved one was)."""
        self._grip = float(d["grip"])
        self.hand.clear()
        self.hand.update({str(k): float(v) for k, v in d["hand"].items()})
        if not d["started"]:
            return
        self.call = SkillCall.from_dict(d["call"])
        self.queue = deque(_waypoint(w) for w in d["queue"])
        self._done, self._failed = bool(d["done"]), bool(d["failed"])
        self.stage, self._elapsed, self._held = int(d["stage"]), int(d["elapsed"]), int(d["held"])
        self._steps, self._still = int(d["steps"]), int(d["still"])
        self._last_pos = None if d["last_pos"] is None else _vec3(d["last_pos"])

    retarget_stages = 0  # waypoints that may be re-aimed while memory refines the target (0: never)

    def retarget(self, call: SkillCall, obs: dict) -> bool:
        """Re-aim at ``call``'s fresher target while still approaching; True if the path changed."""
        if self.stage >= self.retarget_stages or self._done or self._failed:
            return False
        if np.linalg.norm(np.subtract(call.xyz, self.call.xyz)) < RETARGET_SHIFT:
            return False
        path = self.waypoints(call, obs)[self.stage :]
        self.call, self.queue = call, deque(path)
        self._elapsed = self._held = 0
        return True

    def act(self, obs: dict) -> np.ndarray:
        action = np.zeros(5, dtype=np.float32)
        action[4] = self._grip
        if self._done or self._failed:
            return action
        self._steps += 1
        if self._steps > self.budget:
            self._failed = True
            return action
        if not self.queue:
            self._done = True
            return action
        pos, yaw, width = tcp_state(obs["proprio"])
        wp = self.queue[0]
        if wp.check_grasp and width < EMPTY_WIDTH:
            self._failed = True  # closed on nothing: the object slipped, was knocked out or never there
            return action
        error = np.asarray(wp.pos) - pos
        action[:3] = np.clip(error / POS_STEP, -wp.speed, wp.speed)
        if wp.yaw is not None:
            action[3] = np.clip((_equivalent_yaw(wp.yaw, yaw) - yaw) / YAW_STEP, -1, 1)
        action[4] = self._grip = wp.grip
        self._elapsed += 1
        # The servos settle a few mm short of low targets: close by and no longer moving counts as there.
        moved = np.linalg.norm(pos - self._last_pos) if self._last_pos is not None else 1.0
        self._last_pos = pos
        self._still = self._still + 1 if moved < STILL else 0
        settled = self._still >= 3 and np.linalg.norm(error) < SETTLED_NEAR
        if np.linalg.norm(error) < wp.tol or settled or self._elapsed >= wp.timeout:
            self._held += 1
            if self._held > wp.hold:
                self.queue.popleft()
                self.stage += 1
                self._elapsed = self._held = 0
        if not self.queue and not self._failed:
            self._done = True
        return action


class Pick(WaypointSkill):
    """Top-down grasp at the box centre, then lift (to ``extra["lift_to"]`` m, default SAFE_Z)."""

    name = "pick"
    retarget_stages = 2  # above the object and on the way down: the wrist camera sharpens the estimate

    def waypoints(self, call, obs):
        c = np.asarray(call.xyz)
        top = c[2] + call.size[2] / 2
        grasp = np.array([c[0], c[1], max(c[2] - 0.004, 0.012)])
        high = max(SAFE_Z, top + 0.08)
        lift_to = float(call.extra.get("lift_to", high))
        self.hand["grasp_dz"] = float(grasp[2] - c[2])
        return [
            Waypoint(np.array([c[0], c[1], high]), OPEN, 0.0, tol=0.01),
            Waypoint(grasp, OPEN, 0.0, tol=0.005, hold=2, speed=0.7),
            Waypoint(grasp, CLOSED, 0.0, tol=1.0, hold=6),
            Waypoint(np.array([c[0], c[1], lift_to]), CLOSED, 0.0, tol=0.01, check_grasp=True),
        ]


class Place(WaypointSkill):
    """Carry the held object over ``xyz`` (its centre's goal), lower, release, back up."""

    name = "place"

    def waypoints(self, call, obs):
        target = np.asarray(call.xyz) + np.array([0.0, 0.0, self.hand.get("grasp_dz", 0.0) + 0.003])
        pos, _, _ = tcp_state(obs["proprio"])
        high = max(SAFE_Z, pos[2])
        return [
            Waypoint(np.array([target[0], target[1], high]), CLOSED, 0.0, tol=0.006, check_grasp=True),
            Waypoint(target, CLOSED, 0.0, tol=0.004, hold=2, speed=0.5, check_grasp=True),
            Waypoint(target, OPEN, 0.0, tol=1.0, hold=4),
            Waypoint(np.array([target[0], target[1], high]), OPEN, 0.0, tol=0.01),
        ]


def _drawer_hook(call: SkillCall) -> tuple[np.ndarray, np.ndarray]:
    """(hook point (3,), outward unit (3,)) of a drawer box: just inside its handle bar."""
    out = np.array([math.cos(call.yaw), math.sin(call.yaw), 0.0])
    c, size = np.asarray(call.xyz), np.asarray(call.size)
    reach = abs(out[0]) * size[0] / 2 + abs(out[1]) * size[1] / 2  # centre to the outer edge
    hook = c + out * (reach - HOOK_INSIDE)
    hook[2] = c[2] + size[2] / 2 - HOOK_BELOW_TOP
    return hook, out


class Open(WaypointSkill):
    """Hook the handle from above with closed fingers and pull the drawer out along ``yaw``."""

    name = "open"

    def waypoints(self, call, obs):
        hook, out = _drawer_hook(call)
        end = hook + out * float(call.extra.get("amount", PULL))
        return [
            Waypoint(np.array([hook[0], hook[1], SAFE_Z]), CLOSED, 0.0, tol=0.008),
            Waypoint(hook, CLOSED, 0.0, tol=0.008, hold=1, speed=0.8),
            Waypoint(end, CLOSED, 0.0, tol=0.008, hold=3, speed=0.5, timeout=80),
            Waypoint(np.array([end[0], end[1], SAFE_Z]), CLOSED, 0.0, tol=0.01),
        ]


class Close(WaypointSkill):
    """From behind the handle, push the drawer front back in (the slide's end stop halts it)."""

    name = "close"

    def waypoints(self, call, obs):
        hook, out = _drawer_hook(call)
        end = hook - out * (PULL + 0.01)
        return [
            Waypoint(np.array([hook[0], hook[1], SAFE_Z]), CLOSED, 0.0, tol=0.008),
            Waypoint(hook, CLOSED, 0.0, tol=0.008, hold=1, speed=0.8),
            Waypoint(end, CLOSED, 0.0, tol=0.008, hold=2, speed=0.6, timeout=30),
            Waypoint(np.array([end[0], end[1], SAFE_Z]), CLOSED, 0.0, tol=0.01),
        ]


class Lift(WaypointSkill):
    """Grasp a cup by the knob on its top and lift it."""

    name = "lift"
    retarget_stages = 2

    def waypoints(self, call, obs):
        c = np.asarray(call.xyz)
        grasp = np.array([c[0], c[1], c[2] + call.size[2] / 2 - KNOB_BELOW_TOP])
        self.hand["grasp_dz"] = float(grasp[2] - c[2])
        return [
            Waypoint(np.array([c[0], c[1], 0.2]), OPEN, 0.0, tol=0.01),
            Waypoint(grasp, OPEN, 0.0, tol=0.006, hold=2, speed=0.6),
            Waypoint(grasp, CLOSED, 0.0, tol=1.0, hold=6),
            Waypoint(np.array([c[0], c[1], 0.2]), CLOSED, 0.0, tol=0.01, speed=0.6, check_grasp=True),
        ]


class Press(WaypointSkill):
    """Closed fingers over the cap, down past the press point, back up to release."""

    name = "press"
    retarget_stages = 1

    def waypoints(self, call, obs):
        c = np.asarray(call.xyz)
        top = c[2] + call.size[2] / 2
        high = top + 0.034
        return [
            Waypoint(np.array([c[0], c[1], high]), CLOSED, 0.0, tol=0.01),
            Waypoint(np.array([c[0], c[1], top - PRESS_BELOW_TOP]), CLOSED, 0.0, tol=0.007, hold=1, timeout=20,
                     speed=0.5),
            Waypoint(np.array([c[0], c[1], high]), CLOSED, 0.0, tol=0.01),
        ]


class Touch(WaypointSkill):
    """Closed fingers over the object, then straight down onto its top."""

    name = "touch"
    retarget_stages = 1

    def waypoints(self, call, obs):
        c = np.asarray(call.xyz)
        top = c[2] + call.size[2] / 2
        return [
            Waypoint(np.array([c[0], c[1], max(0.12, top + 0.06)]), CLOSED, 0.0, tol=0.01),
            Waypoint(np.array([c[0], c[1], top + TOUCH_ABOVE_TOP]), CLOSED, 0.0, tol=0.004, speed=0.5),
        ]


def arm_skills() -> dict[str, WaypointSkill]:
    """One instance of every scripted arm skill, sharing the hand's grasp state."""
    hand: dict = {}
    return {cls.name: cls(hand) for cls in (Pick, Place, Open, Close, Lift, Press, Touch)}
