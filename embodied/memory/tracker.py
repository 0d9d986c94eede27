"""The tracker: one frame's views folded into the nodes, camera by camera.

    views -> filters (cut out, join, drop merged / lookalikes) -> association (one cost, one assignment)
          -> matched: measurement update;  unmatched: the spawn rule, then a new (tentative) node
    after every camera: seen-together pairs, duplicate merges, renamed nodes rejoined

Cameras go in name order, each seeing the nodes the cameras before it updated.
"""

from __future__ import annotations

from embodied.memory.association import Associator
from embodied.memory.filters import ViewFilters
from embodied.memory.identity import Identity
from embodied.memory.spawn import Spawner
from embodied.memory.update import Updater
from embodied.perception.types import Frame


class Tracker:
    """The front end of the memory: perception frames in, node updates out (through the store)."""

    def __init__(self, store, config, hooks, drawers):
        self.store, self.config = store, config
        self.filters = ViewFilters(store, config, drawers)
        self.associator = Associator(store, config, hooks)
        self.updater = Updater(store, config, hooks)
        self.spawner = Spawner(store, config)
        self.identity = Identity(store, config, hooks)

    def step(self, frame: Frame, t: int) -> set[str]:
        """Fold ``frame``'s views in; returns the nodes seen this frame."""
        self.updater.begin(frame.views)
        by_camera: dict[str, list] = {}
        for det in frame.objects:
            by_camera.setdefault(det.camera, []).append(det)
        seen: set[str] = set()
        for camera in sorted(by_camera):
            dets = self.filters(by_camera[camera])
            matches = self.associator.match(dets, by_camera, t)
            matched = [d for d, m in zip(dets, matches) if m.node is not None]
            here: set[str] = set()
            for det, m in zip(dets, matches):
                node = m.node
                if node is None:
                    if not self.spawner.allows(det, matched, t):
                        continue
                    node = self.updater.add(det, t)
                else:
                    self.updater.observe(node, det, t, m.overlap, m.settled)
                here.add(node)
            self.identity.note_together(here, self.updater.changed)
            seen |= here
        self.identity.merge_duplicates(t, seen, self.updater.changed)
        if self.updater.renamed and self.config.on("rejoin"):
            self.identity.rejoin(self.updater.renamed, t)
        return seen & set(self.store._graph.nodes)
