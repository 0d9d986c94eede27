"""Saving and restoring a :class:`~embodied.agent.memory_agent.MemoryAgent`: the whole agent mid-episode, or
its memory for a new episode in the same place.

    agent.save("runs/agent")                        # a folder, written atomically
    agent = MemoryAgent.load("runs/agent")          # acts exactly as the saved agent would have, step by step
    agent.reset(seed=1); agent.resume_memory("runs/agent")   # day 2: same rooms, what moved is seen anew

The folder (never pickle; JSON for structure, safetensors for arrays):

    agent.json           format, version, labels (instance id -> class), the AgentConfig, the planner's
                         workspace, the body, the clock and counters, goal text and target colour, the plan,
                         done calls, current call and running skill, every skill's state, aim offsets, the
                         log and trace, the perception generator's state, the map's and localiser's
                         parameters, the decision log's rows
    memory.json          the SpatialMemory document (``SpatialMemory.load`` reads it alone; edges as they were)
    arrays.safetensors   every array, by prefix: ``memory.`` (tracks' voxel keys and visibility samples,
                         camera poses), ``freespace.`` (hits, free, visited grids), ``drift.`` (the
                         localiser's voxel map, corrections, per-frame poses), ``decisions.``

Each part saves itself through its own ``state()`` (``SpatialMemory``, ``FreeSpaceMap``, ``DriftFix``,
``DepthLocaliser``, ``VoxelMap``, the skills, ``Aim``, ``DecisionLog``); caches (the planning graph, KD-trees,
ray tables) are rebuilt from what is saved, as they were. A missing, corrupt or mistyped file raises
:class:`AgentStateError` (a ValueError) naming the file and the field. Learned skill heads and deciders are
not saved: ``load`` takes them again, and saving refuses while a skill without a ``state()`` is running.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load as load_arrays
from safetensors.numpy import save as save_arrays

from embodied.agent.decisions import DecisionLog
from embodied.agent.drift import DriftFix
from embodied.memory import MemoryConfig, SpatialMemory
from embodied.mapping.freespace import FreeSpaceMap
from embodied.mapping.localise import LocaliserConfig
from embodied.mapping.registration import VoxelMap
from embodied.agent.aim import AimConfig
from embodied.perception import PerceptionConfig
from embodied.planner.calls import SkillCall
from embodied.planner.grammar import parse
from embodied.planner.planner import Planner
from policies.config_json import config_from_dict

if TYPE_CHECKING:
    from embodied.agent.memory_agent import MemoryAgent

FORMAT, VERSION = "embodied.agent", 2
AGENT_FILE, MEMORY_FILE, ARRAYS_FILE = "agent.json", "memory.json", "arrays.safetensors"
# A resumed memory's clock jumps this many steps past its last frame (see SpatialMemory.start_episode).
EPISODE_GAP = 1000
NESTED = {"perception": PerceptionConfig, "memory": MemoryConfig, "aim": AimConfig, "localise": LocaliserConfig}


class AgentStateError(ValueError):
    """A saved agent that cannot be loaded: ``file`` and ``field`` say where."""

    def __init__(self, file: Path | str, field: str, problem: str):
        super().__init__(f"{file}: {field}: {problem}")
        self.file, self.field = str(file), field


# --- saving -----------------------------------------------------------------------------
def save_agent(agent: MemoryAgent, path: str | os.PathLike) -> Path:
    """Write ``agent`` into the folder ``path`` (see the module docstring); returns the path."""
    if agent.decider is not None and not hasattr(agent.decider, "state"):
        raise ValueError(f"cannot save an agent with a learned decider ({type(agent.decider).__name__}): "
                         "it keeps no state() to save")
    running = next((name for name, s in agent.skills.items() if s is agent.skill), None)
    if agent.skill is not None and not hasattr(agent.skill, "state"):
        raise ValueError(f"cannot save while skill {running!r} ({type(agent.skill).__name__}) runs: it has no "
                         "state(); save between calls")
    arrays: dict[str, np.ndarray] = {}

    def part(prefix: str, state: tuple[dict, dict]) -> dict:
        arrays.update({f"{prefix}.{k}": np.ascontiguousarray(v) for k, v in state[1].items()})
        return state[0]

    memory_doc = part("memory", agent.memory.state())
    rng = agent.perceive.rng.bit_generator.state
    doc = {
        "format": FORMAT, "version": VERSION,
        "labels": {str(k): v for k, v in agent.labels.items()},
        "config": json.loads(json.dumps(dataclasses.asdict(agent.config))),
        "planner": {"workspace_low": _floats(agent.planner.workspace_low),
                    "workspace_high": _floats(agent.planner.workspace_high)}
        if hasattr(agent.planner, "workspace_low") else None,
        "body": None if agent._action_dim is None else {"arm": agent._action_dim == 5,
                                                        "mapped": agent.freespace is not None},
        "counters": {name: getattr(agent, name) for name in agent.STATE_FIELDS},
        "goal_text": agent.goal_text,
        "target_rgb": None if agent.target_rgb is None else _floats(agent.target_rgb),
        "plan": [c.to_dict() for c in agent.plan],
        "done_calls": [c.to_dict() for c in agent.done_calls],
        "current_call": None if agent.current_call is None else agent.current_call.to_dict(),
        "skill": running,
        "skills": {name: s.state() if hasattr(s, "state") else None for name, s in agent.skills.items()},
        "aim": None if agent.aim is None else agent.aim.state(),
        "reached": None if agent._reached is None else _floats(agent._reached),
        "idle": None if agent._idle is None else _floats(agent._idle),
        "log": agent.log,
        "trace": agent.trace,
        "perception_rng": {**rng, "state": {k: str(v) for k, v in rng["state"].items()}},
        "freespace": None if agent.freespace is None else part("freespace", agent.freespace.state()),
        "drift": None if agent.drift is None else part("drift", agent.drift.state()),
        "decisions": None if agent.decisions is None else part("decisions", agent.decisions.state()),
        "decider": None if agent.decider is None else agent.decider.state(),
    }
    files = {AGENT_FILE: _json_bytes(doc), MEMORY_FILE: _json_bytes(memory_doc), ARRAYS_FILE: save_arrays(arrays)}
    return write_folder(path, files)


def _floats(values) -> list[float]:
    return [float(v) for v in np.asarray(values).ravel()]


def _json_bytes(doc: dict) -> bytes:
    return json.dumps(doc, separators=(",", ":"), allow_nan=False).encode("utf-8")


def write_folder(path: str | os.PathLike, files: dict[str, bytes]) -> Path:
    """Write ``files`` (name -> bytes) as the folder ``path``: into a temporary folder beside it, each file
    synced, then renamed into place; an older save there is replaced (a folder that is not one is refused)."""
    path = Path(path)
    if path.exists() and not (path / AGENT_FILE).is_file() and (not path.is_dir() or any(path.iterdir())):
        raise FileExistsError(f"{path} exists and is not a saved agent: not overwritten")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial"))
    old = None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # a folder as mkdir makes it (mkdtemp's is private)
        for name, data in files.items():
            with open(tmp / name, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        if path.exists():
            old = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".old"))
            os.replace(path, old)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return path


# --- loading ------------------------------------------------------------------------------
def read_json(file: Path) -> Any:
    try:
        return json.loads(file.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise AgentStateError(file, "(file)", "missing") from None
    except UnicodeDecodeError as e:
        raise AgentStateError(file, "(file)", f"corrupt, not UTF-8 text: {e}") from None
    except json.JSONDecodeError as e:
        raise AgentStateError(file, "(file)", f"corrupt or truncated JSON: {e.msg} at line {e.lineno} "
                                              f"column {e.colno}") from None


def read_arrays(file: Path) -> dict[str, np.ndarray]:
    try:
        return load_arrays(file.read_bytes())
    except FileNotFoundError:
        raise AgentStateError(file, "(file)", "missing") from None
    except (SafetensorError, ValueError, TypeError) as e:
        raise AgentStateError(file, "(file)", f"corrupt safetensors: {e}") from None


def _prefixed(arrays: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    return {k[len(prefix) + 1:]: v for k, v in arrays.items() if k.startswith(prefix + ".")}


class Fields:
    """Typed reads of one JSON object: a field missing or of the wrong type raises AgentStateError naming the
    file and the field (``a.b.c``)."""

    KINDS = {"int": int, "bool": bool, "str": str, "list": list, "dict": dict, "number": (int, float)}

    def __init__(self, data: Any, file: Path, where: str = ""):
        if not isinstance(data, dict):
            raise AgentStateError(file, where or "(document)", f"expected an object, got {type(data).__name__}")
        self.data, self.file, self.where = data, file, where

    def name(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def __call__(self, key: str, kind: str, null: bool = False) -> Any:
        if key not in self.data:
            raise AgentStateError(self.file, self.name(key), "missing")
        value = self.data[key]
        if value is None and null:
            return None
        ok = isinstance(value, self.KINDS[kind]) and (kind == "bool" or not isinstance(value, bool))
        if ok and kind == "number":
            ok = math.isfinite(value)
        if not ok:
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            raise AgentStateError(self.file, self.name(key), f"expected {kind}{' or null' if null else ''}, "
                                                             f"got {shown}")
        return value

    def sub(self, key: str, null: bool = False) -> Fields | None:
        value = self(key, "dict", null)
        return None if value is None else Fields(value, self.file, self.name(key))

    def build(self, key: str, make, *args, null: bool = False, arrays: tuple[Path, str] | None = None) -> Any:
        """``make(value, *args)`` (None for a null value where ``null``); whatever ``make`` raises on a bad
        value (KeyError, TypeError, ValueError, IndexError, AttributeError) names this field, or with
        ``arrays`` (file, prefix) an array ``make`` names ("array KEY: ...") in that file."""
        if key not in self.data:
            raise AgentStateError(self.file, self.name(key), "missing")
        value = self.data[key]
        if value is None and null:
            return None
        try:
            return make(value, *args)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
            if arrays is not None and str(e).startswith("array "):
                name, _, problem = str(e)[6:].partition(": ")
                raise AgentStateError(arrays[0], f"{arrays[1]}.{name}", problem) from None
            raise AgentStateError(self.file, self.name(key), f"{type(e).__name__}: {e}") from None


def _call(d: dict) -> SkillCall:
    return SkillCall.from_dict(d)


def _calls(rows: list) -> list[SkillCall]:
    return [SkillCall.from_dict(d) for d in rows]


def _config(d: dict, file: Path, config_cls: type):
    d = dict(d)
    for name, cls in NESTED.items():
        if isinstance(d.get(name), dict):
            d[name] = config_from_dict(cls, d[name], where=f"config.{name}")
        elif d.get(name) is not None or name == "perception":
            raise AgentStateError(file, f"config.{name}", "expected an object" + " or null" * (name != "perception"))
    return config_from_dict(config_cls, d)


def load_agent(path: str | os.PathLike, cls: type[MemoryAgent], config_cls: type, skills: dict | None = None,
               planner: Planner | None = None, decider=None) -> MemoryAgent:
    """The agent :func:`save_agent` wrote into ``path``, built as ``cls`` with a ``config_cls`` (AgentConfig)."""
    path = Path(path)
    if not path.is_dir():
        raise AgentStateError(path, "(folder)", "not a saved agent folder" + ("" if path.exists() else ": missing"))
    file = path / AGENT_FILE
    doc = Fields(read_json(file), file)
    if doc.data.get("format") != FORMAT or doc.data.get("version") != VERSION:
        raise AgentStateError(file, "format", f"not an {FORMAT} version {VERSION} document (format "
                                              f"{doc.data.get('format')!r}, version {doc.data.get('version')!r})")
    arrays = read_arrays(path / ARRAYS_FILE)
    labels = doc.build("labels", lambda d: {int(k): str(v) for k, v in d.items()})
    config = doc.build("config", _config, file, config_cls)
    if planner is None and doc("planner", "dict", null=True) is not None:
        planner = doc.build("planner", lambda d: Planner(d["workspace_low"], d["workspace_high"]))
    agent = cls(labels, config, skills=skills, planner=planner, decider=decider)
    _load_place(agent, path, arrays, doc)
    agent.drift = doc.build("drift", DriftFix.from_state, _prefixed(arrays, "drift"), config.localise, null=True,
                            arrays=(path / ARRAYS_FILE, "drift"))
    body = doc.sub("body", null=True)
    if body is not None:
        agent._build_body(body("arm", "bool"), body("mapped", "bool"))
    _restore_agent(agent, doc, arrays)
    return agent


def _load_place(agent: MemoryAgent, path: Path, arrays: dict[str, np.ndarray], doc: Fields) -> None:
    """The memory (memory.json and its arrays) and the free-space map of the saved agent in ``path``."""
    memory = Fields({"memory": read_json(path / MEMORY_FILE)}, path / MEMORY_FILE)
    agent.memory = memory.build("memory", SpatialMemory.from_state, _prefixed(arrays, "memory"),
                                arrays=(path / ARRAYS_FILE, "memory"))
    agent.freespace = doc.build("freespace", FreeSpaceMap.from_state, _prefixed(arrays, "freespace"), null=True,
                                arrays=(path / ARRAYS_FILE, "freespace"))


def _restore_agent(agent: MemoryAgent, doc: Fields, arrays: dict[str, np.ndarray]) -> None:
    """The agent's own fields, its skills' states and the perception generator, from ``doc``."""
    counters = doc.sub("counters")
    for name in agent.STATE_FIELDS:
        setattr(agent, name, counters(name, "bool" if name == "_ask" else "int"))
    agent.goal_text = doc("goal_text", "str", null=True)
    agent.goal = doc.build("goal_text", parse, null=True)
    agent.target_rgb = doc.build("target_rgb", _vector, 3, null=True)
    agent.plan = doc.build("plan", _calls)
    agent.done_calls = doc.build("done_calls", _calls)
    agent.current_call = doc.build("current_call", _call, null=True)
    skills = doc.sub("skills")
    for name, skill in agent.skills.items():
        state = skills(name, "dict", null=True) if name in skills.data else None
        if state is not None and hasattr(skill, "load_state"):
            skills.build(name, skill.load_state)
    running = doc("skill", "str", null=True)
    if running is not None and running not in agent.skills:
        raise AgentStateError(doc.file, "skill", f"the running skill {running!r} is not one of {sorted(agent.skills)}")
    agent.skill = None if running is None else agent.skills[running]
    if agent.aim is not None:
        doc.build("aim", agent.aim.load_state, null=True)
    agent._reached = doc.build("reached", _vector, 3, null=True)
    if doc("idle", "list", null=True) is not None:
        agent._idle = doc.build("idle", _vector, agent._action_dim, np.float32)
    agent.log = doc.build("log", _rows, ("t", "tag", "text"))
    agent.trace = doc.build("trace", _rows, ("t", "call", "text"))
    doc.build("perception_rng", _set_rng, agent.perceive.rng)
    if doc("decisions", "dict", null=True) is not None:
        agent.decisions = doc.build("decisions", DecisionLog.from_state, _prefixed(arrays, "decisions"),
                                    arrays=(doc.file.parent / ARRAYS_FILE, "decisions"))
    if doc("decider", "dict", null=True) is not None:
        if agent.decider is None or not hasattr(agent.decider, "load_state"):
            raise AgentStateError(doc.file, "decider", "saved with a decider: load with one that has load_state")
        doc.build("decider", agent.decider.load_state)


def _vector(values, n: int | None, dtype=np.float64) -> np.ndarray:
    if not isinstance(values, list):
        raise TypeError(f"expected a list of {n} numbers, got {values!r}")
    v = np.asarray(values, dtype=dtype)
    if v.ndim != 1 or (n is not None and len(v) != n) or not np.isfinite(v).all():
        raise ValueError(f"expected {n} finite numbers, got {values!r}")
    return v


def _rows(rows: list, keys: tuple[str, ...]) -> list[dict]:
    for k, row in enumerate(rows):
        if not isinstance(row, dict) or set(row) != set(keys) or not isinstance(row["t"], int):
            raise ValueError(f"row {k}: expected an object with {', '.join(keys)} (t an integer), got {row!r}")
    return rows


def _set_rng(state: dict, rng: np.random.Generator) -> None:
    state = {**state, "state": {k: int(v) for k, v in state["state"].items()}}
    rng.bit_generator.state = state


# --- a new episode in the same place ------------------------------------------------------------
def resume_memory(agent: MemoryAgent, path: str | os.PathLike, gap: int = EPISODE_GAP) -> None:
    """Start ``agent``'s episode (after ``reset``, before the first ``act``) with what ``path`` knows of the
    place: the memory (and, from a saved agent's folder, its free-space map and localiser map). Not the
    plan, the running skill, the log or the drift correction: the episode is new. The memory's clock
    moves ``gap`` steps past its last frame (``agent.t0``)."""
    if agent.t != 0 or agent._action_dim is not None:
        raise ValueError("resume_memory starts an episode: call it after reset(), before the first act()")
    path = Path(path)
    if path.is_dir():
        arrays = read_arrays(path / ARRAYS_FILE)
        doc = Fields(read_json(path / AGENT_FILE), path / AGENT_FILE)
        _load_place(agent, path, arrays, doc)
        drift = doc.sub("drift", null=True)
        if drift is not None and agent.config.localise is not None:
            loc = drift.sub("localiser")
            agent.drift = DriftFix(agent.config.localise)
            agent.drift.localiser.map = loc.build("map", VoxelMap.from_state, _prefixed(arrays, "drift.map"),
                                                  arrays=(path / ARRAYS_FILE, "drift.map"))
    else:
        try:
            agent.memory = SpatialMemory.load(path)
        except FileNotFoundError:
            raise AgentStateError(path, "(file)", "missing") from None
    agent.t0 = agent.memory.start_episode(gap)
