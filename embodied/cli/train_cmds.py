"""``embodied train`` (a learned head on recorded demonstrations) and ``embodied bench head``.

    embodied train --head memory --memory none|implicit|explicit --data DIR [--data DIR ...] --out RUN [...]
    embodied train --head diffusion|act --data DIR --out RUN [--steps N] [--batch-size B]
                   [--device auto|cpu|cuda] [--resume] [--seed S] [--skills pick,place] [--cameras wrist]
                   [--lr LR] [--checkpoint-every N] [--set key=value ...] [--json]
    torchrun --nproc-per-node 2 -m embodied.cli.main train ...      (DDP; gloo on CPU)
    embodied pack-windows --data DIR --out PACK [--skills ...] [--cameras ...] [--json]
    python -m embodied.cli.train_cmds train --data PACK --out RUN ...  (a machine with torch, no simulator)
    embodied bench head [--head diffusion|act ...] [--run RUN] [--repeats N] [--json]
    embodied eval-head --head diffusion:RUN --task NAME [--episodes N] [--seed S] [--done-threshold P]
                       [--patience K] [--option key=value ...] [--json]
    embodied export-head --run RUN --out policies/checkpoints/act_manip [--weights ema] [--dtype float16]
                         [--agent-skills touch,lift] [--json]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from embodied.cli.options import add_option_argument, task_knobs


def register(sub: argparse._SubParsersAction, bench_sub: argparse._SubParsersAction) -> None:
    """Add ``train`` to the ``embodied`` parser and ``head`` to ``bench``."""
    p = sub.add_parser("train", help="train a learned action head (diffusion or ACT), or the high-level policy "
                       "(memory), on recorded demonstrations")
    p.add_argument("--head", required=True, choices=["diffusion", "act", "memory"])
    p.add_argument("--memory", choices=["none", "implicit", "explicit"],
                   help="with --head memory: the policy's memory input")
    p.add_argument("--data", required=True, action="append", help="dataset folder (embodied record-demos --out) "
                   "or a pack of its training windows (embodied pack-windows); --head memory takes several "
                   "(record-demos --policy agent: the decision points)")
    p.add_argument("--out", required=True, help="run folder: checkpoints, config, stats, log.jsonl, loss.png")
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--batch-size", type=int, default=64, help="global batch (split over DDP ranks)")
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads per process (0: torch's default)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its latest checkpoint")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--oversample-far", metavar="METRES:K[:AXIS[:SKILLS]]", help="draw the windows whose call "
                   "target lies farther than METRES from the robot (robot frame; AXIS xy (default), x or y; of the "
                   "comma-separated SKILLS only if given) K times as often (diffusion and act), e.g. 0.05:20:x:place")
    p.add_argument("--warmup-steps", type=int, default=50, help="linear learning-rate warm-up before the cosine")
    p.add_argument("--mirror", default="", metavar="SKILLS", help="comma-separated arm skills (e.g. pick,place) whose "
                   "windows are mirrored in x and y about the gripper at random (policies/augment.py)")
    p.add_argument("--init-from", metavar="RUN", help="start from this run's latest weights (EMA where kept), "
                   "its head config and normaliser: a fine-tune with this command's steps, lr and schedule")
    p.add_argument("--skills", default="", help="comma-separated skills to train on (default: all in the data)")
    p.add_argument("--cameras", default="", help="comma-separated cameras to condition on, e.g. wrist")
    p.add_argument("--checkpoint-every", type=int, default=500, metavar="N")
    p.add_argument("--log-every", type=int, default=10, metavar="N")
    p.add_argument("--no-ema", action="store_true", help="keep no EMA of the weights")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="head option, e.g. down_dims=32,64,128, use_vae=true, temporal_ensemble_coeff=0.01")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=train)

    p = sub.add_parser("pack-windows", help="a head's training windows as one safetensors pack: train on it "
                       "(embodied train --data PACK) where torch is all there is (no simulator, no video reader)")
    p.add_argument("--data", required=True, help="dataset folder (embodied record-demos --out)")
    p.add_argument("--out", required=True, help="pack folder to write")
    p.add_argument("--head", default="diffusion", choices=["diffusion", "act"], help="whose window lengths")
    p.add_argument("--skills", default="", help="comma-separated skills (default: all in the data)")
    p.add_argument("--cameras", default="", help="comma-separated cameras whose frames the pack holds")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="obs_horizon, horizon")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=pack_windows)

    b = bench_sub.add_parser("head", help="inference time per action chunk of the learned heads")
    b.add_argument("--head", action="append", choices=["diffusion", "act"], help="head to time (default: both)")
    b.add_argument("--run", help="time this trained run instead of a fresh default head")
    b.add_argument("--repeats", type=int, default=50)
    b.add_argument("--threads", type=int, default=1, help="torch threads (batch-1 inference is fastest on 1)")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=bench_head)

    p = sub.add_parser("eval-head", help="success of a learned skill handed the expert's call inside a task")
    p.add_argument("--head", required=True, metavar="KIND:RUN", help="e.g. diffusion:runs/d1")
    p.add_argument("--task", required=True)
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--seed", type=int, default=1000, help="first seed; episode i uses seed+i")
    p.add_argument("--image-size", type=int, default=96)
    p.add_argument("--done-threshold", type=float, help="next-step done probability that ends a skill "
                   "(default: the run's config)")
    p.add_argument("--patience", type=int, help="steps in a row above the threshold (default: the run's config)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (batch-1 inference is fastest on 1)")
    add_option_argument(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=eval_head)

    p = sub.add_parser("export-head", help="a trained run's weights as a small shipped head (safetensors + JSON)")
    p.add_argument("--run", required=True, help="training run folder (embodied train --out)")
    p.add_argument("--out", required=True, help="folder to write, e.g. policies/checkpoints/act_manip")
    p.add_argument("--weights", default="ema", choices=["ema", "model"])
    p.add_argument("--dtype", default="float16", choices=["float16", "float32"], help="storage of the parameters")
    p.add_argument("--agent-skills", default="", help="comma-separated skills the demo runs with this head "
                   "(default: all it learned)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="inference setting to ship (n_action_steps, temporal_ensemble_coeff, ensemble_skills=pick,place, "
                   "skill_ensemble_coeff, done_threshold, done_patience, done_confirm, "
                   "done_threshold_skills=place, skill_done_threshold, num_inference_steps, "
                   "init_noise_scale; "
                   "memory: max_repeats)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=export_head)


def _metres_times(text: str | None) -> tuple | None:
    if not text:
        return None
    try:
        metres, k, *rest = text.split(":")
        if len(rest) > 2:
            raise ValueError
        return (float(metres), int(k), *rest[:1], *([_split(rest[1])] if len(rest) > 1 else []))
    except ValueError:
        raise ValueError(f"--oversample-far takes METRES:K[:AXIS[:SKILLS]], e.g. 0.3:3 or 0.05:20:x:place, "
                         f"got {text!r}") from None


def _split(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in text.split(",") if s.strip())


def train(args: argparse.Namespace) -> dict:
    from policies.registry import head_classes, parse_options
    from policies.train import TrainConfig
    from policies.train import train as run_training

    options = parse_options(head_classes(args.head)[0], args.set)
    if args.head == "memory":
        for flag in ("oversample_far", "mirror", "init_from"):
            if getattr(args, flag):
                raise ValueError(f"--{flag.replace('_', '-')} goes with --head diffusion or act (the skill windows)")
        return _train_memory(args, options)
    if args.memory:
        raise ValueError("--memory goes with --head memory")
    if len(args.data) != 1:
        raise ValueError(f"the {args.head} head trains on one --data folder, got {len(args.data)}")
    cfg = TrainConfig(head=args.head, data=args.data[0], out=args.out, steps=args.steps, batch_size=args.batch_size,
                      lr=args.lr, seed=args.seed, device=args.device, threads=args.threads, checkpoint_every=args.checkpoint_every,
                      log_every=args.log_every, skills=_split(args.skills), cameras=_split(args.cameras),
                      ema=not args.no_ema, resume=args.resume, head_options=options,
                      warmup_steps=args.warmup_steps,
                      oversample_far=_metres_times(args.oversample_far), mirror_skills=_split(args.mirror),
                      init_from=args.init_from)
    result = run_training(cfg)
    if not args.json and _rank() == 0:
        print(f"{result['head']} on {result['frames']} frames of {', '.join(result['skills'])}: loss "
              f"{result['first_loss']:.4f} -> {result['final_loss']:.4f} over steps {result['start_step']}.."
              f"{result['steps']} ({result['step_ms']:.1f} ms/step); checkpoint {result['checkpoint']}")
    return result if _rank() == 0 else None


def pack_windows(args: argparse.Namespace) -> dict:
    from embodied.data import DemoDataset
    from policies.data import SkillWindows
    from policies.registry import head_classes, parse_options

    config_cls = head_classes(args.head)[0]
    options = parse_options(config_cls, args.set)
    extra = [k for k in options if k not in ("obs_horizon", "horizon")]
    if extra:
        raise ValueError(f"pack-windows --set takes obs_horizon and horizon only, got {extra[0]!r}")
    lengths = config_cls(**options)
    cameras = _split(args.cameras)
    dataset = DemoDataset(args.data, obs_horizon=lengths.obs_horizon, action_horizon=lengths.horizon,
                          cameras=list(cameras))
    windows = SkillWindows(dataset, _split(args.skills), cameras, progress=not args.json)
    result = windows.save(args.out, dataset.stats)
    if not args.json:
        print(f"{result['frames']} windows of {', '.join(result['skills'])} -> {args.out} ({result['bytes'] / 1e6:.1f} MB)")
    return result


def _train_memory(args: argparse.Namespace, options: dict) -> dict | None:
    from policies.memory_policy.train import train_memory_policy
    from policies.train import TrainConfig

    if not args.memory:
        raise ValueError("--head memory needs --memory none|implicit|explicit")
    if args.skills or args.cameras:
        raise ValueError("--skills and --cameras are for the skill heads; the memory policy decides every skill")
    cfg = TrainConfig(head="memory", data=args.data[0], out=args.out, steps=args.steps, batch_size=args.batch_size,
                      lr=args.lr, seed=args.seed, device=args.device, threads=args.threads,
                      checkpoint_every=args.checkpoint_every, log_every=args.log_every, ema=not args.no_ema,
                      resume=args.resume, progress=not args.json, warmup_steps=args.warmup_steps)
    from embodied.agent.tokens import anchor_offsets, field_slice, first_box_offsets, free_spot_offsets, spot_offsets
    from embodied.agent.tokens import goal_hop_offsets

    if options.get("spot_features"):  # where a node token keeps its position and first position
        options = {**options, "spot_offsets": spot_offsets()}
    if options.get("anchor_features"):  # ... and the ages of its last action events
        options = {**options, "anchor_offsets": anchor_offsets()}
    if options.get("where_pointer"):  # ... where it keeps its position
        options = {**options, "where_offsets": (field_slice("position").start,)}
    if options.get("first_box_features"):  # ... and where it keeps its first position and box size
        options = {**options, "first_box_offsets": first_box_offsets()}
    if options.get("free_spots"):  # ... and where it keeps its position, box size and first position
        options = {**options, "free_spot_offsets": free_spot_offsets()}
    if options.get("goal_hop_features"):  # ... and where it keeps its position, room centre and holder
        options = {**options, "goal_hop_offsets": goal_hop_offsets()}
    result = train_memory_policy(cfg, list(args.data), args.memory, options)
    if args.json:
        return result
    print(f"memory:{args.memory} on {result['decisions']} decisions of {result['episodes']} episodes: loss "
          f"{result['first_loss']:.4f} -> {result['final_loss']:.4f} over steps {result['start_step']}.."
          f"{result['steps']} ({result['step_ms']:.1f} ms/step, {result['train_s']:.0f} s); training accuracy "
          f"{result['train_accuracy']}; checkpoint {result['checkpoint']}")
    return None


def _rank() -> int:
    import os

    return int(os.environ.get("RANK", "0"))


def bench_head(args: argparse.Namespace) -> list[dict] | None:
    from policies.bench import bench_heads

    rows = bench_heads(args.head or ["diffusion", "act"], run=args.run, repeats=args.repeats,
                       threads=args.threads)
    if not args.json:
        for r in rows:
            print(f"{r['head']:<10} {r['params'] / 1e6:5.2f} M params | predict_action_chunk "
                  f"{r['chunk_ms_median']:.2f} ms median ({r['chunk_ms_p90']:.2f} p90) | target <= {r['target_ms']} ms "
                  f"{'ok' if r['meets_target'] else 'MISSED'} | load {r['load_1min']:.2f}")
    return rows if args.json else None


def eval_head(args: argparse.Namespace) -> dict | None:
    if args.episodes < 1:
        raise ValueError("--episodes must be >= 1")
    options = task_knobs(args.option, [args.task])  # before torch loads and the head with it
    from embodied.eval.skill_rollout import handover_success
    from policies.skill_head import load_head

    if args.threads > 0:
        import torch

        torch.set_num_threads(args.threads)
    skills = load_head(args.head, done_threshold=args.done_threshold, patience=args.patience)
    result = handover_success(args.task, list(range(args.seed, args.seed + args.episodes)), skills,
                              progress=not args.json, image_size=args.image_size, **options)
    result["head"] = args.head
    result["options"] = options
    if not args.json:
        print(f"{args.head} on {args.task}: success {result['success_rate']:.0%} over {result['episodes']} episodes "
              f"(skill said done in {result['skill_done_rate']:.0%})")
        return None
    return result


def export_head(args: argparse.Namespace) -> dict | None:
    from policies.checkpoint import read_json
    from policies.export import export_run
    from policies.registry import head_classes, parse_options

    head = read_json(Path(args.run) / "config.json").get("head", "act")
    result = export_run(args.run, args.out, weights=args.weights, dtype=args.dtype,
                        agent_skills=_split(args.agent_skills),
                        inference=parse_options(head_classes(head)[0], args.set))
    if not args.json:
        print(f"{result['head']} head ({', '.join(result['skills'])}; step {result['step']}, {result['weights']} "
              f"weights as {result['dtype']}) -> {result['out']}: {result['bytes'] / 2**20:.2f} MB")
        return None
    return result


def main(argv: list[str] | None = None) -> int:
    """These commands alone, for a machine that has torch but neither the simulator nor the video reader
    (a lent GPU): ``python -m embodied.cli.train_cmds train --head diffusion --data PACK --out RUN``."""
    import sys

    parser = argparse.ArgumentParser(prog="embodied", description=main.__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub, sub.add_parser("bench").add_subparsers(dest="what", required=True))
    from embodied.cli.dispatch import execute

    return execute(parser.parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    raise SystemExit(main())
