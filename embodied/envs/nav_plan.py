"""Sampling apartment layouts and checking them against the simulator.

``LayoutSampler.sample`` draws doorways, room themes and furniture
placements (``nav_layout``), writes them into the model (static bodies are
moved by ``body_pos``; doorway tiles sink below the floor) and accepts the
plan only if, on the compiled geometry:

* every object spot has a reachable staging point and a collision-free
  stand-off point in front of it (so the goal can always be reached),
* each room has a viewpoint from which a full turn sees all its spots
  (``mj_ray`` line of sight, within the head camera's vertical view),
* the last room of the tour has a dock that faces a blank outer wall
  (nothing but wall in view, so the goal's target is never visible there).

All of it is privileged: it serves the env's tour, success checks and experts.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from embodied.envs.nav_grid import GridPlanner, OccupancyGrid, box_distance, collision_boxes
from embodied.envs.nav_layout import (
    ROOMS, SEGMENTS, SIZE, THEMES, WALL_HALF, WALL_HEIGHT, Door, Placement, place_room, room_of, sample_doors,
    tour_orders,
)

CAMERA_HEIGHT = 1.2
ROBOT_RADIUS = 0.18
PLAN_RADIUS = 0.3  # clearance of the planning grid's navigable cells
APPROACH, STAGE = 0.4, 0.6  # stand-off distances (m) in front of an object's spot
_RAY_GROUPS = np.array([1, 1, 0, 0, 0, 0], np.uint8)  # walls and furniture occlude; objects (group 2) do not


@dataclass
class Apartment:
    """One sampled layout (everything but the small objects)."""

    doors: list[Door]
    themes: list[str]  # per room
    furniture: dict[str, Placement]
    slots: np.ndarray  # (S, 3) object spots, world xyz (z = surface height)
    normals: np.ndarray  # (S, 2) from each spot's furniture into the room
    slot_room: np.ndarray  # (S,)
    viewpoints: np.ndarray  # (4, 2) where the tour turns around in each room
    order: tuple[int, ...]  # rooms in tour order
    start_yaw: float
    home: np.ndarray  # (3,) dock pose x, y, yaw (faces an outer wall)
    legs: list[list[np.ndarray]]  # tour paths: viewpoint to viewpoint, last one to the dock
    grid: OccupancyGrid
    planner: GridPlanner


class LayoutSampler:
    """Writes sampled layouts into ``model`` and validates them with ``data`` (kinematics only)."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, robot_body: int, furniture_body: dict[str, int],
                 object_bodies: list[int]):
        self.model, self.data, self.robot_body = model, data, robot_body
        self.furniture_body = furniture_body
        self.object_bodies = object_bodies
        self.tiles = {seg.name: [model.geom(f"{seg.name}_{k}").id for k in range(seg.tiles)] for seg in SEGMENTS}
        self.footprint = {name: 2 * model.geom(f"{name}/collision").size[:2].copy() for name in furniture_body}
        self.slot_sites = [(name, model.site(f"{name}/slot{k}").id) for name in furniture_body for k in range(4)
                           if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, f"{name}/slot{k}") >= 0]

    def sample(self, rng: np.random.Generator) -> Apartment:
        """Draw doorways, themes and furniture until the plan passes ``_check`` (writes the model)."""
        for _ in range(200):
            doors = sample_doors(rng)
            themes = [str(t) for t in rng.permutation(list(THEMES))]
            furniture: dict[str, Placement] = {}
            for room, theme in enumerate(themes):
                placed = place_room(rng, room, [(n, self.footprint[n]) for n, _ in THEMES[theme]], doors)
                if placed is None:
                    break
                furniture.update(placed)
            else:
                self.apply(doors, furniture)
                apartment = self._check(rng, doors, themes, furniture)
                if apartment is not None:
                    return apartment
        raise RuntimeError("could not sample a valid apartment layout in 200 tries")

    def apply(self, doors: list[Door], furniture: dict[str, Placement]) -> None:
        m = self.model
        open_tiles = {(d.segment.name, d.first_tile + i) for d in doors for i in range(2)}
        for seg in SEGMENTS:
            for k, g in enumerate(self.tiles[seg.name]):
                # A doorway's tiles sink below the floor: same model, no collision, not drawn.
                z = -WALL_HEIGHT if (seg.name, k) in open_tiles else WALL_HEIGHT / 2
                m.geom_pos[g] = [*seg.tile_centre(k), z]
        for name, p in furniture.items():
            body = self.furniture_body[name]
            m.body_pos[body] = [p.x, p.y, 0.0]
            m.body_quat[body] = [np.cos(p.yaw / 2), 0.0, 0.0, np.sin(p.yaw / 2)]
        for body in self.object_bodies:
            m.body_pos[body] = [0.0, -5.0, -3.0]
        mujoco.mj_kinematics(m, self.data)

    def _check(self, rng, doors, themes, furniture) -> Apartment | None:
        """Validate a plan against the simulator: every spot reachable and seen on the tour."""
        boxes = collision_boxes(self.model, self.data, self.robot_body)
        grid = OccupancyGrid(boxes, (0.0, 0.0), SIZE, res=0.1, radius=PLAN_RADIUS)
        slots = np.array([self.data.site_xpos[s] for _, s in self.slot_sites])
        normals = np.array([furniture[name].normal for name, _ in self.slot_sites])
        stage, approach = slots[:, :2] + STAGE * normals, slots[:, :2] + APPROACH * normals
        if grid.clearance_at(approach).min() < ROBOT_RADIUS + 0.03:
            return None
        # The free space connected to the most open spot; everything must lie in it.
        reach = grid.reachable(grid.centres[np.unravel_index(np.argmax(grid.clearance), grid.shape)])
        for s, a in zip(stage, approach):
            cell = grid.centres[grid.nearest(s, reach)]
            if np.linalg.norm(cell - s) > 0.3 or not grid.segment_clear(cell, a, ROBOT_RADIUS + 0.03):
                return None
        slot_room = np.array([room_of(p) for p in slots[:, :2]])
        viewpoints = []
        for room in range(4):
            vp = self._viewpoint(grid, reach, room, slots[slot_room == room])
            if vp is None:
                return None
            viewpoints.append(vp)
        orders = tour_orders(doors)
        order = orders[int(rng.integers(len(orders)))]
        home = self._dock(rng, grid, reach, order[-1])
        if home is None:
            return None
        planner = GridPlanner(grid, reach)
        stops = [viewpoints[r] for r in order] + [home[:2]]
        legs = [planner.path(a, b) + [np.asarray(b)] for a, b in zip(stops[:-1], stops[1:])]
        return Apartment(doors, themes, furniture, slots, normals, slot_room, np.array(viewpoints), order,
                         float(rng.uniform(-np.pi, np.pi)), home, legs, grid, planner)

    def _viewpoint(self, grid: OccupancyGrid, reach: np.ndarray, room: int, targets: np.ndarray) -> np.ndarray | None:
        """The free spot nearest the room's centre from which one turn on the spot sees all ``targets``."""
        x0, y0, x1, y1 = ROOMS[room]
        centre = np.array([(x0 + x1) / 2, (y0 + y1) / 2])
        inside = (grid.centres[..., 0] > x0) & (grid.centres[..., 0] < x1) & (grid.centres[..., 1] > y0)
        inside &= (grid.centres[..., 1] < y1) & (grid.clearance >= 0.4) & reach
        cells = np.argwhere(inside)
        cands = grid.centres[cells[:, 0], cells[:, 1]]
        for c in cands[np.argsort(np.linalg.norm(cands - centre, axis=1))][:60]:
            if all(self.visible_from(c, t) for t in targets):
                return c
        return None

    def visible_from(self, xy, target) -> bool:
        """Whether a point ``target`` (3,) is in the head camera's line of sight and vertical view from ``xy``."""
        eye = np.array([xy[0], xy[1], CAMERA_HEIGHT])
        vec = np.asarray(target, dtype=np.float64) + np.array([0.0, 0.0, 0.06]) - eye
        dist = float(np.hypot(vec[0], vec[1]))
        # The camera looks 20 deg down with a 35 deg half-view: keep targets above 50 deg depression.
        if dist < -vec[2] / np.tan(np.deg2rad(50)) or dist > 5.0:
            return False
        geom = np.zeros(1, np.int32)
        x = mujoco.mj_ray(self.model, self.data, eye, vec, _RAY_GROUPS, 1, self.robot_body, geom)
        return x < 0 or x >= 1.0

    def _dock(self, rng, grid: OccupancyGrid, reach: np.ndarray, room: int) -> np.ndarray | None:
        """A pose 0.55 m from one of the room's outer walls, facing it, with nothing else in view."""
        x0, y0, x1, y1 = ROOMS[room]
        spots = []
        for normal, at_wall, outer in (((0, 1), y0, y0 == 0), ((0, -1), y1, y1 == SIZE[1]),
                                       ((1, 0), x0, x0 == 0), ((-1, 0), x1, x1 == SIZE[0])):
            if not outer:
                continue
            n = np.array(normal, dtype=np.float64)
            along = np.abs(n[::-1])
            lo, hi = (x0, x1) if n[0] == 0 else (y0, y1)
            for u in np.arange(lo + 0.6, hi - 0.6, 0.1):
                p = along * u + np.abs(n) * at_wall + n * (WALL_HALF + 0.55)
                spots.append((p, n))
        # The view wedge (70 deg wide) from the camera to the wall must hold nothing but floor and wall.
        f, lat = np.meshgrid(np.linspace(0.15, 0.5, 8), np.linspace(-1.0, 1.0, 9))
        valid = []
        for p, n in spots:
            side = np.array([-n[1], n[0]])
            wedge = p - n * f[..., None] + side * (lat * (0.1 + (f - 0.1) * np.tan(np.deg2rad(40))))[..., None]
            if grid.clearance_at(p[None])[0] >= 0.45 and box_distance(wedge.reshape(-1, 2), grid.boxes).min() > 0.03:
                if reach[grid.cell(p)]:
                    valid.append(np.array([p[0], p[1], np.arctan2(-n[1], -n[0])]))
        return valid[int(rng.integers(len(valid)))] if valid else None

