"""Read the memory agent's missed goals in one Lifelong-v0 episode, each against the simulator's truth.

    python3 tools/read_lifelong_miss.py SEED [PRESET] [--goals N] [--all] [--json OUT]

Runs the memory agent (sensors only, as ``embodied run --policy agent``) through one episode. As each
goal is given it notes the truth (kind, instance, the asked place and room) and what memory holds of the
instance's class then: every node of the class with its colour name, status, place now and first place.
As the goal ends it notes the agent's last navigate call (the node and point it drove to) and where the
robot stopped. Prints one line per missed goal (``--all``: per goal), then the pose error the localiser
ended with. A miss whose call went to another node of the class is a look-alike identity error; one whose
call point is within a few cm of the truth but the robot stopped outside the 0.5 m radius is the skill's
reach. Reads the simulator's truth, so it is an evaluation tool, like ``tools/read_nav_miss.py``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("OMP_NUM_THREADS", "1")


def _xy(v) -> list[float]:
    return [round(float(c), 2) for c in list(v)[:2]]


def class_nodes(agent, cls: str) -> list[dict]:
    """What memory holds of the class: each node's colour name, status, place now and first place."""
    from embodied.planner.resolver import Resolver

    memory = agent.memory
    resolver = Resolver(memory)
    out = []
    for node in memory.find(cls=cls):
        a = memory.graph.nodes[node]
        first = resolver.first_place(node)
        out.append({"node": node, "colour": a.get("colour"), "status": a.get("status", ""),
                    "now": _xy(a["position"]), "first": None if first is None else _xy(first)})
    return out


def read_episode(seed: int, preset: str = "easy", goals_knob: int | None = None) -> dict:
    import gymnasium as gym
    import numpy as np

    import embodied  # noqa: F401  (registers the tasks)
    from embodied.eval.rollout import make_agent

    knobs = {} if goals_knob is None else {"goals": goals_knob}
    env = gym.make("embodied/Lifelong-v0", preset=preset, **knobs)
    agent = make_agent(env, seed)
    agent.reset(seed)
    obs, info = env.reset(seed=seed)
    u = env.unwrapped
    goals: list[dict] = []
    given, done = 0, False
    while not done:
        obs, _, terminated, truncated, info = env.step(agent.act(obs))  # the agent gets observations only
        done = terminated or truncated
        if len(u.goals_given) > given and u.stage == "goal":  # a goal is asked: the truth, memory's view
            given = len(u.goals_given)
            g = u.goals_given[-1]
            goals.append({"index": given - 1, "kind": g.kind, "text": g.text, "object": g.obj,
                          "truth": _xy(u.apartment.slots[g.spot]), "room": g.room, "start": g.start,
                          "memory": class_nodes(agent, g.obj.rsplit("_", 1)[0])})
        for record, g in zip(goals, u.goals_given):
            if g.end >= 0 and "success" not in record:
                calls = ([agent.current_call] if agent.current_call else []) + agent.done_calls[::-1]
                nav = next((c for c in calls if c.skill == "navigate"), None)
                record.update(success=bool(g.success), steps=g.end - g.start, robot=_xy(u.robot_pose()),
                              call=None if nav is None else {"node": nav.target, "xyz": _xy(nav.xyz),
                                                             "note": nav.note})
    camera = info["privileged"]["camera_pose"]["head"][:2, 3]
    estimate = agent.localiser.trajectory()["corrected"][-1][:2]
    env.close()
    return {"seed": seed, "preset": preset, "goals": goals,
            "reached": int(sum(g.get("success", False) for g in goals)),
            "pose_error_end": round(float(np.linalg.norm(estimate - camera)), 3)}


def describe(goal: dict) -> str:
    call = goal.get("call")
    went = "no navigate call" if call is None else f"call {call['node']} @{call['xyz']} ({call['note']})"
    alike = "; ".join(f"{m['node']} {m['colour']} {m['status'] or '-'} now@{m['now']} first@{m['first']}"
                      for m in goal["memory"])
    return (f"goal {goal['index']} {'ok  ' if goal.get('success') else 'MISS'} {goal['kind']:<6} "
            f"'{goal['text']}' truth@{goal['truth']} room {goal['room']}; {went}; robot@{goal.get('robot')}; "
            f"memory: {alike or 'nothing of the class'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("seed", type=int)
    parser.add_argument("preset", nargs="?", default="easy", choices=("easy", "medium", "hard", "extreme"))
    parser.add_argument("--goals", type=int, help="the goals knob (default: the preset's)")
    parser.add_argument("--all", action="store_true", help="every goal, not only the missed ones")
    parser.add_argument("--json", type=Path, help="also write the whole reading here")
    args = parser.parse_args(argv)
    result = read_episode(args.seed, args.preset, args.goals)
    for goal in result["goals"]:
        if args.all or not goal.get("success"):
            print(describe(goal))
    print(f"seed {args.seed} {args.preset}: {result['reached']} / {len(result['goals'])} goals; "
          f"pose error at the end {result['pose_error_end']} m")
    if args.json:
        tmp = args.json.with_suffix(args.json.suffix + ".tmp")
        tmp.write_text(json.dumps(result, indent=1))
        tmp.replace(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
