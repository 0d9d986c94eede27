"""``embodied run``'s agent files: ``--resume-memory PATH``, ``--save-memory FILE``, ``--save-agent DIR``.

Each episode of the memory agent can start with the memory of an earlier one in the same place (the next
day: same rooms and furniture, objects may have moved) and be saved when it ends:

    embodied run --task MovedObject-v0 --policy agent --episodes 1 --seed 5 --save-agent day1/
    embodied run --task MovedObject-v0 --policy agent --episodes 1 --seed 5 --resume-memory day1/

``--resume-memory`` takes a ``--save-agent`` folder (memory, free-space map and localiser map) or a
``--save-memory`` file (the memory alone); see ``MemoryAgent.resume_memory``. With several episodes each
one starts from the same saved state, and each is saved to its own path: ``FILE_NNN.json`` and
``DIR/episode_NNN`` (NNN the episode's index).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from embodied.agent.memory_agent import MemoryAgent
from embodied.agent.persist import AGENT_FILE


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--resume-memory", metavar="PATH", help="agent policies: start every episode with the "
                        "memory saved at PATH (a --save-agent folder: memory, free-space map, localiser map; or a "
                        "--save-memory file), its clock moved past the saved one's (docs/agent.md)")
    parser.add_argument("--save-memory", metavar="FILE", help="agent policies: write the memory as JSON when an "
                        "episode ends (FILE_NNN.json per episode with --episodes > 1)")
    parser.add_argument("--save-agent", metavar="DIR", help="agent policies: save the whole agent (memory, map, "
                        "localiser, plan, skills, counters) into folder DIR when an episode ends "
                        "(DIR/episode_NNN with --episodes > 1)")


class AgentFiles:
    """The hooks ``run_episodes`` calls: resume after each reset, save at each end."""

    def __init__(self, resume: str | None, save_memory: str | None, save_agent: str | None, episodes: int):
        self.resume, self.save_memory, self.save_agent = resume, save_memory, save_agent
        self.many = episodes > 1
        self.policy: MemoryAgent | None = None
        self.index = 0
        self.written: list[str] = []

    @classmethod
    def from_args(cls, args: argparse.Namespace, distributed: bool) -> AgentFiles | None:
        """None without any of the flags; a ValueError for what cannot work, before any episode runs."""
        flags = {"--resume-memory": getattr(args, "resume_memory", None),
                 "--save-memory": getattr(args, "save_memory", None), "--save-agent": getattr(args, "save_agent", None)}
        given = [name for name, value in flags.items() if value]
        if not given:
            return None
        if not args.policy.startswith(("agent", "learned:")):
            raise ValueError(f"{', '.join(given)}: only for the memory agent (--policy agent or learned:RUN), "
                             f"not {args.policy!r}")
        if flags["--save-agent"] and (args.policy.startswith("learned:") or getattr(args, "head", None)):
            raise ValueError("--save-agent: learned skill heads and policies keep no state to save; "
                             "--save-memory saves their memory")
        if distributed:
            raise ValueError(f"{', '.join(given)}: the agent runs in this process: run without --workers/--ray")
        resume = flags["--resume-memory"]
        if resume and not Path(resume).exists():
            raise ValueError(f"--resume-memory {resume}: no such file or folder")
        out = flags["--save-agent"]
        if out and args.episodes == 1 and Path(out).exists() and not (Path(out) / AGENT_FILE).is_file() and \
                (not Path(out).is_dir() or any(Path(out).iterdir())):
            raise ValueError(f"--save-agent {out}: exists and is not a saved agent; not overwritten")
        return cls(resume, flags["--save-memory"], out, args.episodes)

    def set_policy(self, policy) -> None:
        if not isinstance(policy, MemoryAgent):
            raise ValueError(f"--resume-memory/--save-*: the policy is a {type(policy).__name__}, not a MemoryAgent")
        self.policy = policy

    def reset(self, seed: int, obs: dict, info: dict) -> None:
        if self.resume:
            self.policy.resume_memory(self.resume)

    def end(self, result) -> None:
        k = self.index
        self.index += 1
        if self.save_memory:
            path = Path(self.save_memory)
            if self.many:
                path = path.with_name(f"{path.stem}_{k:03d}{path.suffix or '.json'}")
            self.written.append(str(self.policy.memory.save(path)))
        if self.save_agent:
            path = Path(self.save_agent) / f"episode_{k:03d}" if self.many else Path(self.save_agent)
            self.written.append(str(self.policy.save(path)))

    def hooks(self, hooks: dict) -> dict:
        """``hooks`` (run_episodes' on_policy, on_reset, on_end) with these run after the ones given."""
        out = dict(hooks)
        for name, mine in (("on_policy", self.set_policy), ("on_reset", self.reset), ("on_end", self.end)):
            theirs = hooks.get(name)
            out[name] = mine if theirs is None else (lambda *a, _t=theirs, _m=mine: (_t(*a), _m(*a)))
        return out
