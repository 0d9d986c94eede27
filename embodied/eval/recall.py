"""Each task family's recall question, checked against the simulator (evaluation only).

The answers come from memory alone, through the planner: the goal is parsed,
resolved and planned as the agent does (``embodied.planner.answer``), with no
per-family code. A check function here compares an answer with the
simulator's ``info["privileged"]``.

    answer = answer_question(family, memory, goal)     # the planner's answer; family picks the check
    correct = check_answer(family, answer, privileged)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from embodied.planner.answer import plan_answer

__all__ = ["CHECKS", "QUESTIONS", "answer_question", "check_answer"]


def check_put_block_back(answer: dict, privileged: dict, tolerance: float = 0.02) -> bool:
    if answer.get("answer") is None:
        return False
    return float(np.linalg.norm(np.asarray(answer["answer"])[:2] - np.asarray(privileged["start_xy"]))) <= tolerance


def _unit_index(position, unit_xy: np.ndarray) -> int:
    # Units stand side by side along y; the lateral offset identifies the unit.
    return int(np.argmin(np.abs(np.asarray(unit_xy)[:, 1] - float(position[1]))))


def check_drawer(answer: dict, privileged: dict) -> bool:
    if answer.get("answer") is None:
        return False
    return _unit_index(answer["answer"], privileged["unit_xy"]) == int(privileged["cue_drawer"])


def check_shell_game(answer: dict, privileged: dict) -> bool:
    if answer.get("answer") is None:
        return False
    cups = np.asarray(privileged["cup_pos"])[:, :2]
    chosen = int(np.argmin(np.linalg.norm(cups - np.asarray(answer["answer"])[:2], axis=1)))
    return chosen == int(privileged["ball_cup"])


def check_remember_color(answer: dict, privileged: dict) -> bool:
    if answer.get("answer") is None:
        return False
    blocks = np.asarray(privileged["block_pos"])[:, :2]
    chosen = int(np.argmin(np.linalg.norm(blocks - np.asarray(answer["answer"])[:2], axis=1)))
    return chosen == int(privileged["target"])


def check_sequence_recall(answer: dict, privileged: dict) -> bool:
    if not answer.get("answer"):
        return False
    xy = np.asarray(privileged["button_xy"])
    order = [int(np.argmin(np.linalg.norm(xy - np.asarray(p)[:2], axis=1))) for p in answer["answer"]]
    return order == [int(i) for i in privileged["sequence"]]


def check_count(answer: dict, privileged: dict) -> bool:
    """The plan presses exactly as many times as the screen flashed."""
    return answer.get("answer") == privileged["count"]


def check_go_to(answer: dict, privileged: dict, reach: float = 0.5) -> bool:
    """The remembered place is within the task's reach radius of the goal (the env's success radius)."""
    if answer.get("answer") is None:
        return False
    return float(np.linalg.norm(np.asarray(answer["answer"])[:2] - np.asarray(privileged["goal"]["xy"])[:2])) <= reach


def check_room(answer: dict, privileged: dict) -> bool:
    """The answer (the plan's goal point) lies in the room the target stood in."""
    if answer.get("answer") is None:
        return False
    x, y = np.asarray(answer["answer"], dtype=np.float64)[:2]
    x0, y0, x1, y1 = privileged["room_box"]
    return bool(x0 < x < x1 and y0 < y < y1)


def check_rearrange(answer: dict, privileged: dict, tolerance: float = 0.03) -> bool:
    """Every displaced object's start is a place the plan goes to: within ``tolerance`` (xy) of a
    table start, or, for a start in a drawer, in that drawer's lane (its y, in front of its back)."""
    calls = answer.get("answer")
    if not calls:
        return False
    points = np.asarray(calls, dtype=np.float64).reshape(-1, 3)[:, :2]
    for obj in privileged["objects"]:
        if not obj["moved"]:
            continue
        container = obj["start_container"]
        if container.startswith("drawer"):
            unit = np.asarray(privileged["unit_xy"])[int(container.removeprefix("drawer"))]
            ok = (np.abs(points[:, 1] - unit[1]) < 0.06) & (points[:, 0] > unit[0] - 0.25) & (points[:, 0] < unit[0] + 0.1)
        else:
            ok = np.linalg.norm(points - np.asarray(obj["start_pos"])[:2], axis=1) <= tolerance
        if not ok.any():
            return False
    return True


# family -> (check, what the check asks)
CHECKS: dict[str, tuple[Callable[[dict, dict], bool], str]] = {
    "PutBlockBack": (check_put_block_back, "the block's start pose (xy within 2 cm)"),
    "ReopenDrawer": (check_drawer, "which drawer was open"),
    "HiddenObject": (check_drawer, "which drawer hides the block"),
    "ShellGame": (check_shell_game, "which cup covers the ball"),
    "RememberColor": (check_remember_color, "the cue colour (the block of that colour)"),
    "SequenceRecall": (check_sequence_recall, "the order the buttons lit up"),
    "TouchAsTold": (check_remember_color, "the block the instruction at the start named"),
    "GoAsTold": (check_go_to, "where the object named at the start is (within 0.5 m)"),
    "MoveOrder": (check_remember_color, "the block moved first (or last)"),
    "ChangedObject": (check_go_to, "where the object that moved is now / was first seen (0.5 m)"),
    "Counting": (check_count, "how many times the screen flashed (among the button's own flashes)"),
    "ObjectRevisit": (check_go_to, "where the goal object is (within 0.5 m)"),
    "MovedObject": (check_go_to, "where the moved object is now / was first seen (0.5 m)"),
    "Rearrange": (check_rearrange, "where every displaced object started (a place call there)"),
    "MultiGoal": (check_go_to, "where each goal object is (0.5 m), asked as each goal appears"),
    "RoomRecall": (check_room, "the room the object was seen in (a point inside it)"),
    "CountPerRoom": (check_room, "the room that held the most objects (a point inside it)"),
    "VanishedObject": (check_go_to, "where the object that disappeared stood (0.5 m)"),
    "Relations": (check_remember_color, "the block that stood on the named pad"),
    "OwnActions": (check_drawer, "which drawer the robot itself stashed the block in"),
}

# family -> (answer from memory, check against the simulator, what is asked); the answer is
# the same planner for every family.
QUESTIONS: dict[str, tuple[Callable, Callable, str]] = {
    family: (plan_answer, check, question) for family, (check, question) in CHECKS.items()
}


def answer_question(family: str, memory, goal: dict | None) -> dict:
    if family not in QUESTIONS:
        raise ValueError(f"no recall check for family {family!r}; known: {sorted(QUESTIONS)}")
    return plan_answer(memory, goal)


def check_answer(family: str, answer: dict, privileged: dict) -> bool:
    return bool(QUESTIONS[family][1](answer, privileged))
