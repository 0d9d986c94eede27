"""``embodied``: list tasks, run policies, benchmark, demo.

    embodied tasks [--json]
    embodied run --task NAME --policy expert|random [--episodes N] [--seed S]
                 [--option key=value ...] [--video out.mp4] [--json]
    embodied bench env [--task NAME] [--json]
    embodied demo [--episodes N] [--video demo.mp4]
"""

from __future__ import annotations

import argparse
import json
import sys

from embodied.cli import bench, commands


def parse_options(pairs: list[str]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--option expects key=value, got {pair!r}")
        options[key.strip()] = value.strip()
    return options


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="embodied", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("tasks", help="list every task with family, horizon, chance rate and knobs")
    p.add_argument("--json", action="store_true")
    p.add_argument("--suite", choices=["manipulation", "navigation"])
    p.set_defaults(func=commands.tasks)

    p = sub.add_parser("run", help="run a policy on a task and print the success rate")
    p.add_argument("--task", required=True)
    p.add_argument("--policy", default="expert", choices=["expert", "random"])
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--seed", type=int, default=0, help="first seed; episode i uses seed+i")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="difficulty knob")
    p.add_argument("--video", help="write an mp4 of the episodes")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=commands.run)

    p = sub.add_parser("bench", help="speed benchmarks")
    bench_sub = p.add_subparsers(dest="target", required=True)
    b = bench_sub.add_parser("env", help="control steps/s with and without rendering, and render cost")
    b.add_argument("--task", action="append", help="task to measure (repeatable; default: all)")
    b.add_argument("--steps", type=int, default=600)
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=bench.env)

    p = sub.add_parser("demo", help="scripted experts on every memory task, with a video")
    p.add_argument("--episodes", type=int, default=5)
    p.add_argument("--video", default="demo.mp4")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=commands.demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if hasattr(args, "option"):
            args.option = parse_options(args.option)
        result = args.func(args)
    except ValueError as exc:
        print(f"embodied {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"embodied {args.command}: interrupted", file=sys.stderr)
        return 130
    if getattr(args, "json", False) and result is not None:
        print(json.dumps(result, indent=2, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
