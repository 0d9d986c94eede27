"""Text observations through ``gym.make_vec(..., vectorization_mode="async")``.

Every task's observation holds the instruction as a gymnasium ``Text`` space
(``obs["goal"]["text"]``). The async vector env passes observations through
shared memory and reads them back *once*, at construction, keeping views that
later steps fill in. For a Box that view is an array over the shared buffer; for
Text gymnasium 1.4 builds a tuple of strings instead, so every later
observation repeats the (blank) text of that first read.

This module registers a reader that returns a live view instead: a sequence
that decodes the shared buffer whenever it is read, and turns into a plain
tuple of strings when copied (the async env deep-copies each observation
it returns, unless ``copy=False``). Imported by ``embodied``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from gymnasium.spaces import Text
from gymnasium.vector.utils import read_from_shared_memory


class SharedTexts(Sequence):
    """The ``n`` strings held in a shared buffer of Text ``space``, decoded on every read."""

    def __init__(self, space: Text, shared_memory, n: int):
        self.space, self.shared_memory, self.n = space, shared_memory, n

    def _codes(self) -> np.ndarray:
        return np.frombuffer(self.shared_memory.get_obj(), dtype=np.int32).reshape(self.n, self.space.max_length)

    def _decode(self, codes: np.ndarray) -> str:
        chars, size = self.space.character_list, len(self.space.character_set)
        return "".join(chars[c] for c in codes if c < size)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self)[i]
        return self._decode(self._codes()[i])

    def __iter__(self):
        return iter(tuple(self._decode(row) for row in self._codes()))

    def __eq__(self, other) -> bool:
        return tuple(self) == tuple(other) if isinstance(other, Sequence) else NotImplemented

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __deepcopy__(self, memo) -> tuple[str, ...]:
        return tuple(self)

    def __copy__(self) -> tuple[str, ...]:
        return tuple(self)


@read_from_shared_memory.register(Text)
def _read_text_live(space: Text, shared_memory, n: int = 1) -> SharedTexts:
    return SharedTexts(space, shared_memory, n)
