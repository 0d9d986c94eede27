"""Recorded decision points (``embodied record-demos --policy agent``) as training batches.

    data = DecisionData(["demos/manip", "demos/nav"], config)   # config: a MemoryPolicyConfig
    data.fill_config(config)       # vocabulary, widths, statistics from the data
    batch = data.batch(indices, train=True)

One item is one decision point: the goal's words, proprio, the labels, and the
memory input ``config.memory`` asks for: the node tokens stored at the
decision (explicit), the camera frames of that step (none), or frames of the
whole episode so far (implicit), decoded from the dataset's videos once,
area-resized to ``config.image_size`` and kept as uint8.
"""

from __future__ import annotations

import numpy as np
import torch
from tqdm import tqdm

from embodied.data.decisions import EpisodeDecisions, load_decisions
from embodied.planner.calls import DECISIONS, SOURCES, STOP, UNIT
from policies.memory_policy.configuration import MemoryPolicyConfig
from policies.memory_policy.features import FREE_STEP, free_spots
from policies.memory_policy.inputs import (
    build_vocab,
    frames_tensor,
    history_indices,
    last_call,
    node_word_ids,
    pad_state,
    word_ids,
    words,
)


MAX_CHOICES = 8  # any_order: the recorded choice and up to 7 equally good ones per decision
WHERE_SOURCE = "node"  # where_pointer: a point read from another node than the target, plus an offset
WHERE_RADIUS = 0.06  # m (xy): a free point this near another node's position is read from that node


def unit_alternatives(ep: EpisodeDecisions, j: int) -> list[tuple[int, int]]:
    """(skill, target index at decision ``j``) of the choices as good as the recorded one there.

    The planner tags the calls of an any-order plan with units (``extra[UNIT]``). When the call
    recorded at ``j`` starts a unit that no earlier call of this goal served, the first call of
    every other unit this goal runs later, and that no earlier call served either, could have come
    first just as well. Anywhere else (inside a unit, untagged calls, no stored calls) there are none.
    A relabelled episode (:mod:`embodied.agent.relabel`) stores them per decision from the planner's plan.
    """
    if ep.alternatives is not None and ep.alternatives[j] is not None:  # stored by the labeller
        return [(DECISIONS.index(c["skill"]), ep.ids[j].index(c["target"]))
                for c in ep.alternatives[j] if c["target"] in ep.ids[j]]
    calls = ep.calls
    unit = _unit(calls[j]) if calls else None
    if unit is None:
        return []
    goal = [k for k in range(len(calls)) if ep.goals[k] == ep.goals[j]]
    before = {_unit(calls[k]) for k in goal if k < j}
    if unit in before:
        return []
    out, seen = [], {unit}
    for k in goal:
        u = _unit(calls[k])
        if k <= j or u is None or u in seen or u in before:
            continue
        seen.add(u)
        if calls[k]["target"] in ep.ids[j]:
            out.append((DECISIONS.index(calls[k]["skill"]), ep.ids[j].index(calls[k]["target"])))
    return out


def _unit(call: dict | None) -> str | None:
    return None if call is None else (call.get("extra") or {}).get(UNIT)


class DecisionData:
    def __init__(self, roots: list[str], config: MemoryPolicyConfig, progress: bool = True, seed: int = 0,
                 successful_only: bool = True):
        """``successful_only``: learn only from episodes the recording policy solved (relabelled episodes
        are kept whatever their outcome: their labels are the planner's, not what ran)."""
        self.config = c = config
        self.episodes = []  # (root, EpisodeDecisions)
        for root in roots:
            self.episodes += [(str(root), ep) for ep in load_decisions(root)
                              if ep.success or ep.labeller == "planner" or not successful_only]
        if not self.episodes:
            raise ValueError(f"no successful episodes with decisions in {', '.join(map(str, roots))}")
        rows = [(k, j) for k, (_, ep) in enumerate(self.episodes) for j in range(len(ep))]
        self.rows = rows
        self.rng = np.random.default_rng(seed)
        if not c.vocab:
            texts = [g for _, ep in self.episodes for g in ep.goals]
            texts += [w for _, ep in self.episodes for node in ep.words for triple in node for w in triple if w]
            c.vocab = build_vocab(texts)
        index = {w: i for i, w in enumerate(c.vocab)}
        d = len(rows)
        self.goal_ids = np.zeros((d, c.max_goal_words), np.int64)
        self.state = np.zeros((d, c.state_dim + 1), np.float32)
        self.skill = np.zeros(d, np.int64)
        self.target = np.zeros(d, np.int64)
        self.source = np.zeros(d, np.int64)
        self.prev = np.zeros(d, np.int64)
        self.params = np.zeros((d, 8), np.float32)
        self.t = np.zeros(d, np.int64)
        self.tasks = []
        for i, (k, j) in enumerate(rows):
            ep = self.episodes[k][1]
            a = ep.arrays
            self.goal_ids[i] = word_ids(words(ep.goals[j]), index, c.max_goal_words)[0]
            self.state[i] = pad_state(a["decision.proprio"][j], c.state_dim)
            self.skill[i], self.target[i] = a["decision.skill"][j], a["decision.target"][j]
            self.source[i], self.params[i] = a["decision.source"][j], a["decision.params"][j]
            self.prev[i] = a["decision.skill"][j - 1] if j > 0 else -1
            self.t[i] = a["decision.t"][j]
            self.tasks.append(ep.task)
        if c.memory == "explicit":
            n = min(c.max_nodes, max(int(ep.arrays["decision.mask"].shape[1]) for _, ep in self.episodes))
            width = int(self.episodes[0][1].arrays["decision.tokens"].shape[-1])
            self.tokens = np.zeros((d, n, width), np.float32)
            self.node_words = np.zeros((d, n, c.word_slots), np.int64)
            self.node_mask = np.zeros((d, n), bool)
            for i, (k, j) in enumerate(rows):
                ep = self.episodes[k][1]
                m = min(n, int(ep.arrays["decision.mask"][j].sum()))
                self.tokens[i, :m] = ep.arrays["decision.tokens"][j, :m]
                self.node_mask[i, :m] = True
                self.node_words[i] = node_word_ids(ep.words[j], index, n, c.word_slots)
                if self.target[i] >= n:
                    self.target[i] = -1
            if c.last_call_features:
                self._last_calls(n)
            if c.where_pointer:
                self._where_labels()
            if c.any_order:
                self.alt_skill = np.full((d, MAX_CHOICES), -1, np.int64)
                self.alt_target = np.full((d, MAX_CHOICES), -1, np.int64)
                for i, (k, j) in enumerate(rows):
                    choices = [(int(self.skill[i]), int(self.target[i]))]
                    choices += [a for a in unit_alternatives(self.episodes[k][1], j) if a[1] < n and a not in choices]
                    choices = choices[:MAX_CHOICES]
                    self.alt_skill[i, : len(choices)] = [a[0] for a in choices]
                    self.alt_target[i, : len(choices)] = [a[1] for a in choices]
        else:
            self._load_frames(progress)

    def _where_labels(self) -> None:
        """where_pointer: each free point near a node other than the target becomes that node (``where``)
        plus the offset (m) from its position then; its source becomes WHERE_SOURCE. With free_spots, a
        free point of a call with a target that is near no node becomes the nearest candidate spot around
        the target (where = the padded node count + its index), if one is within FREE_STEP."""
        d = len(self.rows)
        self.where = np.full(d, -1, np.int64)
        self.offset = np.zeros((d, 3), np.float32)
        at = self.config.where_offsets[0]
        pos = self.tokens[..., at:at + 3]
        for i in range(d):
            if self.source[i] != SOURCES.index("free") or self.skill[i] == STOP:
                continue
            xyz = self.params[i, :3]
            dist = np.linalg.norm(pos[i, :, :2] - xyz[:2], axis=-1)
            dist[~self.node_mask[i]] = np.inf
            if self.target[i] >= 0:
                dist[self.target[i]] = np.inf
            k = int(np.argmin(dist))
            if dist[k] <= WHERE_RADIUS:
                self.where[i], self.offset[i] = k, xyz - pos[i, k]
                self.source[i] = len(SOURCES)  # WHERE_SOURCE, after the recorded ones (fill_config)
            elif self.config.free_spots and self.target[i] >= 0:  # the nearest candidate spot, if near
                spots, _ = free_spots(torch.from_numpy(self.tokens[i:i + 1]), torch.from_numpy(self.node_mask[i:i + 1]),
                                      torch.tensor([int(self.target[i])]), self.config.free_spot_offsets)
                gap = np.linalg.norm(spots[0, :, :2].numpy() - xyz[:2], axis=-1)
                s = int(np.argmin(gap))
                if gap[s] <= FREE_STEP:
                    self.where[i], self.offset[i] = self.tokens.shape[1] + s, xyz - spots[0, s].numpy()
                    self.source[i] = len(SOURCES)

    def _last_calls(self, n: int) -> None:
        """The last call at each decision (inputs.last_call), from the calls that ran before it for the
        same goal: a relabelled episode's ``ran``, else its recorded calls."""
        d = len(self.rows)
        self.last_skill = np.zeros(d, np.int64)
        self.last_repeats = np.zeros(d, np.float32)
        self.last_target = np.zeros((d, n), np.float32)
        decisions = list(self.config.decisions or DECISIONS)
        for i, (k, j) in enumerate(self.rows):
            ep = self.episodes[k][1]
            ran = ep.ran if ep.ran is not None else ep.calls
            if ran is None:
                raise ValueError(f"episode {ep.episode} of {self.episodes[k][0]} stores no calls: last_call_features "
                                 "needs them (record the demos again)")
            first = j
            while first > 0 and ep.goals[first - 1] == ep.goals[j]:
                first -= 1
            started = [(c["skill"], c["target"]) for c in ran[first:j] if c is not None]
            skill, target, self.last_repeats[i] = last_call(started)
            self.last_skill[i] = decisions.index(skill) + 1 if skill else 0
            if target in ep.ids[j] and ep.ids[j].index(target) < n:
                self.last_target[i, ep.ids[j].index(target)] = 1.0

    # --- images ---------------------------------------------------------------------
    def _load_frames(self, progress: bool) -> None:
        """Per episode: (T, C, 3, s, s) uint8 frames of its cameras (implicit: every step; none: only
        the steps decided at)."""
        from embodied.data import DemoDataset

        c = self.config
        self.frames: list[np.ndarray] = []
        self.cameras: dict[str, list[str]] = {}
        datasets = {}
        bar = tqdm(self.episodes, desc=f"decode frames ({c.memory})", disable=not progress, unit="ep")
        for root, ep in bar:
            if root not in datasets:
                datasets[root] = DemoDataset(root, obs_horizon=1, action_horizon=1)
            ds = datasets[root]
            cams = ds.cameras[: c.camera_slots]
            self.cameras[str(ds.frames["observation.state"].shape[1])] = list(cams)
            steps = np.arange(ep.length) if c.memory == "implicit" else ep.arrays["decision.t"]
            out = np.zeros((len(steps), c.camera_slots, 3, c.image_size, c.image_size), np.uint8)
            for slot, cam in enumerate(cams):
                raw = ds.episode_frames(cam, ep.episode)[steps]
                for lo in range(0, len(raw), 512):
                    small = frames_tensor(raw[lo:lo + 512], c.image_size)
                    out[lo:lo + 512, slot] = small.mul(255).round().to(torch.uint8).numpy()
            self.frames.append(out)
            ds._cache.clear()
        self.slots = np.zeros((len(self.rows), c.camera_slots), bool)
        for i, (k, _) in enumerate(self.rows):
            root = self.episodes[k][0]
            self.slots[i, : len(datasets[root].cameras[: c.camera_slots])] = True

    # --- the data's own settings -------------------------------------------------------
    def fill_config(self, c: MemoryPolicyConfig) -> dict[str, dict[str, list[float]]]:
        """Set the config's output vocabulary, widths and point statistics; returns the input statistics."""
        c.decisions = tuple(DECISIONS)
        c.sources = (*SOURCES, WHERE_SOURCE) if c.where_pointer else tuple(SOURCES)
        acting = self.skill != DECISIONS.index("stop")
        xyz = self.params[acting, :3] if acting.any() else np.zeros((1, 3), np.float32)
        c.xyz_mean = tuple(float(v) for v in xyz.mean(0))
        c.xyz_std = tuple(float(v) for v in np.maximum(xyz.std(0), 1e-2))
        stats = {"state": {"mean": self.state.mean(0).tolist(), "std": np.maximum(self.state.std(0), 1e-3).tolist()}}
        if c.memory == "explicit":
            c.token_dim = int(self.tokens.shape[-1])
            valid = self.tokens[self.node_mask]
            stats["tokens"] = {"mean": valid.mean(0).tolist(), "std": np.maximum(valid.std(0), 1e-3).tolist()}
        else:
            c.extra = {**c.extra, "cameras": self.cameras}
        return stats

    def __len__(self) -> int:
        return len(self.rows)

    def batch(self, idx, train: bool = True) -> dict[str, torch.Tensor]:
        idx = np.asarray(idx, dtype=np.int64)
        c = self.config
        goal = torch.from_numpy(self.goal_ids[idx])
        out = {"goal_ids": goal, "goal_mask": goal != 0, "state": torch.from_numpy(self.state[idx]),
               "skill": torch.from_numpy(self.skill[idx]), "target": torch.from_numpy(self.target[idx]),
               "source": torch.from_numpy(self.source[idx]), "params": torch.from_numpy(self.params[idx]),
               "prev_skill": torch.from_numpy(self.prev[idx])}
        if c.memory == "explicit" and c.any_order:
            out.update(alt_skill=torch.from_numpy(self.alt_skill[idx]), alt_target=torch.from_numpy(self.alt_target[idx]))
        if c.memory == "explicit" and c.where_pointer:
            out.update(where=torch.from_numpy(self.where[idx]), offset=torch.from_numpy(self.offset[idx]))
        if c.memory == "explicit" and c.last_call_features:
            out.update(last_skill=torch.from_numpy(self.last_skill[idx]),
                       last_repeats=torch.from_numpy(self.last_repeats[idx]),
                       last_target=torch.from_numpy(self.last_target[idx]))
        if c.memory == "explicit":
            out.update(tokens=torch.from_numpy(self.tokens[idx]), node_words=torch.from_numpy(self.node_words[idx]),
                       node_mask=torch.from_numpy(self.node_mask[idx]))
        elif c.memory == "none":
            frames = np.stack([self.frames[self.rows[i][0]][self.rows[i][1]] for i in idx])
            out.update(frames=torch.from_numpy(frames).float().div_(255.0), frame_mask=torch.from_numpy(self.slots[idx]))
        else:
            out.update(self._history(idx, train))
        return out

    def _history(self, idx: np.ndarray, train: bool) -> dict[str, torch.Tensor]:
        c = self.config
        s = c.image_size
        hist = np.zeros((len(idx), c.history_len, c.camera_slots, 3, s, s), np.uint8)
        mask = np.zeros((len(idx), c.history_len), bool)
        age = np.zeros((len(idx), c.history_len), np.float32)
        for b, i in enumerate(idx):
            k, _ = self.rows[i]
            t = int(self.t[i])
            steps = history_indices(t, c.history_len, c.history_stride)
            if train and c.history_dropout > 0 and len(steps) > 1:
                keep = self.rng.random(len(steps) - 1) >= c.history_dropout
                steps = [st for st, kp in zip(steps[:-1], keep) if kp] + [steps[-1]]
            n = len(steps)
            hist[b, :n] = self.frames[k][steps]
            mask[b, :n] = True
            age[b, :n] = t - np.asarray(steps)
        return {"history": torch.from_numpy(hist).float().div_(255.0), "history_mask": torch.from_numpy(mask),
                "history_age": torch.from_numpy(age)}
