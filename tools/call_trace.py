"""Trace one episode of the agent with learned skills, call by call, to read how a miss unfolds.

    python tools/call_trace.py TASK SEED KIND:RUN      e.g. Rearrange 9009 diffusion:manip

Seeded as ``run_episodes`` seeds an episode, so the episode is the one an evaluation ran (up to float
rounding). Prints every skill call with the TCP (metres, robot base frame) at its start and end and its
length in steps, then the agent's log (plans, failed checks, retries, re-aims) and the episode's end.
"""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np
import torch

import embodied  # noqa: F401  (registers the tasks)
from embodied.eval.rollout import make_agent

TCP = slice(14, 17)  # the TCP position in the workcell's proprio vector


def main(task: str, seed: int, head: str) -> None:
    torch.set_num_threads(1)
    env = gym.make(f"embodied/{task}-v0")
    agent = make_agent(env, seed, head)
    torch.manual_seed(seed)
    obs, info = env.reset(seed=seed)
    agent.reset(seed)

    def tcp(o) -> np.ndarray:
        return np.round(np.asarray(o["proprio"])[TCP], 3)

    running, start = None, 0
    term = trunc = False
    for t in range(env.spec.max_episode_steps or 3000):
        action = agent.act(obs)
        call = str(agent.plan[0]) if agent.plan and agent.skill is not None else None
        if call != running:
            if running is not None:
                print(f"  end t={t} tcp={tcp(obs)} ({t - start} steps)")
            if call is not None:
                print(f"t={t} {call} tcp={tcp(obs)}")
                start = t
            running = call
        obs, _, term, trunc, info = env.step(action)
        if term or trunc:
            break
    if running is not None:  # the episode ended during this call
        print(f"  end t={t + 1} tcp={tcp(obs)} ({t + 1 - start} steps, episode over)")
    print("log:")
    for entry in agent.plan_record()["log"]:
        print(f"  {entry['t']} {entry['tag']} {entry['text'][:160]}")
    print(f"end t={t} success={bool(info.get('is_success'))} terminated={term} truncated={trunc}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
