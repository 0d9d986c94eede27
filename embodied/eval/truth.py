"""On / in relations read from the simulator itself (evaluation only).

The memory derives ``on`` and ``in`` from boxes (:func:`embodied.memory.spatial.relations`).
Scoring it against the same rules applied to true boxes would only test the
boxes, never the rules, so the truth here comes from what MuJoCo knows:

* ``on(a, b)``: a geom of ``a`` touches a geom of ``b`` (an active contact,
  penetration or gap under ``contact_gap``), the contact normal is within
  ``max_tilt`` of vertical, and ``a``'s centre of mass is above the contact
  point. When ``a`` touches several supports, the one with the highest
  contact is kept (one support per object, as in the memory). MuJoCo does
  not collide two bodies welded to the world (the apartment's props, the
  workcell's cabinets), so for those ``on`` comes from geometry instead:
  ``a``'s lowest point lies at (or, for a prop modelled sunk into it, up to
  ``max_sink`` below) the top of one of ``b``'s geoms that reaches lower than
  ``a`` does, and ``a``'s centre of mass is over that geom's own, oriented
  footprint.
* ``in(a, b)`` for a container class ``b`` (cups, drawers): ``a``'s centre of
  mass lies inside the box spanned by ``b``'s geoms *in ``b``'s own body frame*
  (a drawer's tray, an upturned cup's walls), so a tilted or sliding container
  is judged by its real shape, not by a world-aligned box.
* Furniture can rest on things too (a drawer housing on the table).
* Something in a container is not also ``on`` anything (a block in a drawer
  touches the tray; a ball under a cup touches the table). A body that moves
  on a slide or hinge (a drawer) rests on nothing: it hangs on its joint; a
  part mounted on a fixed base (a push button) rests where its base does.

Only entities that can be named are returned (the robot and planes are left out).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from embodied.memory.config import kind_of

MOVABLE_KINDS = ("object", "container")  # what can be put in a container


@dataclass(frozen=True)
class TruthConfig:
    contact_gap: float = 0.002  # m; a contact counts when its distance is below this
    max_tilt: float = np.pi / 4  # rad; contact normals steeper than this from vertical are side contacts
    rest_gap: float = 0.005  # m; welded props: a bottom this far above a top still rests on it
    max_sink: float = 0.06  # m; welded props: how far a prop may be modelled into its support


def _geom_owner(env) -> tuple[np.ndarray, list]:
    """(ngeom,) entity index per geom (-1: none), and the entity list."""
    u = env.unwrapped
    owner = np.full(u.model.ngeom, -1, dtype=np.int64)
    for k, e in enumerate(u.entities):
        owner[np.asarray(e.geom_ids, dtype=np.int64)] = k
    return owner, list(u.entities)


CORNERS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=np.float64)


def _corners(model, data, g: int) -> np.ndarray:
    """(8, 3) world corners of geom ``g``'s bounding box in its own frame."""
    centre, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
    return data.geom_xpos[g] + (centre + CORNERS * half) @ data.geom_xmat[g].reshape(3, 3).T


def _solid_geoms(model, entity) -> list[int]:
    return [int(g) for g in entity.geom_ids if model.geom_type[g] != mujoco.mjtGeom.mjGEOM_PLANE]


def _local_box(model, data, entity) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(lo (3,), hi (3,)) of an entity's geoms in its root body's frame, plus that frame (pos, rot)."""
    root = model.body(entity.root_body).id
    pos, rot = data.xpos[root], data.xmat[root].reshape(3, 3)
    pts = np.concatenate([(_corners(model, data, g) - pos) @ rot for g in _solid_geoms(model, entity)])
    return pts.min(axis=0), pts.max(axis=0), pos, rot


def _rests(model, body: int) -> bool:
    """Whether a body can rest on something: welded to the world, or free. A body on a slide or hinge
    (a drawer, a door) hangs on its joint instead."""
    if model.body_weldid[body] == 0:
        return True
    return model.body_jntnum[body] == 1 and model.jnt_type[model.body_jntadr[body]] == mujoco.mjtJoint.mjJNT_FREE


def _welded_support(model, data, a, entities, named, centre, config: TruthConfig) -> tuple[float, int] | None:
    """(top z, entity index) of the highest geom that welded entity ``a`` rests on, by geometry."""
    bottom = min(float(_corners(model, data, g)[:, 2].min()) for g in _solid_geoms(model, entities[a]))
    best = None
    for b in named:
        if b == a:
            continue
        for g in _solid_geoms(model, entities[b]):
            z = _corners(model, data, g)[:, 2]
            top = float(z.max())
            if float(z.min()) >= bottom or not top - config.max_sink <= bottom <= top + config.rest_gap:
                continue
            if centre[a][2] <= top:
                continue
            local = (centre[a] - data.geom_xpos[g]) @ data.geom_xmat[g].reshape(3, 3) - model.geom_aabb[g, :3]
            if np.all(np.abs(local[:2]) <= model.geom_aabb[g, 3:5]) and (best is None or top > best[0]):
                best = (top, b)
    return best


def true_relations(env, config: TruthConfig = TruthConfig()) -> set[tuple[str, str, str]]:
    """{(a, b, "on" | "in")} in entity names, from contacts and container geometry at this instant."""
    u = env.unwrapped
    model, data = u.model, u.data
    owner, entities = _geom_owner(env)
    centre = {k: data.xipos[model.body(e.root_body).id] for k, e in enumerate(entities)}
    # Props parked out of the episode wait below the floor.
    named = [k for k, e in enumerate(entities) if e.cls != "robot" and _solid_geoms(model, e) and centre[k][2] > -0.5]
    rigid = [k for k in named if _rests(model, model.body(entities[k].root_body).id)]
    movable = [k for k in rigid if kind_of(entities[k].cls) in MOVABLE_KINDS]

    edges: set[tuple[str, str, str]] = set()
    inside: set[int] = set()
    for b in named:
        if kind_of(entities[b].cls) != "container":
            continue
        lo, hi, pos, rot = _local_box(model, data, entities[b])
        for a in movable:
            if a == b:
                continue
            p = (centre[a] - pos) @ rot
            if np.all(p >= lo) and np.all(p <= hi):
                edges.add((entities[a].name, entities[b].name, "in"))
                inside.add(a)

    cos_tilt = np.cos(config.max_tilt)
    support: dict[int, tuple[float, int]] = {}
    for i in range(data.ncon):
        c = data.contact[i]
        if c.dist > config.contact_gap:
            continue
        ea, eb = int(owner[c.geom1]), int(owner[c.geom2])
        if ea < 0 or eb < 0 or ea == eb:
            continue
        normal = np.asarray(c.frame[:3])
        if abs(normal[2]) < cos_tilt:
            continue
        z = float(c.pos[2])
        for top, bottom in ((ea, eb), (eb, ea)):
            if top not in rigid or top in inside or bottom not in named:
                continue
            if centre[top][2] > z > support.get(top, (-np.inf, -1))[0]:
                support[top] = (z, bottom)
    for a in rigid:
        if a not in inside and model.body_weldid[model.body(entities[a].root_body).id] == 0:
            found = _welded_support(model, data, a, entities, named, centre, config)
            if found is not None:
                support[a] = found
    for a, (_, b) in support.items():
        edges.add((entities[a].name, entities[b].name, "on"))
    return edges
