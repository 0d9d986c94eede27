"""Memory accuracy against simulator ground truth (evaluation only: reads privileged state).

Per perceived frame the evaluator records the memory's object nodes and the
true world boxes of the scene's entities; ``score`` then reports
    position_error_median   m, visible objects (blocks, balls, cups, props) vs their entity's box centre
    unseen_error_median     m, remembered (not visible) objects vs where the entity really is now
    part_error_median       m, articulated parts (drawers, buttons) vs the centre of their exposed box
    relations precision / recall of on/in edges at the last frame
    duplicates              extra nodes standing for one entity at the last frame
    merges                  nodes matched to two or more entities during the episode
Nodes are matched to the nearest entity of the same class within ``gate``.

What is compared, and why:
  * A sliding part's body inside its housing cannot be seen by any camera
    (a shut drawer shows its front and handle, an open one its front part),
    so a part is compared with its *exposed* box: the true box clipped to
    the side where it sticks out of the housing it cuts into (see
    ``exposed_boxes``). Everything else is compared with its full true box.
  * An object sunk partly into its support (modelled through a counter top)
    is cut at the support's top (``above_supports``): the rest is unseeable.
  * True on/in relations come from the simulator, not from the memory's own
    box rules (``embodied.eval.truth``): "on" from contacts with a vertical
    normal, "in" from the container's shape in its own body frame. Only
    relations among entities the memory has a node for are judged: an
    entity no camera ever saw is not a relation error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from embodied.eval.truth import true_relations
from embodied.memory.config import ARTICULATED_CLASSES, HOUSING_CLASSES, kind_of
from embodied.memory.memory import SpatialMemory

OBJECT_KINDS = ("object", "container", "articulated")


def entity_boxes(env) -> dict[str, tuple[str, np.ndarray, np.ndarray]]:
    """True world axis-aligned box of every entity but the robot: name -> (class, lo (3,), hi (3,))."""
    u = env.unwrapped
    model, data = u.model, u.data
    out = {}
    for e in u.entities:
        if e.cls == "robot" or not e.geom_ids:
            continue
        g = np.asarray(e.geom_ids)
        keep = model.geom_type[g] != 0  # planes have no extent
        g = g[keep & (model.geom_rgba[g, 3] > 0)]
        if len(g) == 0:
            continue
        boxes = [_geom_box(model, data, int(k)) for k in g]
        out[e.name] = (e.cls, np.min([b[0] for b in boxes], axis=0), np.max([b[1] for b in boxes], axis=0))
    return out


def _geom_box(model, data, g: int) -> tuple[np.ndarray, np.ndarray]:
    """Tight world box of one geom. Rotating a geom's local box overstates round shapes (a dumbbell
    lying on a counter would reach 5 cm into it), so round primitives and meshes are bounded exactly."""
    rot = data.geom_xmat[g].reshape(3, 3)
    pos = data.geom_xpos[g]
    kind, size = int(model.geom_type[g]), model.geom_size[g]
    if kind == 2:  # sphere
        half = np.full(3, size[0])
    elif kind in (3, 5):  # capsule, cylinder: an axis segment swept by a disc (capsule: a ball)
        axis = rot[:, 2]
        disc = size[0] * np.sqrt(np.clip(1 - axis**2, 0, 1)) if kind == 5 else np.full(3, size[0])
        half = np.abs(axis) * size[1] + disc
    elif kind == 4:  # ellipsoid
        half = np.sqrt(((rot * size[None, :]) ** 2).sum(axis=1))
    elif kind == 7:  # mesh: its vertices
        m = model.geom_dataid[g]
        verts = model.mesh_vert[model.mesh_vertadr[m] : model.mesh_vertadr[m] + model.mesh_vertnum[m]]
        world = verts @ rot.T + pos
        return world.min(axis=0), world.max(axis=0)
    else:
        centre_local, half_local = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
        centre = pos + rot @ centre_local
        half = np.abs(rot) @ half_local
        return centre - half, centre + half
    return pos - half, pos + half


def above_supports(truth: dict) -> dict[str, tuple[str, np.ndarray, np.ndarray]]:
    """``truth`` with objects' boxes cut at the top of a support they are sunk into.

    A prop modelled partly through a counter top (the apartment's dumbbell bar
    pokes 5 cm into it) shows only what is above the top; the rest can be
    neither seen nor told apart from the counter.
    """
    out = dict(truth)
    for name, (cls, lo, hi) in truth.items():
        if kind_of(cls) not in OBJECT_KINDS or cls in ARTICULATED_CLASSES:
            continue
        c = (lo + hi) / 2
        for other, (c2, lo2, hi2) in truth.items():
            if other == name or kind_of(c2) != "surface":
                continue
            over = np.all(c[:2] >= lo2[:2]) and np.all(c[:2] <= hi2[:2])
            if over and lo[2] < hi2[2] - 0.005 < c[2]:
                lo = lo.copy()
                lo[2] = hi2[2]
        out[name] = (cls, lo, hi)
    return out


def exposed_boxes(truth: dict) -> dict[str, tuple[str, np.ndarray, np.ndarray]]:
    """``truth`` with each articulated part's box clipped to what sticks out of its housing.

    The housing is the housing-class entity whose box overlaps the part's most;
    the part is clipped on the horizontal side where it sticks out farthest.
    Parts without a housing (buttons on a pad) keep their full box.
    """
    out = dict(truth)
    for name, (cls, lo, hi) in truth.items():
        if cls not in ARTICULATED_CLASSES:
            continue
        best, best_vol = None, 0.0
        for other, (c2, lo2, hi2) in truth.items():
            if other == name or c2 not in HOUSING_CLASSES:
                continue
            vol = float(np.prod(np.clip(np.minimum(hi, hi2) - np.maximum(lo, lo2), 0, None)))
            if vol > best_vol:
                best, best_vol = (lo2, hi2), vol
        if best is None:
            continue
        lo2, hi2 = best
        sticks = (lo2[0] - lo[0], lo2[1] - lo[1], hi[0] - hi2[0], hi[1] - hi2[1])
        k = int(np.argmax(sticks))
        if sticks[k] <= 0:
            continue
        lo, hi = lo.copy(), hi.copy()
        if k < 2:
            hi[k] = lo2[k]
        else:
            lo[k - 2] = hi2[k - 2]
        out[name] = (cls, lo, hi)
    return out


@dataclass
class AccuracyRecorder:
    """Collects (memory state, truth) pairs while an episode runs."""

    gate: float = 0.05
    errors_visible: list[float] = field(default_factory=list)  # movable objects (blocks, balls)
    errors_unseen: list[float] = field(default_factory=list)
    errors_parts: list[float] = field(default_factory=list)  # articulated parts vs their exposed box
    identities: dict[str, set] = field(default_factory=dict)
    last_truth: dict = field(default_factory=dict)  # reference boxes (parts: exposed box)
    last_relations_truth: dict = field(default_factory=dict)  # full true boxes
    last_true_relations: set = field(default_factory=set)  # (a, b, "on"|"in") from contacts and shapes

    def _match(self, memory: SpatialMemory, truth: dict) -> dict[str, tuple[str, float]]:
        """node -> (entity, distance) for object-like nodes: the nearest same-class entity whose centre is
        within the gate, or whose true box (grown 2 cm) holds the node's centre (a drawer seen only by
        its front has its centre far from the true one)."""
        out = {}
        for node, a in memory.graph.nodes(data=True):
            if a["kind"] not in OBJECT_KINDS:
                continue
            p = np.asarray(a["position"])
            best, best_d = "", np.inf
            for name, (cls, lo, hi) in truth.items():
                if cls != a["cls"] and memory.config.detector.strict_class:
                    continue
                d = float(np.linalg.norm((lo + hi) / 2 - p))
                if d < best_d and (d < self.gate or (np.all(p >= lo - 0.02) and np.all(p <= hi + 0.02))):
                    best, best_d = name, d
            if best:
                out[node] = (best, best_d)
        return out

    def record(self, memory: SpatialMemory, env) -> None:
        self.last_relations_truth = above_supports(entity_boxes(env))
        self.last_true_relations = true_relations(env)
        truth = exposed_boxes(self.last_relations_truth)
        self.last_truth = truth
        for node, (entity, d) in self._match(memory, truth).items():
            a = memory.graph.nodes[node]
            if a.get("articulated"):
                self.errors_parts.append(d)
            else:
                (self.errors_visible if a["visible"] else self.errors_unseen).append(d)
            if d < 0.6 * self.gate or a["kind"] != "object":
                self.identities.setdefault(node, set()).add(entity)
        # Unseen nodes far from any entity are stale memories: count their error against their own entity.
        for node, ents in self.identities.items():
            if node in memory.graph and not memory.graph.nodes[node]["visible"] and len(ents) == 1:
                name = next(iter(ents))
                if name in truth:
                    lo, hi = truth[name][1], truth[name][2]
                    d = float(np.linalg.norm((lo + hi) / 2 - np.asarray(memory.graph.nodes[node]["position"])))
                    if d >= self.gate:
                        self.errors_unseen.append(d)

    def score(self, memory: SpatialMemory) -> dict:
        truth = self.last_truth
        match = self._match(memory, truth)
        per_entity: dict[str, int] = {}
        for entity, _ in match.values():
            per_entity[entity] = per_entity.get(entity, 0) + 1
        duplicates = sum(k - 1 for k in per_entity.values())
        merges = sum(1 for ents in self.identities.values() if len(ents) > 1)
        precision, recall, counts = _relation_scores(memory, self.last_relations_truth, self.last_true_relations, match)
        n_objects = sum(1 for cls, _, _ in truth.values() if kind_of(cls) in OBJECT_KINDS)
        return {
            "position_error_median": _median(self.errors_visible),
            "position_error_p90": _pct(self.errors_visible, 90),
            "unseen_error_median": _median(self.errors_unseen),
            "part_error_median": _median(self.errors_parts),
            "relation_precision": precision,
            "relation_recall": recall,
            **counts,
            "duplicates": duplicates,
            "merges": merges,
            "objects_true": n_objects,
            "objects_remembered": sum(1 for _, a in memory.graph.nodes(data=True) if a["kind"] in OBJECT_KINDS),
            "objects_matched": len({e for e, _ in match.values()}),
        }


def _relation_scores(
    memory: SpatialMemory, truth: dict, true_edges: set, match: dict
) -> tuple[float | None, float | None, dict[str, int]]:
    """Precision and recall of on/in edges, in entity names, at the last frame, and the edge counts
    (``edges_hit``, ``edges_remembered``, ``edges_true``) for pooling over episodes."""
    names = {node: entity for node, (entity, _) in match.items()}
    # Supports (tables, pads, housings) match by class and footprint overlap.
    for node, a in memory.graph.nodes(data=True):
        if a["kind"] != "surface":
            continue
        p = np.asarray(a["position"])
        cands = [(np.linalg.norm(((lo + hi) / 2 - p)[:2]), n) for n, (cls, lo, hi) in truth.items() if cls == a["cls"]]
        if cands:
            names[node] = min(cands)[1]
    mem = {
        (names[u], names[v], k)
        for u, v, k in memory.graph.edges(keys=True)
        if k in ("on", "in") and u in names and v in names
    }
    gt = set(true_edges)
    # Only judge what the memory could name: relations among matched entities.
    known = set(names.values())
    gt = {e for e in gt if e[0] in known and e[1] in known}
    hit = len(mem & gt)
    precision = hit / len(mem) if mem else None
    recall = hit / len(gt) if gt else None
    return precision, recall, {"edges_hit": hit, "edges_remembered": len(mem), "edges_true": len(gt)}


def _median(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


def _pct(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None
