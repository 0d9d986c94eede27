"""Drawers and cups without masks: geometric perception recognises them from shape, memory keeps
them as drawer / cup nodes, and the recall question of each container task is answered.

Observations only (rgb, depth, intrinsics, extrinsics, proprio); privileged state only checks the
answer. Ablations: without shape recognition, or with nothing seen, the answer is wrong or absent.
"""

from __future__ import annotations

import numpy as np
import pytest

from embodied.eval.evaluate import run_episode
from embodied.memory import DetectorProfile, MemoryConfig
from embodied.perception import PerceptionConfig


def _geometric(task: str, seed: int, **knobs):
    config = PerceptionConfig(mode="geometric", seed=seed, **knobs)
    memory = MemoryConfig(detector=DetectorProfile(strict_class=False))
    return run_episode(task, seed, config, memory, accuracy=False, stop_at_recall=True)


@pytest.mark.parametrize("task", ["ReopenDrawer-v0", "HiddenObject-v0"])
def test_drawers_found_without_masks(task):
    report = _geometric(task, 0)
    assert report.correct, report.answer
    memory = report.memory
    drawers = sorted(memory.find(cls="drawer"), key=lambda d: -memory.graph.nodes[d]["n_obs"])
    assert len(drawers) >= 3, drawers
    for d in drawers[:3]:
        attrs = memory.graph.nodes[d]
        assert attrs["kind"] == "container" and attrs["articulated"]
    # The housing was found from its flat top, not from a mask.
    housings = memory.find(cls="cabinet")
    assert housings
    # The row faces the robot (-x): every drawer stands in front of the housing's middle. The housing's
    # back face, which the scene camera sees from behind, is housing, not a row of drawers.
    middle = max(memory.where_is(h)["position"][0] for h in housings)
    assert all(memory.where_is(d)["position"][0] < middle for d in drawers), drawers
    if task == "ReopenDrawer-v0":
        # The cue drawer was seen open (its travel out of the housing), then shut.
        assert any(e["data"].get("state") == "open" for d in drawers for e in memory.history(d))


def test_cups_found_without_masks():
    report = _geometric("ShellGame-v0", 0)
    assert report.correct, report.answer
    memory = report.memory
    cups = memory.find(cls="cup")
    assert len(cups) == 3 and all(memory.graph.nodes[c]["kind"] == "container" for c in cups)
    # The ball, a few pixels seen before the cups came down, is remembered inside the answered cup.
    chosen = report.answer["node"]
    assert chosen in cups and memory.objects_in(chosen)


def test_without_shape_recognition_the_cup_question_fails(monkeypatch):
    from embodied.perception import geometric

    monkeypatch.setattr(geometric, "label_parts",
                        lambda pts, clusters, support, n, cols=None: [("", c) for c in clusters])
    report = _geometric("ShellGame-v0", 0)
    assert not report.correct
    assert not report.memory.find(cls="cup")


def test_blank_depth_gives_no_drawer_answer():
    # Nothing within 2 cm of the camera: no points, no nodes, so no answer at all.
    report = _geometric("ReopenDrawer-v0", 0, max_depth=0.02, min_depth=0.01)
    assert report.answer.get("answer") is None and not report.correct
    assert not report.memory.find(cls="drawer")


def _agent_succeeds(task: str, seed: int) -> tuple[bool, object]:
    import gymnasium as gym

    from embodied.eval.rollout import make_agent

    env = gym.make(f"embodied/{task}")
    agent = make_agent(env, seed, perception="geometric")
    agent.reset(seed)
    obs, info = env.reset(seed=seed)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(agent.act(obs))
        done = terminated or truncated
    env.close()
    return bool(info["is_success"]), agent.memory


def test_buttons_found_without_masks_and_pressed_in_the_order_they_lit(monkeypatch):
    """The whole agent on geometric perception presses a row of buttons in the order they lit up: each
    button is one node of class button (footprint and height), whose cap's flash memory saw. With
    buttons left to the coarse size classes (a button read as small, then medium) it fails."""
    from embodied.perception import geometric_shapes

    ok, memory = _agent_succeeds("SequenceRecall-v0", 11)
    assert ok
    buttons = memory.find(cls="button")
    assert len(buttons) == 4 and all(memory.graph.nodes[b]["articulated"] for b in buttons)
    monkeypatch.setattr(geometric_shapes, "is_button", lambda cp, support: False)
    ok, memory = _agent_succeeds("SequenceRecall-v0", 11)
    assert not ok and not memory.find(cls="button")


def _box_points(side: float, height: float, yaw_deg: float, step: float = 0.004) -> np.ndarray:
    """Points (N,3) m over a box's top and sides, turned ``yaw_deg`` about z, standing on z=0."""
    g = np.arange(-side / 2, side / 2 + 1e-9, step)
    x, y = np.meshgrid(g, g)
    top = np.stack([x.ravel(), y.ravel(), np.full(x.size, height)], axis=1)
    zs = np.arange(0.0, height, step)
    edge = np.array([(u, -side / 2) for u in g] + [(u, side / 2) for u in g] + [(-side / 2, u) for u in g])
    sides = np.array([(a, b, z) for a, b in edge for z in zs])
    pts = np.concatenate([top, sides])
    c, s = np.cos(np.deg2rad(yaw_deg)), np.sin(np.deg2rad(yaw_deg))
    return pts @ np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])


@pytest.mark.parametrize("yaw", [0.0, 20.0, 45.0])
def test_a_turned_block_is_no_button_and_a_turned_button_is_one(yaw):
    """A button is told from a block by its footprint's sides, not its extent along x and y: a 4 cm block
    turned 20 degrees spans 5.1 cm along x (45 degrees: 5.7 cm), a button's base is 7 cm square."""
    from embodied.perception.geometric_shapes import footprint_sides, is_button

    block, button = _box_points(0.04, 0.04, yaw), _box_points(0.07, 0.03, yaw)
    assert np.allclose(footprint_sides(block[:, :2]), 0.04, atol=0.004)
    assert not is_button(block, 0.0)
    assert is_button(button, 0.0)
    if yaw == 20.0:  # the ablation: measured along x and y, the turned block has a button's footprint
        ext = np.ptp(block[:, :2], axis=0)
        assert np.all((0.048 <= ext) & (ext <= 0.085))


def test_pads_found_in_the_table_plane_and_the_block_that_stood_on_one_touched(monkeypatch):
    """Pads lie in the table's plane, so no cluster above it holds them: they are found as patches of
    the plane's points in a colour of their own. With them the whole agent on geometric perception
    touches the block that stood on the named pad; without them "the <colour> pad" names nothing."""
    from embodied.perception import geometric

    ok, memory = _agent_succeeds("StoodOn-v0", 11)
    assert ok
    pads = memory.find(cls="pad")
    colours = {memory.graph.nodes[p]["colour"] for p in pads}
    assert len(colours) == 3, colours  # the three pads of the row, each in its own colour
    monkeypatch.setattr(geometric, "find_pads", lambda *args: [])
    ok, memory = _agent_succeeds("StoodOn-v0", 11)
    assert not ok and not memory.find(cls="pad")


def test_a_block_stashed_in_a_drawer_fetched_back():
    """The robot stashes a block in a drawer and later fetches it back, on geometric perception: the
    drawer is found, the block is remembered in it while it is shut, and picked where it lies once the
    drawer is opened again. (Telling the block from the tray it touches: test_geometric_drawer_views.)"""
    ok, memory = _agent_succeeds("StashAndFetch-v0", 12)
    assert ok
    assert memory.find(cls="drawer")


def _memory_at_recall(task: str, seed: int):
    """The whole agent on geometric perception through the observe and delay phases: its memory and the
    simulator's truth at the first recall step."""
    import gymnasium as gym

    from embodied.eval.rollout import make_agent

    env = gym.make(f"embodied/{task}")
    agent = make_agent(env, seed, perception="geometric")
    agent.reset(seed)
    obs, info = env.reset(seed=seed)
    phase = obs["goal"]["text"]
    while obs["goal"]["text"] == phase or not obs["goal"]["text"].startswith("put"):
        obs, _, _, _, info = env.step(agent.act(obs))
    env.close()
    return agent.memory, info["privileged"]


def _things(memory) -> list[str]:
    """Remembered things of geometric mode's size classes on the workcell's table (past the arm's foot)."""
    from embodied.memory.config import SIZE_CLASSES

    return [n for n in memory.find() if memory.graph.nodes[n]["cls"] in SIZE_CLASSES
            and memory.tracks[n].center[0] > 0.15]


def test_rearranged_things_each_one_node_where_the_scene_left_them(monkeypatch):
    """Rearrange on geometric perception: a block moves into a shut drawer, one out from under a lifted cup
    and under the other, one along the table. At recall memory holds one node per thing, where the scene
    left it: the wrist camera's view of a block's top face reaches down to the table (a block, not a
    flat thing beside it), the cup follows its own lift (a block rising through the cup's old place is
    no view of it), and bits of a sliding drawer's front are no things. Without the first a block is
    remembered as the flat thing the wrist camera sees; without the last (scraps of a drawer's front
    dropped, bits of a drawer in its colour, views in a drawer's space in its colour) the opened drawer
    leaves things behind."""
    from embodied.memory.filters import ViewFilters
    from embodied.perception import geometric, geometric_shapes

    memory, truth = _memory_at_recall("Rearrange-v0", 3)
    things = _things(memory)
    on_table = [o for o in truth["objects"] if not o["place"].startswith("drawer")]
    assert len(things) == len(truth["objects"]), [(n, memory.graph.nodes[n]["colour"]) for n in things]
    for o in on_table:
        near = [n for n in things if np.linalg.norm(memory.tracks[n].center[:2] - o["pos"][:2]) < 0.04]
        assert len(near) == 1, (o["colour"], o["place"], near)
    cups = memory.find(cls="cup")
    assert len(cups) == 2
    assert sorted(round(float(memory.tracks[c].center[1]), 1) for c in cups) == [-0.3, 0.3]
    drawn = [n for d in memory.find(cls="drawer") for n in memory.objects_in(d) if n in things]
    assert len(drawn) == 1  # the block shut in the drawer

    assert all(memory.graph.nodes[n]["cls"] != "flat" for n in things)

    monkeypatch.setattr(geometric, "_top_only", lambda *args: False)
    memory, _ = _memory_at_recall("Rearrange-v0", 3)
    assert any(memory.graph.nodes[n]["cls"] == "flat" for n in _things(memory))
    monkeypatch.undo()
    monkeypatch.setattr(geometric_shapes, "FRONT_RAISED", 1.0)
    monkeypatch.setattr(geometric_shapes, "drawer_bits", lambda pts, cols, drawers, pieces: [False] * len(pieces))
    monkeypatch.setattr(ViewFilters, "drop_lookalikes", lambda self, dets: dets)
    memory, truth = _memory_at_recall("Rearrange-v0", 3)
    assert len(_things(memory)) > len(truth["objects"])


def test_the_hidden_block_fetched_from_the_drawer_it_was_shut_in():
    """HiddenObject on geometric perception, the whole agent: the block the env shut in a drawer is
    remembered there, the drawer opened and the block lifted out of it. Memory ends with one node of the
    block's colour, and no size-class thing in the drawers' colour (views of the tray, the housing's top
    or the row seen as one blob)."""
    import gymnasium as gym

    from embodied.eval.rollout import make_agent
    from embodied.memory.config import SIZE_CLASSES

    env = gym.make("embodied/HiddenObject-v0")
    agent = make_agent(env, 12, perception="geometric")
    agent.reset(12)
    obs, info = env.reset(seed=12)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(agent.act(obs))
        done = terminated or truncated
    env.close()
    assert info["is_success"]
    memory = agent.memory
    colour = obs["goal"]["text"].split()[-2]  # "retrieve the <colour> block"
    attrs = memory.graph.nodes
    assert len([n for n in memory.find() if attrs[n]["cls"] in SIZE_CLASSES and attrs[n]["colour"] == colour]) == 1
    drawer_colours = {attrs[d]["colour"] for d in memory.find(cls="drawer")}
    assert len(drawer_colours) == 1
    assert not [n for n in memory.find() if attrs[n]["cls"] in SIZE_CLASSES and attrs[n]["colour"] in drawer_colours]


def test_nothing_seen_at_the_arms_foot():
    """The scene camera sees bits of the arm's foot beside its base, and DBSCAN leaves them as noise:
    small things there had been two nodes in every workcell episode, which Rearrange's plan tried to
    pick. None is reported within the base's radius; with a zero radius they show (the rule is what
    removes them, not the camera)."""
    import gymnasium as gym

    from embodied.perception import Perceiver

    env = gym.make("embodied/Rearrange-v0", images=True)
    obs, _ = env.reset(seed=123)
    env.close()

    def at_foot(radius: float) -> list[str]:
        frame = Perceiver(None, PerceptionConfig(mode="geometric", robot_base_radius=radius))(obs, 0)
        return [o.label for o in frame.objects if np.linalg.norm(np.asarray(o.center)[:2]) < 0.13]

    assert at_foot(0.13) == []
    assert "small" in at_foot(0.0)
