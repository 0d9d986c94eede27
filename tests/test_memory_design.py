"""The memory's design, checked: class names only in the affordance table, a component per file of at most
300 lines and 4,500 in all, every knob in a configuration dataclass, no episode seed in the code."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from embodied.memory.affordances import KINDS, TABLE, affords
from embodied.memory.config import RULES, DetectorProfile, MemoryConfig

ROOT = Path(__file__).resolve().parents[1]
MEMORY = ROOT / "embodied" / "memory"


def _task_labels() -> set[str]:
    """Every class any task's detector vocabulary holds."""
    import gymnasium as gym

    import embodied  # noqa: F401
    from embodied.tasks import TASKS

    labels: set[str] = set()
    for name in TASKS:
        env = gym.make(f"embodied/{name}", images=False)
        labels |= set(env.unwrapped.labels.values())
        env.close()
    return labels


def _string_literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string constant of a module that is not a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_no_memory_module_holds_a_class_name_outside_the_affordance_table():
    names = (set(TABLE) | _task_labels()) - set(KINDS)  # "room" and "agent" are node kinds too
    found = [f"{path.name}:{line} {text!r}" for path in sorted(MEMORY.glob("*.py")) if path.name != "affordances.py"
             for line, text in _string_literals(path) if text in names]
    assert not found, "class names outside embodied/memory/affordances.py:\n" + "\n".join(found)


def test_the_literal_check_finds_a_class_name(tmp_path):
    """The check above can fail: a module naming a class is caught."""
    module = tmp_path / "rule.py"
    module.write_text('"""doc naming a button is fine"""\nSKIP = ("button",)\n', encoding="utf-8")
    assert [text for _, text in _string_literals(module)] == ["button"]


def test_memory_is_small_and_split_along_its_components():
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in MEMORY.rglob("*.py")}
    assert max(sizes.values()) <= 300, {k: v for k, v in sizes.items() if v > 300}
    assert sum(sizes.values()) <= 4500, sum(sizes.values())


def test_no_code_cites_an_episode_seed():
    """Stories of single episodes belong in the docs: no task name followed by a seed in embodied/ or
    policies/ (the protocol's split bases are constants, not citations)."""
    cite = re.compile(r"\b[A-Z][A-Za-z]+(-v0)? [4-9]\d{5}\b")
    found = [f"{p.relative_to(ROOT)}:{k + 1}" for folder in ("embodied", "policies") for p in (ROOT / folder).rglob("*.py")
             for k, line in enumerate(p.read_text(encoding="utf-8").splitlines()) if cite.search(line)]
    assert not found, found


def test_every_knob_has_its_unit_and_why():
    """Each knob of each component's dataclass has a comment on its line or the lines before (its unit and
    why), the way config.py writes them."""
    source = [line for name in ("config.py", "profiles.py")
              for line in (MEMORY / name).read_text(encoding="utf-8").splitlines()]
    sections = [f.default_factory for f in dataclasses.fields(MemoryConfig) if f.name != "off"]
    for section in sections:
        for f in dataclasses.fields(section):
            line = next(k for k, text in enumerate(source) if re.match(rf"\s+{f.name}: ", text))
            commented = "#" in source[line] or source[line - 1].strip().startswith("#")
            assert commented, f"{section.__name__}.{f.name} has no comment"


def test_detector_profiles_replace_the_per_detector_switches():
    masks, learned, geometric = (DetectorProfile.of(n) for n in ("masks", "learned", "geometric"))
    assert not masks.class_votes and learned.class_votes and not geometric.strict_class
    assert masks.min_sightings == 1 and learned.min_sightings == geometric.min_sightings == 3
    assert MemoryConfig.for_detector("learned", object_pieces=False).detector.object_pieces is False
    with pytest.raises(ValueError, match="unknown detector"):
        DetectorProfile.of("lidar")


def test_rules_are_named_switches_and_a_wrong_name_is_refused():
    MemoryConfig(off=tuple(RULES)).validate()
    with pytest.raises(ValueError, match="unknown rule 'lit'"):
        MemoryConfig(off=("lit",)).validate()


def test_unknown_labels_are_plain_graspable_objects():
    assert affords("teapot") == affords("block")
    assert affords("button").pressable and affords("button").anchored
    assert affords("drawer").prismatic and not affords("drawer").anchored
