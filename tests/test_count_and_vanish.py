"""CountPerRoom and VanishedObject: counting objects per room, and noticing an object gone."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from embodied.agent.memory_agent import AgentConfig
from embodied.planner.grammar import parse
from embodied.tasks.count_per_room import room_counts
from tests.agent_helpers import run_agent
from tests.helpers import run_expert


@pytest.mark.parametrize("text", ["go to the room that had the most objects", "Go to the room with the most things.",
                                  "go to the room that had the most mugs"])
def test_most_paraphrases(text):
    goal = parse(text)
    assert goal.action == "go_to_room" and goal.order == "most" and goal.ref.plural
    assert goal.ref.noun in ("object", "mug")


@pytest.mark.parametrize("text", ["go to where the object that disappeared was", "go to where the thing that vanished was",
                                  "Go to where the object that went missing was."])
def test_gone_paraphrases(text):
    goal = parse(text)
    assert goal.action == "go_to" and goal.when == "now" and goal.ref.gone and goal.ref.noun == "object"
    assert not parse("go to where the red mug was").ref.gone and parse("go to where the red mug was").when == "now"


def test_room_counts_have_one_room_ahead_by_the_margin():
    for objects, margin in [(10, 2), (12, 1), (4, 1)]:
        options = room_counts(objects, margin)
        assert options and all(sum(c) == objects and c[0] - c[1] == margin and max(c) <= 5 for c in options)
    with pytest.raises(ValueError, match="margin=5"):
        gym.make("embodied/CountPerRoom-v0", images=False, objects=12, margin=5)


def test_the_cued_room_holds_the_most_and_recall_shows_none():
    env = gym.make("embodied/CountPerRoom-v0", images=False)
    env.reset(seed=5)
    u = env.unwrapped
    for cue in u.cue_variants():
        env.reset(seed=5, options={"cue": cue})
        counts = u.per_room()
        rooms = u.apartment.slot_room
        assert np.bincount([rooms[k] for k in u.spot.values()], minlength=4).tolist() == counts
        assert counts[cue] == max(counts) and sorted(counts)[-2] == max(counts) - u.options.margin
    info, _ = run_expert(env, 5)
    assert info["is_success"]
    assert all(u.data.xpos[u._obj_body[c], 2] < -1 for c in u.active), "every object is gone at recall"
    env.close()


def test_agent_counts_per_room_and_a_wiped_memory_cannot():
    truth = {}
    agent, info, _ = run_agent("CountPerRoom-v0", 31, on_step=lambda raw, a, i: truth.setdefault(
        "room", raw.unwrapped.apartment.themes[raw.unwrapped.target_room]))
    assert info["is_success"], agent.plan_text()
    assert "the room with the most objects" in agent.plan_text()
    agent, info, _ = run_agent("CountPerRoom-v0", 31, AgentConfig(wipe_at_recall=True))
    assert not info["is_success"]


def test_vanished_object_expert_and_the_query_knob():
    env = gym.make("embodied/VanishedObject-v0", images=False)
    info, _ = run_expert(env, 6)
    assert info["is_success"]
    u = env.unwrapped
    assert u.data.xpos[u._obj_body[u.mover], 2] < -1
    env.close()
    with pytest.raises(ValueError, match="no query knob"):
        gym.make("embodied/VanishedObject-v0", images=False, query="first")


def test_agent_finds_where_the_vanished_object_stood():
    truth = {}
    agent, info, _ = run_agent("VanishedObject-v0", 32, on_step=lambda raw, a, i: truth.setdefault(
        "mover", raw.unwrapped.mover))
    assert info["is_success"], agent.plan_text()
    node = (agent.current_call or agent.done_calls[-1]).target
    assert agent.memory.graph.nodes[node]["cls"] == truth["mover"]
    assert agent.memory.when("missing", node), "memory logged the object missing"


def test_blank_tour_leaves_nothing_missing():
    agent, info, _ = run_agent("VanishedObject-v0", 32, AgentConfig(blank_observe=True))
    assert not info["is_success"]


class _Sightings:
    """The memory queries the "that disappeared" ranking reads: each node's last sighting, the times memory
    found it missing, its status events and memory's present. Each miss is held ``held[node][k]`` steps
    (default 1: missing, then unseen on the next frame, a flicker; None: missing still)."""

    def __init__(self, seen: dict[str, int], missing: dict[str, list[int]], held: dict[str, list[int | None]] | None = None,
                 t: int = 1000, objects: dict[str, tuple] | None = None):
        import networkx as nx

        self.seen, self.missing, self.held, self.t = seen, missing, held or {}, t
        # Nodes with a place: {node: (class, colour, (x, y, z))}; the others have none in the graph.
        self.graph = nx.Graph()
        for node, (cls, colour, position) in (objects or {}).items():
            self.graph.add_node(node, kind="object", cls=cls, colour=colour, position=position)

    def where_is(self, node: str) -> dict:
        return {"position": self.graph.nodes[node]["position"]}

    def last_seen(self, node: str) -> int:
        return self.seen[node]

    def when(self, tag: str, node: str) -> list[int]:
        return list(self.missing.get(node, [])) if tag == "missing" else []

    def history(self, node: str) -> list[dict]:
        events = [(self.seen[node], "visible")]
        misses = self.missing.get(node, [])
        for t, steps in zip(misses, self.held.get(node, [1] * len(misses))):
            events += [(t, "missing")] + ([] if steps is None else [(t + steps, "unseen")])
        return [{"t": t, "data": {"status": status}} for t, status in sorted(events)]


def test_what_disappeared_is_what_memory_found_missing_on_most_separate_looks():
    from embodied.planner.resolver import Resolver

    # A VanishedObject miss at `medium`: the taken pyramid was found missing on two visits to its room; a
    # plate far off in another room seemed seen through on one look (twice in 9 steps), long after its last
    # sighting. Two looks outrank one, however long after.
    memory = _Sightings({"pyramid": 93, "plate": 116}, {"pyramid": [130, 541], "plate": [653, 662]})
    assert Resolver(memory)._gone(["plate", "pyramid"]) == ["pyramid", "plate"]
    # One look each: a miss long after the last sighting (the robot came back and looked) outranks a
    # flicker on the next frames (an object slipping out at the view's edge).
    memory = _Sightings({"a": 100, "b": 100}, {"a": [101, 103, 105], "b": [400]}, {"b": [20]})
    assert Resolver(memory)._gone(["a", "b"]) == ["b", "a"]
    # Seen again after the miss: not gone.
    memory = _Sightings({"a": 500, "b": 100}, {"a": [101, 400], "b": [300]})
    assert Resolver(memory)._gone(["a", "b"]) == ["b"]


def test_what_disappeared_is_what_memory_held_missing_longest_on_one_look():
    """On learned perception the lamp, taken while the robot looked away, is seen
    through for the 25 steps the robot faces its spot; a dumbbell (the segmenter's weakest class) is
    missed now and then on a later look, 217 steps after its last sighting, flickering between missing and
    unseen (5 steps in all). The steady miss is the object that went; by the time since the last sighting
    alone the dumbbell would be."""
    from embodied.planner.gone import steps_missing
    from embodied.planner.resolver import Resolver

    sightings = ({"lamp": 92, "dumbbell": 230}, {"lamp": [130], "dumbbell": [447, 449, 451]})
    memory = _Sightings(*sightings, {"lamp": [25], "dumbbell": [1, 1, 3]}, t=815)
    assert Resolver(memory)._gone(["dumbbell", "lamp"]) == ["lamp", "dumbbell"]
    assert steps_missing(memory, "lamp", 92) == 25
    # Without the steps held missing (each miss one frame), the later miss wins: the dumbbell.
    memory = _Sightings(*sightings, t=815)
    assert Resolver(memory)._gone(["dumbbell", "lamp"])[0] == "dumbbell"
    # A miss never followed by another status lasts to memory's present.
    memory = _Sightings({"lamp": 92}, {"lamp": [130]}, {"lamp": [None]}, t=815)
    assert steps_missing(memory, "lamp", 92) == 815 - 130


@pytest.mark.parametrize("rule", [True, False])
def test_an_object_still_seen_as_its_twin_did_not_disappear(rule, monkeypatch):
    """On learned perception the segmenter showed a purple dumbbell as two or three
    objects (nodes 10 cm apart); one of them, last seen at step 150, was missed on two looks while its twin at
    the same spot was seen again (step 357), and outranked the red teddy truly taken (missed on one look
    before the plan). A miss whose twin, an object of its colour within 30 cm, was seen after it is no
    vanishing, whatever the twin is called (a weight named "bottle"). Without the rule the dumbbell
    is taken; a twin seen before the miss, of another colour, 40 cm off or furniture leaves the rule out."""
    from embodied.planner import gone
    from embodied.planner.resolver import Resolver

    seen = {"dumbbell_0": 150, "dumbbell_1": 357, "teddy_1": 416}
    missing = {"dumbbell_0": [151, 350, 354], "teddy_1": [454]}
    held = {"dumbbell_0": [1, 1, 1], "teddy_1": [30]}
    near = (6.62, 4.25, 0.55)
    objects = {"dumbbell_0": ("dumbbell", "purple", (6.55, 4.18, 0.57)), "dumbbell_1": ("bottle", "purple", near),
               "teddy_1": ("teddy", "red", (4.74, 2.33, 0.57))}
    if not rule:
        monkeypatch.setattr(gone, "TWIN_NEAR", 0.0)
    memory = _Sightings(seen, missing, held, t=755, objects=objects)
    assert Resolver(memory)._gone(["dumbbell_0", "dumbbell_1", "teddy_1"])[0] == ("teddy_1" if rule else "dumbbell_0")
    if rule:
        others = [("dumbbell", "black", near), ("dumbbell", "purple", (6.95, 4.18, 0.57)), ("table", "purple", near)]
        for other in others:
            memory = _Sightings(seen, missing, held, t=755, objects={**objects, "dumbbell_1": other})
            if other[0] == "table":
                memory.graph.nodes["dumbbell_1"]["kind"] = "surface"
            assert Resolver(memory)._gone(["dumbbell_0", "teddy_1"])[0] == "dumbbell_0", other
        memory = _Sightings({**seen, "dumbbell_1": 140}, missing, held, t=755, objects=objects)
        assert Resolver(memory)._gone(["dumbbell_0", "teddy_1"])[0] == "dumbbell_0"
