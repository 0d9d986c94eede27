"""``embodied benchmark``: the standard protocol (embodied.eval.benchmark) from the command line.

    embodied benchmark --policy agent [--policy agent:wiped ...] [--preset easy ...] [--suite S]
                       [--task NAME ...] [--episodes N] [--split test|dev] [--out DIR] [--json]
                       [--option KEY=VALUE ...]   (knobs on top of each preset: not the standard protocol)
                       [--workers K] [--ray [ADDRESS]]   (episodes on K local processes or Ray tasks; same results)
"""

from __future__ import annotations

import argparse

from embodied.cli.options import add_option_argument, add_parallel_arguments, task_knobs
from embodied.envs.base import PRESET_NAMES
from embodied.eval.benchmark import PROTOCOL, SPLITS, SUITES, BenchmarkConfig, run_benchmark
from embodied.eval.distributed import Parallel


def register(sub) -> None:
    p = sub.add_parser("benchmark", help=f"the standard protocol ({PROTOCOL}): every family at every preset on "
                       "fixed test seeds; results JSON, a markdown leaderboard and a difficulty plot")
    p.add_argument("--policy", action="append", default=[], help="repeatable (default: agent): any --policy of "
                   "`embodied run` (agent, agent:wiped, expert, memoryless, learned:RUN, ...) or "
                   "import:MODULE:FACTORY for your own")
    p.add_argument("--preset", action="append", default=[], choices=PRESET_NAMES,
                   help="repeatable; default: all four")
    p.add_argument("--suite", choices=SUITES, help="default: both")
    p.add_argument("--task", action="append", default=[], help="only these tasks (repeatable)")
    p.add_argument("--episodes", type=int, default=50, help="episodes per family and preset (protocol: 50)")
    p.add_argument("--split", choices=list(SPLITS), default="test",
                   help="test: the protocol's seeds; dev: seeds for tuning")
    p.add_argument("--head", metavar="KIND:RUN", help="learned skills for the agent policies")
    p.add_argument("--perception", choices=("masks", "learned", "geometric"),
                   help="the agent policies' detector (default: the renderer's masks)")
    p.add_argument("--image-size", type=int, help="camera size in px (default: the task's, 128)")
    p.add_argument("--out", default="runs/benchmark", help="results.json, leaderboard.md, difficulty.png "
                   "(a rerun into the same folder resumes)")
    add_option_argument(p, help="task knob on top of each preset's, repeatable: KEY=VALUE (e.g. delay=60, "
                        "visual=randomized); results and leaderboard then say: not the standard protocol")
    add_parallel_arguments(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=benchmark)


def benchmark(args: argparse.Namespace) -> dict | None:
    config = BenchmarkConfig(policies=tuple(args.policy or ["agent"]), presets=tuple(args.preset or PRESET_NAMES),
                             suite=args.suite, tasks=tuple(args.task), episodes=args.episodes, split=args.split,
                             head=args.head, image_size=args.image_size, perception=args.perception)
    config.validate()
    parallel = Parallel.from_args(args)
    config.options = task_knobs(args.option, config.task_names(), reserved={"preset": "--preset"})

    def report(cell) -> None:
        if not args.json:
            print(f"{cell.policy:<16} {cell.task:<20} {cell.preset:<8} success {cell.success_rate:6.1%} "
                  f"(chance {cell.chance:5.1%}) over {cell.episodes} episodes, {cell.seconds:.0f} s", flush=True)

    if not config.standard and not args.json:
        print(f"not the standard protocol: {config.options} on top of each preset's knobs", flush=True)
    result = run_benchmark(config, out=args.out, progress=not args.json, on_cell=report, parallel=parallel)
    if args.json:
        return result
    print(f"results: {args.out}/results.json\nleaderboard: {result['reports']['leaderboard']}\n"
          f"plot: {result['reports']['plot']}")
    return None
