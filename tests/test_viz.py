"""``embodied viz``: a page built from a real recorded run, checked in headless Chromium."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest

from embodied.data.recording import load_recording
from embodied.cli.main import main
from embodied.viz.browser import find_chromium, open_page, show_stop, trace_points
from embodied.viz.html import _plotly_js, register_lazily

CHROMIUM = find_chromium()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium binary (tools/setup.sh installs Debian's)")


@pytest.fixture(scope="module")
def page_file(tmp_path_factory):
    """A short PutBlockBack expert episode, recorded and turned into a page."""
    root = tmp_path_factory.mktemp("viz")
    rec = root / "rec"
    argv = ["run", "--task", "PutBlockBack", "--episodes", "1", "--option", "delay=2", "--image-size", "64",
            "--record", str(rec), "--keyframe-every", "15", "--json"]
    assert main(argv) == 0
    out = root / "page.html"
    assert main(["viz", str(rec), "-o", str(out), "--json"]) == 0
    return rec, out


def test_page_is_one_offline_file(page_file, capsys):
    _, out = page_file
    text = out.read_text(encoding="utf-8")
    assert out.stat().st_size < 20 * 2**20
    assert "__embodiedLazy" in text  # plotly.js is inlined (trimmed registration, see html.py)
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", text)  # nothing loaded from elsewhere
    data = json.loads(re.search(r'<script id="timeline" type="application/json">(.*?)</script>', text, re.DOTALL).group(1))
    assert data["frames"] and data["keyframes"] and data["events"]
    assert data["plan"] is None  # an expert writes no plan.json; the page is built without one
    assert any(n["label"].endswith("block") for n in data["nodes"].values())


def test_plotly_registration_is_trimmed_or_left_alone():
    from plotly.offline import get_plotlyjs

    bundle = _plotly_js()
    if int(__import__("plotly").__version__.split(".")[0]) >= 7:  # the esbuild bundle shape html.py knows
        assert '__embodiedLazy={"scatter3d":' in bundle and ".register([]))" in bundle
        assert len(get_plotlyjs()) - len(bundle) < 2000  # only the registration call changed
    else:
        assert bundle == get_plotlyjs()
    assert register_lazily("var x=1;", ("scatter3d",)) is None  # unknown shape: caller keeps the full bundle


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("no Chromium binary at /usr/bin/chromium (tools/setup.sh installs Debian's chromium)")
    from embodied.viz.browser import chromium

    with chromium(CHROMIUM) as b:
        yield b


def _block_stop(rec_dir) -> tuple[str, int, int]:
    """The block's id, a stop where it stands at its start and the stop where it is farthest away."""
    rec = load_recording(rec_dir)
    from embodied.viz.build import build_timeline

    timeline = build_timeline(rec)
    block = rec.memory.find(cls="block")[0]
    where = [np.asarray(f.nodes[block].position) if block in f.nodes else None for f in timeline.frames]
    first = next(k for k, p in enumerate(where) if p is not None)
    far = int(np.argmax([np.linalg.norm(p - where[first]) if p is not None else 0 for p in where]))
    return block, first, far


def _slide_to(page, index: int) -> None:
    """Move the slider the way a user does (value + input event) and wait for the redraw."""
    page.evaluate(
        "(i) => { const s = document.getElementById('slider'); s.value = String(i);"
        " s.dispatchEvent(new Event('input', {bubbles: true})); }",
        index,
    )
    page.wait_for_function("(i) => document.getElementById('graph').dataset.drawn === String(i)", arg=index)


@needs_chromium
def test_page_draws_and_the_slider_moves_time(page_file, browser):
    rec, out = page_file
    block, first, far = _block_stop(rec)
    page = open_page(browser, out)
    try:
        assert page.errors == [] and [u for u in page.requests if not u.startswith(("file:", "data:"))] == []
        assert 0 < page.evaluate("window.__ready_ms") < 20_000
        shot = np.asarray(__import__("PIL.Image", fromlist=["Image"]).open(io.BytesIO(page.screenshot())))
        assert shot[..., :3].std() > 20  # not a blank page
        _slide_to(page, first)
        before = trace_points(page, "seen")
        events_before = page.locator("#events li").count()
        kf_before = page.get_attribute("#keyframes img", "src")
        _slide_to(page, far)
        after = trace_points(page, "seen")
        assert block in before["ids"] and block in after["ids"]
        p0 = np.asarray(before["world"][before["ids"].index(block)])
        p1 = np.asarray(after["world"][after["ids"].index(block)])
        assert np.linalg.norm(p1 - p0) > 0.03  # the block was carried off its start pose
        i0, i1 = before["ids"].index(block), after["ids"].index(block)
        assert (before["x"][i0], before["y"][i0]) != (after["x"][i1], after["y"][i1])  # drawn elsewhere too
        assert page.locator("#events li").count() > events_before
        assert page.get_attribute("#keyframes img", "src") != kf_before
        t_label = int(page.inner_text("#tlabel"))
        assert t_label > 0
    finally:
        page.close()


@needs_chromium
def test_clicking_an_object_shows_its_history(page_file, browser):
    rec, out = page_file
    block, _, far = _block_stop(rec)
    page = open_page(browser, out)
    try:
        show_stop(page, far)
        # Where plotly drew the block, in page pixels.
        x, y = page.evaluate(
            """(id) => {
                const gd = document.getElementById('graph');
                const t = gd.data.find((d) => d.name === 'seen');
                const i = t.customdata.findIndex((c) => c[0] === id);
                const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
                return [box.left + xa._offset + xa.d2p(t.x[i]), box.top + ya._offset + ya.d2p(t.y[i])];
            }""",
            block,
        )
        page.mouse.click(x, y)
        page.wait_for_function("document.getElementById('history').textContent.includes('block')")
        history = page.inner_text("#history")
        assert block in history and "moved" in history and "grasp" in history
        assert trace_points(page, "history: " + page.inner_text("#history b"))["x"]  # its path is drawn
    finally:
        page.close()


@needs_chromium
def test_webgl_view_shows_the_same_graph(page_file, browser):
    _, out = page_file
    page = open_page(browser, out)
    try:
        flat = trace_points(page, "seen")
        page.evaluate("window.__viewer.setMode(true)")
        page.wait_for_function("document.getElementById('graph').data[0].type === 'scatter3d'")
        gl = trace_points(page, "seen")
        assert gl["ids"] == flat["ids"] and gl["world"] == flat["world"]
        assert page.errors == []
    finally:
        page.close()


@needs_chromium
def test_bench_viz_small(browser, tmp_path):
    from embodied.viz.bench import bench_viz

    result = bench_viz(steps=300, objects=10, keyframes=20, runs=1, keep=str(tmp_path), chrome=browser)
    assert result["page_mb"] < 20 and result["ready_ms"] > 0 and result["page_errors"] == []
    assert result["stops"] <= 300 and result["keyframes_in_page"] == 20
    assert result["network_requests"] == []
