"""MemoryAgent: perceive -> remember -> plan -> act, on sensors alone.

    agent = MemoryAgent(labels)            # labels: the detector's vocabulary, instance id -> class
    agent.reset()
    action = agent.act(obs)                # every control step
    agent.memory, agent.plan, agent.current_call, agent.plan_text()

Each step the observation is perceived (``embodied.perception``) and folded
into a :class:`~embodied.memory.SpatialMemory`; a mobile base also folds its
head depth into its own free-space map and cuts that map into room nodes
(``SpatialMemory.update_rooms``) every ``rooms_every`` steps and whenever a
goal arrives. Whenever the goal text changes
it is parsed (``embodied.planner.grammar``) and planned from memory
(``embodied.planner.Planner``) into skill calls, which run one after another
through the skill library (scripted skills by default; learned heads implement
the same :class:`~embodied.agent.skills.Skill` protocol). After each call the
planner checks its effect in memory; a failure is retried, then replanned from
memory, a bounded number of times, and each is logged as a memory event. A
retried place, pick or lift is aimed off its target by the miss the agent
saw (:mod:`embodied.agent.aim`): where memory saw the object come to rest,
where proprioception had the fingers close.

Mobile base: the head camera's extrinsics come from wheel odometry and drift;
``localise`` (a :class:`~embodied.mapping.localise.LocaliserConfig`, on by
default; ``None`` switches it off) registers every few head depth frames
against the map it builds and replaces ``extrinsics/head`` with the corrected
pose before anything reads it, so perception, the free-space map and the
navigate skill all use the corrected pose (``agent.localiser.trajectory()``).
The odometry is re-zeroed on the dock when the recall phase starts: the
localiser re-anchors there.

Ablations: ``wipe_at_recall`` gives the agent a fresh memory at the first
recall step (it knows only what it senses from then on); ``blank_observe``
feeds it blank frames and the instruction "wait" while the goal's phase is 0 (observe).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from embodied.agent import persist
from embodied.agent.aim import GRASPS, Aim
from embodied.agent.configuration import AgentConfig
from embodied.agent.decisions import DecisionLog
from embodied.agent.drift import DriftFix, moving_mask
from embodied.agent.skills.arm import arm_skills
from embodied.agent.skills.navigate import CAMERA as HEAD_CAMERA
from embodied.agent.skills.navigate import NavigateSkill, integrate_observation
from embodied.memory import SpatialMemory
from embodied.memory.config import kind_of
from embodied.mapping.freespace import FreeSpaceMap
from embodied.mapping.localise import DepthLocaliser
from embodied.perception import Perceiver
from embodied.planner.calls import SkillCall
from embodied.planner.grammar import Goal, parse
from embodied.planner.planner import Planner
from embodied.planner.resolver import ResolutionError

RECALL = 2
ARM_PROPRIO, BASE_PROPRIO = 22, 5


class MemoryAgent:
    """A :class:`policies.Policy`: ``reset()``, then ``act(obs) -> action`` each step."""

    def __init__(self, labels: dict[int, str], config: AgentConfig | None = None, skills: dict | None = None,
                 planner: Planner | None = None, decider=None):
        """``skills``: skill name -> Skill replacing the scripted one (e.g. ``policies.load_head(spec)``).
        ``decider``: a learned high-level policy (:class:`~embodied.agent.learned.Decider`) choosing each
        next call in place of the planner's plans, retries and effect checks."""
        self.labels = dict(labels)
        self.config = config or AgentConfig()
        self.planner = planner or Planner()
        self.decider = decider
        self._skills_given = skills
        self.reset()

    # --- policy protocol -------------------------------------------------------------
    def reset(self, seed: int | None = None) -> None:
        cfg = self.config
        if seed is not None:
            cfg.perception.seed = int(seed)
        self.perceive = Perceiver(self.labels, cfg.perception)
        self.memory = SpatialMemory(cfg.memory_config())
        self.skills = dict(self._skills_given or {})  # completed with the body's scripted skills at the first act
        self.aim = Aim(cfg.aim) if cfg.aim is not None else None
        self._reached: np.ndarray | None = None  # TCP (3,) m when the running grasp closed its fingers
        self.freespace: FreeSpaceMap | None = None  # the mobile robot's own map of free space (head depth)
        self.drift: DriftFix | None = None  # the mobile robot's drift correction
        self.t = 0  # steps of this episode folded into memory
        self.t0 = 0  # the memory time of this episode's step 0 (past a resumed memory's last, see resume_memory)
        self.goal_text: str | None = None
        self.goal: Goal | None = None
        self.target_rgb = None
        self.plan: list[SkillCall] = []  # the calls still to run, current first
        self.done_calls: list[SkillCall] = []
        self.current_call: SkillCall | None = None
        self.skill = None
        self.log: list[dict] = []  # what happened: plans, skill ends, failures, replans
        self.trace: list[dict] = []  # {"t", "call"}: the running call from step t on (None: idle)
        self.attempts = 0
        self.replans = 0
        self._settle = 0
        self._since = 0
        self._phase = 0
        self._action_dim: int | None = None
        self._idle = None
        self.decisions = DecisionLog(labeller=getattr(self.decider, "labeller", "agent")) \
            if cfg.record_decisions else None
        self._segments: dict = {}  # this step's masks per camera (Perceiver.segment)
        self._moving: np.ndarray | None = None  # this step's movable head-camera pixels
        self._ask = False  # a decision is due: the goal changed or a call ended
        self._decided = 0  # decisions taken for the current goal (a decider's budget)
        self._unresolved = -1  # the step the plan last failed to resolve against memory (-1: it resolved)
        if self.decider is not None:
            self.decider.reset()

    def act(self, obs: dict[str, Any]) -> np.ndarray:
        if self.perceive.config.mode != "masks":
            # Without the renderer's privilege, its masks are not even looked at.
            obs = {k: v for k, v in obs.items() if not k.startswith("segmentation/")}
        if self._action_dim is None:
            self._embody(obs)
        self._segments = self.perceive.segment(obs)  # per camera (ids, labels): rendered or learned
        # The head camera's movable pixels, left out of the free-space map and the localiser's scan (a
        # carried object must not leave a trail of walls); None without masks (geometric mode).
        self._moving = moving_mask(self._segments, kind_of) if self.freespace is not None else None
        obs = self._localise(obs)
        if self.config.blank_observe and int(obs["goal"]["phase"]) == 0:
            obs = _blank(obs)
        self._remember(obs)
        if self.decider is not None:
            self.decider.observe(obs, self.t - 1)
        self._follow_goal(obs)
        if self.skill is not None and (self.skill.done or self.skill.failed):
            if self._settle > 0:
                self._settle -= 1
                return self._hold_action()
            self._finish_skill(obs)
        if self.skill is None:
            self._start_next(obs)
            if self._ask and self.decisions is not None:
                self._record_decision(obs)
            self._ask = False
        if self.skill is None:
            return self._hold_action()
        self._retarget(obs)
        action = np.asarray(self.skill.act(obs), dtype=np.float32)
        if self._action_dim == 5 and self._reached is None and action[4] < 0 and self.current_call.skill in GRASPS:
            self._reached = np.asarray(obs["proprio"], dtype=np.float64)[14:17].copy()  # where the fingers closed
        if self.skill.done or self.skill.failed:
            self._settle = self.config.settle_steps
        if self._action_dim == 5:
            self._idle[4] = action[4]  # keep the gripper as the last skill left it
        return action

    def _record_decision(self, obs: dict) -> None:
        """The decision just taken, labelled with the call started, or with the relabelling decider's."""
        if self.decisions.labeller == "agent":
            self.decisions.add(self.t - 1, self.goal_text, obs, self.memory, self.current_call)
            return
        labelled, call, alternatives = self.decider.take_label()
        if labelled:
            self.decisions.add(self.t - 1, self.goal_text, obs, self.memory, call, alternatives, ran=self.current_call)

    def _embody(self, obs: dict) -> None:  # from the first observation: an arm, or a base with a head camera
        arm = np.asarray(obs["proprio"]).shape[0] == ARM_PROPRIO
        self._build_body(arm, not arm and f"depth/{HEAD_CAMERA}" in obs)

    def _build_body(self, arm: bool, mapped: bool) -> None:
        """The body's action size and skills; a mapped base (head camera) keeps a free-space map and its
        drift fix: those already in place (a saved agent's, a resumed memory's) are kept."""
        self._action_dim = 5 if arm else 2
        self._idle = np.zeros(self._action_dim, dtype=np.float32)
        if arm:
            self._idle[4] = 1.0  # gripper open
        if not mapped:
            self.freespace = self.drift = None
        elif self.freespace is None:
            self.freespace = FreeSpaceMap()
        if mapped and self.drift is None and self.config.localise is not None:
            self.drift = DriftFix(self.config.localise)
        # The scripted skills for this body; skills given to the agent (learned heads) replace them.
        self.skills = dict(arm_skills()) if arm else {}
        if self.freespace is not None:
            self.skills["navigate"] = NavigateSkill(self.freespace)
        self.skills.update(self._skills_given or {})
        self._lend_map()

    def _lend_map(self) -> None:
        """Skills that drive along a route on the robot's own map (a learned navigate head) get one on this
        episode's map: the scripted navigate skill built with the options the skill asks for."""
        if self.freespace is None:
            return
        for skill in self.skills.values():
            if hasattr(skill, "use_route"):
                skill.use_route(NavigateSkill(self.freespace, **getattr(skill, "route_options", {})))

    @property
    def current_guide(self) -> np.ndarray | None:
        """The running skill's route features of the last step (``NavigateSkill.guide``), else None."""
        return None if self.skill is None else getattr(self.skill, "guide", None)

    # --- perception + memory ---------------------------------------------------------
    def _localise(self, obs: dict) -> dict:
        """The observation with the head camera's drift-corrected pose (unchanged without a localiser)."""
        return obs if self.drift is None else self.drift(obs, self.t, self._moving)

    @property
    def localiser(self) -> DepthLocaliser | None:
        """The mobile robot's drift correction (its corrected track: ``localiser.trajectory()``)."""
        return None if self.drift is None else self.drift.localiser

    def _remember(self, obs: dict) -> None:
        phase = int(obs["goal"]["phase"])
        if phase == RECALL and self._phase != RECALL and self.config.wipe_at_recall:
            self.memory = SpatialMemory(self.config.memory_config())
            if self.freespace is not None:
                self.freespace = FreeSpaceMap()
                if self.drift is not None:
                    self.drift = DriftFix(self.config.localise, phase=phase)
                if "navigate" not in (self._skills_given or {}):
                    self.skills["navigate"] = NavigateSkill(self.freespace)
                self._lend_map()
        self._phase = phase
        self.memory.update(self.perceive(obs, self.t0 + self.t, self._segments))
        self.memory.hear(self.t0 + self.t, obs["goal"]["text"])
        if self.freespace is not None:
            integrate_observation(self.freespace, obs, self._moving)
            if self.config.rooms_every and self.t % self.config.rooms_every == 0:
                self.memory.update_rooms(self.freespace)
        self.t += 1

    # --- planning --------------------------------------------------------------------
    def _follow_goal(self, obs: dict) -> None:
        text = obs["goal"]["text"]
        if text == self.goal_text:
            return
        self.goal_text = text
        self.goal = parse(text)
        self.target_rgb = np.asarray(obs["goal"].get("target_rgb", np.zeros(3)), dtype=np.float64)
        self.replans = 0
        self.skill, self.current_call = None, None
        self.done_calls = []
        self._ask, self._decided, self._unresolved = True, 0, -1
        if self.freespace is not None and self.config.rooms_every:
            self.memory.update_rooms(self.freespace)  # rooms as the map stands now, before planning
        if self.decider is None:
            self._make_plan("plan")
        else:
            self.plan = []

    def _make_plan(self, why: str) -> None:
        try:
            self.plan = self.planner.plan(self.goal, self.memory, self.target_rgb)
        except ResolutionError as err:
            self.plan = []
            if self._unresolved < 0:  # noted once; the tries that follow fail the same way
                self._note("unresolved", str(err))
            self._unresolved = self.t - 1
            return
        self._unresolved = -1
        self.attempts = 0
        if self.plan or why != "plan":
            self._note(why, self.plan_text())

    def _start_next(self, obs: dict) -> None:
        if self.decider is not None and not self.plan and self._ask and self._decided < self.config.max_decisions:
            self._decided += 1
            call = self.decider.decide(self.goal_text, self.memory, obs, self.t - 1)
            self.plan = [] if call is None else [call]
            self._note("decide", str(call) if call is not None else "stop")
        every = self.config.retry_unresolved
        if not self.plan and self.decider is None and self._unresolved >= 0 and every \
                and self.t - 1 - self._unresolved >= every:
            self._make_plan("plan")  # memory may hold the referent now: a later, sharper or luckier view
        if not self.plan:
            self.current_call = None
            return
        call = self.planner.refresh(self.plan[0], self.memory, self.target_rgb)
        self.plan[0] = call
        skill = self.skills.get(call.skill)
        if skill is None:
            self._note("no_skill", f"no skill runs {call.skill!r}; have {sorted(self.skills)}")
            self.plan = []
            return
        given = self._aimed(call)
        skill.start(given, obs)
        self.skill, self.current_call = skill, call
        self._since = self.t0 + self.t  # memory time: the effect check reads events from here on
        self._reached = None
        # The trace holds the call the skill ran (demonstrations label frames with it).
        self.trace.append({"t": self.t - 1, "call": given.to_dict(), "text": str(given)})

    def _aimed(self, call: SkillCall) -> SkillCall:
        """The call as handed to its skill: a retry of a missed place or grasp is aimed off its target."""
        return call if self.aim is None else self.aim.apply(call)

    def _retarget(self, obs: dict) -> None:
        """Hand the running skill its target's latest estimate (memory sharpens as the arm closes in)."""
        if not hasattr(self.skill, "retarget") or not self.current_call.target:
            return
        fresh = self.planner.refresh(self.current_call, self.memory, self.target_rgb)
        if fresh is not self.current_call and self.skill.retarget(self._aimed(fresh), obs):
            self.current_call = self.plan[0] = fresh

    def _finish_skill(self, obs: dict) -> None:
        call, skill = self.current_call, self.skill
        self.skill, self.current_call = None, None
        self.trace.append({"t": self.t - 1, "call": None, "text": ""})
        self._ask = True
        if self.decider is not None:  # the decider sees the outcome in memory and chooses again
            self.done_calls.append(self.plan.pop(0))
            self._note("skill_failed" if skill.failed else "skill_done", str(call))
            return
        ok = not skill.failed and self.planner.check(call, self.memory, self._since)
        if ok:
            self.done_calls.append(self.plan.pop(0))
            self.attempts = 0
            self._note("skill_done", str(call))
            return
        self.attempts += 1
        self._note("skill_failed", f"{call} (attempt {self.attempts})")
        dropped = call.skill == "place" and not self.memory.where_is(call.target)["held"] \
            if call.target in self.memory.graph else False
        if self.aim is not None and (dropped or call.skill in GRASPS):
            landed = np.asarray(self.memory.where_is(call.target)["position"]) if dropped else None
            offset = self.aim.miss(call, landed=landed, reached=self._reached)
            if offset is not None:
                self._note("aim", f"{call.note or call.target}: next {call.skill} aimed "
                                  f"{', '.join(f'{v:+.3f}' for v in offset)} m off its target")
        if self.attempts <= self.config.max_retries and not dropped:
            return  # the same call again, refreshed from memory when it starts
        if self.replans >= self.config.max_replans:
            self._note("gave_up", str(call))
            self.plan = []
            return
        self.replans += 1
        self._make_plan("replan")

    # --- helpers ---------------------------------------------------------------------
    def _hold_action(self) -> np.ndarray:
        return self._idle.copy()

    def _note(self, tag: str, text: str) -> None:
        t = self.t - 1  # the step of the observation being acted on (self.t counts folded frames)
        self.log.append({"t": t, "tag": tag, "text": text})
        self.memory.note(self.t0 + t, tag, text)

    def plan_record(self) -> dict:
        """JSON-plain: the goal, the plan now, the log (plans, skill ends, failures, replans) and the
        trace of which call ran from which step (``t`` is the step of the observation acted on)."""
        return {
            "goal": self.goal_text,
            "plan": [c.to_dict() for c in self.plan],
            "done": [c.to_dict() for c in self.done_calls],
            "log": list(self.log),
            "trace": list(self.trace),
        }

    def plan_text(self) -> str:
        """The plan as numbered lines: done calls, the current one (>), the rest."""
        lines = [f"  {k + 1}. {c}  [done]" for k, c in enumerate(self.done_calls)]
        for k, c in enumerate(self.plan):
            mark = ">" if k == 0 and self.skill is not None else " "
            lines.append(f"{mark} {len(self.done_calls) + k + 1}. {c}")
        head = f"goal: {self.goal_text}" if self.goal_text else "goal: -"
        return "\n".join([head, *lines])

    # --- saving and restoring (embodied.agent.persist) --------------------------------
    # The agent's own counters persist saves besides its parts (memory, map, drift fix, skills, plan, log).
    STATE_FIELDS = ("t", "t0", "attempts", "replans", "_settle", "_since", "_phase", "_ask", "_decided",
                    "_unresolved")

    def save(self, path) -> Path:
        """The whole agent into the folder ``path``, atomically: loaded, it acts exactly as this one would."""
        return persist.save_agent(self, path)

    @classmethod
    def load(cls, path, skills: dict | None = None, planner: Planner | None = None, decider=None) -> MemoryAgent:
        """What ``save`` wrote; ``skills``, ``decider``: the learned ones it ran with (weights are not saved)."""
        return persist.load_agent(path, cls, AgentConfig, skills, planner, decider)

    def resume_memory(self, path, gap: int = persist.EPISODE_GAP) -> None:
        """After ``reset``, before the first ``act``: this episode (the next day, same place) starts with the
        memory, free-space map and localiser map saved at ``path`` (a ``save`` folder or a memory file)."""
        persist.resume_memory(self, path, gap)


def _blank(obs: dict) -> dict:
    """The observation with every image zeroed (no colour, no depth return, no instances) and the
    instruction reduced to "wait" (an instruction shown while observing is a cue too)."""
    out = dict(obs, goal={**obs["goal"], "text": "wait"})
    for key, value in obs.items():
        if key.startswith(("rgb/", "depth/", "segmentation/")):
            out[key] = np.zeros_like(value)
    return out
