"""Learned heads as skills: the agent's :class:`~embodied.agent.skills.Skill` protocol over a trained head.

    skills = load_head("diffusion:runs/d1")     # {skill name: LearnedSkill}, one per skill the run learned
    agent = MemoryAgent(labels, skills={**arm_skills(), **skills})

``start(call, obs)`` resets the head's queues and fixes its conditioning (the
skill's id and the call's parameters; the head expresses them in the robot's
frame at every step). ``act(obs)`` returns the head's next action.

When is a learned skill done? The head is trained with a *done* channel: for
each predicted step, whether the demonstrator's skill call had already ended
there (:mod:`policies.data`). After choosing a step's action the skill looks at
the done probability the same chunk gives the *following* step. Above
``config.done_threshold`` (``config.skill_done_threshold`` for the skills named in
``config.done_threshold_skills``) for ``config.done_patience`` steps in a row (after at
least ``min_steps``), this step is the skill's last: its action is returned and
``done`` turns true, as with the scripted skills. The chunk's end is trusted as
planned, like its actions. With ``config.done_confirm`` a done from a chunk
predicted some steps ago is first re-predicted from the current observation
(for the diffusion head, whose done channel is sampled and so noisy). That
costs skills whose end pose is also passed on the way: a press comes back up
to where it started, and a fresh prediction there may not know the push
happened and send the arm down again. Afterwards ``act`` holds still (no
motion, the gripper as last commanded). A skill that runs past ``budget``
steps without finishing reports ``failed``, so the planner retries or replans
as with the scripted skills. ``patience``, ``confirm`` and ``done_threshold``
arguments override the head's config.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from embodied.planner.calls import SKILL_IDS, SkillCall
from policies.export import load_run, resolve_run
from policies.head import IMAGE_PREFIX, HeadBase
from policies.registry import HEADS


class LearnedSkill:
    """One skill (``name``) run by a trained head; follows the agent's Skill protocol."""

    def __init__(self, policy: HeadBase, name: str, budget: int = 400, min_steps: int = 2, patience: int | None = None,
                 done_threshold: float | None = None, confirm: bool | None = None):
        if name not in SKILL_IDS:
            raise ValueError(f"unknown skill {name!r}; skills: {', '.join(SKILL_IDS)}")
        trained = policy.config.skills
        if trained and name not in trained:
            raise ValueError(f"the {policy.name} head was trained on {', '.join(trained)}, not {name!r}")
        self.policy, self.name = policy.eval(), name
        cfg = policy.config
        self.budget, self.min_steps = int(budget), int(min_steps)
        self.patience = max(1, int(cfg.done_patience if patience is None else patience))
        self.confirm = bool(cfg.done_confirm if confirm is None else confirm)
        self._over = 0
        if done_threshold is None:
            done_threshold = cfg.skill_done_threshold if name in cfg.done_threshold_skills else cfg.done_threshold
        self.done_threshold = float(done_threshold)
        self.call: SkillCall | None = None
        self._done = self._failed = False
        self._steps = 0
        self._last = np.zeros(policy.config.action_dim, dtype=np.float32)
        self.done_prob = 0.0

    @property
    def done(self) -> bool:
        return self._done

    @property
    def failed(self) -> bool:
        return self._failed

    def start(self, call: SkillCall, obs: dict[str, Any]) -> None:
        if call.skill != self.name:
            raise ValueError(f"LearnedSkill {self.name!r} cannot run a {call.skill!r} call")
        self.call = call
        self.policy.reset()
        self.policy.begin_skill(self.name)
        self._sid = torch.tensor([call.skill_id])
        self._params = torch.from_numpy(call.params()).unsqueeze(0)
        self._done = self._failed = False
        self._steps = self._over = 0
        self._last = np.zeros(self.policy.config.action_dim, dtype=np.float32)
        if self.policy.robot == "arm":
            self._last[-1] = 1.0 if float(np.asarray(obs["proprio"])[21]) > 0.07 else -1.0

    def observation(self, obs: dict[str, Any], guide: np.ndarray | None = None) -> dict[str, torch.Tensor]:
        """The env observation as one step of the head's inputs (batch of 1); ``guide``: the step's
        route features (``guide_dim`` values), which heads trained with them need."""
        cfg = self.policy.config
        state = np.asarray(obs.get("proprio"), dtype=np.float32).reshape(-1) if "proprio" in obs else None
        if state is None or state.shape[0] != cfg.state_dim:
            raise ValueError(f"the {self.policy.name} head expects obs['proprio'] of {cfg.state_dim} values, "
                             f"got {None if state is None else state.shape[0]}")
        out = {"observation.state": torch.from_numpy(state).unsqueeze(0), "skill.id": self._sid,
               "skill.params": self._params}
        if cfg.guide_dim:
            g = None if guide is None else np.asarray(guide, dtype=np.float32).reshape(-1)
            if g is None or g.shape[0] != cfg.guide_dim:
                raise ValueError(f"the {self.policy.name} head is conditioned on {cfg.guide_dim} route features "
                                 f"(skill.guide), got {None if g is None else g.shape[0]}; run it through "
                                 "policies.nav_skill.LearnedNavigateSkill")
            out["skill.guide"] = torch.from_numpy(g).unsqueeze(0)
        if cfg.needs_elapsed():
            out["skill.elapsed"] = torch.tensor([float(max(self._steps - 1, 0))])
        for cam in cfg.cameras:
            key = f"rgb/{cam}"
            if key not in obs:
                raise ValueError(f"the {self.policy.name} head needs camera {cam!r}: obs has no {key!r}")
            img = torch.from_numpy(np.ascontiguousarray(obs[key])).permute(2, 0, 1).float().div_(255.0)
            out[IMAGE_PREFIX + cam] = img.unsqueeze(0)
        return out

    def _hold(self) -> np.ndarray:
        action = np.zeros(self.policy.config.action_dim, dtype=np.float32)
        if self.policy.robot == "arm":
            action[-1] = self._last[-1]  # keep the gripper as last commanded
        return action

    def act(self, obs: dict[str, Any], guide: np.ndarray | None = None) -> np.ndarray:
        if self.call is None:
            raise RuntimeError(f"LearnedSkill {self.name!r}: act() before start()")
        if self._done or self._failed:
            return self._hold()
        self._steps += 1
        if self._steps > self.budget:
            self._failed = True
            return self._hold()
        policy, threshold = self.policy, self.done_threshold
        action = policy.select_action(self.observation(obs, guide))
        if self.confirm and float(policy.next_done.reshape(-1)[0]) > threshold and policy.chunk_age > 0:
            action = policy.repredict()  # confirm on the current observation, not an old plan
        self.done_prob = float(policy.next_done.reshape(-1)[0])
        self._over = self._over + 1 if self.done_prob > threshold else 0
        self._last = np.clip(action[0].cpu().numpy().astype(np.float32), -1.0, 1.0)
        if self._steps >= self.min_steps and self._over >= self.patience:
            self._done = True
        return self._last.copy()

def load_head(spec: str, budget: int = 400, weights: str = "ema", **skill_options) -> dict[str, Any]:
    """``"diffusion:RUN_DIR"`` or ``"act:RUN_DIR"`` -> {skill name: LearnedSkill} for every skill the run learned
    (a navigate head trained on route features comes wrapped in a ``LearnedNavigateSkill``).

    RUN_DIR is a training run, an exported head (:mod:`policies.export`), or the short name of a
    shipped one: ``"act:manip"`` is ``policies/checkpoints/act_manip``. A suffix ``@pick,place``
    keeps only those of the head's skills (the agent runs its scripted skills for the rest)."""
    spec, at, only = spec.partition("@")
    kind, sep, run = spec.partition(":")
    if not sep or kind not in HEADS or not run:
        raise ValueError(f"head spec must be '<head>:<run dir>' (optionally '@skill,...') with head one of "
                         f"{', '.join(HEADS)}; got {spec + at + only!r}")
    policy = load_run(resolve_run(kind, run), weights=weights)
    if policy.name != kind:
        raise ValueError(f"{run} holds a {policy.name!r} head, not {kind!r}")
    if not policy.config.skills:
        raise ValueError(f"{run}: the head's config names no skills")
    names = list(policy.config.skills)
    if at:
        wanted = [s.strip() for s in only.split(",") if s.strip()]
        missing = [s for s in wanted if s not in names]
        if not wanted or missing:
            raise ValueError(f"head spec {spec + at + only!r}: after '@' name skills the head learned "
                             f"({', '.join(names)}); got {only!r}")
        names = [s for s in names if s in wanted]
    skills: dict[str, Any] = {}
    for name in names:
        skill = LearnedSkill(policy, name, budget=budget, **skill_options)
        if name == "navigate" and policy.config.guide_dim:
            from policies.nav_skill import LearnedNavigateSkill

            skill = LearnedNavigateSkill(skill)
        skills[name] = skill
    return skills
