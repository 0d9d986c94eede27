"""Time the diffusion head's traced DDIM loop against the previous inference, in one process.

The previous inference traced the U-Net alone and called it once per DDIM step from Python, with
diffusers' step between calls. Both run here on the same weights and inputs, alternating in rounds, so the
ratio holds even while the machine's load moves (absolute timings on a shared machine move by 1.5x).

    python tools/ddim_speedup.py [--run policies/checkpoints/diffusion_manip] [--rounds 40]

Prints JSON: the median of each round's median (ms per chunk, batch 1, one thread), the median ratio of
the rounds, the largest difference between the two chunks, and the 1-minute load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import warnings

import torch
from diffusers import DDIMScheduler

from policies.bench import example_batch, synthetic_stats
from policies.export import load_run
from policies.registry import HEADS, build_head


def per_step_loop(head, cond: torch.Tensor, x: torch.Tensor):
    """The previous inference: a traced, frozen U-Net called at every DDIM step."""
    t0 = torch.tensor([0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unet = torch.jit.freeze(torch.jit.trace(head.unet, (x, t0, cond), check_trace=False))
    sched = DDIMScheduler.from_config(head.infer_scheduler.config)
    sched.set_timesteps(head.config.num_inference_steps)

    def run(x: torch.Tensor) -> torch.Tensor:
        for t in sched.timesteps:
            x = sched.step(unet(x, t.expand(1), cond), t, x).prev_sample
        return x
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", default=None, help="a trained run or export (default: a fresh default head)")
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args()
    torch.set_num_threads(1)
    head = load_run(args.run) if args.run else build_head("diffusion", HEADS["diffusion"][0](), synthetic_stats())
    head.eval()
    with torch.no_grad():
        cond = head.global_cond(example_batch(head))
        x = torch.randn(1, head.config.horizon, head.unet.final[1].out_channels)
        ways = {"per_step": per_step_loop(head, cond, x), "traced_loop": lambda x: head.sample(x, cond)}
        diff = float((ways["per_step"](x) - ways["traced_loop"](x)).abs().max())
        for _ in range(10):
            for run in ways.values():
                run(x)
        load = os.getloadavg()[0]
        rounds: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(args.rounds):
            for name, run in ways.items():
                times = []
                for _ in range(5):
                    start = time.perf_counter()
                    run(x)
                    times.append((time.perf_counter() - start) * 1e3)
                rounds[name].append(statistics.median(times))
    ratios = [a / b for a, b in zip(rounds["per_step"], rounds["traced_loop"])]
    print(json.dumps({"run": args.run, **{f"{k}_ms": round(statistics.median(v), 2) for k, v in rounds.items()},
                      "speedup": round(statistics.median(ratios), 2), "max_abs_diff": diff,
                      "load_1min": round(load, 2)}))


if __name__ == "__main__":
    main()
