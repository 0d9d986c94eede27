"""Read one navigation episode of the memory agent: how far off memory's goal point and the robot's own
pose estimate were (the two ways a navigation goal is missed).

    python3 tools/read_nav_miss.py TASK SEED [PRESET]

Prints one line: success, the true goal point, the navigate call's point, the remembered place's error,
the pose estimate's error at the end, and every memory node of the goal's class (id, place, observations).
Reads the simulator's truth, so it is an evaluation tool, like ``embodied eval-memory``.
"""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np

from embodied.eval.rollout import make_agent


def main(task: str, seed: int, preset: str = "easy") -> str:
    env = gym.make(f"embodied/{task}", preset=preset)
    agent = make_agent(env, seed)
    agent.reset(seed)
    obs, info = env.reset(seed=seed)
    truth: dict = {}
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(agent.act(obs))  # the agent gets observations only
        done = terminated or truncated
        if info["phase"] == "recall":
            p = info["privileged"]
            truth["goal"], truth["camera"] = p["goal"]["xy"], p["camera_pose"]["head"][:2, 3]
    env.close()
    calls = ([agent.current_call] if agent.current_call else []) + agent.done_calls[::-1]
    if not calls or "goal" not in truth:
        return f"{task} {preset} {seed}: no navigate call (success={info['is_success']})"
    call, memory = calls[0], agent.memory
    estimate = agent.localiser.trajectory()["corrected"][-1][:2]
    cls = memory.graph.nodes[call.target].get("cls") if call.target in memory.graph else None
    alike = [(n, np.round(memory.where_is(n)["position"][:2], 2).tolist(), memory.graph.nodes[n].get("n_obs"))
             for n in (memory.find(cls=cls) if cls else [])]
    return (f"{task} {preset} {seed} success={info['is_success']} goal={np.round(truth['goal'], 2).tolist()} "
            f"call={np.round(call.xyz[:2], 2).tolist()} "
            f"memory_err={np.linalg.norm(np.asarray(call.xyz[:2]) - truth['goal']):.2f} m "
            f"pose_err={np.linalg.norm(estimate - truth['camera']):.2f} m alike={alike}")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    print(main(sys.argv[1], int(sys.argv[2]), *sys.argv[3:]))
