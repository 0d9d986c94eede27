"""The learned segmenter's run-time shortcuts give what the plain computations give."""

from __future__ import annotations

import resource
import sys

import numpy as np
import pytest
import torch
from scipy import ndimage

from embodied.perception.learned import LearnedSegmenter, load_frames
from embodied.perception.learned.heap import keep_freed_memory
from embodied.perception.learned.model import conv_steps
from embodied.perception.learned.region_graph import node_columns, world_points
from embodied.perception.learned.regions import colour_depth_regions

SHIPPED = LearnedSegmenter(group=False).source


def test_pixel_features_are_the_trunks_features_pixel_major(frames_dir):
    segment = LearnedSegmenter(SHIPPED)
    frames = load_frames(frames_dir, segment.classes)
    runtime, plain = segment._runtime, segment.net
    for i in range(len(frames)):
        rgb, depth = frames.rgb[i], frames.depth[i].astype(np.float32)
        want = plain.features(rgb, depth).transpose(1, 2, 0)
        got = runtime.pixel_features(rgb, depth)
        assert got.shape == want.shape and np.abs(got - want).max() < 1e-4
    # an odd size takes the plain path (nearest upsampling is no 2x2 repeat there), with the same answer
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 255, (37, 51, 3), dtype=np.uint8)
    depth = rng.uniform(0.3, 2.0, (37, 51)).astype(np.float32)
    want = plain.features(rgb, depth).transpose(1, 2, 0)
    assert np.abs(runtime.pixel_features(rgb, depth) - want).max() < 1e-4



def test_the_runtime_network_runs_its_layers_as_plain_steps_with_the_same_numbers(frames_dir):
    segment = LearnedSegmenter(SHIPPED)
    frames = load_frames(frames_dir, segment.classes)
    runtime = segment._runtime
    runtime.pixel_features(frames.rgb[0], frames.depth[0].astype(np.float32))
    assert runtime._steps and len(runtime._steps["down4"]) == 3  # built: three convolutions, BatchNorms folded
    for i in range(min(4, len(frames))):
        depth = torch.from_numpy(frames.depth[i].astype(np.float32))[None]
        x = runtime.inputs(torch.from_numpy(frames.rgb[i])[None], depth)
        x = x.contiguous(memory_format=torch.channels_last)
        with torch.inference_mode():
            assert torch.equal(runtime._half_steps(x), runtime.half(x))  # bit for bit
    with pytest.raises(ValueError, match="BatchNorms folded"):  # unfolded layers would skip their BatchNorm
        conv_steps(segment.net.stem)
    with torch.inference_mode():  # the plain network (BatchNorms unfolded) keeps its modules
        x = torch.zeros(1, 4, 32, 32)
        assert torch.equal(segment.net._half_steps(x), segment.net.half(x))

def _regions_by_flood(rgb: np.ndarray, depth: np.ndarray, colour_step=20, depth_step=0.01, depth_slope=0.05):
    """The regions' definition, pixel by pixel: a breadth-first flood over joined 4-neighbours."""
    h, w = depth.shape
    label = -np.ones((h, w), int)
    c, d = rgb.astype(int), depth.astype(np.float64)

    def joined(a, b):
        near = abs(d[a] - d[b]) <= depth_step + depth_slope * min(d[a], d[b]) + 1e-7
        return near and np.abs(c[a] - c[b]).max() <= colour_step

    n = 0
    for start in np.ndindex(h, w):
        if label[start] >= 0:
            continue
        label[start], todo = n, [start]
        while todo:
            y, x = todo.pop()
            for q in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
                if 0 <= q[0] < h and 0 <= q[1] < w and label[q] < 0 and joined((y, x), q):
                    label[q] = n
                    todo.append(q)
        n += 1
    return label, n


def test_colour_depth_regions_follow_their_definition():
    rng = np.random.default_rng(3)
    # blocks of colour and depth with noise under and over the steps, so both joins and cuts happen
    rgb = np.repeat(np.repeat(rng.integers(0, 255, (5, 6, 3)), 6, 0), 5, 1)[:28, :29]
    rgb = np.clip(rgb + rng.integers(-12, 13, rgb.shape), 0, 255).astype(np.uint8)
    depth = np.repeat(np.repeat(rng.uniform(0.5, 1.5, (4, 4)), 8, 0), 8, 1)[:28, :29]
    depth = (depth + rng.normal(0, 0.01, depth.shape)).astype(np.float32)
    got, n = colour_depth_regions(rgb, depth)
    want, m = _regions_by_flood(rgb, depth)
    assert n == m > 10
    # the same partition: each found region is exactly one flooded region
    pairs = set(zip(got.ravel().tolist(), want.ravel().tolist()))
    assert len(pairs) == n


def test_region_rows_are_the_means_over_their_pixels(frames_dir):
    segment = LearnedSegmenter(SHIPPED)
    frames = load_frames(frames_dir, segment.classes)
    columns = node_columns(segment.net.config.skip)
    at = {name: k for k, name in enumerate(columns)}
    for i in range(len(frames)):
        K, X = frames.camera(i)
        rgb, depth = frames.rgb[i], frames.depth[i].astype(np.float32)
        graph, regions, n = segment.region_graph(rgb, depth, K, X, frames.frames[i]["camera"])
        features = segment.net.features(rgb, depth)
        z = world_points(depth, K, X)[2]
        for k in np.argsort(-graph.area)[:5]:
            mask = regions == k
            row = graph.nodes[k]
            assert np.allclose(row[[at["r"], at["g"], at["b"]]], rgb[mask].mean(0) / 255, atol=1e-3)  # float32 sums
            assert np.isclose(row[at["depth"]], depth[mask].mean(), atol=1e-3)
            assert np.isclose(row[at["z_min"]], z[mask].min(), atol=1e-5)
            f = [at[f"f{c}"] for c in range(features.shape[0])]
            assert np.allclose(row[f], features[:, mask].mean(1), atol=1e-3)
            rows, cols = ndimage.find_objects(mask.astype(int))[0]
            assert np.isclose(row[at["rows"]], (rows.stop - rows.start) / mask.shape[0])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc thresholds")
def test_a_frame_reuses_the_last_frames_memory(frames_dir):
    assert keep_freed_memory() and keep_freed_memory()  # set, and idempotent
    segment = LearnedSegmenter(SHIPPED)
    frames = load_frames(frames_dir, segment.classes)
    K, X = frames.camera(0)
    rgb, depth = frames.rgb[0], frames.depth[0].astype(np.float32)
    torch.set_num_threads(1)
    for _ in range(5):
        segment(rgb, depth, K, X, frames.frames[0]["camera"])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        segment(rgb, depth, K, X, frames.frames[0]["camera"])
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20
    # a frame's arrays take ~800 fresh pages a frame without the thresholds (2 ms on these machines)
    assert faults < 50, f"{faults:.0f} page faults a frame"


def test_the_crop_second_opinion_runs_the_classifier_folded_and_a_few_medians_by_mask(frames_dir):
    """The grouper path asks a BatchNorm-folded copy of the crop classifier, which answers as the plain one;
    the median depth of a few instances, taken a mask each, is scipy's labelled median."""
    from embodied.perception.learned.crops import _median_depths, instance_crops

    segment = LearnedSegmenter()
    frames = load_frames(frames_dir, segment.classes)
    for i in range(min(len(frames), 8)):
        rgb, depth = frames.rgb[i], frames.depth[i].astype(np.float32)
        ids = frames.instance[i].astype(np.int32)
        keep = np.unique(ids[ids > 0])[:6]
        if not len(keep):
            continue
        valid = np.where(depth > 0, ids, 0)
        want = np.nan_to_num(np.asarray(ndimage.median(depth, valid, keep), np.float64), nan=0.0)
        assert np.allclose(_median_depths(depth, ids, keep), want)
        x, s = instance_crops(rgb, depth, ids, keep)
        folded = segment._asked.probabilities(x, s).numpy()
        plain = segment.classifier.probabilities(x, s).numpy()
        assert np.abs(folded - plain).max() < 1e-4


def test_the_grouper_joins_regions_into_the_components_a_graph_library_finds():
    """``assemble``'s components (label spreading with pointer jumping) are scipy's, numbered alike (in the
    order of their smallest region), on random graphs with chains, cycles, repeated and self edges."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from embodied.perception.learned.grouper import _components

    rng = np.random.default_rng(0)
    for _ in range(300):
        n, m = int(rng.integers(1, 80)), int(rng.integers(0, 120))
        a, b = rng.integers(0, n, m), rng.integers(0, n, m)
        _, want = connected_components(coo_matrix((np.ones(m), (a, b)), shape=(n, n)), directed=False)
        got = _components(n, a, b)
        assert np.array_equal(np.unique(got, return_inverse=True)[1].ravel(), want)
    chain = np.arange(63)  # a path 63 edges long, numbered backwards: labels must travel the whole way
    assert (_components(64, chain[::-1] + 1, chain[::-1]) == 0).all()


def test_stage_times_cover_each_stage_once_a_frame_and_add_up_to_the_call(frames_dir):
    """``stage_times`` (what ``embodied bench perception`` reports per stage) holds one entry per frame for
    each stage of the grouper path, and together they are the call's time but for a little bookkeeping;
    off (None, the default) it records nothing."""
    import time

    segment = LearnedSegmenter(SHIPPED)
    frames = load_frames(frames_dir, segment.classes)
    K, X = frames.camera(0)
    rgb, depth = frames.rgb[0], frames.depth[0].astype(np.float32)
    camera = frames.frames[0]["camera"]
    assert segment.stage_times is None
    segment(rgb, depth, K, X, camera)
    assert segment.stage_times is None
    segment.stage_times = {}
    calls = []
    for _ in range(4):
        start = time.perf_counter()
        segment(rgb, depth, K, X, camera)
        calls.append((time.perf_counter() - start) * 1e3)
    stages = segment.stage_times
    segment.stage_times = None
    assert list(stages) == ["clean", "network", "regions", "graph", "grouper", "assemble"]
    assert all(len(ms) == 4 and min(ms) > 0 for ms in stages.values())
    summed = [sum(ms[i] for ms in stages.values()) for i in range(4)]
    assert all(s <= call for s, call in zip(summed, calls))  # the stages lie inside the call
    # what they leave out is bookkeeping (the median, so one preemption under load cannot decide it)
    assert np.median(np.subtract(calls, summed)) < max(1.0, 0.2 * np.median(calls))


def test_the_perception_bench_reports_the_learned_modes_stages(capsys):
    import json

    from embodied.cli.main import main

    assert main(["bench", "perception", "--task", "ShellGame", "--frames", "2", "--mode", "masks", "--mode",
                 "learned", "--json"]) == 0
    rows = {r["mode"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["masks"]["stages_ms"] is None
    stages = rows["learned"]["stages_ms"]
    assert list(stages) == ["clean", "network", "regions", "graph", "grouper", "assemble"]
    assert 0 < sum(stages.values()) <= rows["learned"]["segment_ms"] * 1.5
