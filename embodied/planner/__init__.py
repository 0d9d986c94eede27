"""The planner: goal text -> memory queries -> a plan of skill calls.

from embodied.planner import SkillCall, SKILLS
"""

from embodied.planner.calls import NO_SKILL, PARAM_DIM, SKILL_IDS, SKILLS, SkillCall

__all__ = ["NO_SKILL", "PARAM_DIM", "SKILLS", "SKILL_IDS", "SkillCall"]
