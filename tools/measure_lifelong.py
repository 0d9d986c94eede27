"""Lifelong-v0: the memory agent's memory over one long episode, and its goals, per seed.

    python tools/measure_lifelong.py --seeds 900000-900003 --workers 2 --out runs/lifelong/memory

Runs the memory agent (sensors only, as ``embodied run --policy agent``) on the default Lifelong-v0
(or ``--option key=value``) and samples, every ``--every`` steps: the memory's node and edge
count, its event log (stored events, NOOPs counted), and the mean wall time of ``memory.update``
and of the whole ``agent.act`` over the window. Per episode it keeps every goal's kind, outcome
and steps. Writes ``OUT/episodes.json`` and ``OUT/memory.png`` (memory size and update time
against the episode step, one line per seed) and prints a summary. Seeds 900000 and up: no test
uses them (the benchmark's band is 400000-599999).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("OMP_NUM_THREADS", "1")


def parse_seeds(text: str) -> list[int]:
    if "-" in text:
        a, b = (int(v) for v in text.split("-"))
        return list(range(a, b + 1))
    return [int(v) for v in text.split(",")]


def episode(job: tuple[int, dict, int]) -> dict:
    import gymnasium as gym
    import numpy as np

    import embodied  # noqa: F401  (registers the tasks)
    from embodied.eval.rollout import make_agent

    seed, knobs, every = job
    env = gym.make("embodied/Lifelong-v0", **knobs)
    agent = make_agent(env, seed)
    agent.reset()
    obs, info = env.reset(seed=seed)
    memory = agent.memory
    update = memory.update
    spent = {"update": 0.0, "act": 0.0, "n": 0}

    def timed(frame):
        t0 = time.perf_counter()
        update(frame)
        spent["update"] += time.perf_counter() - t0

    memory.update = timed  # the agent keeps this memory the whole episode (no wipe)
    samples, done, t, start = [], False, 0, time.perf_counter()
    while not done:
        t0 = time.perf_counter()
        action = agent.act(obs)
        spent["act"] += time.perf_counter() - t0
        spent["n"] += 1
        obs, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
        t += 1
        if t % every == 0 or done:
            assert agent.memory is memory, "the agent's memory was replaced"
            samples.append({"t": t, "nodes": memory.graph.number_of_nodes(), "edges": memory.graph.number_of_edges(),
                            "events": len(memory.log), "noops": int(memory.log.noops),
                            "update_ms": 1e3 * spent["update"] / spent["n"], "act_ms": 1e3 * spent["act"] / spent["n"]})
            spent = {"update": 0.0, "act": 0.0, "n": 0}
    u = env.unwrapped
    goals = [{"kind": g.kind, "text": g.text, "success": g.success, "steps": g.end - g.start, "start": g.start}
             for g in u.goals_given]
    out = {"seed": seed, "success": bool(info["is_success"]), "steps": t, "seconds": time.perf_counter() - start,
           "goals": goals, "goal_rate": float(np.mean([g["success"] for g in goals])), "samples": samples,
           "changes": len(u.changes), "watched": int(sum(c.watched for c in u.changes)),
           "memory_json_bytes": len(json.dumps(memory.state()[0], default=str))}
    env.close()
    return out


def plot(episodes: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for ep in episodes:
        t = [s["t"] for s in ep["samples"]]
        axes[0].plot(t, [s["nodes"] for s in ep["samples"]], lw=1)
        axes[1].plot(t, [s["events"] / 1000 for s in ep["samples"]], lw=1)
        axes[2].plot(t, [s["update_ms"] for s in ep["samples"]], lw=1, label=str(ep["seed"]))
    axes[0].set(title="memory graph: nodes", xlabel="episode step", ylabel="nodes")
    axes[1].set(title="event log: stored events", xlabel="episode step", ylabel="thousand events")
    axes[2].set(title="memory.update wall time (window mean)", xlabel="episode step", ylabel="ms per step")
    axes[2].legend(fontsize=7, title="seed")
    for ax in axes:
        ax.grid(alpha=0.3)
    rate = sum(g["success"] for ep in episodes for g in ep["goals"]) / max(1, sum(len(ep["goals"]) for ep in episodes))
    fig.suptitle(f"Lifelong-v0, memory agent, {len(episodes)} episodes: {100 * rate:.1f}% of goals reached")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="900000-900003")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--every", type=int, default=250, help="sample the memory every this many steps")
    p.add_argument("--option", action="append", default=[], help="a task knob, key=value")
    p.add_argument("--out", default="runs/lifelong/memory")
    args = p.parse_args()
    knobs = dict(o.split("=", 1) for o in args.option)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(s, knobs, args.every) for s in parse_seeds(args.seeds)]
    episodes = []
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for ep in pool.map(episode, jobs):
            episodes.append(ep)
            reached = sum(g["success"] for g in ep["goals"])
            last = ep["samples"][-1]
            print(f"seed {ep['seed']}: {reached}/{len(ep['goals'])} goals, {ep['steps']} steps, {ep['seconds']:.0f} s, "
                  f"{last['nodes']} nodes, {last['events']} events, update {last['update_ms']:.2f} ms", flush=True)
            (out / "episodes.json").write_text(json.dumps(episodes, indent=1))
    plot(episodes, out / "memory.png")
    goals = [g for ep in episodes for g in ep["goals"]]
    kinds = sorted({g["kind"] for g in goals})
    print(f"goals reached: {sum(g['success'] for g in goals)}/{len(goals)}; per kind: " + ", ".join(
        f"{k} {sum(g['success'] for g in goals if g['kind'] == k)}/{sum(g['kind'] == k for g in goals)}" for k in kinds))
    print(f"episodes >= 90%: {sum(ep['success'] for ep in episodes)}/{len(episodes)}; wrote {out}")


if __name__ == "__main__":
    main()
