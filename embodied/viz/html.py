"""Write a ``Timeline`` as one self-contained, offline HTML page.

plotly.js comes from the installed ``plotly`` package and is inlined, so the
page fetches nothing from the network.

The full bundle registers ~47 trace types when it loads: more than half its
start-up time (1.2 s of 2.2 s on a 2-core CI machine). The viewer's default
view is a projected 3D view made of plain ``scatter`` traces (part of
plotly's core), and its WebGL view needs only ``scatter3d``. So
``_plotly_js`` registers no trace type at load and leaves ``scatter3d``'s
initialiser on ``Plotly.__embodiedLazy`` for the page to register when the
WebGL view is first asked for. Every module stays in the file; unused ones
are never initialised. If the bundle does not have the expected shape
(another plotly release), the full bundle is used unchanged and the page
finds ``scatter3d`` already registered.
"""

from __future__ import annotations

import html
import json
import os
import re
import tempfile
from functools import lru_cache
from importlib import resources
from pathlib import Path

from embodied.viz.timeline import Timeline


def _asset(name: str) -> str:
    return resources.files("embodied.viz").joinpath("assets", name).read_text(encoding="utf-8")


VIEWER_TRACES = ("scatter3d",)


@lru_cache(maxsize=2)
def _plotly_js(traces: tuple[str, ...] | None = VIEWER_TRACES) -> str:
    try:
        from plotly.offline import get_plotlyjs
    except ImportError as exc:  # pragma: no cover - plotly is a viz dependency
        raise RuntimeError("the viewer needs plotly: pip install 'embodied[viz]'") from exc
    full = get_plotlyjs()
    if not traces:
        return full
    trimmed = register_lazily(full, traces)
    return full if trimmed is None else trimmed


def register_lazily(bundle: str, traces: tuple[str, ...]) -> str | None:
    """The bundle registering no trace type at load, with ``traces``' initialisers on
    ``Plotly.__embodiedLazy[name]``; None if the bundle's shape is not recognised.

    The bundle (esbuild) defines each module as ``var M=W((e,t)=>{...})``,
    a lazy wrapper run on first call, and ends with one
    ``P.register([A(),B(),...])`` listing every trace. A trace's module holds
    ``moduleType:"trace",name:"<name>"``; the list names it directly or
    through a one-line re-export ``var A=W((e,t)=>{"use strict";t.exports=M()})``.
    """
    found = list(re.finditer(r"(\w+)\.register\(\[((?:[\w$]+\(\),)*[\w$]+\(\))\]\)", bundle))
    if len(found) != 1:
        return None
    register = found[0]
    listed = [c[:-2] for c in register.group(2).split(",")]
    first = re.search(r"var " + re.escape(listed[0]) + r"=([\w$]+)\(\(", bundle)
    if first is None:
        return None
    wrap = re.escape(first.group(1))
    keep = []
    for name in traces:
        marker = f'moduleType:"trace",name:"{name}"'
        at = bundle.find(marker)
        if at < 0 or bundle.find(marker, at + 1) >= 0:
            return None
        # Modules are not nested: the nearest definition before the marker encloses it.
        defs = list(re.finditer(r"var ([\w$]+)=" + wrap + r"\(\(", bundle[:at]))
        if not defs:
            return None
        module = defs[-1].group(1)
        if module not in listed:
            again = re.search(
                r"var ([\w$]+)=" + wrap + r"\(\([\w$]+,([\w$]+)\)=>\{\"use strict\";\2\.exports="
                + re.escape(module) + r"\(\)\}\)",
                bundle,
            )
            if again is None or again.group(1) not in listed:
                return None
            module = again.group(1)
        keep.append(f"{json.dumps(name)}:{module}")
    plotly = register.group(1)
    call = f"({plotly}.__embodiedLazy={{{','.join(keep)}}},{plotly}.register([]))"
    return bundle[: register.start()] + call + bundle[register.end() :]


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
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)  # mkstemp makes 0600; the page is meant to be shared
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
