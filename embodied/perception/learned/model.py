"""A small RGB-D segmenter: semantic classes plus instance centres and offsets.

    net = SegNet(SegmenterConfig(classes=(...)))
    out = net.predict(rgb, depth)      # rgb (B,H,W,3) uint8, depth (B,H,W) float32 m (torch tensors)
    out["semantic"]  (B,C+1,H,W) logits, 0 = background
    out["centre"]    (B,1,H,W) instance-centre heat in [0,1]
    out["offset"]    (B,2,H,W) pixels (dy, dx) from each pixel to its instance's centre
    sem, centre, offset = net.maps(rgb, depth)   # one frame, numpy in and out (the run-time path)

Instances follow Panoptic-DeepLab's bottom-up recipe (a centre heatmap and a
per-pixel vote for a centre), which needs no anchors and no proposals and so
stays cheap on one CPU thread. The encoder works at 1/2..1/16 of the input; a
full-resolution skip keeps the edges of objects a few pixels wide.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval

DEPTH_SCALE = 4.0  # m: depth / DEPTH_SCALE feeds the network (0 m = no return)
OFFSET_SCALE = 32.0  # px: the offset head predicts offsets / OFFSET_SCALE


@dataclass
class SegmenterConfig:
    """The network's shape and the loss weights (stored in every checkpoint)."""

    classes: tuple[str, ...] = ()  # the vocabulary; index k+1 of the semantic head is classes[k]
    widths: tuple[int, ...] = (16, 32, 48, 64)  # encoder channels at 1/2, 1/4, 1/8, 1/16
    decoder: int = 32  # channels of the decoder
    skip: int = 16  # channels at full resolution (skip and heads)
    centre_sigma: float = 2.0  # px, Gaussian of a centre in the target heatmap
    centre_weight: float = 100.0
    offset_weight: float = 0.05
    small_weight: float = 4.0  # extra cross-entropy weight of pixels of small instances (< small_pixels)
    small_pixels: int = 200
    class_weights: tuple[float, ...] = ()  # per semantic index (background first); () = all 1
    # Classes whose instances touch another of their class in the training labels (a drawer row, stacked
    # blocks): the decoder never merges those. Fragments of the other classes that touch are one object.
    # None: not measured (older weights), no merging.
    touching: tuple[str, ...] | None = None
    options: dict = field(default_factory=dict)

    def validate(self) -> None:
        if not self.classes:
            raise ValueError("SegmenterConfig.classes is empty: the segmenter needs a vocabulary")
        if len(set(self.classes)) != len(self.classes):
            raise ValueError("SegmenterConfig.classes has duplicates")
        if self.class_weights and len(self.class_weights) != len(self.classes) + 1:
            raise ValueError(f"class_weights needs {len(self.classes) + 1} values (background first), "
                             f"got {len(self.class_weights)}")
        if len(self.widths) != 4 or min(self.widths) < 4 or self.decoder < 4:
            raise ValueError("widths takes four channel counts >= 4, and decoder >= 4")

    def to_json(self) -> dict:
        d = asdict(self)
        d["classes"], d["widths"], d["class_weights"] = list(self.classes), list(self.widths), list(self.class_weights)
        d["touching"] = None if self.touching is None else list(self.touching)
        return d

    @classmethod
    def from_json(cls, d: dict) -> SegmenterConfig:
        """A config from its JSON form; fields left out take their defaults (a fresh run names only classes)."""
        d = dict(d)
        d["classes"], d["widths"] = tuple(d["classes"]), tuple(d.get("widths", cls.widths))
        d["class_weights"] = tuple(d.get("class_weights", ()))
        d["touching"] = None if d.get("touching") is None else tuple(d["touching"])
        return cls(**d)


def fold_batchnorms(net: nn.Module) -> nn.Module:
    """An inference copy of ``net`` with every BatchNorm that follows a convolution in a Sequential folded
    into it (the same outputs to float precision, a third less time on one CPU thread)."""
    net = copy.deepcopy(net).eval()
    for block in net.modules():
        if isinstance(block, nn.Sequential):
            for i in range(len(block) - 1):
                if isinstance(block[i], nn.Conv2d) and isinstance(block[i + 1], nn.BatchNorm2d):
                    block[i], block[i + 1] = fuse_conv_bn_eval(block[i], block[i + 1]), nn.Identity()
    return net


def conv_block(cin: int, cout: int, stride: int) -> nn.Sequential:
    """3x3 convolution (strided), BatchNorm, ReLU. Plain, not depthwise: on one CPU thread torch runs
    depthwise convolutions through a slow im2col path, dense ones through oneDNN."""
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


ConvStep = tuple[torch.Tensor, "torch.Tensor | None", tuple, tuple, bool]  # weight, bias, stride, padding, ReLU after


def conv_steps(block: nn.Module) -> list[ConvStep]:
    """A convolution, or a Sequential of convolutions each maybe followed by a ReLU (BatchNorms folded
    away: ``fold_batchnorms``), as plain steps for ``run_steps``."""
    steps: list[list] = []
    for module in [block] if isinstance(block, nn.Conv2d) else block.modules():
        if isinstance(module, nn.Conv2d):
            steps.append([module.weight, module.bias, module.stride, module.padding, False])
        elif isinstance(module, nn.ReLU) and steps:
            steps[-1][4] = True
        elif isinstance(module, nn.BatchNorm2d):
            raise ValueError("conv_steps needs the BatchNorms folded (SegNet.fused)")
    return [tuple(step) for step in steps]


def run_steps(steps: list[ConvStep], x: torch.Tensor) -> torch.Tensor:
    """``steps`` applied to ``x``: the same numbers as the modules they came from, without a module call
    per layer (on one thread that bookkeeping was a fifth of the network's time)."""
    for weight, bias, stride, padding, relu in steps:
        x = torch.conv2d(x, weight, bias, stride, padding)
        if relu:
            x = x.relu_()
    return x


class SegNet(nn.Module):
    def __init__(self, config: SegmenterConfig):
        super().__init__()
        config.validate()
        self.config = config
        w1, w2, w3, w4 = config.widths
        d = config.decoder
        self.stem = nn.Sequential(nn.Conv2d(4, w1, 3, 2, 1, bias=False), nn.BatchNorm2d(w1), nn.ReLU(inplace=True))
        self.down2 = nn.Sequential(conv_block(w1, w2, 2), conv_block(w2, w2, 1))
        self.down3 = nn.Sequential(conv_block(w2, w3, 2), conv_block(w3, w3, 1))
        self.down4 = nn.Sequential(conv_block(w3, w4, 2), conv_block(w4, w4, 1), conv_block(w4, w4, 1))
        s = config.skip
        self.lat3, self.lat2, self.lat1 = nn.Conv2d(w3, d, 1), nn.Conv2d(w2, d, 1), nn.Conv2d(w1, s, 1)
        self.top = nn.Conv2d(w4, d, 1)
        self.fuse3, self.fuse2, self.fuse1 = conv_block(d, d, 1), conv_block(d, d, 1), conv_block(s, s, 1)
        self.squeeze = nn.Conv2d(d, s, 1)  # the 1/4 features narrowed before the 1/2 level
        self.full = nn.Conv2d(4, s, 3, 1, 1)
        self.head = nn.Sequential(nn.ReLU(inplace=True), nn.Conv2d(s, s, 1), nn.ReLU(inplace=True))
        self.semantic = nn.Conv2d(s, len(config.classes) + 1, 1)
        self.centre = nn.Conv2d(s, 1, 1)
        self.offset = nn.Conv2d(s, 2, 1)
        self._steps: dict[str, list[ConvStep]] | None = None  # pixel_features' plain steps, built on first use

    @staticmethod
    def inputs(rgb: torch.Tensor, depth: torch.Tensor) -> torch.Tensor:
        """(B,4,H,W) float32 network input from rgb (B,H,W,3) uint8 and depth (B,H,W) m."""
        x = rgb.permute(0, 3, 1, 2).float() / 255.0
        z = (depth.float().nan_to_num(0.0).clamp(0.0, 3 * DEPTH_SCALE) / DEPTH_SCALE).unsqueeze(1)
        return torch.cat([x, z], 1)

    def half(self, x: torch.Tensor, layer=None) -> torch.Tensor:
        """(B,skip,H/2,W/2) the decoder's output at the stem's resolution. ``layer(name, t)`` runs the
        named layer on ``t`` (default: the module itself; ``_half_steps`` gives plain steps)."""
        run = layer or (lambda name, t: getattr(self, name)(t))
        e1 = run("stem", x)
        e2 = run("down2", e1)
        e3 = run("down3", e2)
        e4 = run("down4", e3)
        up = lambda t, ref: F.interpolate(t, size=ref.shape[-2:], mode="nearest")  # noqa: E731
        f = run("fuse3", run("lat3", e3) + up(run("top", e4), e3))
        f = run("fuse2", run("lat2", e2) + up(f, e2))
        return run("fuse1", run("lat1", e1) + up(run("squeeze", f), e1))

    def _half_steps(self, x: torch.Tensor) -> torch.Tensor:
        """``half`` run as plain convolution steps where the BatchNorms are folded (``fused``); the same
        numbers as ``half``."""
        if self._steps is None:
            folded = not any(isinstance(m, nn.BatchNorm2d) for m in self.modules())
            names = ("stem", "down2", "down3", "down4", "lat3", "lat2", "lat1", "top", "fuse3", "fuse2", "fuse1",
                     "squeeze", "full")
            self._steps = {name: conv_steps(getattr(self, name)) for name in names} if folded else {}
        if not self._steps:  # BatchNorms in training form: the modules themselves
            return self.half(x)
        return self.half(x, lambda name, t: run_steps(self._steps[name], t))

    def trunk(self, x: torch.Tensor) -> torch.Tensor:
        """(B,skip,H,W) full-resolution features of the network input."""
        return self.head(F.interpolate(self.half(x), size=x.shape[-2:], mode="nearest") + self.full(x))

    def forward_features(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        f = self.trunk(x)
        return {
            "semantic": self.semantic(f),
            "centre": torch.sigmoid(self.centre(f)),
            "offset": self.offset(f) * OFFSET_SCALE,
        }

    @torch.no_grad()
    def predict(self, rgb: torch.Tensor, depth: torch.Tensor) -> dict[str, torch.Tensor]:
        return self.forward_features(self.inputs(rgb, depth))

    @torch.inference_mode()
    def maps(self, rgb: np.ndarray, depth: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One frame at run time: class per pixel (H,W) int64 (0 = background), centre heat (H,W) and
        offsets (2,H,W) px. The class logits are taken pixel-major (a matrix product on channels-last
        features), where the argmax over classes is a contiguous scan: a third of the channel-major cost."""
        f = self.trunk(self.inputs(torch.from_numpy(rgb)[None], torch.from_numpy(depth)[None]))
        h, w = f.shape[-2:]
        pixels = f[0].permute(1, 2, 0).reshape(h * w, -1)
        logits = torch.addmm(self.semantic.bias, pixels, self.semantic.weight.flatten(1).t())
        sem = logits.numpy().argmax(1).reshape(h, w)
        return sem, torch.sigmoid(self.centre(f))[0, 0].numpy(), (self.offset(f)[0] * OFFSET_SCALE).numpy()

    def fused(self) -> SegNet:
        """An inference copy with every BatchNorm folded into the convolution before it and its weights
        channels-last (the same outputs to float precision; ``pixel_features`` runs it in 0.6 times the
        time of the plain network's ``trunk``)."""
        net = fold_batchnorms(self).to(memory_format=torch.channels_last)
        net._steps = None  # built afresh from the folded layers
        return net

    @torch.inference_mode()
    def features(self, rgb: np.ndarray, depth: np.ndarray) -> np.ndarray:
        """One frame's per-pixel features (skip, H, W) float32, what the three heads read (numpy in and out)."""
        return self.trunk(self.inputs(torch.from_numpy(rgb)[None], torch.from_numpy(depth)[None]))[0].numpy()

    @torch.inference_mode()
    def pixel_features(self, rgb: np.ndarray, depth: np.ndarray) -> np.ndarray:
        """``features`` pixel-major, (H, W, skip) float32: what the region graph averages per region.

        The full-resolution tail of ``trunk`` (upsample, add, ReLU, 1x1 conv, ReLU) is most of the
        network's time on one thread when torch runs it channel-major; here it runs on channels-last
        memory as a broadcast add and one matrix product."""
        x = self.inputs(torch.from_numpy(rgb)[None], torch.from_numpy(depth)[None])
        x = x.contiguous(memory_format=torch.channels_last)
        half = self._half_steps(x)
        (H, W), (h, w) = x.shape[-2:], half.shape[-2:]
        if (H, W) != (2 * h, 2 * w):  # an odd size: nearest upsampling is not a plain 2x2 repeat
            return self.trunk(x)[0].permute(1, 2, 0).contiguous().numpy()
        s = half.shape[1]
        full = run_steps(self._steps["full"], x) if self._steps else self.full(x)
        full = full.permute(0, 2, 3, 1).contiguous().numpy().reshape(h, 2, w, 2, s)
        np.add(full, half.permute(0, 2, 3, 1).contiguous().numpy().reshape(h, 1, w, 1, s), out=full)
        np.maximum(full, 0.0, out=full)
        conv = self.head[1]  # head: ReLU, 1x1 conv, ReLU
        out = torch.addmm(conv.bias, torch.from_numpy(full.reshape(H * W, s)), conv.weight[:, :, 0, 0].t())
        return out.relu_().numpy().reshape(H, W, -1)

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Training loss of a batch: rgb, depth, semantic (B,H,W) long, centre (B,H,W), offset (B,2,H,W),
        instance (B,H,W) (0 = background), weight (B,H,W) per-pixel cross-entropy weight."""
        cfg = self.config
        out = self.forward_features(self.inputs(batch["rgb"], batch["depth"]))
        weights = (torch.tensor(cfg.class_weights, dtype=torch.float32, device=out["semantic"].device)
                   if cfg.class_weights else None)
        ce = F.cross_entropy(out["semantic"], batch["semantic"], weight=weights, reduction="none")
        sem = (ce * batch["weight"]).sum() / batch["weight"].sum()
        centre = F.mse_loss(out["centre"][:, 0], batch["centre"])
        fg = (batch["instance"] > 0).unsqueeze(1).float()
        off = (F.l1_loss(out["offset"], batch["offset"], reduction="none") * fg).sum() / fg.sum().clamp(min=1.0)
        loss = sem + cfg.centre_weight * centre + cfg.offset_weight * off
        return {"loss": loss, "semantic_ce": sem.detach(), "centre_mse": centre.detach(), "offset_l1": off.detach()}
