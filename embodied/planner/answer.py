"""The planner's answer to a recall question: where its plan acts, from memory alone.

    answer = plan_answer(memory, goal)    # goal: obs["goal"] (text, target_rgb)
    answer["answer"]   (3,) m: where the decisive call acts (the last call of the plan), or for a
                       plural goal ("press the buttons ...") the list of every call's position, or
                       for a count ("... as many times as the screen flashed") the number of calls
                       ("the room with the most objects" is one place)
    answer["plan"]     the calls, as text

One function for every task: the goal is parsed, resolved and planned exactly
as the agent does, so evaluating this answer evaluates the agent's memory and
planner without its skills.
"""

from __future__ import annotations

from embodied.planner.grammar import GrammarError, parse
from embodied.planner.planner import Planner
from embodied.planner.resolver import ResolutionError


def plan_answer(memory, goal: dict | None, planner: Planner | None = None) -> dict:
    goal = goal or {}
    try:
        parsed = parse(goal.get("text", ""))
        plan = (planner or Planner()).plan(parsed, memory, goal.get("target_rgb"))
    except (GrammarError, ResolutionError) as err:
        return {"answer": None, "error": str(err)}
    if not plan:
        return {"answer": None, "plan": []}
    if parsed.times_of is not None:  # "press the button as many times as the screen flashed"
        answer = len(plan)
    elif parsed.ref is not None and parsed.ref.plural and parsed.action != "go_to_room":  # a room is one place
        answer = [c.xyz for c in plan]
    else:
        answer = plan[-1].xyz
    return {"answer": answer, "node": plan[-1].target, "plan": [str(c) for c in plan]}
