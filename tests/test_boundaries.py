"""Layout boundaries: the agent side never imports the simulator side.

Every ``.py`` file under the agent-side folders is parsed with ``ast``; each
``import x`` and ``from x import y`` counts wherever it stands (module top,
inside functions, under ``if TYPE_CHECKING:``), relative imports are resolved
against the file's package, and ``importlib.import_module("x")`` /
``__import__("x")`` with a literal name count too.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SIMULATOR = ("embodied.tasks", "embodied.experts", "embodied.envs")


def module_name(path: Path) -> tuple[str, bool]:
    """Dotted module name of a file under the repository root, and whether it is a package (``__init__``)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


def _resolve(module: str | None, level: int, current: str, is_package: bool) -> str:
    if level == 0:
        return module or ""
    package = current.split(".") if is_package else current.split(".")[:-1]
    if level - 1 > len(package) - 1:
        raise ImportError(f"relative import beyond the top package in {current}")
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def imported_modules(source: str, current: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, module) for every import in ``source``, the module of ``current`` doing the importing.

    ``from x import y`` gives ``x.y`` (``y`` may be a submodule: ``from embodied import tasks``);
    ``from x import *`` gives ``x``.
    """
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node.module, node.level, current, is_package)
            for alias in node.names:
                out.append((node.lineno, base if alias.name == "*" else f"{base}.{alias.name}"))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                out.append((node.lineno, node.args[0].value))
    return sorted(out)


def _matches(module: str, forbidden: tuple[str, ...]) -> bool:
    return any(module == f or module.startswith(f + ".") for f in forbidden)


def violations_in(source: str, where: str, current: str, is_package: bool, forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{where}:{line} imports {module}"
        for line, module in imported_modules(source, current, is_package)
        if _matches(module, forbidden)
    ]


def python_files(folders: tuple[str, ...]) -> list[Path]:
    files = sorted(f for folder in folders for f in (ROOT / folder).rglob("*.py"))
    assert files, f"no Python files under {folders}: the layout moved, update this test"
    return files


def violations(folders: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    found = []
    for path in python_files(folders):
        current, is_package = module_name(path)
        source = path.read_text(encoding="utf-8")
        found += violations_in(source, str(path.relative_to(ROOT)), current, is_package, forbidden)
    return found


def _report(rule: str, found: list[str]) -> str:
    return f"{rule}:\n  " + "\n  ".join(found)


AGENT_SIDE = ("embodied/perception", "embodied/mapping", "embodied/memory", "embodied/planner", "embodied/agent")


def test_agent_side_never_imports_the_simulator():
    found = violations(AGENT_SIDE, SIMULATOR)
    assert not found, _report(
        "perception, memory, planner and agent must not import embodied.tasks/experts/envs "
        "(evaluation against the simulator goes in embodied/eval/)",
        found,
    )


def test_memory_never_imports_viz():
    found = violations(("embodied/memory",), ("embodied.viz",))
    assert not found, _report("embodied.memory must not import embodied.viz", found)


def test_policies_never_import_the_agent_memory_envs_or_tasks():
    found = violations(("policies",), ("embodied.agent", "embodied.memory", "embodied.envs", "embodied.tasks"))
    assert not found, _report(
        "policies/ must not import embodied.agent, embodied.memory, embodied.envs or embodied.tasks "
        "(the agent uses the heads, not the reverse; the learned navigate skill gets its route from the agent)",
        found,
    )


def test_the_viewer_never_imports_the_agent():
    found = violations(("embodied/viz",), ("embodied.agent",))
    assert not found, _report("embodied/viz reads recordings (embodied.data.recording), not the agent", found)


def runtime_imports(source: str, current: str, is_package: bool = False) -> list[tuple[int, str]]:
    """Like :func:`imported_modules`, without the bodies of ``if TYPE_CHECKING:`` (not run at import)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = [ast.Pass()]
    return imported_modules(ast.unparse(tree), current, is_package)


def import_graph(folders: tuple[str, ...]) -> dict[str, set[str]]:
    """module -> the project modules it imports at run time (an imported name resolves to its module)."""
    files = {module_name(p): p for p in python_files(folders)}
    modules = {name for name, _ in files}

    def owner(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    for (name, is_package), path in files.items():
        found = runtime_imports(path.read_text(encoding="utf-8"), name, is_package)
        graph[name] = {owner(m) for _, m in found if owner(m) and owner(m) != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    found = cycles(import_graph(("embodied", "policies")))
    assert not found, "modules that import each other (directly or around a loop):\n  " + "\n  ".join(
        " <-> ".join(c) for c in found)


def test_cycle_finder_finds_a_loop_and_skips_type_checking():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    lazy = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from x import y\ndef f():\n    import z\n"
    assert [m for _, m in runtime_imports(lazy, "m")] == ["typing.TYPE_CHECKING", "z"]


def _modules_loaded_by(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(done.stdout.split())


def test_importing_the_data_layer_loads_no_simulator():
    """Training code reads demonstrations without MuJoCo: the data layer, the recording format and the
    heads' training entry point load neither mujoco nor an env, task or expert module."""
    loaded = _modules_loaded_by("import embodied.data, embodied.data.reader, embodied.data.recording, policies.train")
    simulator = sorted(m for m in loaded if m == "mujoco" or m.startswith(("mujoco.", "embodied.envs",
                                                                             "embodied.experts", "embodied.tasks.")))
    assert not simulator, f"importing the data layer loaded the simulator: {simulator[:8]}"
    assert "embodied.data.reader" in loaded  # the statement ran



def test_the_command_starts_without_the_data_extra():
    """`embodied` (every subcommand's parser, the evaluation and benchmark ones too) loads none of the
    ``data`` extra's packages (PyAV, pandas, pyarrow) until a command records or reads a dataset: a base
    install runs `embodied tasks`. Evaluation had reached the video encoder through the recorder's worker
    helpers (now ``embodied.data.sessions``)."""
    loaded = _modules_loaded_by("import embodied.cli.main")
    extra = sorted(m for m in loaded if m.split(".")[0] in ("av", "pandas", "pyarrow"))
    assert not extra, f"the command's imports load the data extra: {extra[:8]}"
    assert "embodied.eval.distributed" in loaded  # the evaluation commands' module is in the chain

def test_walk_covers_the_agent_side():
    names = {module_name(p)[0] for p in python_files((*AGENT_SIDE, "policies"))}
    for expected in ("embodied.memory.memory", "embodied.perception", "embodied.agent.ride", "policies.base"):
        assert expected in names


BAD = """\
import numpy as np
from embodied.memory.config import MemoryConfig
from .tracks import Track
from . import spatial


def later():
    from ..tasks import get_task
    import embodied.envs.base as base
    return get_task, base


if TYPE_CHECKING:
    from embodied import experts, viz
    from embodied.tasksfoo import nothing
mod = importlib.import_module("embodied.envs.workcell")
"""


def test_checker_flags_violations():
    assert imported_modules(BAD, "embodied.memory.fake")[:4] == [
        (1, "numpy"),
        (2, "embodied.memory.config.MemoryConfig"),
        (3, "embodied.memory.tracks.Track"),
        (4, "embodied.memory.spatial"),
    ]
    found = violations_in(BAD, "embodied/memory/fake.py", "embodied.memory.fake", False, SIMULATOR)
    assert found == [
        "embodied/memory/fake.py:8 imports embodied.tasks.get_task",
        "embodied/memory/fake.py:9 imports embodied.envs.base",
        "embodied/memory/fake.py:14 imports embodied.experts",
        "embodied/memory/fake.py:16 imports embodied.envs.workcell",
    ]
    assert violations_in(BAD, "x.py", "embodied.memory.fake", False, ("embodied.viz",)) == [
        "x.py:14 imports embodied.viz"
    ]
    # In a package's __init__, "." is the package itself.
    assert imported_modules("from .tasks import X", "embodied", is_package=True) == [(1, "embodied.tasks.X")]
    assert imported_modules("from .. import tasks", "embodied.agent.ride") == [(1, "embodied.tasks")]
    clean = "from embodied.memory import SpatialMemory\nfrom .config import MemoryConfig\n"
    assert violations_in(clean, "y.py", "embodied.memory.z", False, SIMULATOR) == []
    with pytest.raises(ImportError):
        imported_modules("from ... import x", "embodied.memory")


def test_tasks_never_import_experts():
    found = violations(("embodied/tasks",), ("embodied.experts",))
    assert not found, _report(
        "embodied/tasks must not import embodied.experts (experts import tasks; the pairing is "
        "embodied/experts/registry.py)",
        found,
    )


def test_every_task_has_a_registered_expert():
    """Each registered task names an expert, and ``make_expert`` on the made env builds exactly that class."""
    import gymnasium as gym

    from embodied.experts import make_expert
    from embodied.experts.registry import EXPERTS, expert_class, task_name
    from embodied.tasks import TASKS

    assert set(TASKS) <= set(EXPERTS), f"tasks without an expert: {sorted(set(TASKS) - set(EXPERTS))}"
    assert set(EXPERTS) <= set(TASKS), f"experts for unknown tasks: {sorted(set(EXPERTS) - set(TASKS))}"
    for name, entry in TASKS.items():
        env = gym.make(entry.env_id, images=False)
        try:
            env.reset(seed=0)
            expert = make_expert(env)
            assert type(expert) is expert_class(name), name
            # The lookup goes by class, so an env built without gym.make (no spec) is found too.
            cls = entry.env_class()
            assert task_name(cls.__new__(cls)) == name
        finally:
            env.close()


def test_make_expert_errors_name_the_task(monkeypatch):
    """An env of no registered task, or a task without an expert, fails with the names that are registered."""
    import gymnasium as gym

    from embodied.experts import make_expert, registry
    from embodied.tasks.shell_game import ShellGame

    class NotATask(gym.Env):
        pass

    with pytest.raises(ValueError, match="NotATask is not a registered task; tasks with an expert: .*ShellGame-v0"):
        make_expert(NotATask())
    monkeypatch.delitem(registry.EXPERTS, "ShellGame-v0")
    with pytest.raises(ValueError, match="no scripted expert registered for task 'ShellGame-v0'; registered: .*GoAsTold"):
        registry.expert_class("ShellGame-v0")

    class Variant(ShellGame):  # a test's variant of a task counts as the task it derives from
        pass

    assert registry.task_name(Variant.__new__(Variant)) == "ShellGame-v0"
