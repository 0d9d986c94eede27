"""``embodied perception make-data|train|train-classifier|train-grouper|eval|export``: the segmenter's jobs.

    embodied perception make-data --out DIR [--episodes N] [--task T ...] [--every K] [--seed S] [--option K=V ...]
                                  [--policy expert|agent|agent:learned] [--segmenter FILE]
    embodied perception train --data DIR [--data DIR ...] --out RUN [--steps N] [--resume]
    embodied perception train-classifier --data DIR [--data DIR ...] --out RUN [--segmenter RUN|FILE] [--resume]
    embodied perception train-grouper --data DIR [--data DIR ...] --out RUN [--segmenter RUN|FILE] [--init-from RUN|FILE]
                                      [--resume]
    embodied perception eval [--weights RUN|FILE] [--classifier RUN|FILE] [--grouper RUN|FILE] --data DIR [--json]
    embodied perception export --run RUN [--classifier RUN] [--grouper RUN] --out FILE.safetensors
"""

from __future__ import annotations

import argparse

from embodied.cli.options import add_option_argument, task_knobs


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("perception", help="the learned segmenter: render labelled frames, train, evaluate, export")
    psub = p.add_subparsers(dest="perception_command", required=True)

    d = psub.add_parser("make-data", help="render labelled RGB-D frames from both suites' episodes (the expert's or the agent's)")
    d.add_argument("--out", required=True)
    d.add_argument("--episodes", type=int, default=600, help="episodes, taking the tasks in turn (default 600)")
    d.add_argument("--task", action="append", default=[], help="only these tasks (repeatable; default: all)")
    d.add_argument("--every", type=int, default=25, help="control steps between kept frames")
    d.add_argument("--max-frames", type=int, default=24, help="per episode and camera")
    d.add_argument("--seed", type=int, default=None, help="first seed (default 700000; held-out frames: 800000)")
    d.add_argument("--image-size", type=int, default=128)
    d.add_argument("--policy", choices=("expert", "agent", "agent:learned"), default="expert",
                   help="who acts: the scripted expert, or the memory agent on the renderer's masks or on the "
                   "learned segmenter (its own views: approaches, retries, close-ups)")
    d.add_argument("--segmenter", default="", help="with --policy agent:learned: the weights file or run the "
                   "agent perceives with (default: the shipped weights)")
    add_option_argument(d)
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=make_data)

    t = psub.add_parser("train", help="train the segmenter from scratch (CPU or CUDA; checkpoints, --resume)")
    t.add_argument("--data", action="append", required=True, help="frames folder (repeatable)")
    t.add_argument("--out", required=True)
    t.add_argument("--steps", type=int, default=3000)
    t.add_argument("--batch-size", type=int, default=16)
    t.add_argument("--lr", type=float, default=3e-3)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                   help="auto: CUDA when there is one (the shipped weights were trained on a CPU)")
    t.add_argument("--checkpoint-every", type=int, default=250)
    t.add_argument("--resume", action="store_true")
    t.add_argument("--stop-at", type=int, help="end at this step, on the schedule of --steps (a run cut short)")
    t.add_argument("--init-from", metavar="RUN|FILE", help="start from this segmenter's weights (and its config)")
    t.add_argument("--balance", type=float, default=0.5,
                   help="class weights (median frequency / frequency) ** BALANCE; 0: unweighted")
    t.add_argument("--model", action="append", default=[], metavar="KEY=JSON",
                   help="SegmenterConfig field, e.g. widths=[16,32,48,64]")
    t.add_argument("--json", action="store_true")
    t.set_defaults(func=train)

    c = psub.add_parser("train-classifier", help="train the crop classifier that names each instance (CPU or CUDA; --resume)")
    c.add_argument("--data", action="append", required=True, help="frames folder (repeatable)")
    c.add_argument("--out", required=True)
    c.add_argument("--segmenter", metavar="RUN|FILE", help="whose classes, and whose instances are cropped too "
                   "(default: the shipped weights)")
    c.add_argument("--steps", type=int, default=3000)
    c.add_argument("--batch-size", type=int, default=256)
    c.add_argument("--lr", type=float, default=2e-3)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--threads", type=int, default=1)
    c.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                   help="auto: CUDA when there is one (the shipped weights were trained on a CPU)")
    c.add_argument("--checkpoint-every", type=int, default=500)
    c.add_argument("--resume", action="store_true")
    c.add_argument("--true-only", action="store_true", help="crop only the true instances, not the segmenter's")
    c.add_argument("--model", action="append", default=[], metavar="KEY=JSON",
                   help="CropConfig field, e.g. widths=[16,32,64]")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=train_classifier)

    g = psub.add_parser("train-grouper", help="train the region grouper that names the image's regions and joins "
                        "those of one object (CPU or CUDA; --resume)")
    g.add_argument("--data", action="append", required=True, help="frames folder, version 2 (repeatable)")
    g.add_argument("--out", required=True)
    g.add_argument("--segmenter", metavar="RUN|FILE", help="whose network features the grouper reads, and whose "
                   "classes (default: the shipped weights)")
    g.add_argument("--steps", type=int, default=4000)
    g.add_argument("--batch-size", type=int, default=2048, help="regions per step, and as many region pairs")
    g.add_argument("--lr", type=float, default=2e-3)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--threads", type=int, default=1)
    g.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                   help="auto: CUDA when there is one (the shipped weights were trained on a CPU)")
    g.add_argument("--checkpoint-every", type=int, default=500)
    g.add_argument("--resume", action="store_true")
    g.add_argument("--model", action="append", default=[], metavar="KEY=JSON",
                   help="GrouperConfig field, e.g. hidden=64")
    g.add_argument("--init-from", metavar="RUN|FILE", help="start from this grouper (a grouper run or a weights "
                   "file holding one): its weights, shape and feature normaliser")
    g.add_argument("--json", action="store_true")
    g.set_defaults(func=train_grouper)

    e = psub.add_parser("eval", help="mask IoU, precision, recall, class and colour right per class; ms per frame")
    e.add_argument("--weights", default="", help="a run folder or weights file (default: the shipped weights)")
    e.add_argument("--classifier", default="", help="a crop-classifier run or weights file (default: the one "
                   "inside --weights, if any)")
    e.add_argument("--grouper", default="", help="a region-grouper run or weights file (default: the one inside "
                   "--weights, if any)")
    e.add_argument("--data", required=True, help="held-out frames folder")
    e.add_argument("--without", action="append", default=[],
                   choices=("grouper", "snap", "classifier", "proposals", "denoise"),
                   help="leave a step out (repeatable): the region grouper (then the older pipeline runs), and in "
                   "that pipeline snapping to regions, the crop classifier, its proposals; denoise: read a noisy "
                   "camera's frames as they come (no cleaning, embodied/perception/learned/denoise.py)")
    e.add_argument("--min-pixels", type=int, default=20, help="smaller true instances are not scored")
    e.add_argument("--max-frames", type=int, default=0, help="score only the first N frames (0: all)")
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=evaluate)

    x = psub.add_parser("export", help="a run's EMA weights as one safetensors file (what ships)")
    x.add_argument("--run", required=True, help="a segmenter run, or a weights file to re-export with --classifier")
    x.add_argument("--classifier", metavar="RUN", help="a crop-classifier run to ship in the same file")
    x.add_argument("--grouper", metavar="RUN|FILE", help="a region-grouper run (or a file holding one) to ship in "
                   "the same file")
    x.add_argument("--out", required=True)
    x.add_argument("--json", action="store_true")
    x.set_defaults(func=export)


def make_data(args) -> dict:
    from embodied.data.seg_frames import DATA_SEED, FrameJob, make_frames
    from embodied.tasks import TASKS

    options = task_knobs(args.option, args.task or list(TASKS))  # checked before the first frame is rendered
    job = FrameJob(out=args.out, episodes=args.episodes, tasks=tuple(args.task), every=args.every,
                   max_frames=args.max_frames, seed=DATA_SEED if args.seed is None else args.seed,
                   image_size=args.image_size, options=options or None, policy=args.policy,
                   segmenter=args.segmenter)
    result = make_frames(job, progress=not args.json)
    result["options"] = options
    if not args.json:
        print(f"{result['episodes']} episodes in {result['out']} ({result['new_frames']} new frames, "
              f"{len(result['classes'])} classes)")
    return result


def _model_options(pairs: list[str]) -> dict:
    """--model KEY=JSON pairs as a dict of configuration fields."""
    import json

    model = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"--model expects KEY=JSON, got {pair!r}")
        try:
            model[key] = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--model {key}: {value!r} is not JSON ({exc})") from None
    return model


def train(args) -> dict:
    from embodied.perception.learned.train import SegTrainConfig, train_segmenter

    model = _model_options(args.model)
    cfg = SegTrainConfig(data=args.data, out=args.out, steps=args.steps, batch_size=args.batch_size, lr=args.lr,
                         seed=args.seed, threads=args.threads, device=args.device,
                         checkpoint_every=args.checkpoint_every, resume=args.resume, progress=not args.json, model=model, init_from=args.init_from,
                         balance=args.balance, stop_at=args.stop_at)
    result = train_segmenter(cfg)
    if not args.json:
        print(f"{result['run']}: steps {result['start_step']}..{result['steps']}, loss {result['first_loss']:.3f} -> "
              f"{result['final_loss']:.3f}, {result['step_ms']} ms/step")
    return result


def train_classifier(args) -> dict:
    from embodied.perception.learned.train_classifier import CropTrainConfig
    from embodied.perception.learned.train_classifier import train_classifier as fit

    cfg = CropTrainConfig(data=args.data, out=args.out, segmenter=args.segmenter, steps=args.steps,
                          batch_size=args.batch_size, lr=args.lr, seed=args.seed, threads=args.threads,
                          device=args.device, checkpoint_every=args.checkpoint_every, resume=args.resume,
                          progress=not args.json, predicted=not args.true_only, model=_model_options(args.model))
    result = fit(cfg)
    if not args.json:
        print(f"{result['run']}: {result['crops']} crops, steps {result['start_step']}..{result['steps']}, loss "
              f"{result['first_loss']:.3f} -> {result['final_loss']:.3f}, {result['step_ms']} ms/step")
    return result


def train_grouper(args) -> dict:
    from embodied.perception.learned.train_grouper import GrouperTrainConfig
    from embodied.perception.learned.train_grouper import train_grouper as fit

    cfg = GrouperTrainConfig(data=args.data, out=args.out, segmenter=args.segmenter, steps=args.steps,
                             batch_size=args.batch_size, lr=args.lr, seed=args.seed, threads=args.threads,
                             device=args.device, checkpoint_every=args.checkpoint_every, resume=args.resume,
                             progress=not args.json, model=_model_options(args.model), init_from=args.init_from)
    result = fit(cfg)
    if not args.json:
        print(f"{result['run']}: {result['regions']} regions, {result['pairs']} pairs, steps {result['start_step']}.."
              f"{result['steps']}, loss {result['first_loss']:.3f} -> {result['final_loss']:.3f}, "
              f"{result['step_ms']} ms/step")
    return result


def evaluate(args) -> dict:
    from embodied.perception.learned import LearnedSegmenter, load_frames
    from embodied.perception.learned.quality import evaluate as score

    segment = LearnedSegmenter(args.weights or None, threads=1, classifier=args.classifier or None,
                               snap="snap" not in args.without, classify="classifier" not in args.without,
                               propose="proposals" not in args.without and "snap" not in args.without,
                               grouper=args.grouper or None, group="grouper" not in args.without,
                               denoise="denoise" not in args.without)
    frames = load_frames(args.data, segment.classes)
    if args.max_frames:
        frames = frames.head(args.max_frames)
    result = score(segment, frames, frames.labels, min_pixels=args.min_pixels, progress=not args.json)
    result["weights"] = str(segment.source)
    result["without"] = sorted(args.without)
    if not args.json:
        print(f"{result['frames']} frames: mean IoU {result['mean_iou']}, recall {result['recall']}, precision "
              f"{result['precision']}, class right {result['class_right']}, colour right {result['colour_right']}, "
              f"{result['ms_median']} ms/frame (median, 1 thread)")
        for cls, row in result["per_class"].items():
            print(f"  {cls:14s} n={row['instances']:5d} iou={row['iou']} recall={row['recall']} "
                  f"precision={row['precision']} class={row['class_right']} colour={row['colour_right']}")
    return result


def export(args) -> dict:
    from embodied.perception.learned import export_weights

    result = export_weights(args.run, args.out, args.classifier, args.grouper)
    if not args.json:
        print(f"{result['path']}: {result['bytes'] / 1e6:.2f} MB")
    return result


def main(argv: list[str] | None = None) -> int:
    """These commands alone, for a machine without PyAV (a lent GPU, where the simulator comes as wheels):
    ``python -m embodied.cli.perception_cmds perception train --data DIR --out RUN --device cuda``."""
    import sys

    from embodied.cli.dispatch import execute

    parser = argparse.ArgumentParser(prog="embodied", description=main.__doc__.split("\n")[0])
    register(parser.add_subparsers(dest="command", required=True))
    return execute(parser.parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    raise SystemExit(main())
