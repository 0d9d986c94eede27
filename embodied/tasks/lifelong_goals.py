"""Lifelong-v0's goals: what each goal asks (drawn over the kinds that have a candidate, from what the robot
was shown: the glance), when it is met, and the goal the observation carries. Mixed into
:class:`embodied.tasks.lifelong.Lifelong` (needs its fields: options, goals, objects' spots, the glance record).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from embodied.envs.apartment import COLOURS, OBJECT_CLASSES
from embodied.envs.cameras import CameraRig
from embodied.envs.nav_drive import wrap
from embodied.envs.nav_layout import ROOMS, room_of
from embodied.tasks.lifelong_show import GLANCE_SIZE, SEEN_PIXELS, SEEN_RANGE
from embodied.tasks.room_recall import DWELL, MARGIN, STILL_MOVE, STILL_TURN

PER_CLASS = 5  # instances of each object class in the scene (60 in all)
INSTANCES = tuple(f"{cls}_{k}" for cls in OBJECT_CLASSES for k in range(PER_CLASS))
@dataclass
class GoalRecord:
    """One goal of the episode."""

    kind: str  # object, first, was, room
    obj: str  # the instance it names
    spot: int  # the asked spot (object, first, was); for room the spot whose room is asked
    room: int  # the asked room (room), else the spot's room
    text: str
    start: int  # step it was given
    end: int = -1  # step it ended (-1: running)
    success: bool = False


class GoalScript:
    """The goals of the episode (see the module docstring)."""

    def _met(self, goal: GoalRecord) -> bool:
        if goal.kind == "room":
            return self._stopped_in(goal.room)
        return self.reached(self._goal()[0])

    def _stopped_in(self, room: int) -> bool:
        """RoomRecall's test: still for ``DWELL`` steps, at least ``MARGIN`` m inside the room."""
        pose = self.robot_pose()
        last, self._last_pose = self._last_pose, pose
        if last is not None:
            turn = abs(float(wrap(pose[2] - last[2])))
            still = float(np.linalg.norm(pose[:2] - last[:2])) < STILL_MOVE and turn < STILL_TURN
            self._still = self._still + 1 if still else 0
        x0, y0, x1, y1 = ROOMS[room]
        inside = x0 + MARGIN <= pose[0] <= x1 - MARGIN and y0 + MARGIN <= pose[1] <= y1 - MARGIN
        return bool(self._still >= DWELL and inside and room_of(pose[:2]) == room)

    # --- goals -------------------------------------------------------------------------
    def _goal_record(self, kind: str, obj: str, start: int) -> GoalRecord:
        colour, cls = self.colour[obj], obj.rsplit("_", 1)[0]
        if kind == "object":
            spot, text = self.spot[obj], f"go to the {colour} {cls}"
        elif kind == "first":
            spot, text = self.initial[obj], f"go to where the {colour} {cls} was first seen"
        elif kind == "was":
            spot, text = self.removed[obj], f"go to where the {colour} {cls} was"
        else:
            spot, text = self.removed[obj], f"go to the room where you saw the {colour} {cls}"
        return GoalRecord(kind, obj, int(spot), int(self.apartment.slot_room[spot]), text, start)

    def candidates(self) -> dict[str, list[str]]:
        """Objects each goal kind may ask about now: only what the camera was shown in that place."""
        here = room_of(self.robot_pose()[:2])
        rooms = self.apartment.slot_room
        present = [n for n in self.active if self.known.get(n) == self.spot[n]]
        first = [n for n in self.initial if n in self.tour_seen and self.spot.get(n, -1) != self.initial[n]]
        gone = [n for n in self.removed if self.known.get(n) == self.removed[n]]
        out = {
            "object": [n for n in present if rooms[self.spot[n]] != here],
            "first": [n for n in first if rooms[self.initial[n]] != here],
            "was": [n for n in gone if rooms[self.removed[n]] != here],
            "room": [n for n in gone if rooms[self.removed[n]] != here],
        }
        return {k: sorted(out[k]) for k in self.options.kind_list}

    def _start_goal(self) -> None:
        cands = self.candidates()
        last = self.current.obj
        asked: dict[str, int] = {}
        for g in self.goals_given:
            asked[g.obj] = asked.get(g.obj, 0) + 1
        kinds = [k for k, names in cands.items() if [n for n in names if n != last]]
        if not kinds:  # nothing knowable elsewhere (hardly ever): any object seen where it is
            kinds, cands = ["object"], {"object": [n for n in self.active if n in self.known] or list(self.active)}
        kind = kinds[int(self.events_rng.integers(len(kinds)))]
        names = [n for n in cands[kind] if n != last] or cands[kind]
        fewest = min(asked.get(n, 0) for n in names)
        names = [n for n in names if asked.get(n, 0) == fewest]
        obj = names[int(self.events_rng.integers(len(names)))]
        self.goals_given.append(self._goal_record(kind, obj, self.t))
        self.stage = "goal"
        self.show = None
        self._still, self._last_pose = 0, None
        self.next_goal_t = self.t + self.options.period

    def _glance(self, tour: bool = False) -> None:
        """Render the head camera's instance masks and note every object it shows where it stands."""
        if self._glance_rig is None:
            self._glance_rig = CameraRig(self.model, ("head",), GLANCE_SIZE, self._video_geoms)
        seg = self._glance_rig.render(self.data, rgb=False, depth=False, seg=True)["segmentation/head"]
        counts = np.bincount(seg.ravel(), minlength=len(self.entities) + 1)
        eye = self.data.cam_xpos[self.model.camera("head").id]
        for name, iid in zip(INSTANCES, self._iid):
            if counts[iid] < SEEN_PIXELS or name not in self.spot or name in self.moving:
                continue
            if np.linalg.norm(self.data.xpos[self._obj_body[name]] - eye) > SEEN_RANGE:
                continue
            self.known[name] = self.spot[name]
            if tour:
                self.tour_seen.add(name)


    def _target_rgb(self) -> np.ndarray:
        if self.phase != "recall" or self.stage not in ("goal", "done"):
            return np.zeros(3, dtype=np.float32)
        return np.array(COLOURS[self.colour[self.current.obj]], dtype=np.float32)

    def _goal_object(self) -> str:
        return self.current.obj

    def _goal_text(self) -> str:
        return self.current.text

    def _goal(self) -> tuple[np.ndarray, np.ndarray]:
        goal = self.current
        if goal.kind == "room":
            return self.apartment.viewpoints[goal.room].copy(), np.zeros(2)
        return self.apartment.slots[goal.spot, :2].copy(), self.apartment.normals[goal.spot]

    @property
    def target_room(self) -> int:
        """The room the current goal asks for (room goals), else the room of its place."""
        return self.current.room
