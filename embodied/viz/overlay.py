"""Draw the remembered scene graph over camera frames, and a top-down map panel.

Inputs are what memory holds (node positions in metres, world frame) and
what the camera publishes (K (3,3) in pixels, camera-to-world (4,4) with
OpenCV axes); nothing here reads the simulator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw


@dataclass
class OverlayNode:
    key: str
    label: str
    position: np.ndarray  # (3,) metres, world frame
    rgb: tuple[float, float, float]
    visible: bool = True


def project(points: np.ndarray, K: np.ndarray, cam_to_world: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World points (N,3) -> pixel coordinates (N,2) and a mask of points in front of the camera."""
    world_to_cam = np.linalg.inv(cam_to_world)
    cam = points @ world_to_cam[:3, :3].T + world_to_cam[:3, 3]
    front = cam[:, 2] > 1e-3
    z = np.where(front, cam[:, 2], 1.0)
    uv = np.stack([K[0, 0] * cam[:, 0] / z + K[0, 2], K[1, 1] * cam[:, 1] / z + K[1, 2]], axis=1)
    return uv, front


def _colour(rgb, alpha: int = 255) -> tuple[int, int, int, int]:
    return (int(rgb[0] * 255), int(rgb[1] * 255), int(rgb[2] * 255), alpha)


def draw_graph(
    frame: np.ndarray,
    K: np.ndarray,
    cam_to_world: np.ndarray,
    nodes: list[OverlayNode],
    edges: list[tuple[str, str, str]],
    scale: int = 1,
) -> np.ndarray:
    """Overlay nodes (dots + labels) and relation edges on ``frame`` (H,W,3) uint8.

    ``K`` belongs to the resolution the camera rendered at; ``scale`` is how
    much larger ``frame`` is than that.
    """
    image = Image.fromarray(frame).convert("RGBA")
    layer = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    if not nodes:
        return frame
    points = np.array([n.position for n in nodes], dtype=float)
    uv, front = project(points, K, cam_to_world)
    uv = uv * scale
    width, height = image.size
    inside = front & (uv[:, 0] >= 0) & (uv[:, 0] < width) & (uv[:, 1] >= 0) & (uv[:, 1] < height)
    where = {n.key: i for i, n in enumerate(nodes)}
    for source, target, relation in edges:
        i, j = where.get(source), where.get(target)
        if i is None or j is None or not (inside[i] and inside[j]):
            continue
        draw.line([tuple(uv[i]), tuple(uv[j])], fill=(255, 255, 255, 170), width=1)
        mid = (uv[i] + uv[j]) / 2
        draw.text((mid[0] + 2, mid[1]), relation, fill=(255, 255, 160, 230))
    for i, node in enumerate(nodes):
        if not inside[i]:
            continue
        x, y = uv[i]
        r = 4 if node.visible else 3
        outline = (255, 255, 255, 255) if node.visible else (255, 255, 255, 140)
        draw.ellipse([x - r, y - r, x + r, y + r], fill=_colour(node.rgb, 255 if node.visible else 90), outline=outline)
        text = node.label if node.visible else f"{node.label} (unseen)"
        draw.text((x + r + 2, y - r - 8), text, fill=(255, 255, 255, 255 if node.visible else 170))
    return np.asarray(Image.alpha_composite(image, layer).convert("RGB"))


def draw_map(
    size: int,
    bounds: tuple[float, float, float, float],
    nodes: list[OverlayNode],
    path: np.ndarray | None = None,
    walls: np.ndarray | None = None,
) -> np.ndarray:
    """Top-down panel (size,size,3): optional occupancy (walls) image, remembered nodes, robot path.

    ``bounds`` = (xmin, xmax, ymin, ymax) in metres; ``walls`` is an (h,w) bool
    grid over the same bounds, row 0 at ymax; ``path`` is (N,2) metres.
    """
    xmin, xmax, ymin, ymax = bounds
    image = Image.new("RGB", (size, size), (245, 245, 240))
    if walls is not None:
        grid = np.where(walls, 60, 245).astype(np.uint8)
        image = Image.fromarray(np.stack([grid] * 3, -1)).resize((size, size), Image.NEAREST)
    draw = ImageDraw.Draw(image)

    def to_px(xy):
        return ((xy[0] - xmin) / (xmax - xmin) * (size - 1), (ymax - xy[1]) / (ymax - ymin) * (size - 1))

    if path is not None and len(path) > 1:
        draw.line([to_px(p) for p in path], fill=(30, 120, 220), width=2)
        x, y = to_px(path[-1])
        draw.ellipse([x - 4, y - 4, x + 4, y + 4], fill=(30, 120, 220))
    for node in nodes:
        x, y = to_px(node.position[:2])
        fill = _colour(node.rgb)[:3] if node.visible else (200, 200, 200)
        draw.rectangle([x - 3, y - 3, x + 3, y + 3], fill=fill, outline=(0, 0, 0))
        draw.text((x + 5, y - 6), node.label, fill=(0, 0, 0))
    return np.asarray(image)
