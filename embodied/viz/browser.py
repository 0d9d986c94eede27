"""Open a viewer page in headless Chromium (Playwright): time to interactive, what is drawn.

Used by ``embodied bench viz`` and the browser tests. Playwright's own
browser downloads are not needed: the system Chromium (Debian's ``chromium``
package, see tools/setup.sh) is launched directly.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


def find_chromium() -> str | None:
    """Path of a Chromium binary: $EMBODIED_CHROMIUM, the usual places, then $PATH."""
    env = os.environ.get("EMBODIED_CHROMIUM")
    if env and Path(env).is_file():
        return env
    for path in CHROMIUM_CANDIDATES:
        if Path(path).is_file():
            return path
    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextmanager
def chromium(executable: str | None = None):
    """A headless Chromium browser (closed on exit)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise RuntimeError("the browser check needs playwright: pip install 'embodied[dev]'") from exc
    executable = executable or find_chromium()
    if executable is None:
        raise RuntimeError("no Chromium found (install Debian's chromium package: tools/setup.sh)")
    with sync_playwright() as p:
        # --no-sandbox: containers and CI run as root; swiftshader: WebGL (plotly's 3D) without a GPU.
        browser = p.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--enable-unsafe-swiftshader"]
        )
        try:
            yield browser
        finally:
            browser.close()


def open_page(browser, path: str | os.PathLike, timeout_ms: int = 60_000, size=(1280, 800)):
    """Load the page from disk and wait until the viewer says it is interactive. Returns the page."""
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    page.goto(Path(path).resolve().as_uri(), wait_until="load", timeout=timeout_ms)
    try:
        page.wait_for_function("window.__ready_ms !== undefined", timeout=timeout_ms)
    except Exception as exc:
        raise RuntimeError(f"viewer page {path} never became ready; page errors: {errors}") from exc
    page.errors, page.requests = errors, requests
    return page


def trace_points(page, name: str) -> dict | None:
    """The trace called ``name`` as plotted: {"type", "x", "y", "ids", "world"}.

    Node traces carry customdata [id, x, y, z] (world metres) in both views,
    so ``world`` is comparable across views; ``x``/``y`` are screen
    coordinates in the projected view.
    """
    return page.evaluate(
        """(name) => {
            const t = document.getElementById('graph').data.find((d) => d.name === name);
            if (!t) return null;
            const c = Array.from(t.customdata || []);
            return {type: t.type, x: Array.from(t.x), y: Array.from(t.y),
                    ids: c.map((p) => Array.isArray(p) ? p[0] : p),
                    world: c.map((p) => Array.isArray(p) ? p.slice(1) : null)};
        }""",
        name,
    )


def show_stop(page, index: int) -> None:
    """Move the viewer to slider stop ``index`` and wait for the redraw."""
    page.evaluate("(i) => window.__viewer.show(i)", index)
    page.wait_for_function("(i) => document.getElementById('graph').dataset.drawn === String(i)", arg=index)


def load_metrics(browser, path: str | os.PathLike) -> dict:
    """Time to interactive (ms from navigation start, measured in the page) and what is drawn."""
    page = open_page(browser, path)
    try:
        metrics = page.evaluate(
            """() => ({ready_ms: window.__ready_ms, stops: window.__viewer.frames,
                       visible: Number(document.getElementById('graph').dataset.visibleNodes || 0),
                       local: location.protocol})"""
        )
        metrics["errors"] = list(page.errors)
        metrics["network_requests"] = [u for u in page.requests if not u.startswith(("file:", "data:"))]
        return metrics
    finally:
        page.close()
