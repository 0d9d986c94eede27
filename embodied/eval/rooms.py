"""Room assignment against the layout's true rooms (evaluation only: reads the env's layout).

    report = room_accuracy(agent.memory, env)       # one memory, its env at the same moment
    rows = eval_rooms(["ObjectRevisit-v0"], episodes=30, seed=3000)    # ``embodied eval-rooms``

The memory's rooms come from the agent's own free-space map
(``SpatialMemory.update_rooms``); nothing of the layout reaches it. Here each
memory room is matched to the true room (``nav_layout.ROOMS``) under its
centre, and every object, piece of furniture and place the memory holds is
scored: right when its ``in_room`` room matches the true room it stands in.
The true room of a small object is that of its true position (matched by
class, each class appears once), or of the spot it stood on when the env has
taken it out of the apartment (RoomRecall's target at recall); furniture and
places use their remembered position (within a few cm of the truth, and
never near a wall's line).
Structure (floor, walls) is in no room and not scored. A node with no room,
or in a memory room that no true room matches one-to-one, counts as wrong.

Also reported: rooms found (the layout has four), whether the memory's
``connects`` edges are exactly the layout's doorways, and how many rooms got
a name and how many of those names are the room's true theme.
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
from tqdm import tqdm

from embodied.agent.memory_agent import MemoryAgent
from embodied.envs.nav_layout import ROOMS, SIZE, room_of
from embodied.memory.room_nodes import ROOMED_KINDS, STRUCTURE_CLASSES
from embodied.tasks import get_task

RECALL = 2


def room_accuracy(memory, env) -> dict:
    """Score the memory's rooms against ``env``'s layout (see the module docstring); JSON-ready."""
    u = env.unwrapped
    apartment = u.apartment
    objects = u.privileged()["objects"]
    graph = memory.graph
    rooms = memory.find(kind="room")
    true_of = {r: room_of(graph.nodes[r]["position"]) for r in rooms}
    counts = np.bincount(list(true_of.values()), minlength=len(ROOMS))
    one_to_one = {r: t for r, t in true_of.items() if counts[t] == 1}
    right = total = 0
    wrong: list[str] = []
    for node, a in graph.nodes(data=True):
        if a["kind"] not in ROOMED_KINDS or a.get("cls") in STRUCTURE_CLASSES:
            continue
        xy = np.asarray(objects[a["cls"]] if a["cls"] in objects else a["position"], dtype=np.float64)[:2]
        if a["cls"] in objects and not (np.all(xy >= 0) and np.all(xy <= SIZE)):
            xy = apartment.slots[u.spot[a["cls"]], :2]  # taken away: where it stood
        truth = room_of(xy)
        ok = one_to_one.get(a.get("room", ""), -1) == truth
        right += ok
        total += 1
        if not ok:
            wrong.append(node)
    doors = {frozenset(d.segment.rooms) for d in apartment.doors}
    found = {frozenset((true_of[u_], true_of[v])) for u_, v, k in graph.edges(keys=True)
             if k == "connects" and u_ in true_of and v in true_of}
    names = {r: graph.nodes[r].get("name", "") for r in rooms}
    named = [r for r, n in names.items() if n]
    return {
        "rooms": len(rooms),
        "true_rooms": len(ROOMS),
        "rooms_matched": len(one_to_one),
        "assigned_right": int(right),
        "assigned": int(total),
        "accuracy": right / total if total else 0.0,
        "wrong": wrong,
        "doors_right": found == doors,
        "named": len(named),
        "named_right": sum(names[r] == apartment.themes[true_of[r]] for r in named),
    }


def tour_memory(task: str, seed: int, image_size: int | None = None, options: dict | None = None):
    """Run ``task``'s tour with a :class:`MemoryAgent` riding along (its actions are ignored until
    recall) and let it act on the first recall observation, when it segments rooms for the goal.
    Returns (agent, env); the caller closes the env."""
    entry = get_task(task)
    size = {} if image_size is None else {"image_size": image_size}
    env = gym.make(entry.env_id, **size, **(options or {}))
    agent = MemoryAgent(env.unwrapped.labels)
    agent.reset(seed=seed)
    obs, _ = env.reset(seed=seed)
    while int(obs["goal"]["phase"]) != RECALL:
        obs, _, terminated, truncated, _ = env.step(agent.act(obs))
        if terminated or truncated:
            raise RuntimeError(f"{task} seed {seed} ended before its recall phase")
    agent.act(obs)
    return agent, env


def eval_rooms(tasks: list[str] | None = None, episodes: int = 30, seed: int = 3000, image_size: int | None = None,
               progress: bool = True, options: dict | None = None) -> dict:
    """Room assignment accuracy at the first recall step, per navigation task (JSON-ready).
    ``options``: task knobs for every env (e.g. ``odom_noise``), to score rooms away from the defaults."""
    from embodied.tasks import TASKS

    names = [get_task(t).name for t in tasks] if tasks else [n for n, e in TASKS.items() if e.suite == "navigation"]
    rows = []
    for name in names:
        if get_task(name).suite != "navigation":
            raise ValueError(f"{name} is not a navigation task; rooms exist in the apartment only")
        reports, t0 = [], time.perf_counter()
        for k in tqdm(range(episodes), desc=f"eval-rooms {name}", disable=not progress, leave=False):
            agent, env = tour_memory(name, seed + k, image_size, options)
            try:
                reports.append({"seed": seed + k, **room_accuracy(agent.memory, env)})
            finally:
                env.close()
        right = sum(r["assigned_right"] for r in reports)
        total = sum(r["assigned"] for r in reports)
        rows.append({
            "task": name,
            "episodes": episodes,
            "accuracy": right / total if total else 0.0,
            "accuracy_min": min(r["accuracy"] for r in reports),
            "assigned": total,
            "four_rooms": sum(r["rooms"] == r["true_rooms"] == r["rooms_matched"] for r in reports),
            "doors_right": sum(r["doors_right"] for r in reports),
            "named": sum(r["named"] for r in reports),
            "named_right": sum(r["named_right"] for r in reports),
            "seconds": round(time.perf_counter() - t0, 1),
            "imperfect": [{k: r[k] for k in ("seed", "rooms", "accuracy", "wrong", "doors_right")}
                          for r in reports if r["accuracy"] < 1 or not r["doors_right"]],
        })
    return {"seed": seed, "episodes": episodes, "options": dict(options or {}), "tasks": rows}
