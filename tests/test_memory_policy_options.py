"""Two opt-in parts of the explicit policy.

- The last call as an input: the skill started last for the goal, how often in a row, and the node it was
  aimed at; built the same way from recorded calls (training) and from the calls the decider started.
- The where pointer: a call's point read from another node than its target, as that node stands now."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from embodied.agent.learned import LearnedDecider
from embodied.agent.relabel import RelabellingDecider
from embodied.cli.main import main
from embodied.data.decisions import load_decisions
from embodied.planner.calls import DECISIONS, SkillCall
from policies.memory_policy import MemoryPolicyConfig
from policies.memory_policy.data import DecisionData
from policies.memory_policy.inputs import MAX_REPEATS, last_call
from policies.memory_policy.modeling import MemoryPolicy
from tests.heads_helpers import one_torch_thread  # noqa: F401

SMALL = {"d_model": 32, "n_heads": 2, "n_layers": 1, "dropout": 0.0}
GOAL = "put everything back where it was"


@pytest.fixture(scope="module")
def rearrange(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("last_call") / "demos"
    assert main(["record-demos", "--task", "Rearrange-v0", "--episodes", "1", "--out", str(out), "--policy", "agent",
                 "--image-size", "64", "--json"]) == 0
    return out


def test_last_call_counts_the_same_call_in_a_row():
    assert last_call([]) == ("", "", 0.0)
    pick_a, pick_b = ("pick", "a"), ("pick", "b")
    assert last_call([pick_b, pick_a]) == ("pick", "a", 1 / MAX_REPEATS)
    assert last_call([pick_a, pick_b, pick_a, pick_a]) == ("pick", "a", 2 / MAX_REPEATS)
    assert last_call([pick_a] * 9)[2] == 1.0  # capped


def test_the_trainer_reads_each_decisions_last_call_from_the_calls_before_it(rearrange):
    ep = load_decisions(rearrange)[0]
    config = MemoryPolicyConfig(memory="explicit", last_call_features=True, **SMALL)
    data = DecisionData([rearrange], config, progress=False)
    assert len(data) == len(ep)
    fresh = [j for j in range(len(ep)) if j == 0 or ep.goals[j - 1] != ep.goals[j]]
    assert len(fresh) == 2  # watch, then put back: each goal starts with no last call
    for j in fresh:
        assert data.last_skill[j] == 0 and data.last_repeats[j] == 0 and not data.last_target[j].any()
    for j in set(range(len(ep))) - set(fresh):
        before = ep.calls[j - 1]
        assert before is not None  # within a goal, every decision but a final stop follows a started call
        assert DECISIONS[data.last_skill[j] - 1] == before["skill"]
        flagged = np.flatnonzero(data.last_target[j])
        assert [ep.ids[j][k] for k in flagged] == ([before["target"]] if before["target"] in ep.ids[j] else [])
        assert data.last_repeats[j] >= 1 / MAX_REPEATS
    batch = data.batch(np.arange(len(data)), train=False)
    data.fill_config(config)
    model = MemoryPolicy(config, {})
    # the input changes the decision: the same batch with the last calls blanked scores otherwise
    blank = dict(batch, last_skill=batch["last_skill"] * 0, last_target=batch["last_target"] * 0)
    with torch.no_grad():
        assert not np.isclose(float(model(batch)["loss"]), float(model(blank)["loss"]))
    with pytest.raises(ValueError, match="last_call_features"):
        MemoryPolicyConfig(memory="implicit", last_call_features=True).validate()


def test_the_decider_remembers_what_ran_for_this_goal_and_a_relabelling_swap(rearrange, tmp_path):
    from tests.test_relabel import _two_blocks_moved

    config = MemoryPolicyConfig(memory="explicit", last_call_features=True, **SMALL)
    data = DecisionData([rearrange], config, progress=False)
    stats = data.fill_config(config)
    decider = LearnedDecider(MemoryPolicy(config, stats))
    memory = _two_blocks_moved()
    obs = {"goal": {"text": GOAL}, "proprio": np.zeros(22, np.float32)}
    own = decider.decide(GOAL, memory, obs, 3)
    assert decider.started == ([] if own is None else [(own.skill, own.target)])
    planner_call = SkillCall("pick", "nowhere")
    decider.ran(planner_call)  # a relabelling decider ran the planner's call in its place
    assert decider.started == [("pick", "nowhere")]
    decider.decide("another goal", memory, obs, 4)
    assert ("pick", "nowhere") not in decider.started  # a new goal starts afresh
    relabel = RelabellingDecider(decider, mix=1.0)
    ran = relabel.decide(GOAL, memory, obs, 5)
    assert ran is not None and decider.started == [(ran.skill, ran.target)]


def _blocks(blue_at, red_at=(0.40, 0.25)):
    from embodied.memory import SpatialMemory
    from tests.memory_helpers import detection, frame, proprio

    memory = SpatialMemory()
    for t in range(3):
        seen = [detection((*red_at, 0.02), "block", "red"), detection((*blue_at, 0.02), "block", "blue")]
        memory.update(frame(t, seen, proprio=proprio((0.3, 0.0, 0.4), 0.08)))
    return memory


def test_the_where_pointer_reads_a_place_point_from_another_node_as_it_stands_now(monkeypatch):
    """A place whose point is 2 cm off another node (a block going into a drawer: the drawer now) is learned
    as that node plus an offset; a point near no node stays regressed. At run time the point follows the
    node wherever it stands."""
    import policies.memory_policy.data as data_module
    from embodied.agent.decisions import DecisionLog
    from embodied.data.decisions import EpisodeDecisions
    from policies.memory_policy.data import WHERE_RADIUS, WHERE_SOURCE

    memory = _blocks((0.55, 0.20))
    obs = {"goal": {"text": GOAL}, "proprio": np.zeros(22, np.float32)}
    log = DecisionLog()
    log.add(5, "stack red on blue", obs, memory, SkillCall("place", "block_0", (0.57, 0.20, 0.05)))
    log.add(6, "put red aside", obs, memory, SkillCall("place", "block_0", (0.10, -0.30, 0.02)))
    arrays, meta = log.pack()
    ep = EpisodeDecisions(0, "", 10, True, arrays, meta["goals"], meta["ids"], meta["words"], meta["calls"])
    monkeypatch.setattr(data_module, "load_decisions", lambda root: [ep])
    from embodied.agent.tokens import field_slice

    config = MemoryPolicyConfig(memory="explicit", where_pointer=True, where_offsets=(field_slice("position").start,),
                                **SMALL)
    data = DecisionData(["synthetic"], config, progress=False)
    stats = data.fill_config(config)
    assert config.sources[-1] == WHERE_SOURCE and WHERE_RADIUS >= 0.02
    blue = ep.ids[0].index("block_1")
    assert list(data.where) == [blue, -1]
    assert np.allclose(data.offset[0], (0.02, 0.0, 0.03), atol=2e-3) and list(data.source[1:]) == [2]  # free
    torch.manual_seed(0)
    model = MemoryPolicy(config, stats)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    batch = data.batch(np.arange(2), train=True)
    for _ in range(300):
        opt.zero_grad()
        model(batch)["loss"].backward()
        opt.step()
    decider = LearnedDecider(model)
    moved = _blocks((0.50, -0.10))  # blue stands elsewhere now: the point goes with it
    call = decider.decide("stack red on blue", moved, obs, 7)
    assert decider.last["decision"].source == WHERE_SOURCE
    assert np.allclose(call.xyz[:2], (0.52, -0.10), atol=0.01), call
    with pytest.raises(ValueError, match="where_pointer"):
        MemoryPolicyConfig(memory="none", where_pointer=True).validate()


def test_free_spots_score_clearance_and_a_point_set_aside_follows_its_target(monkeypatch):
    """Candidate spots stand on a grid around the target at its height, and say how clear each is of the
    other nodes' boxes. A place aside, near no node, is learned as a spot plus an offset; at run time the
    point is read from the spots around the target wherever it stands, not regressed where it was."""
    import policies.memory_policy.data as data_module
    from embodied.agent.decisions import DecisionLog
    from embodied.data.decisions import EpisodeDecisions
    from embodied.agent.tokens import field_slice, free_spot_offsets
    from policies.memory_policy.data import WHERE_SOURCE
    from policies.memory_policy.features import FREE_OFFSETS, FREE_SCALES, free_spots

    memory = _blocks((0.55, 0.20))
    obs = {"goal": {"text": GOAL}, "proprio": np.zeros(22, np.float32)}
    log = DecisionLog()
    log.add(5, "set red aside", obs, memory, SkillCall("place", "block_0", (0.55, 0.10, 0.02)))
    log.add(6, "set red aside", obs, _blocks((0.55, 0.20), red_at=(0.25, -0.05)),
            SkillCall("place", "block_0", (0.40, -0.20, 0.02)))  # the same offset from red elsewhere
    arrays, meta = log.pack()
    ep = EpisodeDecisions(0, "", 10, True, arrays, meta["goals"], meta["ids"], meta["words"], meta["calls"])
    monkeypatch.setattr(data_module, "load_decisions", lambda root: [ep])
    offsets = free_spot_offsets()
    tokens = torch.from_numpy(arrays["decision.tokens"][:1])
    red = ep.ids[0].index("block_0")
    spots, feats = free_spots(tokens, torch.from_numpy(arrays["decision.mask"][:1]), torch.tensor([red]), offsets)
    centre = tokens[0, red, field_slice("position")]
    assert torch.allclose(spots[0, :, 2], centre[2].expand(len(FREE_OFFSETS)))
    assert torch.allclose(spots[0, :, :2] - centre[:2], FREE_OFFSETS, atol=1e-6)
    on_blue = int((spots[0, :, :2] - torch.tensor([0.55, 0.20])).norm(dim=-1).argmin())
    far = int((spots[0, :, :2] - torch.tensor([0.25, 0.40])).norm(dim=-1).argmin())
    box = slice(5, 5 + len(FREE_SCALES))  # exp(-gap / scale) to the nearest other box
    assert torch.allclose(feats[0, on_blue, box], torch.ones(len(FREE_SCALES)))  # inside blue's box
    assert (feats[0, far, box] < 0.2).all()

    config = MemoryPolicyConfig(memory="explicit", where_pointer=True, where_offsets=(field_slice("position").start,),
                                free_spots=True, free_spot_offsets=offsets, **SMALL)
    data = DecisionData(["synthetic"], config, progress=False)
    stats = data.fill_config(config)
    n = data.tokens.shape[1]
    assert (data.where >= n).all() and (data.source == config.sources.index(WHERE_SOURCE)).all()
    assert np.allclose(FREE_OFFSETS[data.where - n].numpy(), (0.15, -0.15), atol=1e-5)
    torch.manual_seed(0)
    model = MemoryPolicy(config, stats)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    batch = data.batch(np.arange(2), train=True)
    for _ in range(300):
        opt.zero_grad()
        model(batch)["loss"].backward()
        opt.step()
    call = LearnedDecider(model).decide("set red aside", _blocks((0.55, 0.20), red_at=(0.30, 0.05)), obs, 7)
    assert np.allclose(call.xyz[:2], (0.45, -0.10), atol=0.015), call  # beside red now
    with pytest.raises(ValueError, match="where_pointer"):
        MemoryPolicyConfig(memory="explicit", free_spots=True, free_spot_offsets=offsets).validate()


def test_max_repeats_turns_the_decider_to_its_next_choice_after_a_call_repeated(rearrange):
    """A call started max_repeats times in a row is not chosen a next time: the decider takes the policy's
    next likeliest (skill, node); another call in between resets the count."""
    from embodied.agent.tokens import node_tokens

    config = MemoryPolicyConfig(memory="explicit", **SMALL)
    data = DecisionData([str(rearrange)], config, progress=False)
    stats = data.fill_config(config)
    torch.manual_seed(0)
    model = MemoryPolicy(config, stats).eval()
    memory = _blocks((0.55, 0.20))
    obs = {"goal": {"text": GOAL}, "proprio": np.zeros(22, np.float32)}
    free = LearnedDecider(model)
    first = free.decide(GOAL, memory, obs, 0)
    assert first is not None and first.skill != "wait"  # a wait is never limited
    assert all(free.decide(GOAL, memory, obs, t) == first for t in range(1, 4))  # no limit: the same again
    model.config.max_repeats = 2
    decider = LearnedDecider(model)
    calls = [decider.decide(GOAL, memory, obs, t) for t in range(3)]
    assert calls[0] == calls[1] == first and calls[2] != first, calls
    batch, tokens = decider._batch(GOAL, memory, obs, 3)
    want = model.decide(batch, (config.decisions.index(first.skill), list(tokens.ids).index(first.target)
                                if first.target in node_tokens(memory).ids else -1))
    assert (calls[2].skill, calls[2].target) == (want.skill, tokens.ids[want.target] if want.target >= 0 else "")
    assert decider.decide(GOAL, memory, obs, 4) == first  # another call ran in between: the count starts again
    with pytest.raises(ValueError, match="max_repeats"):
        MemoryPolicyConfig(max_repeats=-1).validate()


def test_first_box_features_say_what_held_a_node_when_first_seen():
    """A block first seen at the back of a drawer that has slid open since is still in the drawer's first
    box; not in the other drawer's, and the table holds nothing in this sense."""
    from embodied.agent.tokens import TOKEN_DIM, first_box_offsets
    from policies.memory_policy.features import first_inside

    first, size = first_box_offsets()
    nodes = {  # first position (x, y), box size now (x, y)
        "block": ((0.63, 0.09), (0.04, 0.04)),
        "drawer": ((0.58, 0.09), (0.30, 0.16)),  # open now: its box reaches further than when first seen
        "other drawer": ((0.58, -0.09), (0.30, 0.16)),
        "table": ((0.50, 0.00), (0.80, 1.00)),
    }
    tokens = torch.zeros(1, len(nodes), TOKEN_DIM)
    for k, (xy, wh) in enumerate(nodes.values()):
        tokens[0, k, first:first + 2] = torch.tensor(xy)
        tokens[0, k, size:size + 2] = torch.tensor(wh)
    inside = first_inside(tokens, torch.ones(1, len(nodes), dtype=torch.bool), (first, size))[0]
    assert inside[0].tolist() == [False, True, False, False]  # the block: in the drawer only (not the table)
    assert not inside[:, 3].any() and not inside[2].any()
    config = MemoryPolicyConfig(memory="explicit", first_box_features=True)
    with pytest.raises(ValueError, match="first_box_offsets"):
        config.validate()


def test_goal_hop_features_lead_from_the_object_the_goal_names_to_its_room():
    """"the room where you saw the white plate": the kitchen node gets the name-from-room-word hop and the
    room-centre hop at full weight; the study (a blue cup's room) gets only a weaker one, and nothing
    reaches a node from itself."""
    from embodied.agent.tokens import TOKEN_DIM, WORD_SLOTS, goal_hop_offsets
    from policies.memory_policy.features import goal_hops

    pos, room_at, _ = goal_hop_offsets()
    vocab = {w: i + 2 for i, w in enumerate(["white", "plate", "blue", "cup", "room", "kitchen", "study"])}
    nodes = [  # words (class, colour, name, room, shown), position, room centre
        (("plate", "white", "", "kitchen", ""), (4.5, 1.0), (4.8, 1.5)),
        (("cup", "blue", "", "study", ""), (1.0, 1.0), (1.7, 1.3)),
        (("cup", "white", "", "study", ""), (1.2, 1.1), (1.7, 1.3)),
        (("room", "", "kitchen", "", ""), (4.8, 1.5), (0.0, 0.0)),
        (("room", "", "study", "", ""), (1.7, 1.3), (0.0, 0.0)),
    ]
    words = torch.tensor([[[vocab.get(w, 0) for w in ws] for ws, _, _ in nodes]])
    tokens = torch.zeros(1, len(nodes), TOKEN_DIM)
    for k, (_, xy, room) in enumerate(nodes):
        tokens[0, k, pos:pos + 2] = torch.tensor(xy)
        tokens[0, k, room_at:room_at + 2] = torch.tensor(room)
    goal = torch.tensor([[1, 1, vocab["room"], 1, 1, 1, 1, vocab["white"], vocab["plate"]]])
    mask = torch.ones(1, len(nodes), dtype=torch.bool)
    hops = goal_hops(words, mask, goal, tokens, goal_hop_offsets())[0]
    w = len(WORD_SLOTS)
    name_from_room = hops[:, WORD_SLOTS.index("name") * w + WORD_SLOTS.index("room")]
    assert name_from_room.tolist() == [0.0, 0.0, 0.0, 1.0, 0.5]  # the white cup names the study, half as well
    near_room = hops[:, w * w]
    assert near_room[3] > 0.99 and near_room[4] < 0.6 and near_room[:3].max() < 0.5
    assert not goal_hops(words, torch.zeros_like(mask), goal, tokens, goal_hop_offsets()).any()
    with pytest.raises(ValueError, match="goal_hop_offsets"):
        MemoryPolicyConfig(memory="explicit", goal_hop_features=True).validate()


def test_decision_accuracy_scores_the_shipped_policy_and_its_points_teacher_forced(rearrange):
    """tools/decision_accuracy.py on a fresh demo: the shipped explicit policy reads a place back from the
    first-seen spot, so its points land on the recorded ones."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("decision_accuracy",
                                                  Path(__file__).parents[1] / "tools" / "decision_accuracy.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    result = tool.decision_accuracy("explicit", [str(rearrange)])
    assert result["decisions"] == len(load_decisions(rearrange)[0])
    assert 0.5 <= result["choice"] <= 1.0
    back = result["points"]["back"]
    assert back["n"] >= 2 and back["within"] >= 0.9, result["points"]


def test_the_results_report_adds_disjoint_seed_ranges_and_keeps_the_larger_overlapping_run(tmp_path):
    """tools/report_memory_policies.py: two halves of a 100-seed run make one 100-episode cell; a shorter
    run over seeds already counted does not add to it."""
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("report", Path(__file__).parents[1] / "tools" / "report_memory_policies.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    col = "learned:runs/x/memory_explicit"

    def report(name, seed, episodes, success, failed):
        row = {"task": "Rearrange-v0", "suite": "manipulation", "chance": 0.0, col: success,
               f"{col}_episodes": episodes, f"{col}_failed_seeds": failed}
        (tmp_path / name).write_text(json.dumps({"seed": seed, "columns": [col], "tasks": [row]}))

    report("eval_a.json", 9000, 50, 0.5, [9001])
    report("eval_b.json", 9050, 50, 0.7, [9060])
    report("eval_c.json", 9000, 10, 1.0, [])
    rows, order = tool.merge([tmp_path])
    cell = rows["Rearrange-v0"]["cells"]["explicit"]
    assert order == ["explicit"] and cell["episodes"] == 100 and abs(cell["success"] - 0.6) < 1e-9
    assert cell["seed"] == 9000 and cell["failed"] == [9001, 9060]
