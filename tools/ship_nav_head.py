"""Copy a trained head's run into a small shippable run folder: EMA weights only, safetensors + JSON.

    python3 tools/ship_nav_head.py --run runs/act_nav --out policies/checkpoints/act_nav

The result loads like any run (``load_head("act:policies/checkpoints/act_nav")``): ``config.json``,
``stats.json``, ``latest.json`` and one checkpoint whose ``model`` part holds the EMA weights
(the run's model weights when it kept no EMA); no optimizer state, no logs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from policies.checkpoint import atomic_write_json, latest_checkpoint, load_checkpoint, read_json, save_checkpoint
from policies.registry import load_run


def ship(run: Path, out: Path) -> dict:
    ckpt = latest_checkpoint(run)
    if ckpt is None:
        raise SystemExit(f"{run}: no checkpoint")
    step, _ = load_checkpoint(ckpt, ("model",))
    model = load_run(run, weights="ema")  # EMA weights where the run kept them
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    config = read_json(run / "config.json")
    config["shipped_from"] = {"run": str(run), "step": step, "weights": "ema"}
    atomic_write_json(out / "config.json", config)
    atomic_write_json(out / "stats.json", read_json(run / "stats.json"))
    save_checkpoint(out, step, {"model": model.state_dict()}, keep=1)
    load_run(out)  # it loads back
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    return {"out": str(out), "step": step, "bytes": size, "params": sum(p.numel() for p in model.parameters())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args()
    print(json.dumps(ship(args.run, args.out)))


if __name__ == "__main__":
    main()
