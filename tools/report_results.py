"""Rewrite the measured tables of docs/results.md (and perception.md, learned-policy.md, benchmark.md) from JSON.

    python3 tools/report_results.py [--measure DIR] [--agent DIR] [--drift DIR] [--perception DIR]
                                    [--memory-policies DIR] [--benchmark DIR] [--check] [--docs DIR]

Each generated table sits in its page between two lines,

    <!-- generated: NAME (python3 tools/report_results.py --FLAG DIR) -->
    ...
    <!-- end generated -->

and is rewritten from the folder given for its flag by the reporter that prints it (imported, not run):

    --measure DIR          tools/measure.sh's JSON, tools/report.py           docs/results.md
    --agent DIR            tools/measure_agent.sh's, tools/report_agent.py     docs/results.md
    --drift DIR            tools/measure_drift.sh's (DIR/all/drift.json or DIR/drift.json),
                           ``table`` of embodied/cli/drift_cmds.py             docs/results.md
    --perception DIR       tools/measure_perception.sh's, tools/report_perception.py    docs/perception.md
    --memory-policies DIR  tools/reproduce_memory_policies.sh's eval*.json,
                           tools/report_memory_policies.py (the results table)          docs/learned-policy.md
    --benchmark DIR        a folder of ``embodied benchmark --out`` runs (runs/bench21): each section merges
                           the runs it names (later runs' cells replace earlier ones), the leaderboard's
                           table of one policy (embodied/eval/leaderboard.py)   docs/benchmark.md

Sections whose flag is not given keep their text; so does a section whose input the folder lacks (a partial
run), but a folder that feeds none of its sections, or a reporter failing on it, is an error naming it. The
tool prints every section as regenerated (changed or unchanged) or kept. ``--check`` writes nothing and exits
1 when a regenerated section differs from the page (a stale table); errors exit 2. Pages are written
atomically (a temp file renamed over the page). ``--docs DIR``: the folder of the pages (default: docs/).
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "tools"
if str(ROOT) not in sys.path:  # run as ``python3 tools/report_results.py`` from a checkout
    sys.path.insert(0, str(ROOT))

BEGIN = re.compile(r"<!-- generated: (?P<name>[A-Za-z0-9_.-]+) \((?P<command>.+)\) -->")
END = "<!-- end generated -->"
FLAGS = ("measure", "agent", "drift", "perception", "memory-policies", "benchmark")


class ReportError(Exception):
    """A marker, a folder or a reporter the tool cannot use: the message names it."""


_modules: dict[str, object] = {}


def _tool(name: str):
    """tools/NAME.py as a module (tools/ is no package)."""
    if name not in _modules:
        spec = importlib.util.spec_from_file_location(f"_report_results_{name}", TOOLS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        _modules[name] = module
    return _modules[name]


def _lines(text_or_lines) -> str | None:
    """Reporter output (a list of lines or a string) as text; None when it printed nothing (no input)."""
    if not text_or_lines:
        return None
    return text_or_lines if isinstance(text_or_lines, str) else "\n".join(text_or_lines)


# --- one render function per section: folder -> markdown, or None when the folder lacks its input -------------

def _measure(function: str) -> Callable[[Path], str | None]:
    return lambda folder: _lines(getattr(_tool("report"), function)(folder))


def _agent(folder: Path) -> str | None:
    if not any(folder.glob("ablate_*.json")):
        return None
    return _tool("report_agent").markdown(folder)


def _drift(folder: Path) -> str | None:
    path = next((p for p in (folder / "drift.json", folder / "all" / "drift.json") if p.exists()), None)
    if path is None:
        return None
    from embodied.cli.drift_cmds import table

    return table(json.loads(path.read_text())["summary"])


def _perception_quality(index: int) -> Callable[[Path], str | None]:
    def render(folder: Path) -> str | None:
        report = _tool("report_perception")
        name, title = report.QUALITY[index]
        result = report._load(folder / name)
        return report.quality(result, title) if result else None

    return render


def _perception_steps(folder: Path) -> str | None:
    return _tool("report_perception").steps(folder)


def _perception_speed(folder: Path) -> str | None:
    report = _tool("report_perception")
    rows = report._load(folder / "bench_perception.json")
    return report.speed(rows) if rows else None


def _perception_agent(folder: Path) -> str | None:
    report = _tool("report_perception")
    runs = report.agent_runs(folder)
    return report.agent(runs) if runs else None


def _memory_policies(folder: Path) -> str | None:
    report = _tool("report_memory_policies")
    rows, order = report.merge([folder])
    return report.table_markdown(rows, order) if rows else None


def _benchmark(policy: str, runs: tuple[str, ...]) -> Callable[[Path], str | None]:
    """The leaderboard table of ``policy`` merged over the benchmark runs ``runs`` (tools/report_benchmark.py)."""

    def render(folder: Path) -> str | None:
        try:
            return _tool("report_benchmark").merged_table(folder, policy, runs)
        except ValueError as exc:
            raise ReportError(str(exc)) from None

    return render


@dataclass(frozen=True)
class Section:
    name: str  # the marker's NAME
    flag: str  # the option whose folder feeds it
    page: str  # the page under --docs
    reads: str  # its input, for messages
    render: Callable[[Path], str | None]


SECTIONS = (
    Section("agent-ablation", "agent", "results.md", "ablate_*.json (+ delay10_*, extra*_)", _agent),
    Section("experts-baselines", "measure", "results.md", "run_*_expert.json (+ _memoryless, _random)",
            _measure("runs_table")),
    Section("drift", "drift", "results.md", "all/drift.json or drift.json", _drift),
    Section("memory-recall", "measure", "results.md", "eval_memory_masks.json (+ eval_memory_geometric.json)",
            _measure("eval_table")),
    Section("environment-speed", "measure", "results.md", "bench_env.json", _measure("env_table")),
    Section("memory-speed", "measure", "results.md", "bench_memory.json", _measure("memory_bench_lines")),
    Section("viewer", "measure", "results.md", "bench_viz.json", _measure("viz_line")),
    Section("perception-quality", "perception", "perception.md", "eval_shipped.json", _perception_quality(0)),
    Section("perception-quality-randomized", "perception", "perception.md", "eval_shipped_vis.json",
            _perception_quality(1)),
    Section("perception-steps", "perception", "perception.md", "eval_{network_only,no_classifier,no_proposals}*.json",
            _perception_steps),
    Section("perception-speed", "perception", "perception.md", "bench_perception.json", _perception_speed),
    Section("perception-agent", "perception", "perception.md", "agent_{masks,learned,learned_visual}.json",
            _perception_agent),
    Section("memory-policies", "memory-policies", "learned-policy.md", "eval*.json", _memory_policies),
    Section("benchmark-agent-protocol", "benchmark", "benchmark.md", "agent50_{manip,nav}_*",
            _benchmark("agent", ("agent50_manip_easy", "agent50_manip_medium", "agent50_manip_medium2",
                                 "agent50_nav_easy", "agent50_nav_medium", "agent50_vanish"))),
    Section("benchmark-agent-test", "benchmark", "benchmark.md",
            "protocol_agent_em, protocol_agent_rooms, protocol_agent_vanish, protocol_agent_drawer",
            _benchmark("agent", ("protocol_agent_em", "protocol_agent_rooms", "protocol_agent_vanish",
                                 "protocol_agent_drawer"))),
    Section("benchmark-agent-dev", "benchmark", "benchmark.md",
            "agent_dev, agent_dev_new, agent_dev_fix, agent_dev_nav, agent_dev_nav_first, agent_dev_nav_loc, "
            "agent_dev_nav_first2, agent_dev_first2",
            _benchmark("agent", ("agent_dev", "agent_dev_new", "agent_dev_fix", "agent_dev_nav", "agent_dev_nav_first",
                                 "agent_dev_nav_loc", "agent_dev_nav_first2", "agent_dev_first2"))),
    Section("benchmark-memoryless", "benchmark", "benchmark.md", "protocol_experts, ml_stash",
            _benchmark("memoryless", ("protocol_experts", "ml_stash"))),
    Section("benchmark-memoryless-nav", "benchmark", "benchmark.md", "ml_nav_tiers",
            _benchmark("memoryless", ("ml_nav_tiers",))),
    Section("benchmark-memoryless-rearrange", "benchmark", "benchmark.md", "ml_rearrange_tiers",
            _benchmark("memoryless", ("ml_rearrange_tiers",))),
    Section("benchmark-wiped", "benchmark", "benchmark.md", "wiped_manip, wiped_nav, wiped_rearrange",
            _benchmark("agent:wiped", ("wiped_manip", "wiped_nav", "wiped_rearrange"))),
    Section("benchmark-wiped-tiers", "benchmark", "benchmark.md", "wiped_tiers_{manip,nav_m,nav,nav_x}, wiped50_*",
            _benchmark("agent:wiped", ("wiped_tiers_manip", "wiped_tiers_nav_m", "wiped_tiers_nav", "wiped_tiers_nav_x",
                                       "wiped50_nav_hard"))),
)
BY_NAME = {s.name: s for s in SECTIONS}


@dataclass
class Block:
    """One marked section of a page: lines[begin] is its opening marker, lines[end] its closing one."""
    name: str
    begin: int
    end: int


def parse(page: Path, lines: list[str]) -> dict[str, Block]:
    """The marked sections of ``page``; ReportError on a malformed, unknown, duplicated or unclosed marker."""
    blocks: dict[str, Block] = {}
    open_block: Block | None = None
    for i, line in enumerate(lines):
        text = line.strip()
        where = f"{page}:{i + 1}"
        if text.startswith("<!-- generated"):
            found = BEGIN.fullmatch(text)
            if not found:
                raise ReportError(f"{where}: malformed marker {text!r} (expected "
                                  "'<!-- generated: NAME (python3 tools/report_results.py --FLAG DIR) -->')")
            name = found["name"]
            if open_block is not None:
                raise ReportError(f"{where}: marker {name!r} opens inside {open_block.name!r} "
                                  f"(opened at line {open_block.begin + 1}, not closed by '{END}')")
            section = BY_NAME.get(name)
            if section is None:
                raise ReportError(f"{where}: unknown marker {name!r} (known: {', '.join(BY_NAME)})")
            if section.page != page.name:
                raise ReportError(f"{where}: marker {name!r} belongs in {section.page}, not {page.name}")
            if f"--{section.flag} " not in found["command"] + " ":
                raise ReportError(f"{where}: marker {name!r} names the command {found['command']!r}; "
                                  f"its section is regenerated with --{section.flag}")
            if name in blocks:
                raise ReportError(f"{where}: marker {name!r} appears twice (first at line {blocks[name].begin + 1})")
            open_block = Block(name, i, -1)
        elif text.startswith("<!-- end generated"):
            if text != END:
                raise ReportError(f"{where}: malformed marker {text!r} (expected '{END}')")
            if open_block is None:
                raise ReportError(f"{where}: '{END}' without an opening '<!-- generated: ... -->' marker")
            open_block.end = i
            blocks[open_block.name] = open_block
            open_block = None
    if open_block is not None:
        raise ReportError(f"{page}:{open_block.begin + 1}: marker {open_block.name!r} is never closed by '{END}'")
    return blocks


def body(text: str) -> list[str]:
    """A section's lines between its markers: a blank line, the reporter's text, a blank line."""
    return ["\n", *(line + "\n" for line in text.strip("\n").split("\n")), "\n"]


def write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run(folders: dict[str, Path], docs: Path, check: bool = False, out=None) -> int:
    """Regenerate the sections of the flags in ``folders``; 0, or 1 with ``check`` when one is stale.
    Raises ReportError (nothing written) on a bad marker, folder or reporter."""
    out = out or sys.stdout
    for flag, folder in folders.items():
        if not folder.is_dir():
            raise ReportError(f"--{flag} {folder}: not a folder")
    wanted_pages = {s.page for s in SECTIONS if s.flag in folders}
    pages: dict[str, list[str]] = {}
    blocks: dict[str, dict[str, Block]] = {}
    for name in dict.fromkeys(s.page for s in SECTIONS):
        path = docs / name
        if not path.exists():
            if name in wanted_pages:
                raise ReportError(f"{path}: no such page (its sections: "
                                  f"{', '.join(s.name for s in SECTIONS if s.page == name)})")
            continue
        pages[name] = path.read_text(encoding="utf-8").splitlines(keepends=True)
        blocks[name] = parse(path, pages[name])
        missing = [s.name for s in SECTIONS if s.page == name and s.name not in blocks[name]]
        if missing:
            raise ReportError(f"{path}: no marker for section(s) {', '.join(missing)} "
                              f"(expected '<!-- generated: NAME (python3 tools/report_results.py --FLAG DIR) -->')")

    # Render everything first: a failing reporter stops the run before any page is written.
    rendered: dict[str, str] = {}
    status: list[tuple[str, Section, str]] = []
    for flag, folder in folders.items():
        produced = 0
        for section in (s for s in SECTIONS if s.flag == flag):
            try:
                text = section.render(folder)
            except ReportError as exc:
                raise ReportError(f"section {section.name} (--{flag} {folder}): {exc}") from None
            except (Exception, SystemExit) as exc:  # noqa: BLE001 -- any reporter failure, named
                raise ReportError(f"section {section.name} (--{flag} {folder}): the reporter failed: "
                                  f"{type(exc).__name__}: {exc}") from None
            if text is None:
                status.append(("kept", section, f"no {section.reads} in {folder}"))
                continue
            rendered[section.name] = text
            produced += 1
        if not produced:
            reads = "; ".join(f"{s.name}: {s.reads}" for s in SECTIONS if s.flag == flag)
            raise ReportError(f"--{flag} {folder}: feeds none of its sections (looked for {reads})")

    stale: list[tuple[Section, list[str], list[str]]] = []
    new_pages = {name: list(lines) for name, lines in pages.items()}
    # Bottom-up per page, so earlier blocks' line numbers stay valid.
    for section in sorted((BY_NAME[n] for n in rendered), key=lambda s: (s.page, -blocks[s.page][s.name].begin)):
        block = blocks[section.page][section.name]
        old = new_pages[section.page][block.begin + 1:block.end]
        new = body(rendered[section.name])
        changed = old != new
        if changed:
            stale.append((section, old, new))
            new_pages[section.page][block.begin + 1:block.end] = new
        verb = ("stale" if changed else "up to date") if check else ("regenerated" if changed else "unchanged")
        status.append((verb, section, f"from --{section.flag} {folders[section.flag]}"))
    for section in SECTIONS:
        if section.flag not in folders and section.page in pages:
            status.append(("kept", section, f"no --{section.flag}"))

    order = {s.name: i for i, s in enumerate(SECTIONS)}
    for verb, section, why in sorted(status, key=lambda t: order[t[1].name]):
        print(f"{verb:<11} {section.name:<30} {section.page:<18} {why}", file=out)
    if check:
        for section, old, new in sorted(stale, key=lambda t: order[t[0].name]):
            diff = list(difflib.unified_diff(old, new, f"{section.page} [{section.name}]", "regenerated", n=1))
            print("".join(diff[:60]) + (f"... ({len(diff) - 60} more diff lines)\n" if len(diff) > 60 else ""),
                  end="", file=out)
        return 1 if stale else 0
    for name, lines in new_pages.items():
        if lines != pages[name]:
            write_atomic(docs / name, "".join(lines))
            print(f"wrote {docs / name}", file=out)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--measure", type=Path, help="tools/measure.sh's output (out/measure)")
    parser.add_argument("--agent", type=Path, help="tools/measure_agent.sh's output (out/agent)")
    parser.add_argument("--drift", type=Path, help="tools/measure_drift.sh's output (out/drift)")
    parser.add_argument("--perception", type=Path, help="tools/measure_perception.sh's output (runs/seg)")
    parser.add_argument("--memory-policies", type=Path, help="tools/reproduce_memory_policies.sh's (runs/memory)")
    parser.add_argument("--benchmark", type=Path, help="a folder of embodied benchmark runs (runs/bench21)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a regenerated table differs")
    parser.add_argument("--docs", type=Path, default=ROOT / "docs", help="the folder of the pages (default docs/)")
    args = parser.parse_args(argv)
    folders = {flag: getattr(args, flag.replace("-", "_")) for flag in FLAGS}
    folders = {flag: folder for flag, folder in folders.items() if folder is not None}
    try:
        return run(folders, args.docs, check=args.check)
    except ReportError as exc:
        print(f"report_results: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
