"""``embodied run --video out.mp4 --overlay graph``: the memory drawn over the video.

``OverlayVideo`` sits between ``run_episodes`` and a ``VideoWriter``. Each
video frame is the env's ``render()``: one (H, H) view per camera side by
side (navigation envs add their own privileged map on the right). The
remembered nodes, labels and relation edges are projected into every camera
view; navigation runs also get a top-down panel of the *remembered* objects
and the robot's remembered path (``overlay.draw_map``), so the memory map can
be compared with the env's true map next to it.

The rider (``embodied.agent.ride.MemoryRider``) has folded in the step's
observation before the frame arrives (run_episodes calls hooks first), so
what is drawn is the memory at that very step.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from PIL import Image, ImageDraw

from embodied.viz.overlay import OverlayNode, draw_graph, draw_map

# Drawn over camera views; in_room and connects (the place graph) would only clutter them.
OVERLAY_RELATIONS = ("on", "in", "near", "part_of")
DRAWN_KINDS = ("object", "container", "articulated", "surface")


class MemorySource(Protocol):
    """What the overlay reads each frame (``embodied.agent.ride.MemoryRider`` provides it): the memory after
    this step, the step's observation, the camera names, each camera's (K (3,3) px, cam_to_world (4,4) m),
    and the env (for its ``image_size``)."""

    memory: Any
    obs: dict | None
    cameras: tuple[str, ...]
    env: Any

    def camera(self, cam: str) -> tuple[np.ndarray, np.ndarray]: ...


def scale_intrinsics(K: np.ndarray, from_size: int, to_size: int) -> np.ndarray:
    """K of a square camera rendered at ``from_size`` pixels, for the same camera at ``to_size``.

    Pixel centres sit at integer coordinates, so the principal point scales
    about -0.5, not 0 (cx = (W - 1) / 2 at both sizes).
    """
    s = to_size / from_size
    out = np.asarray(K, dtype=np.float64).copy()
    out[0, 0] *= s
    out[1, 1] *= s
    out[0, 2] = (out[0, 2] + 0.5) * s - 0.5
    out[1, 2] = (out[1, 2] + 0.5) * s - 0.5
    return out


def memory_nodes(memory, kinds=DRAWN_KINDS) -> list[OverlayNode]:
    nodes = []
    for node, a in memory.graph.nodes(data=True):
        if a.get("kind") not in kinds or "position" not in a:
            continue
        label = f"{a.get('colour', '')} {a.get('cls', node)}".strip().replace("_", " ")
        contained = bool(a.get("inside"))
        nodes.append(
            OverlayNode(
                node,
                label + (f" (in {a['inside']})" if contained else ""),
                np.asarray(a["position"], dtype=float),
                tuple(a.get("rgb") or (0.6, 0.6, 0.6))[:3],
                bool(a.get("visible")) and not contained,
            )
        )
    return nodes


class OverlayVideo:
    """A VideoWriter stand-in: overlays the rider's memory, then passes frames on."""

    def __init__(self, writer, rider: MemorySource, navigation: bool = False, bounds=None):
        self.writer = writer
        self.rider = rider
        self.navigation = navigation
        # Square map bounds (xmin, xmax, ymin, ymax), metres; the apartment plan by default.
        self.bounds = bounds if bounds is not None else _apartment_bounds()
        self.frames = 0

    def add(self, frame: np.ndarray) -> None:
        frame = np.ascontiguousarray(frame)
        memory = self.rider.memory
        if memory is not None and self.rider.obs is not None:
            frame = self._overlay(frame, memory)
        self.writer.add(frame)
        self.frames += 1

    def _overlay(self, frame: np.ndarray, memory) -> np.ndarray:
        size = frame.shape[0]  # each camera view is square, as tall as the frame
        nodes = memory_nodes(memory)
        edges = [(u, v, k) for u, v, k in memory.graph.edges(keys=True) if k in OVERLAY_RELATIONS]
        out = frame.copy()
        for i, cam in enumerate(self.rider.cameras):
            if (i + 1) * size > frame.shape[1]:
                break
            K, pose = self.rider.camera(cam)
            view = out[:, i * size : (i + 1) * size]
            K = scale_intrinsics(K, self.rider.env.image_size, size)
            out[:, i * size : (i + 1) * size] = draw_graph(np.ascontiguousarray(view), K, pose, nodes, edges)
        if self.navigation:
            out = np.concatenate([out, self._map(memory, size)], axis=1)
        return out

    def _map(self, memory, size: int) -> np.ndarray:
        objects = memory_nodes(memory, ("object", "container", "articulated"))
        # Furniture unlabelled (a map full of names is unreadable); floor and wall span the whole plan.
        furniture = [
            OverlayNode(n.key, "", n.position, n.rgb, n.visible)
            for n in memory_nodes(memory, ("surface",))
            if memory.graph.nodes[n.key].get("cls") not in ("floor", "wall")
        ]
        path = None
        if "agent" in memory.log.by_node:
            path = np.array([p[:2] for _, p in memory.trajectory("agent")], dtype=float)
        panel = draw_map(size, self.bounds, furniture + objects, path=path)
        image = Image.fromarray(panel)
        ImageDraw.Draw(image).text((4, 4), "memory", fill=(0, 0, 0))
        return np.asarray(image)

    def close(self) -> None:
        self.writer.close()


def _apartment_bounds() -> tuple[float, float, float, float]:
    from embodied.envs.nav_layout import SIZE

    w, h = float(SIZE[0]), float(SIZE[1])
    side = max(w, h) + 0.4
    cx, cy = w / 2, h / 2
    return (cx - side / 2, cx + side / 2, cy - side / 2, cy + side / 2)
