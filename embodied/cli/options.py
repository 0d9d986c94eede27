"""``--option KEY=VALUE``: one flag, one parser and one check for every subcommand that builds envs.

Every command that makes an env takes the same task knobs (``delay=60``, a whole difficulty
``preset=hard``, the scenery's ``visual=randomized``), so a knob means the same thing in ``run``,
``eval-memory`` or ``bench env``, and a wrong one fails the same way everywhere: before any
scene is built, naming the task and its valid knobs.

    add_option_argument(parser)                     # the flag
    parse_options(["delay=60"])                     # {"delay": "60"}  (dispatch.execute does this)
    knobs = task_knobs(args.option, ["ShellGame-v0"])   # {"delay": 60}: checked, typed; every env gets it
    options = task_options(knobs, "ShellGame-v0")   # that task's full knob dataclass (chance rate)

Nothing here imports the simulator at module level: ``dispatch`` (which the torch-only entry point of
``train_cmds`` uses) imports this module.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import Any

OPTION_HELP = ("task knob, repeatable: KEY=VALUE, e.g. delay=60, preset=hard (a difficulty preset), "
               "visual=randomized, sensor=realistic; `embodied tasks` lists each task's knobs")


def add_option_argument(parser: argparse.ArgumentParser, help: str = OPTION_HELP) -> None:
    """The ``--option`` flag, spelled the same on every env-building command (tests walk the parser for it)."""
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help=help)


def add_parallel_arguments(parser: argparse.ArgumentParser) -> None:
    """``--workers K`` and ``--ray [ADDRESS]`` (as ``record-demos`` spells them): the episodes on K local
    worker processes or as Ray tasks (embodied.eval.distributed); the results are the serial run's."""
    parser.add_argument("--workers", type=int, default=1, metavar="K",
                        help="episodes on K local worker processes (with --ray: the local Ray instance's CPUs); "
                        "the same results as one")
    parser.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                        help="run episodes as Ray tasks on the cluster at ADDRESS (HOST:6379 or auto; none: a "
                        "local instance of --workers CPUs)")


def parse_options(pairs: list[str]) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``; the values stay strings (``task_knobs`` types them per task)."""
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--option expects key=value, got {pair!r}")
        options[key.strip()] = value.strip()
    return options


def task_knobs(given: Mapping[str, Any], tasks: Iterable[str],
               reserved: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Check ``--option`` knobs against every task the command builds and type them.

    Returns the knobs every env of the command gets (``gym.make(..., **knobs)``) and its ``--json``
    records: ``preset`` kept as given (the env resolves it), the env's ``visual`` and ``sensor`` checked,
    the other knobs typed. A knob some task lacks is an error naming that task's valid knobs, raised before any
    scene is built. ``reserved`` maps knobs the command sets itself to the flag that sets them
    (``bench drift``'s ``odom_noise`` is ``--noise``): giving one is an error. No knobs: ``{}``, so the
    envs get exactly their defaults."""
    knobs = dict(given)
    for name, flag in (reserved or {}).items():
        if name in knobs:
            raise ValueError(f"--option {name}=... is not taken here: {flag} sets {name}")
    out: dict[str, Any] = {}
    if "preset" in knobs:
        knobs["preset"] = out["preset"] = str(knobs["preset"]).strip()
    from embodied.envs.env_knobs import split_env_knobs

    env_knobs, knobs = split_env_knobs(knobs)
    if knobs:
        from embodied.envs.base import options_from
        from embodied.tasks import get_task

        for task in tasks:
            entry = get_task(task)
            options = options_from(entry.env_class().Options, knobs, entry.name)  # names the valid knobs
            out.update({k: getattr(options, k) for k in knobs if k != "preset"})
    out.update(env_knobs)
    return out


def task_options(knobs: Mapping[str, Any], task: str) -> Any:
    """``task``'s full knob dataclass under ``knobs`` (the env's own knobs, ``visual`` and ``sensor``, aside:
    they are no task knob), preset resolved: what its chance rate and its recorded knobs come from."""
    from embodied.envs.base import options_from
    from embodied.envs.env_knobs import split_env_knobs
    from embodied.tasks import get_task

    entry = get_task(task)
    return options_from(entry.env_class().Options, split_env_knobs(knobs)[1], entry.name)
