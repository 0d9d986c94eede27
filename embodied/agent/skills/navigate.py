"""NavigateSkill: drive the mobile base to a remembered object on the robot's own free-space map.

``SkillCall(skill="navigate", xyz=<target object position, world, m>)``. The
skill

1. picks a *stand-off* point on the map: an unoccupied map cell (known free preferred) with
   ``stand_clear`` clearance (bumper + 3 cm) between ``stand_min`` and ``stand_max`` metres
   from the target whose straight line to the target crosses no occupied
   cell before the target's own support (the last ``support`` metres), the
   one with the cheapest path from where the robot is (one A* search to a
   virtual node linked to every candidate, see ``FreeSpaceMap.path_to_any``);
2. follows that path turn-then-drive, then turns to face the target;
3. is ``done`` when it believes it is within ``reach`` of the target and
   facing it within ``face_tol``.

Safety: each step the head depth in front of the base is checked; a point
of an obstacle (height 5 cm .. 1.3 m) inside the robot's swept corridor
closer than ``stop_dist`` ahead of the bumper, and nearer than the waypoint
being driven to, stops the base and triggers a replan (the map has already
taken the obstacle in). No progress toward the stand-off for ``stuck_steps``
steps also replans. ``failed`` after ``max_replans`` replans or
``max_steps`` steps.

Pose: the base pose used for driving is derived from the head camera's
extrinsics (``obs["extrinsics/head"]``) composed with the camera's known
mount on the base (``CAMERA_MOUNT``): the same transform the map is built
from, so map and pose stay consistent even when the extrinsics come from
drifting odometry. ``proprio`` odometry is not used. Inside the
``MemoryAgent`` the extrinsics it is handed are already drift-corrected
(``embodied.mapping.localise``), like those the map and memory are built from.

Actions are ``(2,) float32`` in [-1, 1]: ``[forward, yaw rate]`` as fractions
of ``max_v`` (0.5 m/s) and ``max_w`` (1.5 rad/s).

Route and driver: ``act`` is ``guide_step`` (budgets, back-off, replans,
waypoint progress; it leaves the step's route features in ``guide``, see
``guide_features``), then the turn-then-drive controller, then ``drive``
(the depth safety check). A learned head drives the same route in place of
the controller (``policies.nav_skill.LearnedNavigateSkill``); the agent's
recordings keep ``guide`` per frame as ``skill.guide``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from embodied.agent.skills.nav_geometry import nearest_obstacle_ahead, stand_off_candidates
from embodied.mapping.freespace import ROBOT_RADIUS, FreeSpaceMap
from embodied.planner.calls import SkillCall

CAMERA = "head"
CAMERA_MOUNT = 0.1  # m: the head camera sits this far ahead of the base centre (scenes/apartment/robot.xml)
MAX_V, MAX_W = 0.5, 1.5  # m/s and rad/s at action 1 (the base's documented action scaling)
GUIDE_DIM = 6  # route features per step (``NavigateSkill.guide_features``)
ROOM_REACH = 0.15  # m: a "go to the room" call ends this close to the room's centre
RETARGET = 0.03  # m: memory's estimate of the target moving less than this leaves the route as it is
# m: within reach and facing, the skill still drives on when its path's end is this much nearer the target
# (the success radius leaves only a few cm past ``reach`` for errors in memory and pose)
CLOSER = 0.05


def wrap(angle: float) -> float:
    return float((angle + np.pi) % (2 * np.pi) - np.pi)


def _finite_or_none(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def base_pose(obs: dict[str, Any], camera: str = CAMERA) -> np.ndarray:
    """(3,) base pose [x, y, yaw] (m, rad) from the camera-to-world extrinsics and the mount.

    The camera's optical axis (OpenCV z, third column of the rotation) points
    along the base's heading, pitched down; its xy projection gives the yaw.
    """
    T = np.asarray(obs[f"extrinsics/{camera}"], dtype=np.float64)
    yaw = float(np.arctan2(T[1, 2], T[0, 2]))
    xy = T[:2, 3] - CAMERA_MOUNT * np.array([np.cos(yaw), np.sin(yaw)])
    return np.array([xy[0], xy[1], yaw])


def integrate_observation(freespace: FreeSpaceMap, obs: dict[str, Any], ignore: np.ndarray | None = None,
                          camera: str = CAMERA) -> np.ndarray:
    """Fold one observation's head depth into ``freespace`` and mark the base's footprint visited.

    Returns the base pose (3,) used (see ``base_pose``).
    """
    freespace.integrate(obs[f"depth/{camera}"], obs[f"intrinsics/{camera}"], obs[f"extrinsics/{camera}"], ignore)
    pose = base_pose(obs, camera)
    freespace.mark_visited(pose[:2])
    return pose


class NavigateSkill:
    """Skill protocol (``start``, ``act``, ``done``, ``failed``) for ``navigate`` calls."""

    name = "navigate"

    def __init__(
        self,
        freespace: FreeSpaceMap,
        stand_min: float = 0.25,
        stand_max: float = 0.45,
        stand_prefer: float = 0.25,
        stand_clear: float = ROBOT_RADIUS + 0.03,
        reach: float = 0.45,
        face_tol: float = 0.12,
        support: float = 0.25,
        stop_dist: float = 0.25,
        stuck_steps: int = 30,
        max_replans: int = 8,
        max_steps: int = 700,
        camera: str = CAMERA,
        last_tol: float = 0.04,
        creep_waypoint: bool = False,
    ):
        self.map = freespace
        self.stand_min, self.stand_max, self.stand_prefer = stand_min, stand_max, stand_prefer
        self.stand_clear = stand_clear
        self.reach, self.face_tol, self.support = reach, face_tol, support
        # This call's stand-off ring (min, max, preferred m), reach and facing tolerance (see ``start``).
        self.ring, self.reach_now, self.face_now = (stand_min, stand_max, stand_prefer), reach, face_tol
        self.stop_dist, self.stuck_steps = stop_dist, stuck_steps
        self.max_replans, self.max_steps = max_replans, max_steps
        self.camera = camera
        self.last_tol = last_tol  # m: the path's end counts as reached this close (the others at 12 cm)
        # At the path's end but out of reach (the map moved the stand-off): add a waypoint toward the target
        # (for a learned driver; the scripted controller creeps there by itself).
        self.creep_waypoint = creep_waypoint
        self._done = self._failed = False
        self.target = np.zeros(2)
        self.path: list[np.ndarray] = []
        self.log: list[str] = []
        self.guide = np.zeros(GUIDE_DIM, dtype=np.float32)  # route features of the last step

    # --- protocol ---------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self._done

    @property
    def failed(self) -> bool:
        return self._failed

    def start(self, call: SkillCall, obs: dict[str, Any]) -> None:
        if call.skill != "navigate":
            raise ValueError(f"NavigateSkill runs navigate calls, got {call.skill!r}")
        self.call = call
        self.target = np.asarray(call.xyz[:2], dtype=np.float64)
        # A room's point is floor to stand on (its centre, as far from the walls as the map allows), not
        # a thing to stand off from and face: the base drives onto it, whichever way it ends up facing.
        room = bool(call.extra.get("room"))
        self.ring = (0.0, ROOM_REACH, 0.0) if room else (self.stand_min, self.stand_max, self.stand_prefer)
        self.reach_now = ROOM_REACH if room else self.reach
        self.face_now = np.pi if room else self.face_tol
        self._done = self._failed = False
        self.steps = 0
        self.replans = -1
        self.path, self.index = [], 0
        self.best, self.since_best = np.inf, 0
        self.backing = 0
        self.creeps = 0
        self.log = []
        self.guide = np.zeros(GUIDE_DIM, dtype=np.float32)
        self._plan(base_pose(obs, self.camera))

    def state(self) -> dict:
        """JSON-plain: the call and everything ``start`` set and ``act`` moves on (``started`` false before
        the first start); path points (2,) m. The map is the agent's, saved with it."""
        out = {"started": hasattr(self, "call"), "done": self._done, "failed": self._failed, "log": list(self.log),
               "guide": [float(v) for v in self.guide], "target": [float(v) for v in self.target]}
        if out["started"]:
            out.update(call=self.call.to_dict(), ring=[float(v) for v in self.ring], reach_now=float(self.reach_now),
                       face_now=float(self.face_now), steps=self.steps, replans=self.replans, index=self.index,
                       path=[[float(v) for v in p] for p in self.path], best=_finite_or_none(self.best),
                       since_best=self.since_best, backing=self.backing, creeps=self.creeps)
        return out

    def load_state(self, d: dict) -> None:
        """Take up where ``state`` was taken."""
        self._done, self._failed, self.log = bool(d["done"]), bool(d["failed"]), [str(x) for x in d["log"]]
        self.guide = np.asarray(d["guide"], dtype=np.float32).reshape(GUIDE_DIM)
        self.target = np.asarray(d["target"], dtype=np.float64).reshape(2)
        if not d["started"]:
            return
        self.call = SkillCall.from_dict(d["call"])
        self.ring = tuple(float(v) for v in d["ring"])
        self.reach_now, self.face_now = float(d["reach_now"]), float(d["face_now"])
        self.steps, self.replans, self.index = int(d["steps"]), int(d["replans"]), int(d["index"])
        self.path = [np.asarray(p, dtype=np.float64).reshape(2) for p in d["path"]]
        self.best = np.inf if d["best"] is None else float(d["best"])
        self.since_best, self.backing, self.creeps = int(d["since_best"]), int(d["backing"]), int(d["creeps"])
        if len(self.ring) != 3 or not all(np.isfinite(p).all() for p in [self.target, *self.path]):
            raise ValueError("navigate: ring must hold 3 numbers, target and path finite points")

    def act(self, obs: dict[str, Any]) -> np.ndarray:
        pose, override = self.guide_step(obs, scripted_done=True)
        if override is not None:
            return override
        v, w = self._follow(pose)
        return self.drive(obs, pose, v / MAX_V, w / MAX_W)

    # --- the route, for a driver (this skill's own controller, or a learned head) -------
    def guide_step(self, obs: dict[str, Any], scripted_done: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """The planning half of one step: budget, back-off, replans, waypoint progress.

        Returns (base pose (3,), action to take instead of driving, or None: drive now);
        ``self.guide`` then holds the route features of this step (see ``guide_features``).
        With ``scripted_done`` the skill ends itself within ``reach`` facing the target;
        a learned driver decides that instead.
        """
        pose = base_pose(obs, self.camera)
        self.guide = np.zeros(GUIDE_DIM, dtype=np.float32)
        if self._done or self._failed:
            return pose, np.zeros(2, dtype=np.float32)
        self.steps += 1
        if self.steps > self.max_steps:
            return pose, self._fail("step budget")
        dist = float(np.linalg.norm(self.target - pose[:2]))
        facing = abs(wrap(np.arctan2(*(self.target - pose[:2])[::-1]) - pose[2]))
        if scripted_done and dist <= self.reach_now and facing <= self.face_now and not self._nearer_ahead(dist):
            self._done = True
            return pose, np.zeros(2, dtype=np.float32)
        if self.backing > 0:  # after a blocked view: back off a little before planning again
            self.backing -= 1
            if self.backing == 0:
                self._plan(pose)
            return pose, np.array([-0.4, 0.0], dtype=np.float32)
        if not self.path:
            if self.replans >= self.max_replans:
                return pose, self._fail("no path")
            return pose, self._replan(pose, "no path")
        # Progress toward the stand-off (the path's end).
        remaining = self._remaining(pose)
        if remaining < self.best - 0.02:
            self.best, self.since_best = remaining, 0
        else:
            self.since_best += 1
        if self.since_best > self.stuck_steps and dist > self.reach_now:
            return pose, self._replan(pose, "stuck")
        self._advance(pose)
        if self.creep_waypoint and self.index >= len(self.path) and dist > self.reach_now and self.creeps < 3:
            self.creeps += 1
            self.path.append(self.target + (pose[:2] - self.target) / max(dist, 1e-6) * max(self.reach_now - 0.1, 0))
            self.log.append(f"t{self.steps}: out of reach at the path's end; creep waypoint {self.path[-1]}")
        self.guide = self.guide_features(pose)
        return pose, None

    def drive(self, obs: dict[str, Any], pose: np.ndarray, v: float, w: float) -> np.ndarray:
        """The safety half: ``[v, w]`` (fractions of ``MAX_V``, ``MAX_W``) unless an obstacle blocks the
        way forward, which stops the base, backs it off and replans."""
        if v > 0 and self._blocked(obs, pose):
            self.backing = 3
            return self._replan(pose, "obstacle ahead", back=True)
        return np.array([np.clip(v, -1, 1), np.clip(w, -1, 1)], dtype=np.float32)

    def guide_features(self, pose: np.ndarray) -> np.ndarray:
        """(GUIDE_DIM,) float32 route features in the base frame at ``pose``:
        ``[wp_forward, wp_left, next_forward, next_left, last, arrived]``: the waypoint driven to and
        the one after it (m; the path's end repeats), ``last`` 1 when driving to the path's end,
        ``arrived`` 1 past it (only facing the target is left). Zeros without a path."""
        out = np.zeros(GUIDE_DIM, dtype=np.float32)
        if not self.path:
            return out
        n = len(self.path)
        a = self.path[min(self.index, n - 1)]
        b = self.path[min(self.index + 1, n - 1)]
        c, s = np.cos(pose[2]), np.sin(pose[2])
        for k, p in enumerate((a, b)):
            d = p - pose[:2]
            out[2 * k], out[2 * k + 1] = c * d[0] + s * d[1], -s * d[0] + c * d[1]
        out[4] = float(self.index == n - 1)
        out[5] = float(self.index >= n)
        return out

    def retarget(self, call: SkillCall, obs: dict[str, Any]) -> bool:
        """Take memory's fresher estimate of the target point (a room's point stays): True when taken.
        The route is planned again only when its end no longer stands within the ring around the new point."""
        new = np.asarray(call.xyz[:2], dtype=np.float64)
        if self._done or self._failed or call.extra.get("room") or np.linalg.norm(new - self.target) < RETARGET:
            return False
        self.log.append(f"t{self.steps}: target re-estimated {np.round(self.target, 3)} -> {np.round(new, 3)}")
        self.call, self.target = call, new
        lo, hi, _ = self.ring
        if self.path and not lo <= np.linalg.norm(self.path[-1] - new) <= hi:
            self._plan(base_pose(obs, self.camera), count=False)
        return True

    def _nearer_ahead(self, dist: float) -> bool:
        """Whether the path still to drive ends ``CLOSER`` m or more nearer the target than ``dist``."""
        return self.index < len(self.path) and float(np.linalg.norm(self.path[-1] - self.target)) <= dist - CLOSER

    # --- planning ------------------------------------------------------------------------
    def _fail(self, why: str) -> np.ndarray:
        self._failed = True
        self.log.append(f"failed: {why}")
        return np.zeros(2, dtype=np.float32)

    def _replan(self, pose: np.ndarray, why: str, back: bool = False) -> np.ndarray:
        self.log.append(f"t{self.steps}: replan ({why})")
        if self.replans >= self.max_replans:
            return self._fail(f"{why}, {self.replans} replans")
        if not back:
            self._plan(pose)
        else:
            self.replans += 1
        return np.zeros(2, dtype=np.float32)

    def stand_offs(self) -> tuple[np.ndarray, np.ndarray]:
        """(K, 2) candidate stand-off points around the target and their extra costs (K,): see
        ``nav_geometry.stand_off_candidates``."""
        return stand_off_candidates(self.map, self.target, self.ring, self.stand_clear, self.support)

    def _plan(self, pose: np.ndarray, count: bool = True) -> None:
        """A route to the best stand-off from ``pose``; ``count``: a replan of the budget (not so for a
        re-estimated target)."""
        self.replans += count
        goals, costs = self.stand_offs()
        path = self.map.path_to_any(pose[:2], goals, costs, end_radius=self.stand_clear) if len(goals) else []
        if not path:
            # No stand-off in known free space: head for the navigable cell nearest the target.
            near = self.map.nearest_free(self.target)
            path = self.map.path(pose[:2], near) if near is not None else []
            self.log.append(f"t{self.steps}: no stand-off; nearest free {near}")
        self.path = [np.asarray(p, dtype=np.float64) for p in path]
        self.index = 1 if len(self.path) > 1 else 0
        self.best, self.since_best = self._remaining(pose) if self.path else np.inf, 0
        self.log.append(f"t{self.steps}: plan {len(self.path)} points to {self.path[-1] if self.path else None}")

    def _remaining(self, pose: np.ndarray) -> float:
        if not self.path:
            return np.inf
        pts = [pose[:2]] + self.path[self.index:]
        return float(sum(np.linalg.norm(b - a) for a, b in zip(pts[:-1], pts[1:])))

    # --- driving -----------------------------------------------------------------------------
    def _advance(self, pose: np.ndarray) -> None:
        """Skip the waypoints already reached (the last one within ``last_tol``, the others within 12 cm)."""
        while self.index < len(self.path):
            last = self.index == len(self.path) - 1
            if np.linalg.norm(self.path[self.index] - pose[:2]) > (self.last_tol if last else 0.12):
                break
            self.index += 1

    def _follow(self, pose: np.ndarray) -> tuple[float, float]:
        """Turn-then-drive toward the current waypoint; at the end, turn to face the target."""
        if self.index < len(self.path):
            goal = self.path[self.index]
            last = self.index == len(self.path) - 1
            dist = float(np.linalg.norm(goal - pose[:2]))
            err = wrap(np.arctan2(goal[1] - pose[1], goal[0] - pose[0]) - pose[2])
            w = float(np.clip(4.0 * err, -MAX_W, MAX_W))
            if abs(err) > 0.35:
                return 0.0, w
            v = MAX_V if not last else min(MAX_V, 0.08 + 1.5 * dist)
            return float(v * np.cos(err)), w
        err = wrap(np.arctan2(self.target[1] - pose[1], self.target[0] - pose[0]) - pose[2])
        if float(np.linalg.norm(self.target - pose[:2])) > self.reach_now:
            # At the stand-off but not within reach (the map moved it): creep toward the target.
            w = float(np.clip(4.0 * err, -MAX_W, MAX_W))
            return (0.1 if abs(err) < 0.3 else 0.0), w
        return 0.0, float(np.clip(4.0 * err, -MAX_W, MAX_W))

    def _blocked(self, obs: dict[str, Any], pose: np.ndarray) -> bool:
        """An obstacle point in the base's corridor closer than ``stop_dist`` past the bumper, short of the waypoint."""
        goal = self.path[min(self.index, len(self.path) - 1)] if self.path else pose[:2]
        ahead = nearest_obstacle_ahead(obs[f"depth/{self.camera}"], obs[f"intrinsics/{self.camera}"],
                                       obs[f"extrinsics/{self.camera}"], pose)
        to_goal = float(np.linalg.norm(goal - pose[:2]))
        return ahead < ROBOT_RADIUS + self.stop_dist and ahead < to_goal + ROBOT_RADIUS
