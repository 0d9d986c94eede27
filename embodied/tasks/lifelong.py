"""Lifelong: one long episode in an apartment that keeps changing; goal after goal, one memory.

The apartment of the navigation suite with many more objects: ``objects`` (40 by default) of
the twelve classes, up to five of a class, each instance in its own colour (so "the red mug"
and "the blue mug" are told apart by colour), on 45 spots along the furniture's front edges,
0.3 m apart. Twenty more instances wait out of the apartment to be added later.

observe  The tour, as in the other navigation tasks (env-driven, agent actions ignored).
delay    ``delay`` steps at the dock.
recall   ``goals`` cycles of ``period`` steps (the first goal as the recall phase starts):

         goal   the instruction (``obs["goal"]["phase"]`` 2): the robot has ``time_limit`` steps.
                Reaching it (or running out of time) ends the goal.
         show   ``obs["goal"]["phase"]`` 0, "watch the apartment", agent actions ignored. The env
                makes ``changes`` changes: each moves an object to a free spot, removes one
                (taken out of the apartment) or adds one (a new instance on a free spot). A share
                ``watched`` of them happen in view: the env drives the robot to the viewpoint of
                the room it stands in, turns it round once (as on the tour), then turns it to face
                each watched change as it happens (an object glides to another spot in the room
                while the robot follows it, is lifted away, or is set down). The others happen at
                once, as the show starts, in the other rooms and out of the camera's view.
         wait   ``obs["goal"]["phase"]`` 1, "wait for the next goal", agent actions ignored, until
                the cycle's ``period`` steps are over; then the next goal.

Goals, drawn at random (uniformly over the ``kinds`` that have a candidate) when each is given:

         object "go to the <colour> <class>": an object where it stands now.
         first  "go to where the <colour> <class> was first seen": an object seen on the tour
                that has moved or gone since; the asked place is its spot on the tour.
         was    "go to where the <colour> <class> was": an object taken away; its last spot.
         room   "go to the room where you saw the <colour> <class>": an object taken away; the
                room of its last spot. Success as RoomRecall: stop (5 still steps) at least
                0.3 m inside that room.

Every goal is answerable from what the robot was shown: the env renders the head camera's
instance masks every few steps of the tour and of each show, and asks only about an object the
camera saw (at least ``SEEN_PIXELS`` pixels of it at 96 x 96, within ``SEEN_RANGE``) in the
place the goal is about, after its last change. What the robot sees on its own drives between
goals adds to its memory but never to what may be asked. Every goal names a place (or a room)
in another room than the robot's at the time, so the answer is not in view when the goal is
given, and a robot that stays put never reaches it. The first goal is fixed at reset (the cue,
as in MultiGoal): "go to" the first object, whose spot is the cue; nothing changes before it.

Success per goal: within 0.5 m of the asked place (xy) and facing it within 30 degrees (room:
stopped inside the room) before ``time_limit`` steps. The episode runs to the end of the last
goal and succeeds when at least ``SUCCESS_SHARE`` (90%) of its goals succeeded.
``info["goal_success"]`` lists the outcome of every goal ended so far, ``info["goal_index"]`` the
index of the current one, ``info["goal_kinds"]`` / ``info["goal_chance"]`` the kind and chance of
every goal given so far, ``info["goal_steps"]`` the steps each ended goal took,
``info["goal_rate"]`` the share reached so far and ``info["stage"]`` the stage. The reward is 1 at
each goal reached, so the return counts the goals reached.

Chance per goal (``Lifelong.kind_chance(options)``), as the other navigation families count it:
a place (object, first, was) is one of the ``45 spots - objects + 1`` places it could be (1/6 at
the defaults); a room one of the three the robot is not in (1/3). The episode's chance is the
binomial tail: the probability of reaching at least 90% of the goals at the per-goal chance
averaged over the kinds.
"""

from __future__ import annotations

import math
from typing import ClassVar

import mujoco
import numpy as np

from embodied.envs.apartment import COLOURS, DELAY_TEXT, OBJECT_CLASSES, TOUR_TEXT, NavigationEnv
from embodied.envs.cameras import CameraRig
from embodied.envs.nav_base import DriveBase
from embodied.envs.nav_drive import track
from embodied.envs.nav_layout import FURNITURE, ROOMS, SEGMENTS, SIZE, WALL_HEIGHT
from embodied.envs.nav_map import MapPainter
from embodied.envs.nav_plan import LayoutSampler
from embodied.envs.scene import Entity, SceneBuilder
from embodied.tasks.lifelong_show import (
    GLANCE_EVERY, Change, ShowScript, _Show,
)
from embodied.tasks.lifelong_goals import INSTANCES, PER_CLASS, GoalRecord, GoalScript
from embodied.tasks.lifelong_options import (
    COLOUR_GROUPS, SHOW_TEXT, SPOT_X, SPOTS, SUCCESS_SHARE, WAIT_TEXT, LifelongOptions,
)
from embodied.tasks.room_recall import HIDDEN

class Lifelong(GoalScript, ShowScript, NavigationEnv):
    family = "Lifelong"
    memory_skill = "a changing apartment over a long episode: where things are now, were first and were last"
    Options = LifelongOptions
    SLOTS: ClassVar[int] = SPOTS
    chance = ("per goal: 1 / (45 spots - objects + 1) for a place (17% at defaults), 1/3 for a room; "
              "episode (>= 90% of goals): the binomial tail at their mean")

    # --- chance -------------------------------------------------------------------
    @classmethod
    def kind_chance(cls, options: LifelongOptions) -> dict[str, float]:
        """Chance of one goal of each kind: a place among the free spots plus its own; a room among the three
        the robot is not in."""
        place = 1.0 / (SPOTS - options.objects + 1)
        return {"object": place, "first": place, "was": place, "room": 1.0 / (len(ROOMS) - 1)}

    @classmethod
    def goal_chance_rate(cls, options: LifelongOptions) -> float:
        """Chance of one goal, the kinds drawn uniformly."""
        per = cls.kind_chance(options)
        return float(np.mean([per[k] for k in options.kind_list]))

    @classmethod
    def chance_rate(cls, options: LifelongOptions) -> float:
        p, n = cls.goal_chance_rate(options), options.goals
        need = math.ceil(SUCCESS_SHARE * n - 1e-9)
        return float(sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(need, n + 1)))

    # --- construction -------------------------------------------------------------
    def _build(self) -> tuple[mujoco.MjModel, list[Entity]]:
        scene = SceneBuilder("apartment")
        scene.add_entity("floor", "floor", "floor")
        scene.add_entity("walls", "wall", "walls")
        scene.add_entity("robot", "robot", "base")
        walls = scene.spec.body("walls")
        for seg in SEGMENTS:
            for k in range(seg.tiles):
                walls.add_geom(
                    name=f"{seg.name}_{k}", type=mujoco.mjtGeom.mjGEOM_BOX, size=[*seg.tile_half(), WALL_HEIGHT / 2],
                    pos=[*seg.tile_centre(k), WALL_HEIGHT / 2], contype=0, conaffinity=1, condim=1,
                    rgba=[0.86, 0.84, 0.79, 1.0],
                )
        for name, prop in FURNITURE:
            entity = scene.attach(prop, name, prop, (0.0, -5.0, 0.0))
            if not SPOT_X[prop]:
                continue
            row = scene.spec.site(f"{name}/slot0").pos  # the piece's own slot row: y (front), z (top)
            body = scene.spec.body(entity.root_body)
            for k, x in enumerate(SPOT_X[prop]):
                body.add_site(name=f"{name}/spot{k}", pos=[x, float(row[1]), float(row[2])], size=[0.02, 0, 0],
                              group=4)
        for name in INSTANCES:
            scene.attach(name.rsplit("_", 1)[0], name, name.rsplit("_", 1)[0], HIDDEN)
        return scene.compile()

    def _setup(self) -> None:
        m = self.model
        self.entity = {e.name: e for e in self.entities}
        self.drive = DriveBase(m, self.data, self.rig.camera_ids)
        self._robot_body = self.drive.body
        self._obj_body = {n: m.body(self.entity[n].root_body).id for n in INSTANCES}
        furniture = {name: m.body(self.entity[name].root_body).id for name, _ in FURNITURE}
        self.sampler = LayoutSampler(m, self.data, self._robot_body, furniture, list(self._obj_body.values()))
        # This task's spots replace the pieces' own slots: the layout is checked against these.
        self.sampler.slot_sites = [(name, m.site(f"{name}/spot{k}").id) for name, prop in FURNITURE
                                   for k in range(len(SPOT_X[prop]))]
        assert len(self.sampler.slot_sites) == SPOTS
        self._painter = MapPainter(SIZE)
        self._painted_for: object = None
        self.apartment = None
        self.drive.odometry.noise = self.options.odom_noise
        self._glance_rig: CameraRig | None = None
        self._iid = np.array([self.entity[n].instance_id for n in INSTANCES])
        self.stage = "tour"
        self.goals_given: list[GoalRecord] = []

    def close(self):
        if self._glance_rig is not None:
            self._glance_rig.close()
            self._glance_rig = None
        super().close()

    # --- layout and cue -------------------------------------------------------------
    def _sample_layout(self, rng: np.random.Generator) -> None:
        o = self.options
        self.apartment = self.sampler.sample(rng)
        order = [INSTANCES[i] for i in rng.permutation(len(INSTANCES))]
        self.active, self.spares = order[: o.objects], order[o.objects :]
        self.colour = {}
        for cls in OBJECT_CLASSES:
            groups = rng.choice(len(COLOUR_GROUPS), size=PER_CLASS, replace=False)
            for k, g in enumerate(groups):
                group = COLOUR_GROUPS[int(g)]
                self.colour[f"{cls}_{k}"] = group[int(rng.integers(len(group)))]
        self.object_yaw = {n: float(rng.uniform(-np.pi, np.pi)) for n in INSTANCES}
        self.first_object = self.active[0]
        self.layout_spots = self._assign_spots(rng, self.active[1:])
        self.free_spots = sorted(set(range(SPOTS)) - set(self.layout_spots.values()))
        self._odom_seed = int(rng.integers(2**32))
        self._event_seed = int(rng.integers(2**63))

    def _sample_cue(self, rng: np.random.Generator) -> int:
        return int(rng.choice(self.free_spots))

    def cue_variants(self) -> list[int]:
        """Two free spots in different rooms for the first goal's object."""
        return self._spots_in_two_rooms(self.free_spots)

    def _spots(self) -> dict[str, int]:
        if not isinstance(self.cue, (int, np.integer)) or self.cue not in self.free_spots:
            raise ValueError(f"cue must be a free spot index, one of {self.free_spots}; got {self.cue!r}")
        return {**self.layout_spots, self.first_object: int(self.cue)}

    def _place_objects(self) -> None:
        for name in INSTANCES:
            self.put_object(name, HIDDEN)
        self.spot = self._spots()
        for name, k in self.spot.items():
            self.put_object(name, self.apartment.slots[k])

    def _reset_scene(self) -> None:
        self.active = [self.first_object, *self.layout_spots]
        super()._reset_scene()
        for name in INSTANCES:  # the spares too: an added object has its colour from the start
            for g in self.entity[name].geom_ids:
                self.model.geom_rgba[g, :3] = COLOURS[self.colour[name]]
        self.events_rng = np.random.default_rng(self._event_seed)
        self.spares_left = list(self.spares)
        self.initial = dict(self.spot)
        self.removed: dict[str, int] = {}  # taken away -> the spot it left
        self.known: dict[str, int] = {}  # object -> the spot the camera last saw it on (after its last change)
        self.tour_seen: set[str] = set()
        self.moving: set[str] = set()  # objects in the middle of a watched change
        self.changes: list[Change] = []
        self.goals_given = []
        self.stage = "tour"
        self.show: _Show | None = None
        self.next_goal_t = 0
        self._still, self._last_pose = 0, None
        self.goals_given.append(self._goal_record("object", self.first_object, 0))

    # --- phases ---------------------------------------------------------------------
    def _on_phase(self, phase: str) -> None:
        super()._on_phase(phase)
        if phase == "delay":
            self.stage = "delay"
        elif phase == "recall":
            self.stage = "goal"
            first = self.goals_given[0]
            first.start = self.t
            self.next_goal_t = self.t + self.options.period

    def _script(self, phase: str, k: int) -> None:
        if phase == "observe" and self.t % GLANCE_EVERY == 0:
            mujoco.mj_forward(self.model, self.data)
            self._glance(tour=True)

    def extra_steps(self) -> int:
        o, d = self.options, type(self).Options()
        return self.extra_delay() + max(0, o.goals * o.period - d.goals * d.period)

    # --- actions ------------------------------------------------------------------------
    def _apply_action(self, action: np.ndarray) -> None:
        if self.phase != "recall" or self.stage == "goal":
            super()._apply_action(action)
            return
        v = w = 0.0
        show = self.show
        if self.stage == "show" and show is not None:
            pose = self.drive.pose()
            if show.look is None:
                v, w = show.follower.act(pose)
            elif show.look_i + 1 < len(show.look):
                v, w = track(pose, show.look[show.look_i], show.look[show.look_i + 1], self.control_dt)
        self.drive.command(float(np.clip(v, -0.5, 0.5)), float(np.clip(w, -1.5, 1.5)))

    # --- the cycle ----------------------------------------------------------------------
    @property
    def current(self) -> GoalRecord:
        return self.goals_given[-1]

    def _evaluate(self) -> tuple[bool, bool]:
        o = self.options
        if self.stage == "goal":
            goal = self.current
            met = self._met(goal)
            if met or self.t - goal.start >= o.time_limit:
                goal.end, goal.success = self.t, bool(met)
                self._reward = float(met)
                if len(self.goals_given) >= o.goals:
                    rate = self.goal_rate()
                    self.stage = "done"
                    return rate >= SUCCESS_SHARE - 1e-9, rate < SUCCESS_SHARE - 1e-9
                self._start_show()
        elif self.stage == "show":
            self._show_step()
        elif self.stage == "wait" and self.t >= self.next_goal_t:
            self._start_goal()
        return False, False

    def step(self, action):
        """As every task's step, but the reward is 1 at each goal reached (not once for the episode's success)."""
        self._reward = 0.0
        obs, _, terminated, truncated, info = super().step(action)
        return obs, self._reward, terminated, truncated, info

    def goal_rate(self) -> float:
        ended = [g for g in self.goals_given if g.end >= 0]
        return float(np.mean([g.success for g in ended])) if ended else 0.0

    # --- observations -----------------------------------------------------------------------
    def _observation(self, force_render: bool = False) -> dict:
        obs = super()._observation(force_render)
        obs["goal"]["phase"] = {"show": 0, "wait": 1}.get(self.stage, obs["goal"]["phase"])
        return obs

    def _instruction(self, phase: str) -> str:
        if phase == "recall":
            if self.stage == "show":
                return SHOW_TEXT
            if self.stage == "wait":
                return WAIT_TEXT
            return self.current.text
        return DELAY_TEXT if phase == "delay" else TOUR_TEXT

    def _task_info(self) -> dict:
        chance = self.kind_chance(self.options)
        ended = [g for g in self.goals_given if g.end >= 0]
        return {
            "stage": self.stage,
            "goal_index": len(self.goals_given) - 1,
            "goal_success": [g.success for g in ended],
            "goal_steps": [g.end - g.start for g in ended],
            "goal_kinds": [g.kind for g in self.goals_given],
            "goal_chance": [chance[g.kind] for g in self.goals_given],
            "goal_rate": self.goal_rate(),
            "goals": self.options.goals,
        }

    def privileged(self) -> dict:
        goal = self.current
        return {
            **super().privileged(),
            "goal_kind": goal.kind, "target": goal.obj, "target_spot": goal.spot, "target_room": goal.room,
            "spots": dict(self.spot), "removed": dict(self.removed), "known": dict(self.known),
            "changes": len(self.changes), "watched_changes": sum(c.watched for c in self.changes),
        }
