"""``embodied bench viz``: the viewer page's size and time to interactive on a long episode.

A synthetic recording stands in for a long run: the memory of
``embodied.eval.bench.synthetic_run`` (10k steps, 50 objects, about one
logged change per step) plus keyframes from a top-down camera, drawn from
the remembered positions at their step. It is written in the layout of
``embodied run --record`` and goes through the same loader and page builder
as ``embodied viz``. The page is then loaded ``runs`` times in headless
Chromium; time to interactive is what the page itself reports
(``window.__ready_ms``: ``performance.now()``, i.e. milliseconds since
navigation start, when the first plot is drawn and the controls are wired).

Targets: page < 20 MB, interactive < 2000 ms.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from embodied.data.images import encode_jpeg
from embodied.data.recording import FORMAT, VERSION, atomic_write, load_recording, save_episode
from embodied.viz.build import build_timeline
from embodied.viz.html import write_page

TARGET_MB = 20.0
TARGET_READY_MS = 2000.0


def _top_view(memory, t: int, size: int, extent: float) -> np.ndarray:
    """A stand-in camera image: every remembered object as a coloured square at its position at ``t``."""
    image = Image.new("RGB", (size, size), (200, 190, 170))
    draw = ImageDraw.Draw(image)
    state = memory.log.state_at(t)
    for a in state.values():
        if a.get("kind") != "object" or "position" not in a:
            continue
        x, y = a["position"][:2]
        u, v = x / extent * (size - 1), (1 - y / extent) * (size - 1)
        rgb = tuple(int(255 * c) for c in a.get("rgb", (0.5, 0.5, 0.5))[:3])
        draw.rectangle([u - 3, v - 3, u + 3, v + 3], fill=rgb, outline=(30, 30, 30))
    return np.asarray(image)


def synthetic_recording(folder: Path, steps: int, objects: int, keyframes: int, seed: int = 0) -> dict:
    """Write a recording of a synthetic long run into ``folder`` (an episode folder). Returns timings."""
    from embodied.eval.bench import synthetic_run

    t0 = time.perf_counter()
    memory, _ = synthetic_run(steps, objects, seed)
    run_s = time.perf_counter() - t0
    folder.mkdir(parents=True, exist_ok=True)
    extent = float(int(np.ceil(np.sqrt(objects))) * 0.5)
    size = 128
    pose = np.eye(4)
    pose[:3, :3] = [[0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, -1.0]]
    pose[:3, 3] = (extent / 2, extent / 2, 3.0)
    K = [[60.0, 0.0, (size - 1) / 2], [0.0, 60.0, (size - 1) / 2], [0.0, 0.0, 1.0]]
    listed = []
    for t in np.unique(np.linspace(0, steps - 1, keyframes).round().astype(int)):
        name = f"keyframes/{t:06d}_top.jpg"
        atomic_write(folder / name, encode_jpeg(_top_view(memory, int(t), size, extent)))
        listed.append({"t": int(t), "camera": "top", "file": name, "cam_to_world": pose.tolist()})
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "task": f"synthetic-{steps}-steps-{objects}-objects",
        "suite": "synthetic",
        "policy": "synthetic",
        "options": {},
        "seeds": [seed],
        "image_size": size,
        "render_every": 1,
        "keyframe_every": max(1, steps // max(1, keyframes)),
        "perception": {"mode": "synthetic detections", "shuffle_ids": False},
        "episode": 0,
        "seed": seed,
        "steps": steps,
        "complete": True,
        "success": None,
        "cameras": {"top": {"width": size, "height": size, "K": K}},
        "files": {"memory": "memory.json", "events": "events.jsonl"},
        "keyframes": listed,
    }
    save_episode(folder, memory, meta)
    return {"synthetic_run_s": round(run_s, 2), "events": len(memory.log), "nodes": memory.graph.number_of_nodes()}


def bench_viz(
    steps: int = 10_000,
    objects: int = 50,
    keyframes: int = 500,
    runs: int = 3,
    seed: int = 0,
    keep: str | None = None,
    browser: bool = True,
    chrome=None,
) -> dict:
    """Build the page of a synthetic long episode and time it in Chromium; JSON-ready.

    ``chrome``: an already launched Playwright browser (one process can hold only one
    sync Playwright); by default one is launched here.
    """
    with tempfile.TemporaryDirectory(prefix="embodied-bench-viz-") as tmp:
        root = Path(keep) if keep else Path(tmp)
        folder = root / "episode_000"
        made = synthetic_recording(folder, steps, objects, keyframes, seed)
        t0 = time.perf_counter()
        recording = load_recording(folder)
        timeline = build_timeline(recording)
        page = write_page(timeline, root / "viewer.html")
        build_s = time.perf_counter() - t0
        mb = page.stat().st_size / 2**20
        result = {
            "steps": steps,
            "objects": objects,
            **made,
            "stops": len(timeline.frames),
            "keyframes_recorded": len(recording.keyframes),
            "keyframes_in_page": len(timeline.keyframes),
            "events_in_page": len(timeline.events),
            "build_s": round(build_s, 2),
            "page_mb": round(mb, 2),
            "target_mb": TARGET_MB,
            "page": str(page) if keep else None,
            "plotly_trimmed": "__embodiedLazy" in page.read_text(encoding="utf-8"),
        }
        if browser:
            from embodied.viz.browser import chromium, load_metrics

            if chrome is not None:
                loads = [load_metrics(chrome, page) for _ in range(runs)]
            else:
                with chromium() as launched:
                    loads = [load_metrics(launched, page) for _ in range(runs)]
            ready = [m["ready_ms"] for m in loads]
            result.update(
                ready_ms=round(statistics.median(ready), 1),
                ready_ms_runs=[round(r, 1) for r in ready],
                target_ready_ms=TARGET_READY_MS,
                page_errors=sorted({e for m in loads for e in m["errors"]}),
                network_requests=sorted({u for m in loads for u in m["network_requests"]}),
            )
        result["ok"] = mb < TARGET_MB and (not browser or result["ready_ms"] < TARGET_READY_MS)
        return result


def bench_viz_command(args: argparse.Namespace) -> dict | None:
    result = bench_viz(args.steps, args.objects, args.keyframes, args.runs, args.seed, args.keep)
    if args.json:
        return result
    print(
        f"viewer of a {result['steps']}-step, {result['objects']}-object run ({result['events']} events): "
        f"{result['page_mb']:.2f} MB (target < {TARGET_MB:.0f}), {result['stops']} stops, "
        f"{result['keyframes_in_page']} keyframes, built in {result['build_s']:.2f} s; "
        f"interactive after {result['ready_ms']:.0f} ms median of {result['ready_ms_runs']} "
        f"(target < {TARGET_READY_MS:.0f}) -> {'ok' if result['ok'] else 'OVER TARGET'}"
    )
    if result["page_errors"]:
        print(f"page errors: {result['page_errors']}")
    return None
