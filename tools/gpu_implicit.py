"""Train the implicit-memory policy on a GPU machine that has torch but not this project's simulator stack.

    python3 tools/gpu_implicit.py pack --data runs/d/manip15 --data runs/d/nav --out .gpu/implicit
    python3 tools/gpu_implicit.py train --pack .gpu/implicit --out RUN --steps 8000 --batch-size 256  # on the GPU
    embodied export-head --run RUN --out runs/memory_implicit_gpu                      # back here

Why a pack: the recorded demos are videos (about 110 MB for the shipped data) and
decoding them needs PyAV and the data reader; the lent GPU machine takes a 64 MB
working tree and has neither. ``pack`` decodes the videos here once, exactly as
``embodied train --head memory --memory implicit`` does (:class:`DecisionData`),
keeps only the frames some decision's history can hold (``history_indices``; the
training-time history dropout only removes frames from that set) and stores
them as JPEG mosaics (quality 95, no chroma subsampling), with the labels as
safetensors and the configuration, statistics and vocabulary as JSON.

``train`` rebuilds the same batches on the GPU (same history, same dropout of
past frames, same past-decision loss) and trains with ``train_memory_policy``
itself (the shared loop: seeded batches, EMA, atomic checkpoints, resume) into
an ordinary run folder, which ``embodied export-head`` exports here. The only
difference from a CPU run is the pack's JPEG
coding of the 32 px frames (reported as ``jpeg_mae``, mean absolute error in
[0, 255] units).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from policies.checkpoint import atomic_write_json, read_json  # noqa: E402
from policies.config_json import config_from_dict, config_to_dict  # noqa: E402
from policies.loop import TrainConfig, resolve_device  # noqa: E402
from policies.memory_policy.configuration import MemoryPolicyConfig  # noqa: E402
from policies.memory_policy.inputs import history_indices  # noqa: E402
from policies.memory_policy.train import train_memory_policy  # noqa: E402

LABELS = ("goal_ids", "state", "skill", "target", "source", "params", "prev", "hist_index", "hist_age")
TILES = 64  # frames per mosaic row and column: one JPEG holds TILES * TILES frames of one camera slot
QUALITY = 95
# The packed configuration's model and history settings (the rest comes from the data: fill_config).
PACKED_OPTIONS = ("d_model", "n_heads", "n_layers", "dropout", "max_goal_words", "state_dim", "image_size",
                  "camera_slots", "history_len", "history_stride", "history_layers", "history_dropout",
                  "past_decision_weight")


# --- pack (here) -----------------------------------------------------------------------------
def pack(roots: list[str], out: Path) -> dict:
    from safetensors.numpy import save_file

    from policies.memory_policy.data import DecisionData

    config = MemoryPolicyConfig(memory="implicit")
    data = DecisionData(roots, config, progress=True, seed=0)
    stats = data.fill_config(config)
    length, stride = config.history_len, config.history_stride
    where: dict[tuple[int, int], int] = {}
    hist_index = np.full((len(data), length), -1, np.int64)
    hist_age = np.zeros((len(data), length), np.float32)
    for i, (k, _) in enumerate(data.rows):
        t = int(data.t[i])
        steps = history_indices(t, length, stride)
        for slot, step in enumerate(steps):
            hist_index[i, slot] = where.setdefault((k, step), len(where))
            hist_age[i, slot] = t - step
    frames = np.stack([data.frames[k][step] for (k, step) in where])  # (N, C, 3, s, s) uint8
    out.mkdir(parents=True, exist_ok=True)
    labels = {"goal_ids": data.goal_ids, "state": data.state, "skill": data.skill, "target": data.target,
              "source": data.source, "params": data.params, "prev": data.prev,
              "hist_index": hist_index, "hist_age": hist_age}
    save_file({k: np.ascontiguousarray(v) for k, v in labels.items()}, str(out / "labels.safetensors"))
    mosaics = write_mosaics(frames, out)
    decoded = read_mosaics(out, mosaics, frames.shape)
    meta = {"config": config_to_dict(config), "stats": stats, "roots": [str(r) for r in roots],
            "episodes": len(data.episodes), "episode_ids": [[root, int(ep.episode)] for root, ep in data.episodes],
            "decisions": len(data), "frames": list(frames.shape),
            "mosaics": mosaics, "tiles": TILES, "quality": QUALITY,
            "jpeg_mae": float(np.abs(decoded.astype(np.int16) - frames.astype(np.int16)).mean())}
    atomic_write_json(out / "pack.json", meta)
    return {k: v for k, v in meta.items() if k not in ("config", "stats", "episode_ids")}


def write_mosaics(frames: np.ndarray, out: Path) -> list[str]:
    from PIL import Image

    n, cams, _, s, _ = frames.shape
    names = []
    for cam in range(cams):
        for m, lo in enumerate(range(0, n, TILES * TILES)):
            chunk = frames[lo:lo + TILES * TILES, cam].transpose(0, 2, 3, 1)  # (k, s, s, 3)
            grid = np.zeros((TILES * TILES, s, s, 3), np.uint8)
            grid[: len(chunk)] = chunk
            img = grid.reshape(TILES, TILES, s, s, 3).transpose(0, 2, 1, 3, 4).reshape(TILES * s, TILES * s, 3)
            name = f"frames_c{cam}_{m:03d}.jpg"
            Image.fromarray(img).save(out / name, quality=QUALITY, subsampling=0)
            names.append(name)
    return names


def read_mosaics(folder: Path, names: list[str], shape) -> np.ndarray:
    from PIL import Image

    n, cams, _, s, _ = shape
    out = np.zeros(shape, np.uint8)
    per_cam = -(-n // (TILES * TILES))
    for i, name in enumerate(names):
        cam, m = divmod(i, per_cam)
        img = np.asarray(Image.open(folder / name).convert("RGB"))
        tiles = img.reshape(TILES, s, TILES, s, 3).transpose(0, 2, 1, 3, 4).reshape(TILES * TILES, s, s, 3)
        lo = m * TILES * TILES
        k = min(TILES * TILES, n - lo)
        out[lo:lo + k, cam] = tiles[:k].transpose(0, 3, 1, 2)
    return out


# --- train (on the GPU machine) ----------------------------------------------------------------
class PackedDecisions:
    """The pack on ``device``: ``batch(idx, train)`` gives :class:`DecisionData`'s implicit batches."""

    def __init__(self, folder: Path, device: torch.device, config: MemoryPolicyConfig, seed: int = 0):
        from safetensors.torch import load_file

        self.meta = meta = read_json(folder / "pack.json")
        self.config, self.device = config, device
        self.episodes = meta["episode_ids"]  # [root, episode index] of each episode the decisions come from
        self.labels = {k: v.to(device) for k, v in load_file(str(folder / "labels.safetensors")).items()}
        missing = [k for k in LABELS if k not in self.labels]
        if missing:
            raise ValueError(f"{folder / 'labels.safetensors'} lacks {missing}: pack it again")
        self.frames = torch.from_numpy(read_mosaics(folder, meta["mosaics"], tuple(meta["frames"]))).to(device)
        self.gen = torch.Generator(device=device).manual_seed(seed)

    def __len__(self) -> int:
        return int(self.labels["skill"].shape[0])

    def fill_config(self, c: MemoryPolicyConfig) -> dict:
        """The pack's vocabulary, output vocabulary and statistics into ``c`` (as DecisionData.fill_config
        set them when packing); returns the input statistics."""
        packed = config_from_dict(MemoryPolicyConfig, self.meta["config"])
        for name in ("vocab", "decisions", "sources", "xyz_mean", "xyz_std"):
            setattr(c, name, getattr(packed, name))
        c.extra = {**c.extra, **packed.extra, "packed": {k: self.meta[k] for k in ("frames", "quality", "jpeg_mae")}}
        return self.meta["stats"]

    def batch(self, idx, train: bool = True) -> dict[str, torch.Tensor]:
        idx = torch.as_tensor(idx, device=self.device)
        lab = {k: v[idx] for k, v in self.labels.items()}
        index, age = lab["hist_index"], lab["hist_age"]
        valid = index >= 0
        if train and self.config.history_dropout > 0:
            # Drop past frames (never the current one, the last valid slot), then close the gaps:
            # kept frames first, oldest first, as DecisionData._history builds them.
            slot = torch.arange(index.shape[1], device=self.device).expand_as(index)
            last = slot == valid.sum(1, keepdim=True) - 1
            u = torch.rand(index.shape, generator=self.gen, device=self.device)
            keep = valid & ((u >= self.config.history_dropout) | last)
            order = torch.argsort(torch.where(keep, slot, slot + index.shape[1]), dim=1)
            index, age, valid = index.gather(1, order), age.gather(1, order), keep.gather(1, order)
        hist = self.frames[index.clamp(min=0)].float().div_(255.0) * valid[..., None, None, None, None]
        goal = lab["goal_ids"]
        return {"goal_ids": goal, "goal_mask": goal != 0, "state": lab["state"], "skill": lab["skill"],
                "target": lab["target"], "source": lab["source"], "params": lab["params"],
                "prev_skill": lab["prev"], "history": hist, "history_mask": valid,
                "history_age": torch.where(valid, age, torch.zeros_like(age))}


def train(args) -> dict:
    folder = Path(args.pack)
    meta = read_json(folder / "pack.json")
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False  # fp32, as on the CPU
    cfg = TrainConfig(head="memory", data=",".join(meta["roots"]), out=args.out, steps=args.steps,
                      batch_size=args.batch_size, seed=args.seed, device=args.device, threads=0,
                      checkpoint_every=args.checkpoint_every, resume=args.resume, progress=not args.quiet)
    device = resolve_device(cfg.device)
    options = {k: v for k, v in meta["config"].items() if k in PACKED_OPTIONS}
    result = train_memory_policy(cfg, meta["roots"], "implicit", options,
                                 data_factory=lambda c: PackedDecisions(folder, device, c, seed=args.seed))
    result["device"] = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    return {**result, "batch_size": cfg.batch_size, "jpeg_mae": meta["jpeg_mae"]}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack", help="decode the demos' frames once (here) into a small pack")
    p.add_argument("--data", action="append", required=True, help="a recorded demo folder (repeat)")
    p.add_argument("--out", required=True)
    t = sub.add_parser("train", help="train the implicit policy from a pack (any torch machine)")
    t.add_argument("--pack", required=True)
    t.add_argument("--out", required=True, help="the run folder")
    t.add_argument("--steps", type=int, default=8000)
    t.add_argument("--batch-size", type=int, default=64)
    t.add_argument("--checkpoint-every", type=int, default=1000)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    t.add_argument("--resume", action="store_true")
    t.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    result = pack(args.data, Path(args.out)) if args.cmd == "pack" else train(args)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
