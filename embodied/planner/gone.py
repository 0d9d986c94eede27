"""Which object went missing: memory's misses of each node ranked as evidence that it left.

    ranked = rank_gone(memory, nodes)     # "the object that disappeared", best first

Reads memory's public queries only (``last_seen``, ``when``, ``history``, ``where_is``, ``t``) and the
node attributes of ``memory.graph`` (kind, colour).
"""

from __future__ import annotations

import numpy as np

LOOK_GAP = 100  # steps between two misses of a node that make them two looks, not one
# m: another object node of a node's colour this near where memory holds it is the same object seen as a
# second node: a detector that shows a dumbbell's two weights (20 cm apart) as two objects, named dumbbell,
# bottle or mug (the learned segmenter's twin nodes lay 10-21 cm apart).
# The apartment's object spots are 60 cm or more apart.
TWIN_NEAR = 0.3


def rank_gone(memory, nodes: list[str]) -> list[str]:
    """The nodes memory found missing (it looked where one should be and saw through) and never saw again
    after, best first. A node whose twin (``twin_seen_after``: an object of its colour 30 cm or nearer) was
    seen after its first miss ranks after every other: the object still stood there, shown as another node.
    Then the one found missing on the most separate looks since last seen (misses more than ``LOOK_GAP`` steps
    apart; one look flickers between missing and occluded, and a flat or far object can seem seen through
    once), then the one held missing the most steps (a look that stays on the emptied spot sees through it
    frame after frame; a detector that only now and then misses an object flickers between missing and
    unseen), then the one whose first miss came longest after its last
    sighting (the robot came back to look; a miss on the very next frame is weaker evidence, an object
    slipping out at the view's edge), then the latest. A node missed once and seen later (a glance through a
    gap) does not count: none missed gives []."""
    score = {}
    for n in nodes:
        seen = memory.last_seen(n)
        missed = [t for t in memory.when("missing", n) if t > seen]
        if missed:
            looks = 1 + sum(b - a > LOOK_GAP for a, b in zip(missed, missed[1:]))
            score[n] = (twin_seen_after(memory, n, min(missed)), -looks, -steps_missing(memory, n, seen),
                        seen - min(missed), -max(missed))
    return sorted(score, key=lambda n: (*score[n], n))


def steps_missing(memory, node: str, since: int) -> int:
    """Steps after ``since`` that memory held ``node`` missing (from its status events to the next one, the
    last to memory's present)."""
    changes = [(e["t"], e["data"]["status"]) for e in memory.history(node)
               if e["t"] > since and "status" in e["data"]]
    ends = [t for t, _ in changes[1:]] + [max(memory.t, changes[-1][0] if changes else since)]
    return sum(end - t for (t, status), end in zip(changes, ends) if status == "missing")


def twin_seen_after(memory, node: str, t: int) -> bool:
    """Whether memory saw, after step ``t``, another node of kind object (no furniture, no container) and of
    ``node``'s colour whose place is within ``TWIN_NEAR`` of ``node``'s (in xy). Its class is not asked: the
    detector names the pieces of one object apart."""
    graph = memory.graph
    if node not in graph:
        return False
    a = graph.nodes[node]
    xy = np.asarray(memory.where_is(node)["position"], dtype=np.float64)[:2]
    for other, b in graph.nodes(data=True):
        if other == node or b.get("kind") != "object" or b.get("colour") != a.get("colour") \
                or memory.last_seen(other) <= t:
            continue
        if np.hypot(*(np.asarray(memory.where_is(other)["position"], dtype=np.float64)[:2] - xy)) < TWIN_NEAR:
            return True
    return False
