"""The memory's fast paths against their references, on the synthetic house of the scale benchmark:
batched permanence, relations over pairs within reach, keyframes spaced by the node count, the kept
node rows, containers of lost objects, snapshots written into networkx's dicts, paths from the kept place graph."""

from __future__ import annotations

import numpy as np
import pytest

from embodied.eval.memory_scale import HouseStream, physical_nodes
from embodied.memory.memory import SpatialMemory
from embodied.memory.affordances import affords
from embodied.memory.spatial import visibility_many


def _visibility(points: np.ndarray, views, cfg, k_sigma: float) -> tuple[int, int, int]:
    """The visibility rule one object at a time (the reference ``visibility_many`` must agree with): of a
    remembered cloud (N,3) m, the points with a depth return in some image, those seen through and those
    occluded; a camera with fewer than ``min_projected`` of them in its image gives no verdict."""
    from embodied.perception.geometry import project

    total = through = occluded = 0
    for view in views:
        h, w = view.depth.shape
        u, v, z = project(points, view)
        inside = (z > 0.05) & (u >= 0) & (u <= w - 1) & (v >= 0) & (v <= h - 1)
        if inside.sum() < cfg.min_projected:
            continue
        d = view.depth[np.rint(v[inside]).astype(np.int64), np.rint(u[inside]).astype(np.int64)]
        z = z[inside]
        ret = d > 0
        tol = np.maximum(cfg.depth_tol + cfg.depth_tol_rel * z, k_sigma * view.depth_std(z))
        total += int(ret.sum())
        through += int((ret & (d > z + tol)).sum())
        occluded += int((ret & (d < z - tol)).sum())
    return total, through, occluded


def _container_of(memory, node: str, containers: list[str]) -> str:
    """The container rule one object at a time (the reference ``Lifecycle.holders`` must agree with): the
    smallest container whose box, now or a frame ago, grown by ``contain_margin``, holds the object's centre
    and footprint, its bottom no lower than the container's less ``relations.sink``, its volume smaller."""
    m, sink = memory.config.lifecycle.contain_margin, memory.config.relations.sink
    own = memory.tracks[node]
    centre = own.center
    own_vol = float(np.prod(np.maximum(own.box_max - own.box_min, 1e-3)))
    best, best_vol = "", np.inf
    for c in containers:
        if c == node:
            continue
        tr = memory.tracks[c]
        for lo, hi in [(tr.box_min, tr.box_max)] + ([tr.prev_box] if tr.prev_box is not None else []):
            vol = float(np.prod(np.maximum(hi - lo, 1e-3)))
            if (own_vol < vol < best_vol and own.box_min[2] >= lo[2] - sink
                    and np.all(centre >= lo - m) and np.all(centre <= hi + m)
                    and np.all(own.box_min[:2] >= lo[:2] - m) and np.all(own.box_max[:2] <= hi[:2] + m)):
                best, best_vol = c, vol
    return best


def test_batched_permanence_gives_the_per_object_answers(house):
    stream, memory = house
    rng = np.random.default_rng(1)
    views = stream.frame(2000).views
    cfg, k = memory.config.lifecycle, memory.config.sensor.k
    clouds = [memory.tracks[n].samples for n in physical_nodes(memory)]
    clouds += [rng.uniform(-0.5, 0.5, (n, 3)).astype(np.float32) + views[0].cam_to_world[:3, 3] - (0, 0, 0.7)
               for n in (0, 1, 2, 3, 30)]
    total, through, occluded = visibility_many(clouds, views, cfg, k)
    assert total.sum() > 0 and through.sum() + occluded.sum() > 0
    for i, cloud in enumerate(clouds):
        assert (total[i], through[i], occluded[i]) == _visibility(cloud, views, cfg, k)
    # Containers: put an object inside a cup's box and ask both ways.
    nodes = physical_nodes(memory)
    cups = [n for n in nodes if memory.graph.nodes[n]["kind"] == "container"]
    objects = [n for n in nodes if memory.graph.nodes[n]["kind"] == "object"]
    track, cup = memory.tracks[objects[0]], memory.tracks[cups[0]]
    saved = track.box_min.copy(), track.box_max.copy()
    middle = (cup.box_min + cup.box_max) / 2
    track.box_min, track.box_max = middle - 0.01, middle + 0.01
    track.box_min[2] = cup.box_min[2]
    try:
        rows = memory.rows()  # the moved box reaches the rows through the track's watch
        batched = memory.lifecycle.holders(rows, np.array([rows.row[n] for n in nodes]))
        one_by_one = [_container_of(memory, n, cups) if memory.graph.nodes[n]["kind"] == "object" else ""
                      for n in nodes]
        assert batched == one_by_one and batched[nodes.index(objects[0])] == cups[0]
    finally:
        track.box_min, track.box_max = saved


def _relations_dense(nodes: dict[str, dict], cfg) -> set[tuple[str, str, str]]:
    """The relation rule as written before pairs were culled (every pair of boxes at once): the
    reference the sparse ``spatial.relations`` must agree with."""
    edges: set[tuple[str, str, str]] = set()
    for n, a in nodes.items():
        home = a.get("room", "")
        if home and home in nodes and nodes[home]["kind"] == "room":
            edges.add((n, home, "in_room"))
    ids = [n for n, a in nodes.items() if a["kind"] not in ("place", "agent") and "box_min" in a]
    if not ids:
        return edges
    lo = np.array([nodes[n]["box_min"] for n in ids])
    hi = np.array([nodes[n]["box_max"] for n in ids])
    centre = (lo + hi) / 2
    kinds = np.array([nodes[n]["kind"] for n in ids])
    volume = np.prod(np.maximum(hi - lo, 1e-3), axis=1)
    m = cfg.contain_margin
    inside = np.all((centre[:, None] >= lo[None] - m) & (centre[:, None] <= hi[None] + m), axis=2)
    articulated = np.array([bool(nodes[n].get("articulated")) for n in ids])
    inside &= lo[:, None, 2] >= lo[None, :, 2] - np.where(articulated, cfg.drawer_sink, cfg.sink)[None]
    inside &= volume[:, None] < volume[None]
    np.fill_diagonal(inside, False)
    room = kinds == "room"
    physical = ~room
    is_in = inside & (kinds == "container")[None] & physical[:, None]
    over = np.all((centre[:, None, :2] >= lo[None, :, :2] - m) & (centre[:, None, :2] <= hi[None, :, :2] + m), axis=2)
    gap = lo[:, None, 2] - hi[None, :, 2]
    held = np.array([bool(nodes[n].get("held")) for n in ids])
    is_in &= ~held[:, None]
    is_on = over & (np.abs(gap) <= cfg.on_tol) & physical[:, None] & physical[None] & ~is_in
    np.fill_diagonal(is_on, False)
    is_on &= volume[:, None] < volume[None] * 4
    furnishing = (kinds == "surface") & ~np.array([affords(nodes[n].get("cls", "")).structure for n in ids], dtype=bool)
    sunk = over & furnishing[None] & np.isin(kinds, ["object", "container"])[:, None]
    sunk &= (lo[:, None, 2] >= lo[None, :, 2] + cfg.on_tol) & (lo[:, None, 2] <= hi[None, :, 2])
    sunk &= (volume[:, None] < volume[None]) & ~is_in
    for i in np.flatnonzero(sunk.any(axis=1) & ~is_on.any(axis=1)):
        is_on[i, np.flatnonzero(sunk[i])[np.argmin(volume[sunk[i]])]] = True
    is_on &= ~held[:, None]
    in_rows = set()
    for i, j in zip(*np.nonzero(is_in)):
        edges.add((ids[i], ids[j], "in"))
        in_rows.add(i)
    for i, n in enumerate(ids):
        holder = nodes[n].get("inside", "")
        if holder and holder in nodes and not held[i]:
            edges.add((n, holder, "in"))
            in_rows.add(i)
    furniture = (kinds == "surface") & ~room
    for i in np.flatnonzero(articulated):
        w = np.minimum(hi[i, :2], hi[:, :2] + cfg.part_margin) - np.maximum(lo[i, :2], lo[:, :2] - cfg.part_margin)
        area = np.prod(np.clip(w, 0, None), axis=1) * furniture * (volume > volume[i])
        area[i] = 0
        area = area * ((lo[i, 2] < hi[:, 2]) & (hi[i, 2] > lo[:, 2]))
        if area.max() > 0:
            edges.add((ids[i], ids[int(np.argmax(area))], "part_of"))
            in_rows.add(i)
    top = np.where(is_on, hi[None, :, 2], -np.inf)
    for i in np.flatnonzero(is_on.any(axis=1)):
        if i not in in_rows:
            edges.add((ids[i], ids[int(np.argmax(top[i]))], "on"))
    objectish = np.isin(kinds, ["object", "container", "articulated"])
    near = np.linalg.norm(centre[:, None] - centre[None], axis=2) < cfg.near_dist
    near &= objectish[:, None] & objectish[None]
    np.fill_diagonal(near, False)
    linked = {(u, v) for u, v, _ in edges} | {(v, u) for u, v, _ in edges}
    for i, j in zip(*np.nonzero(near)):
        if (ids[i], ids[j]) not in linked:
            edges.add((ids[i], ids[j], "near"))
    return edges


def test_relations_of_pairs_within_reach_are_the_rule_over_every_pair(house):
    from embodied.memory.spatial import near_pairs, relations

    stream, memory = house
    states = [dict(memory._graph.nodes(data=True))] + [memory.log.state_at(t) for t in range(0, 2000, 97)]
    for state in states:
        assert relations(state, memory.config.relations) == _relations_dense(state, memory.config.relations)
    # Furniture, drawers, a cup holding a ball, a room: every rule has a case.
    scene = {
        "table": {"kind": "surface", "cls": "table", "box_min": (0, 0, 0.0), "box_max": (1.2, 0.8, 0.4)},
        "floor": {"kind": "surface", "cls": "floor", "box_min": (-3, -3, -0.01), "box_max": (3, 3, 0.0)},
        "cabinet": {"kind": "surface", "cls": "cabinet", "box_min": (2, 0, 0), "box_max": (2.5, 0.5, 0.6)},
        "drawer": {"kind": "container", "cls": "drawer", "articulated": True, "box_min": (2.05, 0.45, 0.2),
                   "box_max": (2.45, 0.62, 0.3)},
        "cup": {"kind": "container", "cls": "cup", "box_min": (0.2, 0.2, 0.4), "box_max": (0.28, 0.28, 0.5)},
        "ball": {"kind": "object", "cls": "ball", "box_min": (0.22, 0.22, 0.4), "box_max": (0.26, 0.26, 0.44)},
        "block": {"kind": "object", "cls": "block", "box_min": (0.3, 0.2, 0.4), "box_max": (0.34, 0.24, 0.44),
                  "room": "room_0"},
        "held": {"kind": "object", "cls": "block", "held": True, "box_min": (0.5, 0.5, 0.6),
                 "box_max": (0.54, 0.54, 0.64)},
        "hidden": {"kind": "object", "cls": "ball", "inside": "drawer", "box_min": (2.2, 0.5, 0.22),
                   "box_max": (2.24, 0.54, 0.26)},
        "room_0": {"kind": "room", "cls": "room", "box_min": (-3, -3, 0), "box_max": (3, 3, 2.5)},
        "place_0": {"kind": "place", "cls": "place", "position": (0, 0, 0)},
    }
    assert relations(scene, memory.config.relations) == _relations_dense(scene, memory.config.relations)
    assert {("ball", "cup", "in"), ("cup", "table", "on"), ("drawer", "cabinet", "part_of"),
            ("hidden", "drawer", "in"), ("block", "room_0", "in_room")} <= relations(scene, memory.config.relations)
    rng = np.random.default_rng(3)
    lo = rng.uniform(-2, 2, (300, 3))
    hi = lo + rng.uniform(0.01, 0.3, (300, 3)) * np.where(rng.uniform(size=(300, 1)) < 0.02, 20, 1)
    i, j = near_pairs(lo, hi, 0.15)
    every = np.all((lo[None] - 0.15 <= hi[:, None] + 0.15) & (lo[:, None] - 0.15 <= hi[None] + 0.15), axis=2)
    np.fill_diagonal(every, False)
    assert list(zip(i, j)) == list(zip(*np.nonzero(every)))


def test_keyframes_spaced_by_the_node_count_keep_every_recall_answer(house):
    from embodied.memory.events import EventLog

    stream, memory = house
    log = memory.log
    nodes = len(log.state)
    assert nodes > log.keyframe_every and len(log.kf_index) < len(log) / log.keyframe_every
    # The reference: the whole log replayed from its start, no keyframe in between.
    plain = EventLog(keyframe_every=10**9)
    plain.replay(log.events)
    assert len(plain.kf_index) == 1
    rng = np.random.default_rng(0)
    times = [0, 1, int(log.times[-1])] + [int(x) for x in rng.integers(0, memory.t, 40)]
    for t in times:
        assert log.state_at(t) == plain.state_at(t)
    # Both against the state the log held at those times, applied event by event.
    stepwise, events, wanted = EventLog(), log.events, set(times)
    for k, e in enumerate(events):
        stepwise.append(e.t, e.op, e.node, e.tag, e.data)
        if e.t in wanted and (k + 1 == len(events) or events[k + 1].t > e.t):
            assert log.state_at(e.t) == stepwise.state, e.t
            wanted.discard(e.t)
    ids = physical_nodes(memory)
    for node in ids[:40]:
        for t in (100, 777, 1500, 1999):
            assert memory.where_was(node, t) == plain.position_at(node, t)
    past = memory.snapshot(777)
    assert dict(past.nodes(data=True)).keys() == plain.state_at(777).keys()


def test_node_rows_follow_every_track_change():
    """The per-node arrays kept between frames (memory/node_rows.py) equal the tracks after every frame of
    a house where objects move, go and come back, and after a track is moved by hand (a replaced box)."""
    stream, memory = HouseStream(90, seed=3), SpatialMemory()
    for t in range(700):
        memory.update(stream.frame(t))
        rows = memory.rows()
        assert rows.stale_rows(memory.tracks) == [], f"step {t}"
        assert rows.nodes == physical_nodes(memory)
    node = rows.nodes[len(rows.nodes) // 2]
    memory.tracks[node].shift(np.array([0.3, 0.0, 0.0]))
    assert memory.rows().stale_rows(memory.tracks) == []
    assert np.allclose(rows.lo[rows.row[node]], memory.tracks[node].box_min)


def test_snapshots_are_the_graph_networkx_builds_from_the_same_nodes_and_edges(house):
    """memory.graph_of writes networkx's adjacency dicts directly: the graph must be the one its public
    add_nodes_from/add_edges_from build, and a networkx graph like any other (views, copies, edits)."""
    import networkx as nx

    from embodied.memory.spatial import relations

    stream, memory = house
    sizes = []
    for t in (0, 700, 1333, memory.t):
        snap = memory.snapshot(t)
        state = memory.log.state_at(t)
        ref = nx.MultiDiGraph()
        ref.add_nodes_from(state.items())
        for node, attrs in ref.nodes(data=True):
            if attrs.get("visible"):
                attrs["last_seen"] = max(attrs.get("last_seen", min(t, memory.t)), min(t, memory.t))
        ref.add_edges_from((u, v, k, {"rel": k}) for u, v, k in relations(state, memory.config.relations))
        for node, attrs in state.items():
            for other in attrs.get("links", ()):
                if other in state:
                    ref.add_edge(node, other, key="connects", rel="connects")
        assert nx.utils.graphs_equal(snap, ref) and snap.number_of_edges() == ref.number_of_edges()
        sizes.append(snap.number_of_edges())
        assert sorted(snap.edges(keys=True, data="rel")) == sorted(ref.edges(keys=True, data="rel"))
        assert sorted(snap.in_edges(keys=True)) == sorted(ref.in_edges(keys=True))
    assert max(sizes) > 300
    for attrs in snap.nodes.values():  # the snapshot's node dicts are its own, not the log's
        attrs["status"] = "edited"
    assert all(a["status"] != "edited" for a in memory.log.state_at(memory.t).values())
    assert all(a["status"] != "edited" for kf in memory.log.kf_state for a in kf.values())
    snap.remove_node(next(iter(state)))
    snap.add_edge("a", "b", key="near", rel="near")
    assert nx.utils.graphs_equal(snap.copy(), snap) and snap.has_edge("a", "b", key="near")
    assert memory.snapshot(memory.t).number_of_nodes() == len(state), "a snapshot is a copy"


def test_paths_from_the_kept_place_graph_are_those_of_a_fresh_one():
    """``path`` keeps the place graph until a node comes or goes or a link is made: its answers stay
    those of a graph built afresh, while the robot keeps travelling and linking places."""
    stream, memory = HouseStream(60, seed=2), SpatialMemory()
    rng = np.random.default_rng(0)
    for t in range(1500):
        memory.update(stream.frame(t))
        if t % 100 == 99:
            places = memory.places()
            pairs = [(places[int(rng.integers(len(places)))], places[int(rng.integers(len(places)))])
                     for _ in range(10)]
            kept = [memory.path(a, b) for a, b in pairs]
            graph = memory._place_paths[2]
            memory.path(*pairs[1])
            assert memory._place_paths[2] is graph, "kept between two paths"
            memory._place_paths = (None, -1, None)  # forget it: built afresh
            assert [memory.path(a, b) for a, b in pairs] == kept, t
    assert len(memory.places()) >= 5 and len(memory.log.tag_times["connected"]) >= len(memory.places())
