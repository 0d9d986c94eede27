"""``embodied``: list tasks, run policies, benchmark, demo.

Every command that builds envs takes ``--option KEY=VALUE`` (repeatable; embodied/cli/options.py).

    embodied tasks [--json]
    embodied run --task NAME --policy expert|random|memoryless [--episodes N] [--seed S]
                 [--option key=value ...] [--video out.mp4 [--overlay graph]]
                 [--record DIR [--keyframe-every N]] [--image-size PX] [--render-every K] [--json]
                 [--workers K] [--ray [ADDRESS]]   (episodes on K processes or Ray: not with --video/--record)
                 [--resume-memory PATH] [--save-memory FILE] [--save-agent DIR]   (agent policies: day 2 in the
                 same place, and the state to start it from; see embodied/cli/agent_files.py)
    embodied viz DIR [-o out.html] [--episode K] [--json]
    embodied viz DIR --format rrd [-o episode.rrd] [--episode K] [--json]   (a rerun recording)
    embodied bench env [--task NAME] [--option key=value ...] [--json]
    embodied bench memory [--task NAME] [--option key=value ...] [--json]
    embodied bench perception [--task NAME ...] [--mode masks|learned|geometric ...] [--option key=value ...]
                              [--json]
    embodied bench viz [--steps N] [--objects N] [--json]
    embodied ablate [--task NAME ...] [--episodes N] [--seed S] [--column C ...] [--option key=value ...]
                    [--workers K] [--ray [ADDRESS]] [--json]
    embodied eval-memory [--task NAME ...] [--episodes N] [--perception masks|learned|geometric]
                         [--option key=value ...] [--json]
    embodied eval-rooms [--task NAME ...] [--episodes N] [--seed S] [--option key=value ...] [--json]
    embodied benchmark [--policy P ...] [--preset easy|medium|hard|extreme ...] [--suite S] [--episodes N]
                       [--out DIR] [--workers K] [--ray [ADDRESS]] [--json]   (see embodied/eval/benchmark.py)
                       [--option key=value ...]   (knobs on top of each preset: not the standard protocol)
    embodied demo [--episodes N] [--policy agent|expert] [--video demo.mp4] [--head KIND:RUN|none ...]
                  [--option key=value ...] [--json]
    embodied record-demos --task NAME --episodes N --out DIR [...]   (see embodied/cli/data_cmds.py)
    embodied data info|check|video DIR ...
    embodied bench data [--option key=value ...] [--json]
    embodied train --head diffusion|act --data DIR --out RUN [...]   (see embodied/cli/train_cmds.py)
    embodied eval-head --head KIND:RUN --task NAME [--episodes N] [--option key=value ...] [--json]
    embodied bench head [--json]
    embodied bench drift [--noise ...] [--episodes N] [--out DIR] [--option key=value ...] [--json]
    embodied perception make-data|train|train-classifier|train-grouper|eval|export ...   (see embodied/cli/perception_cmds.py)
"""

from __future__ import annotations

import argparse
import sys

from embodied.cli import (
    agent_files,
    bench,
    benchmark_cmds,
    commands,
    data_cmds,
    drift_cmds,
    memory_cmds,
    perception_cmds,
    train_cmds,
)
from embodied.cli.dispatch import execute
from embodied.cli.options import (  # noqa: F401  (parse_options: imported from here)
    add_option_argument,
    add_parallel_arguments,
    parse_options,
)
from embodied.eval.rollout import POLICIES


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="embodied", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("tasks", help="list every task with family, horizon, chance rate and knobs")
    p.add_argument("--json", action="store_true")
    p.add_argument("--suite", choices=["manipulation", "navigation"])
    p.set_defaults(func=commands.tasks)

    p = sub.add_parser("run", help="run a policy on a task and print the success rate")
    p.add_argument("--task", required=True)
    p.add_argument(
        "--policy",
        default="expert",
        help=f"{', '.join(POLICIES)}; expert: scripted, privileged; random: uniform actions; memoryless: the "
        "expert guessing the cue; agent[:wiped|:blank|:noaim]: the memory agent; learned:RUN[:wiped]: the "
        "learned high-level policy of RUN (a run folder, or a shipped one: explicit, none, implicit)",
    )
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--head", metavar="KIND:RUN", help="with --policy agent: learned skills of a trained run "
                   "(diffusion:RUN or act:RUN) in place of the scripted ones; with --policy learned:RUN the "
                   "skill head (default: the shipped one for the robot; none: scripted skills)")
    p.add_argument("--seed", type=int, default=0, help="first seed; episode i uses seed+i")
    add_option_argument(p)
    p.add_argument("--video", help="write an mp4 of the episodes")
    p.add_argument(
        "--overlay",
        choices=["graph"],
        help="graph: draw the remembered scene graph over the video (navigation: plus a memory map panel)",
    )
    p.add_argument("--record", metavar="DIR", help="save memory, events and camera keyframes for `embodied viz`")
    p.add_argument("--keyframe-every", type=int, default=10, metavar="N", help="steps between recorded keyframes")
    p.add_argument("--image-size", type=int, help="camera size (px) for perception; default 96 for --record/--overlay "
                   "riders, the task's own (128) for the agent")
    p.add_argument("--render-every", type=int, default=1, help="perceive every K-th step (--record/--overlay)")
    p.add_argument("--perception", choices=["masks", "learned", "geometric"], default="masks",
                   help="the agent's detector: the renderer's masks, the learned RGB-D segmenter, or geometry")
    agent_files.add_arguments(p)
    add_parallel_arguments(p)  # not with --video, --record, --overlay: they need the env here
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=commands.run)

    p = sub.add_parser("viz", help="a recording (run --record DIR) as one offline HTML scene-graph viewer "
                       "(or, with --format rrd, a rerun recording)")
    p.add_argument("dir", help="recording folder (or one of its episode_NNN folders)")
    p.add_argument("--format", choices=["html", "rrd"], default="html",
                   help="html: the offline viewer page; rrd: a rerun recording (rerun episode.rrd; needs the "
                        "rerun extra)")
    p.add_argument("-o", "--output", help="file to write (default: the episode folder's viewer.html, or "
                   "episode.rrd with --format rrd)")
    p.add_argument("--episode", type=int, default=0, help="which episode of a multi-episode recording")
    p.add_argument("--max-stops", type=int, default=300, help="most slider stops (sampled at event times; "
                   "html only: the rrd has a memory snapshot at every step it changed)")
    p.add_argument("--max-keyframes", type=int, default=240, help="most camera images embedded in the page "
                   "(html only: the rrd has them all)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=commands.viz)

    p = sub.add_parser("bench", help="speed benchmarks")
    bench_sub = p.add_subparsers(dest="target", required=True)
    b = bench_sub.add_parser("env", help="control steps/s with and without rendering, and render cost")
    b.add_argument("--task", action="append", help="task to measure (repeatable; default: all)")
    b.add_argument("--steps", type=int, default=600)
    add_option_argument(b)
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=bench.env)
    b = bench_sub.add_parser("perception", help="ms per camera frame of masks, learned and geometric perception")
    b.add_argument("--task", action="append", help="task (repeatable; default: ShellGame-v0 and ObjectRevisit-v0)")
    b.add_argument("--frames", type=int, default=40)
    b.add_argument("--mode", action="append", choices=["masks", "learned", "geometric"], help="default: all three")
    add_option_argument(b)
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=bench.perception)
    b = bench_sub.add_parser("memory", help="perception + memory update cost, query latency, snapshots, save/load, "
                             "size; --grid: growth with steps and objects")
    b.add_argument("--task", default="PutBlockBack-v0", help="task whose expert episode feeds the update benchmark")
    b.add_argument("--frames", type=int, default=200)
    b.add_argument("--steps", type=memory_cmds.int_list, help="length of the synthetic house run, or a comma list "
                   "for a grid (default 10000; with --grid 10000,30000,100000)")
    b.add_argument("--objects", type=memory_cmds.int_list, help="objects in the synthetic house, or a comma list "
                   "for a grid (default 50; with --grid 50,150,500)")
    b.add_argument("--grid", action="store_true", help="run every steps x objects pair (one house per object "
                   "count, measured at each step count): growth fits, results.json and growth.png")
    b.add_argument("--out", metavar="DIR", help="grid: write results.json and growth.png here "
                   "(default: runs/bench-memory)")
    b.add_argument("--queries", type=int, default=100, help="timed calls of each query kind per measurement")
    b.add_argument("--seed", type=int, default=0)
    add_option_argument(b)
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=memory_cmds.bench_memory)
    b = bench_sub.add_parser("viz", help="viewer page size and time to interactive (headless Chromium)")
    b.add_argument("--steps", type=int, default=10_000, help="length of the synthetic run")
    b.add_argument("--objects", type=int, default=50)
    b.add_argument("--keyframes", type=int, default=500, help="keyframe images in the synthetic recording")
    b.add_argument("--runs", type=int, default=3, help="page loads timed (the median is reported)")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--keep", metavar="DIR", help="keep the synthetic recording and page here")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=commands.bench_viz)

    p = sub.add_parser("ablate", help="expert vs agent vs wiped-memory and blank-cue agents vs chance, per task")
    p.add_argument("--task", action="append", default=[], help="task name (repeat); default: every task")
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--seed", type=int, default=1000, help="first seed; episode i uses seed+i")
    p.add_argument("--image-size", type=int, help="camera size in px (default: the task's, 128)")
    p.add_argument("--head", metavar="KIND:RUN", help="add a column: the agent with this run's learned skills")
    p.add_argument("--ablation-episodes", type=int, help="episodes of the wiped and blank columns (default: --episodes)")
    p.add_argument("--column", action="append", default=[], help="only these columns (expert, agent, "
                   "agent:wiped, agent:blank, agent:noaim; with --head also agent:head, agent:head:noaim); "
                   "default: the first four, and agent:head with --head")
    add_option_argument(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("--perception", choices=["masks", "learned", "geometric"], default="masks",
                   help="the agent's detector: the renderer's masks, the learned RGB-D segmenter, or geometry")
    add_parallel_arguments(p)
    p.set_defaults(func=commands.ablate)

    p = sub.add_parser("eval-memory", help="ask memory each task's recall question after expert episodes")
    p.add_argument("--task", action="append", help="task to evaluate (repeatable; default: all)")
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--perception", "--mode", dest="mode", choices=["masks", "learned", "geometric"], default="masks",
                   help="detector: the renderer's masks, the learned segmenter (shipped weights) or geometry "
                        "(--mode: the older name)")
    p.add_argument("--image-size", type=int, default=96)
    p.add_argument("--render-every", type=int, default=1)
    p.add_argument("--depth-noise", type=float, default=0.0, help="depth noise std, metres")
    p.add_argument("--dropout", type=float, default=0.0, help="fraction of depth pixels dropped")
    p.add_argument("--mask-erosion", type=int, default=0, help="pixels eroded from each mask")
    p.add_argument("--no-accuracy", action="store_true", help="skip ground-truth accuracy; stop at the question")
    add_option_argument(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=memory_cmds.eval_memory)

    p = sub.add_parser("eval-rooms", help="the agent's room nodes (from its own map) against the true rooms")
    p.add_argument("--task", action="append", help="navigation task (repeatable; default: all of them)")
    p.add_argument("--episodes", type=int, default=30)
    p.add_argument("--seed", type=int, default=3000, help="first seed; episode i uses seed+i")
    p.add_argument("--image-size", type=int, help="camera size in px (default: the task's, 128)")
    add_option_argument(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=memory_cmds.eval_rooms)

    p = sub.add_parser("demo", help="the memory agent (or the expert) on every memory task, with a video")
    p.add_argument("--episodes", type=int, default=3)
    p.add_argument("--task", action="append", help="only this task (repeatable; default: every task)")
    p.add_argument("--policy", default="agent", help="agent (the planner deciding), expert, or learned:RUN (a "
                   "learned high-level policy deciding every call, e.g. learned:explicit)")
    p.add_argument("--video", default="demo.mp4")
    p.add_argument("--head", action="append", metavar="KIND:RUN",
                   help="learned head for the agent's skills, repeatable (default: every shipped head in "
                        "policies/checkpoints, each on its robot's tasks; 'none': scripted skills only)")
    p.add_argument("--perception", choices=["masks", "learned", "geometric"], default="masks",
                   help="the agent's detector: the renderer's masks, the learned RGB-D segmenter, or geometry")
    add_option_argument(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=commands.demo)

    benchmark_cmds.register(sub)  # benchmark
    data_cmds.register(sub, bench_sub)  # record-demos, data info|check|video, bench data
    train_cmds.register(sub, bench_sub)  # train --head diffusion|act, bench head
    perception_cmds.register(sub)  # perception make-data|train|train-classifier|train-grouper|eval|export
    drift_cmds.register(bench_sub)  # bench drift
    return parser


def main(argv: list[str] | None = None) -> int:
    return execute(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
