"""Write a ``Timeline`` as one self-contained, offline HTML page.

plotly.js comes from the installed ``plotly`` package and is inlined, so the
page fetches nothing from the network.
"""

from __future__ import annotations

import html
import json
import os
import tempfile
from importlib import resources
from pathlib import Path

from embodied.viz.timeline import Timeline


def _asset(name: str) -> str:
    return resources.files("embodied.viz").joinpath("assets", name).read_text(encoding="utf-8")


def _plotly_js() -> str:
    try:
        from plotly.offline import get_plotlyjs
    except ImportError as exc:  # pragma: no cover - plotly is a viz dependency
        raise RuntimeError("the viewer needs plotly: pip install 'embodied[viz]'") from exc
    return get_plotlyjs()


def render_page(timeline: Timeline) -> str:
    # "</" inside inline JSON would close the script element early.
    data = json.dumps(timeline.to_json(), separators=(",", ":")).replace("</", "<\\/")
    page = _asset("page.html")
    page = page.replace("__TITLE__", html.escape(timeline.title))
    # Insert the big pieces last, so nothing inside them gets substituted.
    app, plotly = _asset("app.js"), _plotly_js()
    before, _, after = page.partition("__PLOTLY__")
    page = before + "\x00PLOTLY\x00" + after
    page = page.replace("__DATA__", "\x00DATA\x00").replace("__APP__", "\x00APP\x00")
    return page.replace("\x00DATA\x00", data).replace("\x00APP\x00", app).replace("\x00PLOTLY\x00", plotly)


def write_page(timeline: Timeline, path: str | os.PathLike) -> Path:
    """Write the page atomically (temp file, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = render_page(timeline)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
