"""Subcommands that list and run tasks."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import gymnasium as gym

from embodied.agent.ride import MemoryRider
from embodied.cli.agent_files import AgentFiles
from embodied.data.recording import Recorder, load_recording
from embodied.cli.options import task_knobs, task_options
from embodied.envs.env_knobs import split_env_knobs
from embodied.eval.distributed import Batch, Parallel, evaluate
from embodied.eval.rollout import VideoWriter, head_for, run_episodes, summarize
from embodied.tasks import TASKS, get_task
from embodied.viz.build import build_timeline
from embodied.viz.caption import PlanCaption
from embodied.viz.html import write_page
from embodied.viz.video import OverlayVideo


def tasks(args: argparse.Namespace) -> list[dict] | None:
    rows = [entry.describe() for entry in TASKS.values() if not args.suite or entry.suite == args.suite]
    if args.json:
        return rows
    print(f"{'task':<20} {'family':<16} {'suite':<13} {'horizon':>7} {'chance':>7}  knobs")
    for row in rows:
        knobs = ", ".join(f"{k}={v}" for k, v in row["knobs"].items())
        print(
            f"{row['name']:<20} {row['family']:<16} {row['suite']:<13} {row['horizon']:>7} "
            f"{row['chance_rate']:>7.3f}  {knobs}"
        )
    print("\npresets (--option preset=P; the knobs each sets over the defaults, and the chance rate there):")
    for row in rows:
        print(f"{row['name']:<20} " + "; ".join(
            f"{name} [{', '.join(f'{k}={v}' for k, v in p['knobs'].items()) or 'defaults'}] {p['chance_rate']:.3f}"
            for name, p in row["presets"].items()))
    return None


def run(args: argparse.Namespace) -> dict | None:
    entry = get_task(args.task)
    cls = entry.env_class()
    knobs = task_knobs(args.option, [entry.name])  # validates before building the scene
    env_knobs = split_env_knobs(knobs)[0]  # the scenery's look and the sensor: no task knobs
    options = task_options(knobs, entry.name)
    if args.episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {args.episodes}")
    overlay = getattr(args, "overlay", None)
    record = getattr(args, "record", None)
    if overlay and not args.video:
        raise ValueError("--overlay draws on the video: give --video out.mp4 too")
    if getattr(args, "keyframe_every", 1) < 1:
        raise ValueError(f"--keyframe-every must be >= 1, got {args.keyframe_every}")
    parallel = Parallel.from_args(args)
    parallel.refuse({"--video": args.video, "--record": record, "--overlay": overlay})
    files = AgentFiles.from_args(args, parallel.distributed)  # --resume-memory, --save-memory, --save-agent
    ride = bool(record or overlay)  # perception + memory need the camera images
    agent = args.policy.startswith(("agent", "learned:"))
    make = dict(
        images=ride or agent,
        **_image_size(getattr(args, "image_size", None), agent),
        render_every=getattr(args, "render_every", 1),
        render_mode="rgb_array" if args.video else None,
        **env_knobs,
        **dataclasses.asdict(options),
    )
    seeds = range(args.seed, args.seed + args.episodes)
    if parallel.distributed:  # episodes in workers; only their results come back
        batch = Batch(entry.env_id, make, args.policy, tuple(seeds), getattr(args, "head", None),
                      getattr(args, "perception", None))
        results = evaluate([batch], parallel)[0][0]
        return _run_summary(args, entry, cls, options, results)
    env = gym.make(entry.env_id, **make)
    video = rider = recorder = None
    try:
        if record:
            run_info = {"task": entry.name, "suite": entry.suite, "policy": args.policy,
                        "options": dataclasses.asdict(options), "seeds": list(seeds)}
            recorder = Recorder(record, run_info, env, keyframe_every=args.keyframe_every)
        if ride:
            rider = MemoryRider(env, recorder)
        if args.video:
            video = VideoWriter(args.video, fps=env.metadata.get("render_fps", 20))
            if overlay:
                video = OverlayVideo(video, rider, navigation=entry.suite == "navigation")
            if agent:
                video = PlanCaption(video)
        hooks = {"on_reset": rider.reset, "on_step": rider.step, "on_end": rider.end} if rider else {}
        policies = [p for p in (video if isinstance(video, PlanCaption) else None, recorder, rider) if p is not None]
        if policies:
            hooks["on_policy"] = lambda policy: [p.set_policy(policy) for p in policies]
        if files is not None:
            hooks = files.hooks(hooks)
        results = run_episodes(env, args.policy, seeds, video=video, head=getattr(args, "head", None),
                               perception=getattr(args, "perception", None), **hooks)
    finally:
        # Also on Ctrl-C: the video gets the frames so far, the recording its last state.
        if recorder is not None:
            recorder.close()
        if video is not None:
            video.close()
        env.close()
    return _run_summary(args, entry, cls, options, results, files.written if files is not None else ())


def _run_summary(args: argparse.Namespace, entry, cls, options, results: list, saved=()) -> dict | None:
    record = getattr(args, "record", None)
    summary = summarize(results)
    summary.update(
        task=entry.name,
        policy=args.policy,
        head=getattr(args, "head", None),
        options=dataclasses.asdict(options),
        chance_rate=cls.chance_rate(options),
        episodes=[r.to_dict() for r in results],
    )
    if args.video:
        summary["video"] = args.video
    if record:
        summary["record"] = record
    if saved:
        summary["saved"] = list(saved)
    if not args.json:
        print(
            f"{entry.name} policy={args.policy} episodes={summary['n_episodes']} "
            f"success_rate={summary['success_rate']:.3f} (chance {summary['chance_rate']:.3f}) "
            f"mean_steps={summary['mean_steps']:.1f}"
        )
        if args.video:
            print(f"video: {args.video}")
        if record:
            print(f"recording: {record} (view it with: embodied viz {record} -o viewer.html)")
        for path in saved:
            print(f"saved: {path}")
        return None
    return summary


def viz(args: argparse.Namespace) -> dict | None:
    """A recording (``run --record DIR``) as one self-contained HTML page, or a rerun .rrd (``--format rrd``)."""
    recording = load_recording(args.dir, args.episode)
    if getattr(args, "format", "html") == "rrd":
        return _viz_rrd(args, recording)
    timeline = build_timeline(recording, max_stops=args.max_stops, max_keyframes=args.max_keyframes)
    out = Path(args.output) if args.output else recording.path / "viewer.html"
    write_page(timeline, out)
    result = {
        "page": str(out),
        "episode": str(recording.path),
        "mb": round(out.stat().st_size / 2**20, 2),
        "stops": len(timeline.frames),
        "nodes": len(timeline.nodes),
        "events": len(timeline.events),
        "keyframes": len(timeline.keyframes),
    }
    if not args.json:
        print(
            f"viewer: {out} ({result['mb']:.2f} MB; {result['stops']} stops, {result['nodes']} nodes, "
            f"{result['events']} events, {result['keyframes']} keyframes) from {recording.path}"
        )
        return None
    return result


def _viz_rrd(args: argparse.Namespace, recording) -> dict | None:
    from embodied.viz.rerun_export import export_rrd  # rerun loads only when asked for

    out = Path(args.output) if args.output else recording.path / "episode.rrd"
    try:
        result = export_rrd(recording, out)
    except ImportError as e:
        raise ValueError(str(e)) from None
    if not args.json:
        print(
            f"rerun recording: {out} ({result['mb']:.2f} MB; steps {result['steps'][0]}..{result['steps'][1]}, "
            f"{result['stops']} memory stops, {result['nodes']} nodes, {result['events']} events, "
            f"{result['keyframes']} keyframes{'' if result['depth'] else ', no depth'}) from {recording.path}; "
            f"open it with: rerun {out}"
        )
        return None
    return result


def bench_viz(args: argparse.Namespace) -> dict | None:
    from embodied.viz.bench import bench_viz_command  # playwright loads only when asked for

    return bench_viz_command(args)


def demo(args: argparse.Namespace) -> dict | None:
    """Every task, a few episodes of the memory agent (or the expert); the first episode of each
    goes in the video, with the agent's plan under the frames.

    The agent runs the shipped learned heads (``policies/checkpoints``; ``--head none``: scripted
    skills only): on each task the head trained for that robot runs the skills it learned, the
    scripted skills run the rest, and the captions and the printed rows say which is which."""
    policy = getattr(args, "policy", "agent")
    agent = policy.startswith(("agent", "learned:"))  # learned: the agent with a learned policy deciding its calls
    heads = _demo_heads(getattr(args, "head", None)) if agent else []
    rows = []
    entries = [get_task(name) for name in args.task] if getattr(args, "task", None) else list(TASKS.values())
    knobs = task_knobs(getattr(args, "option", {}), [e.name for e in entries])  # before the first scene
    video = VideoWriter(args.video, fps=20) if args.video else None
    try:
        for entry in entries:
            env = gym.make(entry.env_id, images=agent, render_mode="rgb_array" if video else None, **knobs)
            try:
                head = head_for(env, heads) if heads else None
                label = _head_label(head)
                if policy.startswith("learned:"):
                    label = f"{policy} deciding; {label}"
                    head = head or "none"  # no head for this robot: the scripted skills
                framed = _SizedVideo(video) if video else None
                if framed is not None and agent:
                    framed = PlanCaption(framed, label=label if head else "scripted skills")
                hooks = {"on_policy": framed.set_policy} if isinstance(framed, PlanCaption) else {}
                perception = getattr(args, "perception", None) if agent else None
                first = run_episodes(env, policy, [0], video=framed, progress=False, head=head,
                                     perception=perception, **hooks)
                rest = run_episodes(env, policy, range(1, args.episodes), progress=False, head=head,
                                    perception=perception)
            finally:
                env.close()
            summary = summarize(first + rest)
            chance = entry.env_class().chance_rate(task_options(knobs, entry.name))  # at the knobs run
            summary.update(task=entry.name, policy=policy, chance_rate=chance, options=knobs,
                           head=head, skills=label if agent else "expert")
            rows.append(summary)
            if not args.json:
                print(
                    f"{entry.name:<20} {policy} success {summary['success_rate']:.2f} over "
                    f"{summary['n_episodes']} episodes (chance {summary['chance_rate']:.3f}); {summary['skills']}",
                    flush=True,
                )
    finally:
        if video is not None:
            video.close()
    if not args.json:
        if video is not None:
            print(f"video: {args.video}")
        return None
    return {"tasks": rows, "video": args.video, "options": knobs}


def _demo_heads(given: list[str] | None) -> list[str]:
    """``--head`` values -> head specs: none given, every shipped head (with the skills its export
    lists as measured to work in the agent); ``none``, no head."""
    if not given:
        from policies.export import agent_spec, shipped_heads

        return [agent_spec(short) for short in shipped_heads()]
    return [] if given == ["none"] else list(given)


def _head_label(head: str | None) -> str:
    """Which skills are learned and which scripted, for captions and printed rows."""
    if head is None:
        return "scripted skills"
    from embodied.eval.rollout import learned_skills

    return f"learned {head}: {','.join(learned_skills(head))}; other skills scripted"


class _SizedVideo:
    """Pads frames of different tasks to one size so they share one mp4."""

    HEIGHT, WIDTH = 240, 560

    def __init__(self, writer: VideoWriter):
        self.writer = writer

    def close(self) -> None:
        pass  # the shared writer is closed once, after every task

    def add(self, frame) -> None:
        import numpy as np

        # One size for every task: the view (up to HEIGHT) plus room for a plan caption below it.
        canvas = np.zeros((self.HEIGHT + 120, self.WIDTH, 3), np.uint8)
        h, w = min(frame.shape[0], canvas.shape[0]), min(frame.shape[1], self.WIDTH)
        canvas[:h, :w] = frame[:h, :w]
        self.writer.add(canvas)


def ablate(args: argparse.Namespace) -> dict | None:
    """The ablation table (see ``embodied.eval.ablate``)."""
    from embodied.eval.ablate import COLUMNS
    from embodied.eval.ablate import ablate as run_ablate

    if args.episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {args.episodes}")
    tasks = [get_task(name).name for name in args.task] or None
    options = task_knobs(args.option, tasks or list(TASKS))  # checked against every task the table runs
    columns = tuple(args.column) or COLUMNS
    report = run_ablate(tasks, args.episodes, args.seed, args.image_size, columns, options, progress=True,
                        ablation_episodes=args.ablation_episodes, head=args.head, perception=args.perception,
                        parallel=Parallel.from_args(args))
    report["options"] = options
    columns = tuple(report["columns"])
    if args.json:
        return report
    print(f"{'task':<20} " + " ".join(f"{c:>12}" for c in columns) + f" {'chance':>8}")
    for row in report["tasks"]:
        print(f"{row['task']:<20} " + " ".join(f"{row[c]:>12.1%}" for c in columns) + f" {row['chance']:>8.1%}")
    if args.head:
        print(f"agent:head = the agent with the learned skills of {args.head}")
    return None


def _image_size(size: int | None, agent: bool) -> dict:
    """Camera size for ``run``: as given; else the task's own for the agent (its map and skills are
    tuned there), and 96 px for the perception that rides along other policies."""
    if size is not None:
        return {"image_size": size}
    return {} if agent else {"image_size": 96}
