"""Folding logged events into a state (node -> attribute dict): how ``EventLog`` rebuilds a past state
(``state_at``) and a loaded log its keyframes (``events_json.log_from_json``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from embodied.memory.events import EventLog


class Fold:
    """Events applied to a state as ``EventLog._apply`` would, but a node's dict copied once, at its first event
    (until then it may be a keyframe's, which never change), and its box derived once, in ``finish``."""

    __slots__ = ("mine", "moved", "state")

    def __init__(self, state: dict[str, dict]):
        self.state = state
        self.mine: dict[str, dict] = {}  # nodes whose dict is this fold's own (copied or added)
        self.moved: set[str] = set()  # nodes whose position or size an event set

    def events(self, log: EventLog, start: int, end: int, keyframes: bool = False) -> None:
        """Fold in events ``start`` to ``end`` (exclusive), with ``keyframes`` adding the log's keyframes on the
        way (a log being built). Raises ValueError at an ADD of a node that exists or a change of one that does not."""
        state, mine, moved = self.state, self.mine, self.moved
        cols = log.columns()
        names, schemas, rows, times = cols["nodes"], cols["schemas"], cols["values"], cols["t"]
        ops, node_col, key_col = cols["op"], cols["node"], cols["keys"]
        geometric = [("position" in s or "size" in s) for s in schemas]
        gap = log.keyframe_gap(len(state))
        for i in range(start, end):
            code, name, k = ops[i], names[node_col[i]], key_col[i]
            if code == 2:  # DELETE
                if name not in state:
                    raise ValueError(f"event {i}: DELETE of unknown node {name!r}")
                del state[name]
                mine.pop(name, None)
                moved.discard(name)
                gap = log.keyframe_gap(len(state))
            else:
                if code == 1:  # UPDATE
                    attrs = mine.get(name)
                    if attrs is None:
                        if name not in state:
                            raise ValueError(f"event {i}: UPDATE of unknown node {name!r}")
                        attrs = mine[name] = state[name] = dict(state[name])
                elif code == 0:  # ADD
                    if name in state:
                        raise ValueError(f"event {i}: ADD of existing node {name!r}")
                    attrs = mine[name] = state[name] = {}
                    gap = log.keyframe_gap(len(state))
                else:
                    raise ValueError(f"event {i}: op {code} is not 0 (ADD), 1 (UPDATE) or 2 (DELETE)")
                attrs.update(zip(schemas[k], rows[i]))
                attrs["last_update"] = times[i]
                if geometric[k]:
                    moved.add(name)
            if keyframes and i + 1 - log.kf_index[-1] >= gap:
                log.kf_index.append(i + 1)
                log.kf_state.append(dict(self.finish()))

    def finish(self) -> dict[str, dict]:
        """The state, boxes derived; every dict in it may now be shared (a later event copies it again)."""
        for node in self.moved:
            attrs = self.state[node]
            if "size" in attrs:
                derive_box(attrs)
        self.moved.clear()
        self.mine.clear()
        return self.state


def derive_box(attrs: dict) -> None:
    """box_min / box_max from the position (the box centre) and size: derived, never logged."""
    (x, y, z), (sx, sy, sz) = attrs["position"], attrs["size"]
    attrs["box_min"] = (x - sx / 2, y - sy / 2, z - sz / 2)
    attrs["box_max"] = (x + sx / 2, y + sy / 2, z + sz / 2)
