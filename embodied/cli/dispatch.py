"""Run a parsed subcommand: its result as JSON with ``--json``, a ValueError as a one-line error (exit 2)."""

from __future__ import annotations

import argparse
import json
import sys

from embodied.cli.options import parse_options


def execute(args: argparse.Namespace, prog: str = "embodied") -> int:
    try:
        if hasattr(args, "option"):
            args.option = parse_options(args.option)
        result = args.func(args)
    except ValueError as exc:
        print(f"{prog} {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog} {args.command}: interrupted", file=sys.stderr)
        return 130
    if getattr(args, "json", False) and result is not None:
        print(json.dumps(result, indent=2, default=float))
    return 0
