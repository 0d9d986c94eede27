"""Plans whose order is arbitrary: the planner tags its units, the trainer counts any unit's first call as
right (``any_order``), and a policy trained so chooses a valid call where the demos disagree on the order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from embodied.cli.main import main
from embodied.data.decisions import EpisodeDecisions, load_decisions
from embodied.planner.calls import DECISIONS, UNIT
from policies.memory_policy import MemoryPolicyConfig
from policies.memory_policy.data import DecisionData, unit_alternatives
from policies.memory_policy.modeling import MemoryPolicy
from policies.memory_policy.train import train_memory_policy
from policies.train import TrainConfig
from tests.heads_helpers import one_torch_thread  # noqa: F401

SMALL = {"d_model": 32, "n_heads": 2, "n_layers": 1, "dropout": 0.0}


@pytest.fixture(scope="module")
def rearrange(tmp_path_factory) -> Path:
    """The scripted agent putting three displaced blocks back (Rearrange, seed 0): three units."""
    out = tmp_path_factory.mktemp("order") / "demos"
    assert main(["record-demos", "--task", "Rearrange-v0", "--episodes", "1", "--out", str(out), "--policy", "agent",
                 "--image-size", "64", "--json"]) == 0  # the agent's perception needs 64 px here
    return out


def test_the_planner_tags_each_objects_calls_and_the_alternatives_are_the_other_units_first_calls(rearrange):
    ep = load_decisions(rearrange)[0]
    acting = [k for k, c in enumerate(ep.calls) if c is not None]
    units = [ep.calls[k]["extra"][UNIT] for k in acting]
    # every call serves a unit named by the object it puts back, and each unit ends placing that object
    assert len(set(units)) >= 2
    for u in set(units):
        mine = [ep.calls[k] for k in acting if ep.calls[k]["extra"][UNIT] == u]
        assert mine[-1]["skill"] in ("place", "close") and any(c["skill"] == "pick" and c["target"] == u for c in mine)
    starts = [k for i, k in enumerate(acting) if i == 0 or units[i] != units[i - 1]]
    for k in acting:
        alts = unit_alternatives(ep, k)
        if k not in starts:
            assert alts == [], (k, alts)
            continue
        later = [acting[i] for i in range(len(acting)) if acting[i] in starts and acting[i] > k]
        want = [(DECISIONS.index(ep.calls[s]["skill"]), ep.ids[k].index(ep.calls[s]["target"])) for s in later]
        assert alts == want, (k, alts, want)
    # the last unit to start has no alternative left
    assert unit_alternatives(ep, starts[-1]) == []


def test_untagged_calls_and_episodes_without_stored_calls_have_no_alternatives():
    arrays = {"decision.skill": np.array([0, 1]), "decision.target": np.array([0, 0])}
    calls = [{"skill": "pick", "target": "a", "extra": {}}, {"skill": "place", "target": "a", "extra": {}}]
    ep = EpisodeDecisions(0, "", 10, True, arrays, ["g", "g"], [["a"], ["a"]], [[], []], calls)
    assert unit_alternatives(ep, 0) == [] and unit_alternatives(ep, 1) == []
    ep.calls = None
    assert unit_alternatives(ep, 0) == []


def _config(rearrange: Path, any_order: bool) -> tuple[DecisionData, MemoryPolicy]:
    config = MemoryPolicyConfig(memory="explicit", any_order=any_order, **SMALL)
    data = DecisionData([str(rearrange)], config, progress=False)
    stats = data.fill_config(config)
    torch.manual_seed(0)
    return data, MemoryPolicy(config, stats)


def test_without_alternatives_the_choice_loss_is_the_skill_and_pointer_cross_entropy(rearrange):
    data, model = _config(rearrange, any_order=True)
    b = data.batch(np.arange(len(data)), train=False)
    b["alt_skill"][:, 1:] = -1  # only the recorded choice
    b["alt_target"][:, 1:] = -1
    model.eval()
    got = model(b)["skill"]
    hc, hm, valid = model._encode(b)
    want = F.cross_entropy(model.skill_head(hc), b["skill"], reduction="none")
    pointed = (b["target"] >= 0) & (b["skill"] != model.stop)
    node = F.cross_entropy(model._pointer(hc, hm, valid, b["skill"]), b["target"].clamp_min(0), reduction="none")
    want = (want + torch.where(pointed, node, torch.zeros_like(node))).mean()
    assert torch.allclose(got, want, atol=1e-5), (got, want)
    # with the alternatives the loss is lower: more of the probability counts
    assert model(data.batch(np.arange(len(data)), train=False))["skill"] < got


def test_trained_with_any_order_it_chooses_a_valid_first_call(rearrange, tmp_path):
    cfg = TrainConfig(head="memory", data=str(rearrange), out=str(tmp_path / "run"), steps=200, batch_size=16,
                      lr=2e-3, warmup_steps=10, checkpoint_every=200, log_every=50, progress=False)
    result = train_memory_policy(cfg, [str(rearrange)], "explicit", dict(SMALL, any_order=True))
    assert result["train_accuracy"]["choice"] == 1.0, result["train_accuracy"]
    with pytest.raises(ValueError, match="any_order"):
        MemoryPolicyConfig(memory="none", any_order=True).validate()
