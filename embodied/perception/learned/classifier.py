"""The crop classifier: one instance's RGB-D crop in, its class out.

    net = CropNet(CropConfig(classes=(...)))
    logits = net(x, s)           # x (N,5,S,S), s (N,4) float32 (``crops.instance_crops``) -> (N,C) logits
    names = net.classify(x, s)   # [class, ...]

The segmenter's pixels decide where the instances are; this network decides
what each one is, from its outline, relief, colour and size at a fixed scale.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from embodied.perception.learned.crops import CROP, SCALARS, instance_crops
from embodied.perception.learned.model import conv_block

# Weight of the segmenter's pixel votes against the crop's class probabilities: the votes name a block or a
# button reliably and a 30-pixel bottle rarely; the crop the other way round (held-out frames).
VOTE_WEIGHT = 1.0
# A region is proposed as an object of its own when it is small and lies in stuff or in a much bigger
# instance; the crop must name it with this confidence (held-out frames: recall 0.90 -> 0.92, precision
# 0.91 -> 0.88 at 0.9; 0.93 and 0.85 at 0.8).
PROPOSE_MAX_PIXELS = 1500
PROPOSE_SHARE = 0.5
PROPOSE_CONFIDENCE = 0.9


@dataclass
class CropConfig:
    """The crop classifier's shape (stored with its weights)."""

    classes: tuple[str, ...] = ()  # the vocabulary, the segmenter's
    widths: tuple[int, ...] = (32, 64, 96)  # channels at 1/2, 1/4, 1/8 of the crop
    hidden: int = 128
    crop: int = CROP

    def validate(self) -> None:
        if not self.classes:
            raise ValueError("CropConfig.classes is empty: the classifier needs a vocabulary")
        if len(self.widths) != 3 or min(self.widths) < 4 or self.hidden < 4:
            raise ValueError("widths takes three channel counts >= 4, and hidden >= 4")

    def to_json(self) -> dict:
        d = asdict(self)
        d["classes"], d["widths"] = list(self.classes), list(self.widths)
        return d


class CropNet(nn.Module):
    def __init__(self, config: CropConfig):
        super().__init__()
        config.validate()
        self.config = config
        w1, w2, w3 = config.widths
        self.features = nn.Sequential(conv_block(5, w1, 2), conv_block(w1, w1, 1), conv_block(w1, w2, 2),
                                      conv_block(w2, w2, 1), conv_block(w2, w3, 2), conv_block(w3, w3, 1))
        self.head = nn.Sequential(nn.Linear(w3 + SCALARS, config.hidden), nn.ReLU(inplace=True),
                                  nn.Linear(config.hidden, len(config.classes)))

    def logits(self, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        f = self.features(x).mean((2, 3))
        return self.head(torch.cat([f, s], 1))

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Training loss of a batch: x (B,5,S,S), s (B,4), label (B,) long (index into classes)."""
        out = self.logits(batch["x"], batch["s"])
        loss = F.cross_entropy(out, batch["label"], label_smoothing=0.05)
        acc = (out.argmax(1) == batch["label"]).float().mean()
        return {"loss": loss, "accuracy": acc.detach()}

    @torch.inference_mode()
    def probabilities(self, x, s) -> torch.Tensor:
        """(N,C) class probabilities of numpy or torch crops."""
        x, s = torch.as_tensor(x), torch.as_tensor(s)
        if len(x) == 0:
            return torch.zeros(0, len(self.config.classes))
        return torch.softmax(self.logits(x, s), 1)


def candidate_regions(ids: np.ndarray, labels: dict[int, str], regions: np.ndarray, n: int,
                      stuff: tuple[str, ...]) -> tuple[list[int], list[int]]:
    """Regions that may be an object the network folded into its surroundings: 20..PROPOSE_MAX_PIXELS
    pixels, lying in stuff or background, or making up less than PROPOSE_SHARE of their instance (after
    snapping, every pixel of a region has one instance). Returns (region indices, their instance ids)."""
    r = regions.ravel()
    area = np.bincount(r, minlength=n)
    first = np.full(n, -1, np.int64)
    first[r[::-1]] = np.arange(len(r) - 1, -1, -1)
    owner = ids.ravel()[np.maximum(first, 0)]
    owner_area = np.bincount(ids.ravel().astype(np.int64), minlength=int(ids.max()) + 1)[owner]
    in_stuff = np.array([labels.get(int(i)) in stuff or i == 0 for i in owner.tolist()])
    pick = (area >= 20) & (area <= PROPOSE_MAX_PIXELS) & (first >= 0) & (in_stuff | (area < PROPOSE_SHARE * owner_area))
    keep = np.flatnonzero(pick)
    return keep.tolist(), owner[keep].tolist()


def classify_instances(net: CropNet, rgb: np.ndarray, depth: np.ndarray, ids: np.ndarray, labels: dict[int, str],
                       sem: np.ndarray, stuff: tuple[str, ...], vote_weight: float = VOTE_WEIGHT,
                       regions: np.ndarray | None = None, n_regions: int = 0) -> tuple[np.ndarray, dict[int, str]]:
    """Name every instance that is not stuff from its crop, weighed with the segmenter's pixel votes
    (``sem`` (H,W), 0 = background, k = classes[k-1]): log p(crop) + vote_weight x log(share of votes).
    An instance named a stuff class joins that class's instance. With ``regions`` (``ids`` snapped to them),
    each candidate region (``candidate_regions``) the crop names, with p >= PROPOSE_CONFIDENCE, as an
    object of another class than its instance's becomes that object: it joins a touching instance of that
    class, or stands alone. Returns new (ids, labels)."""
    classes = net.config.classes
    things = [i for i, c in labels.items() if c not in stuff]
    cand, owner = ([], []) if regions is None else candidate_regions(ids, labels, regions, n_regions, stuff)
    if not things and not cand:
        return ids, labels
    x, s = instance_crops(rgb, depth, ids, things)
    base = int(ids.max()) + 1
    if cand:
        marked = np.where(np.isin(regions, cand), regions + base, ids)
        xc, sc = instance_crops(rgb, depth, marked, [base + r for r in cand])
        x, s = np.concatenate([x, xc]), np.concatenate([s, sc])
    p = net.probabilities(x, s).numpy()
    score = np.log(p[:len(things)] + 1e-6)
    if vote_weight > 0 and things:
        n = len(classes) + 1
        votes = np.bincount(ids.ravel().astype(np.int64) * n + sem.ravel(), minlength=base * n).reshape(base, n)
        votes = votes[things][:, 1:]
        score += vote_weight * np.log((votes + 1.0) / (votes.sum(1, keepdims=True) + len(classes)))
    labels = dict(labels)
    stuff_id = {c: i for i, c in labels.items() if c in stuff}
    lut = np.arange(base, dtype=np.int32)
    for i, k in zip(things, score.argmax(1).tolist()):
        name = classes[k]
        if name in stuff and name in stuff_id:
            lut[i] = stuff_id[name]
            del labels[i]
            continue
        if name in stuff:
            stuff_id[name] = i
        labels[i] = name
    out = lut[ids]
    for r, own, row in zip(cand, owner, p[len(things):]):
        k = int(row.argmax())
        name = classes[k]
        if name in stuff or row[k] < PROPOSE_CONFIDENCE or name == labels.get(int(lut[own])):
            continue
        region = regions == r
        ring = np.zeros_like(region)
        ring[1:] |= region[:-1]
        ring[:-1] |= region[1:]
        ring[:, 1:] |= region[:, :-1]
        ring[:, :-1] |= region[:, 1:]
        contact = np.bincount(out[ring & ~region])
        same = [(contact[j], j) for j in np.flatnonzero(contact) if labels.get(int(j)) == name]
        new = max(same)[1] if same else base + r
        out[region] = new
        labels[int(new)] = name
    return out, labels


def crop_opinion(net: CropNet, rgb: np.ndarray, depth: np.ndarray):
    """What ``net`` makes of the instances of one frame, for ``grouper.assemble``'s ``name_objects``: a
    function of (ids (H,W), instance ids (K,)) giving (K, classes) log-probabilities from their crops.
    The region grouper reads a region's mean colour and features; the crop sees the whole outline and
    relief at one scale, which is what tells a teddy from a ball or a mug from a cone."""

    def opinion(ids: np.ndarray, things: list[int]) -> np.ndarray:
        x, s = instance_crops(rgb, depth, ids, things)
        return np.log(net.probabilities(x, s).numpy() + 1e-6)

    return opinion
