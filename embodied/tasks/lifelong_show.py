"""Lifelong-v0's show: the changes between two goals (moves, removals, additions), planned per show and
played either at once out of view or in front of the robot, which the env drives to its room's viewpoint,
turns round and points at each watched change. Mixed into :class:`embodied.tasks.lifelong.Lifelong`
(needs its fields: options, objects' spots, the apartment, the drive, the glance record).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import mujoco
import numpy as np

from embodied.envs.nav_drive import PathFollower, Progress, TourBuilder, heading, wrap
from embodied.envs.nav_layout import ROOMS, room_of
from embodied.tasks.room_recall import HIDDEN

# The show: drive to the room's viewpoint, one full turn, then each watched change.
SHOW_SPEED = 0.42  # m/s on the drive to the viewpoint (the tour's speed)
DRIVE_MAX = 300  # steps; a drive that takes longer is cut short and the look starts where the robot is
TURN_STEPS = 53  # a full turn at the tour's 1.2 rad/s
FACE_STEPS, WATCH_STEPS, AFTER_STEPS = 25, 5, 15
GLIDE_STEPS, LIFT_STEPS, DROP_STEPS = 40, 12, 15
EVENT_STEPS = FACE_STEPS + WATCH_STEPS + GLIDE_STEPS + AFTER_STEPS  # the longest watched change
MIN_MOVE = 0.6  # m between the two spots of a watched move
CHANGE_KINDS, CHANGE_P = ("move", "remove", "add"), (0.5, 0.25, 0.25)  # the odds of each change
# What the robot was shown: instance masks of the head camera, rendered every GLANCE_EVERY steps.
GLANCE_SIZE, GLANCE_EVERY = 96, 3
SEEN_PIXELS = 6  # at 96 x 96: about 11 pixels of the agent's 128 x 128 frames
SEEN_RANGE = 5.0  # m from the camera
HALF_VIEW = np.deg2rad(35.0)  # the head camera's half field of view, both ways


def show_budget(changes: int) -> int:
    """Most steps a show can take: the drive, the turn and every change watched."""
    return DRIVE_MAX + TURN_STEPS + changes * EVENT_STEPS + 10


@dataclass
class Change:
    """One change between goals."""

    t: int
    kind: str  # move, remove, add
    obj: str
    src: int  # spot it left (-1: added)
    dst: int  # spot it went to (-1: removed)
    watched: bool
    start: int = -1  # look step at which a watched change begins
    steps: int = 0  # its length in look steps


@dataclass
class _Show:
    """The running show: drive, then the look (a reference pose per step) with its watched changes."""

    room: int
    follower: PathFollower
    progress: Progress
    drive_steps: int = 0
    look: np.ndarray | None = None
    look_i: int = 0
    watched: list[Change] = field(default_factory=list)
    yaw_marks: list[float] = field(default_factory=list)


class ShowScript:
    """The show between goals (see the module docstring)."""

    # --- the show ------------------------------------------------------------------------
    def _start_show(self) -> None:
        self.stage = "show"
        pose = self.robot_pose()
        room = room_of(pose[:2])
        target = self.apartment.viewpoints[room]
        points = self.apartment.planner.path(pose[:2], target) + [target]
        show = _Show(room, PathFollower(points[1:], max_v=SHOW_SPEED), Progress(40))
        show.progress.restart(float(np.linalg.norm(target - pose[:2])))
        self.show = show
        self._plan_changes(room)
        mujoco.mj_forward(self.model, self.data)

    def _free_spots(self, rooms=None, exclude=()) -> list[int]:
        taken = set(self.spot.values()) | set(exclude)
        taken |= {c.dst for c in self.show.watched if c.dst >= 0} | {c.src for c in self.show.watched if c.src >= 0}
        free = [k for k in range(self.SLOTS) if k not in taken]
        return [k for k in free if rooms is None or int(self.apartment.slot_room[k]) in rooms]

    def _plan_changes(self, room: int) -> None:
        """Draw this show's changes: the unwatched ones happen now, out of view in the other rooms;
        the watched ones in ``room`` wait for the look."""
        o, rng = self.options, self.events_rng
        others = [r for r in range(len(ROOMS)) if r != room]
        busy = set()  # objects a change of this show already took
        for _ in range(o.changes):
            watched = bool(rng.random() < o.watched)
            first = str(rng.choice(CHANGE_KINDS, p=CHANGE_P))
            for kind in [first] + [k for k in CHANGE_KINDS if k != first]:
                for view in (watched, not watched):
                    change = self._draw_change(kind, view, room, others, busy)
                    if change is not None:
                        break
                if change is not None:
                    break
            if change is None:
                continue
            busy.add(change.obj)
            if change.watched:
                self.show.watched.append(change)
            else:
                self._apply_change(change)

    def _draw_change(self, kind: str, watched: bool, room: int, others: list[int], busy: set) -> Change | None:
        o, rng, rooms = self.options, self.events_rng, self.apartment.slot_room
        where = [room] if watched else others
        pending = {c.obj for c in self.show.watched}

        def ok(spot: int) -> bool:  # an unwatched change must not happen in front of the camera
            return watched or not self._in_view(self.apartment.slots[spot])

        def pick(items):
            return items[int(rng.integers(len(items)))] if items else None

        movable = [n for n in self.active if n not in busy and n not in pending and int(rooms[self.spot[n]]) in where
                   and ok(self.spot[n])]
        if kind == "move":
            obj = pick(movable)
            if obj is None:
                return None
            src = self.spot[obj]
            free = [k for k in self._free_spots(where) if ok(k)]
            if watched:
                slots = self.apartment.slots
                free = [k for k in free if np.linalg.norm(slots[k, :2] - slots[src, :2]) >= MIN_MOVE]
            dst = pick(free)
            return None if dst is None else Change(self.t, "move", obj, src, int(dst), watched)
        # Removals and additions keep the count within 3 of ``objects`` (counting those still to come).
        count = len(self.active) + sum(c.kind == "add" for c in self.show.watched) \
            - sum(c.kind == "remove" for c in self.show.watched)
        if kind == "remove":
            if count <= o.objects - 3:
                return None
            obj = pick(movable)
            return None if obj is None else Change(self.t, "remove", obj, self.spot[obj], -1, watched)
        if count >= o.objects + 3 or not self.spares_left:
            return None
        dst = pick([k for k in self._free_spots(where) if ok(k)])
        if dst is None:
            return None
        obj = self.spares_left.pop(int(rng.integers(len(self.spares_left))))
        return Change(self.t, "add", obj, -1, int(dst), watched)

    def _apply_change(self, change: Change, t: int | None = None) -> None:
        """The change's end state: the object on its new spot, or out of the apartment."""
        change.t = self.t if t is None else t
        obj = change.obj
        if change.kind == "move":
            self.known.pop(obj, None)  # seen where it stood before: known again once seen on its new spot
        if change.dst >= 0:
            self.put_object(obj, self.apartment.slots[change.dst])
            self.spot[obj] = change.dst
            if obj not in self.active:
                self.active.append(obj)
        else:
            self.put_object(obj, HIDDEN)
            self.spot.pop(obj, None)
            self.removed[obj] = change.src
            self.active.remove(obj)
        if change not in self.changes:
            self.changes.append(change)

    def _in_view(self, xyz) -> bool:
        """Whether a point (an object on its spot, 10 cm up) is in the head camera's view, unoccluded by walls
        and furniture."""
        cam = self.model.camera("head").id
        eye = self.data.cam_xpos[cam].copy()
        rot = self.data.cam_xmat[cam].reshape(3, 3)
        p = np.asarray(xyz, dtype=np.float64) + np.array([0.0, 0.0, 0.1])
        local = rot.T @ (p - eye)  # MuJoCo camera axes: x right, y up, -z forward
        depth = -local[2]
        if depth <= 0.05 or depth > 9.0:
            return False
        margin = np.deg2rad(5.0)
        if max(abs(math.atan2(local[0], depth)), abs(math.atan2(local[1], depth))) > HALF_VIEW + margin:
            return False
        geom = np.zeros(1, np.int32)
        groups = np.array([1, 1, 0, 0, 0, 0], np.uint8)
        x = mujoco.mj_ray(self.model, self.data, eye, p - eye, groups, 1, self._robot_body, geom)
        return x < 0 or x >= 1.0

    def _show_step(self) -> None:
        show = self.show
        if show.look is None:
            pose = self.robot_pose()
            show.drive_steps += 1
            target = self.apartment.viewpoints[show.room]
            dist = float(np.linalg.norm(target - pose[:2]))
            if show.progress.update(dist) and not show.follower.done:
                points = self.apartment.planner.path(pose[:2], target) + [target]
                show.follower = PathFollower(points[1:], max_v=SHOW_SPEED)
                show.progress.restart(dist)
            if show.follower.done or show.drive_steps >= DRIVE_MAX:
                self._start_look()
        else:
            show.look_i += 1
            self._run_watched()
            if show.look_i >= len(show.look) - 1:
                self.stage = "wait"
                self._glance()
        if self.t % GLANCE_EVERY == 0:
            self._glance()

    def _start_look(self) -> None:
        """The look's reference poses: a full turn, then each watched change faced and followed."""
        show = self.show
        tour = TourBuilder(np.asarray(self.drive.pose(), dtype=np.float64), self.control_dt)
        tour.turn(2 * np.pi, steps=TURN_STEPS)
        slots = self.apartment.slots
        eye = tour.pose[:2].copy()
        for change in show.watched:
            src = slots[change.src] if change.src >= 0 else slots[change.dst]
            tour.face(src[:2], steps=FACE_STEPS)
            tour.hold(WATCH_STEPS)
            change.start = tour.steps
            if change.kind == "move":
                change.steps = GLIDE_STEPS
                for i in range(1, GLIDE_STEPS + 1):
                    want = heading(eye, self._glide(change, i / GLIDE_STEPS))
                    delta = np.clip(wrap(want - tour.pose[2]), -0.12, 0.12)
                    tour.turn(float(delta), steps=1)
                tour.face(slots[change.dst, :2], steps=AFTER_STEPS)
            else:
                change.steps = LIFT_STEPS if change.kind == "remove" else DROP_STEPS
                tour.hold(change.steps + AFTER_STEPS)
        show.look = tour.array()
        show.look_i = 0

    def _glide(self, change: Change, s: float) -> np.ndarray:
        a, b = self.apartment.slots[change.src], self.apartment.slots[change.dst]
        u = s * s * (3 - 2 * s)
        return a + u * (b - a) + np.array([0.0, 0.0, 0.3 * np.sin(np.pi * s)])

    def _run_watched(self) -> None:
        """Move the objects of the watched changes under way at this look step."""
        i, moved = self.show.look_i, False
        slots = self.apartment.slots
        for change in self.show.watched:
            k = i - change.start
            if not 0 < k <= change.steps:
                continue
            moved = True
            s = k / change.steps
            self.moving.add(change.obj)
            if change.kind == "move":
                self.put_object(change.obj, self._glide(change, s))
            elif change.kind == "remove":
                self.put_object(change.obj, slots[change.src] + np.array([0.0, 0.0, 0.4 * s]))
            else:
                self.put_object(change.obj, slots[change.dst] + np.array([0.0, 0.0, 0.5 * (1 - s)]))
            if k == change.steps:
                self.moving.discard(change.obj)
                self._apply_change(change)
        if moved:
            mujoco.mj_forward(self.model, self.data)

    # --- what the robot was shown ---------------------------------------------------------
