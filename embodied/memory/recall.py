"""Each task family's recall question, answered from memory alone.

An answer function gets the memory and the public goal of the recall phase
(``obs["goal"]``: its text names colours) and returns a dict with at least
``"answer"``. Checking that answer against the simulator's
``info["privileged"]`` is evaluation and lives in ``embodied.eval.recall``.

    answer = answer_question(family, memory, goal)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from embodied.memory.memory import SpatialMemory
from embodied.perception.colour import COLOUR_NAMES, colour_distance, colour_name

# Event tags of a colour change: a new colour name, or a light going on / off (see tracker).
COLOUR_TAGS = ("recoloured", "brightened", "dimmed")


def goal_colour(goal: dict | None) -> str | None:
    """The colour name the goal text mentions (None if none)."""
    text = (goal or {}).get("text", "")
    for word in text.lower().replace(",", " ").split():
        if word in COLOUR_NAMES:
            return word
    return None


def _pick(memory: SpatialMemory, cls: str, colour: str | None) -> str | None:
    """The node of a class (and colour) seen most often: the tracked one, not a fleeting duplicate.

    Without class labels (geometric perception) a coloured small object stands in for the class.
    """
    nodes = memory.find(cls=cls, colour=colour) or memory.find(cls=cls)
    if not nodes and colour is not None:
        nodes = memory.find(cls="small", colour=colour) or memory.find(kind="object", colour=colour)
    if not nodes:
        return None
    return max(nodes, key=lambda n: memory.graph.nodes[n]["n_obs"])


# --- questions ------------------------------------------------------------------
def answer_put_block_back(memory: SpatialMemory, goal: dict | None) -> dict:
    """Where did the block start? Its first remembered position."""
    block = _pick(memory, "block", goal_colour(goal))
    if block is None:
        return {"answer": None}
    first = memory.graph.nodes[block]["first_seen"]
    pos = memory.where_was(block, first)
    return {"answer": None if pos is None else (pos[0], pos[1]), "node": block}


def _drawer_open_durations(memory: SpatialMemory) -> dict[str, int]:
    """Steps each drawer was remembered open (from its state events)."""
    out = {}
    for drawer in memory.find(cls="drawer"):
        total, since = 0, None
        for e in memory.log.of_node(drawer):
            state = e.data.get("state")
            if state == "open" and since is None:
                since = e.t
            elif state == "closed" and since is not None:
                total += max(e.t - since, 1)
                since = None
        if since is not None:
            total += max(memory.t - since, 1)
        out[drawer] = total
    return out


def answer_reopen_drawer(memory: SpatialMemory, goal: dict | None) -> dict:
    """Which drawer was open? The one remembered open longest."""
    durations = _drawer_open_durations(memory)
    if not durations or max(durations.values()) == 0:
        return {"answer": None, "durations": durations}
    drawer = max(durations, key=durations.get)
    return {"answer": memory.graph.nodes[drawer]["position"], "node": drawer, "durations": durations}


def answer_hidden_object(memory: SpatialMemory, goal: dict | None) -> dict:
    """Which drawer holds the block? The container it is remembered in (or last seen in)."""
    block = _pick(memory, "block", goal_colour(goal))
    if block is None:
        return {"answer": None}
    a = memory.graph.nodes[block]
    holder = a.get("inside") or next(iter(memory.related(block, "in")), "")
    if not holder:
        # Fall back to the drawer nearest to where the block was last seen.
        drawers = memory.find(cls="drawer")
        if not drawers:
            return {"answer": None, "node": block}
        p = np.asarray(a["position"])
        holder = min(drawers, key=lambda d: np.linalg.norm(np.asarray(memory.graph.nodes[d]["position"])[:2] - p[:2]))
    return {
        "answer": memory.graph.nodes[holder]["position"],
        "node": holder,
        "object": block,
        "object_position": a["position"],
    }


def answer_shell_game(memory: SpatialMemory, goal: dict | None) -> dict:
    """Which cup covers the ball? The cup the ball is remembered in."""
    ball = _pick(memory, "ball", None)
    if ball is None:
        return {"answer": None}
    a = memory.graph.nodes[ball]
    cup = a.get("inside") or next(iter(memory.related(ball, "in")), "")
    if not cup:
        cups = memory.find(cls="cup")
        if not cups:
            return {"answer": None, "object": ball}
        p = np.asarray(a["position"])
        cup = min(cups, key=lambda c: np.linalg.norm(np.asarray(memory.graph.nodes[c]["position"])[:2] - p[:2]))
    return {"answer": memory.graph.nodes[cup]["position"], "node": cup, "object": ball}


def _saturation(rgb) -> float:
    rgb = np.asarray(rgb, dtype=np.float64)
    return float((rgb.max() - rgb.min()) / max(rgb.max(), 1e-6))


def answer_remember_color(memory: SpatialMemory, goal: dict | None) -> dict:
    """Which colour did the screen show? The most saturated colour the panel was seen with;
    the answer is the block closest to it in colour (names can differ: the panel's grey stand
    dulls its mean colour)."""
    changed = {e.node for tag in COLOUR_TAGS for e in memory.log.of_tag(tag) if e.node in memory.graph}
    panels = memory.find(cls="cue_panel")
    if not panels:
        # No panel class in the vocabulary: whatever changed colour and is not a block.
        panels = sorted(n for n in changed if memory.graph.nodes[n]["cls"] != "block")
    colours = []
    for panel in panels:
        for e in memory.log.of_node(panel):
            if "rgb" in e.data:
                colours.append((e.data["rgb"], e.data.get("colour")))
    if not colours:
        return {"answer": None}
    cue_rgb, cue_name = max(colours, key=lambda c: _saturation(c[0]))
    cue_name = cue_name or colour_name(np.asarray(cue_rgb))
    # Without class labels (geometric perception) the blocks are the objects that never changed colour.
    blocks = memory.find(cls="block") or [n for n in memory.find(kind="object") if n not in changed]
    if not blocks:
        return {"answer": None, "cue_colour": cue_name}
    block = min(blocks, key=lambda b: colour_distance(memory.graph.nodes[b]["rgb"], cue_rgb))
    return {
        "answer": memory.graph.nodes[block]["position"],
        "node": block,
        "cue_colour": cue_name,
        "cue_rgb": cue_rgb,
        "block_colour": memory.graph.nodes[block]["colour"],
    }


def answer_sequence_recall(memory: SpatialMemory, goal: dict | None) -> dict:
    """In which order did the buttons light up? Their "brightened" events (a camera saw the
    still button turn much brighter), in time order; both cameras seeing one flash count once."""
    # Without class labels (geometric perception) anything that lit up is a button.
    buttons = memory.find(cls="button") or sorted({e.node for e in memory.log.of_tag("brightened")} & set(memory.graph))
    lit = sorted((e.t, button) for button in buttons for e in memory.log.of_node(button) if e.tag == "brightened")
    order = [b for k, (_, b) in enumerate(lit) if k == 0 or lit[k - 1][1] != b]
    return {
        "answer": [memory.graph.nodes[b]["position"] for b in order] or None,
        "nodes": order,
        "times": [t for t, _ in lit],
    }


def goal_object(goal: dict | None) -> tuple[str | None, str | None]:
    """(colour, class) named by "go to the <colour> <class>"-style goal text."""
    words = (goal or {}).get("text", "").lower().replace(",", " ").split()
    for k, word in enumerate(words[:-1]):
        if word in COLOUR_NAMES or word == "lime":
            return word, words[k + 1]
    return None, None


def answer_go_to(memory: SpatialMemory, goal: dict | None) -> dict:
    """Where is the named object now (or, if the goal says so, where was it first seen)?"""
    colour, cls = goal_object(goal)
    if cls is None:
        return {"answer": None}
    nodes = memory.find(cls=cls, colour=colour) or memory.find(cls=cls)
    if not nodes:
        return {"answer": None, "asked": f"{colour} {cls}"}
    if "first seen" in (goal or {}).get("text", ""):
        # Where it was first seen: the earliest sighting of anything that looks like it.
        node = min(nodes, key=lambda n: memory.graph.nodes[n]["first_seen"])
        pos = memory.where_was(node, memory.graph.nodes[node]["first_seen"])
    else:
        # Where it is now: the latest sighting (a lost track leaves an older, stale node).
        node = max(nodes, key=lambda n: (memory.graph.nodes[n]["last_seen"], memory.graph.nodes[n]["n_obs"]))
        pos = memory.graph.nodes[node]["position"]
    return {"answer": pos, "node": node, "asked": f"{colour} {cls}", "status": memory.graph.nodes[node]["status"]}


ANSWERS: dict[str, Callable[[SpatialMemory, dict | None], dict]] = {
    "PutBlockBack": answer_put_block_back,
    "ReopenDrawer": answer_reopen_drawer,
    "HiddenObject": answer_hidden_object,
    "ShellGame": answer_shell_game,
    "RememberColor": answer_remember_color,
    "SequenceRecall": answer_sequence_recall,
    "ObjectRevisit": answer_go_to,
    "MovedObject": answer_go_to,
    "MultiGoal": answer_go_to,
}


def answer_question(family: str, memory: SpatialMemory, goal: dict | None) -> dict:
    if family not in ANSWERS:
        raise ValueError(f"no recall question for family {family!r}; known: {sorted(ANSWERS)}")
    return ANSWERS[family](memory, goal)
