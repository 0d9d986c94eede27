"""ACT head: a transformer encoder over conditioning tokens, a decoder of learned queries, an action chunk."""

from policies.act.configuration import ACTConfig
from policies.act.modeling import ACTHead

__all__ = ["ACTConfig", "ACTHead"]
