"""A top-down map of the apartment drawn with numpy, for videos (``env.render()``).

The map is a demo aid, not an observation: it shows privileged layout
(walls, furniture, objects, the goal) next to the head camera's view.
Image rows run north to south (row 0 is y = 6 m), columns west to east.
"""

from __future__ import annotations

import numpy as np

from embodied.envs.nav_grid import box_distance

FLOOR = np.array([226, 214, 190], np.uint8)
WALL = np.array([60, 60, 66], np.uint8)
FURNITURE = np.array([160, 130, 100], np.uint8)
TRAIL = np.array([40, 120, 220], np.uint8)
ROBOT = np.array([230, 130, 20], np.uint8)
GOAL = np.array([220, 30, 30], np.uint8)


class MapPainter:
    """Paints the static background once per layout, then the moving parts per frame."""

    def __init__(self, size_m: np.ndarray, height: int = 240):
        self.scale = height / float(size_m[1])  # pixels per metre
        self.shape = (height, int(round(size_m[0] * self.scale)))
        rows, cols = np.mgrid[0 : self.shape[0], 0 : self.shape[1]]
        self._xy = np.stack([(cols + 0.5) / self.scale, (self.shape[0] - rows - 0.5) / self.scale], axis=-1)
        self.background: np.ndarray | None = None

    def set_layout(self, walls: np.ndarray, furniture: np.ndarray) -> None:
        """Paint floor, walls and furniture from their (N, 5) boxes."""
        img = np.empty((*self.shape, 3), np.uint8)
        img[:] = FLOOR
        flat = self._xy.reshape(-1, 2)
        for boxes, colour in ((furniture, FURNITURE), (walls, WALL)):
            if len(boxes):
                inside = box_distance(flat, boxes).reshape(self.shape) <= 0.0
                img[inside] = colour
        self.background = img

    def pixel(self, xy) -> tuple[int, int]:
        return int(self.shape[0] - xy[1] * self.scale), int(xy[0] * self.scale)

    def _disc(self, img: np.ndarray, xy, radius_px: float, colour, ring: bool = False) -> None:
        r0, c0 = self.pixel(xy)
        r = int(np.ceil(radius_px)) + 1
        rows = slice(max(r0 - r, 0), min(r0 + r + 1, self.shape[0]))
        cols = slice(max(c0 - r, 0), min(c0 + r + 1, self.shape[1]))
        if rows.start >= rows.stop or cols.start >= cols.stop:
            return  # off the map (an object taken out of the apartment)
        rr, cc = np.mgrid[rows, cols]
        d = np.hypot(rr - r0, cc - c0)
        mask = (np.abs(d - radius_px) <= 1.0) if ring else (d <= radius_px)
        img[rows, cols][mask] = colour

    def draw(self, objects, trail: np.ndarray, pose: np.ndarray, goal_xy=None) -> np.ndarray:
        """(H, W, 3) uint8 map: ``objects`` is [(xy, rgb 0..1)], ``trail`` (T, 2), ``pose`` (x, y, yaw)."""
        img = self.background.copy()
        if len(trail):
            for r, c in {self.pixel(p) for p in trail}:
                if 0 <= r < self.shape[0] and 0 <= c < self.shape[1]:
                    img[r, c] = TRAIL
        for xy, rgb in objects:
            self._disc(img, xy, 4.0, (np.asarray(rgb) * 255).astype(np.uint8))
            self._disc(img, xy, 4.5, (20, 20, 20), ring=True)
        if goal_xy is not None:
            self._disc(img, goal_xy, 0.5 * self.scale, GOAL, ring=True)
        self._disc(img, pose[:2], 0.18 * self.scale, ROBOT)
        for s in np.linspace(0.0, 0.35, 12):
            r, c = self.pixel(pose[:2] + s * np.array([np.cos(pose[2]), np.sin(pose[2])]))
            if 0 <= r < self.shape[0] and 0 <= c < self.shape[1]:
                img[r, c] = (20, 20, 20)
        return img
