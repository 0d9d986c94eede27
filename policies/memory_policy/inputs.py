"""Inputs of the high-level policy, made the same way in training and at run time.

    words("Put the red block back.")        -> ["put", "the", "red", "block", "back"]
    word_ids(words, vocab, n)               -> (n,) int64 ids (0 pads, 1 unknown), (n,) bool mask
    frames_tensor(rgb, size)                -> (3, size, size) float32 in [0, 1] (area-resized)
    history_indices(t, length, stride)      -> frame steps of the implicit history, oldest first, ending at t
    pad_state(proprio, width)               -> (width + 1,) float32: the values, zeros, and their count / width
    last_call(started)                      -> (skill, target id, repeats) of the call started last for this goal
"""

from __future__ import annotations

import re

import numpy as np
import torch
import torch.nn.functional as F

PAD, UNKNOWN = 0, 1


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9_ ]+", " ", str(text).lower()).split()


def build_vocab(texts) -> tuple[str, ...]:
    """Every word of ``texts`` (goal texts and node words), sorted, after the pad and unknown entries."""
    seen = set()
    for text in texts:
        seen.update(words(text))
    return ("<pad>", "<unk>", *sorted(seen))


def word_ids(tokens: list[str], index: dict[str, int], length: int) -> tuple[np.ndarray, np.ndarray]:
    ids = np.zeros(length, np.int64)
    for k, w in enumerate(tokens[:length]):
        ids[k] = index.get(w, UNKNOWN)
    return ids, ids != PAD


def node_word_ids(node_words: list[list[str]], index: dict[str, int], n: int, slots: int) -> np.ndarray:
    """(n, slots) int64: each node's words, slot by slot (embodied.agent.tokens.WORD_SLOTS; 0 where none)."""
    out = np.zeros((n, slots), np.int64)
    for k, triple in enumerate(node_words[:n]):
        for j, w in enumerate(list(triple)[:slots]):
            if w:
                out[k, j] = index.get(str(w).lower(), UNKNOWN)
    return out


def frames_tensor(rgb: np.ndarray, size: int) -> torch.Tensor:
    """(H, W, 3) uint8, or (T, H, W, 3) -> (3, size, size) / (T, 3, size, size) float32 in [0, 1]."""
    x = torch.from_numpy(np.ascontiguousarray(rgb))
    single = x.ndim == 3
    x = (x.unsqueeze(0) if single else x).permute(0, 3, 1, 2).float().div_(255.0)
    if x.shape[-1] != size or x.shape[-2] != size:
        x = F.interpolate(x, size=(size, size), mode="area")
    return x[0] if single else x


def history_indices(t: int, length: int, stride: int) -> list[int]:
    """Up to ``length`` steps in [0, t], ``stride`` apart or wider so that the first is step 0 once
    the episode is longer than ``length * stride``; the last is ``t``."""
    t = max(int(t), 0)
    if length <= 1:
        return [t]
    span = max(stride, -(-t // (length - 1)))  # ceil(t / (length - 1))
    steps = sorted({max(t - k * span, 0) for k in range(length)})
    return steps


def pad_state(proprio, width: int) -> np.ndarray:
    p = np.asarray(proprio, np.float32).reshape(-1)[:width]
    out = np.zeros(width + 1, np.float32)
    out[: p.shape[0]] = p
    out[-1] = p.shape[0] / width
    return out


MAX_REPEATS = 4  # a call started this many times in a row or more reads the same


def last_call(started: list[tuple[str, str]]) -> tuple[str, str, float]:
    """The call started last for the current goal, from the (skill, target id) of every call started
    for it, oldest first: its skill ("" before the first), its target id ("" for none), and how many
    times in a row it was started, / MAX_REPEATS and at most 1 (a call that keeps failing is tried
    again by the demonstrator, then given up for another way)."""
    if not started:
        return "", "", 0.0
    last = started[-1]
    n = 0
    for call in reversed(started):
        if call != last:
            break
        n += 1
    return last[0], last[1], min(n, MAX_REPEATS) / MAX_REPEATS
