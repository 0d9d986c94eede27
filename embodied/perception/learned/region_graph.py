"""The image's regions as a graph: what each region looks like, and what lies across each boundary.

    graph = region_graph(rgb, depth, K, cam_to_world, features, regions, n)
    graph.nodes  (n, NODE_DIM) float32   one row per region (see ``node_columns``)
    graph.pairs  (m, 2) int64            adjacent regions (a < b)
    graph.edges  (m, PAIR_DIM) float32   one row per adjacent pair
    graph.area   (n,) float32 px

Regions (``regions.colour_depth_regions``) almost never straddle two objects, so
segmenting a frame comes down to naming each region and saying which
neighbours belong together; ``grouper.RegionGrouper`` learns both from these
rows. A region is described by its colour, its size in pixels and in metres,
its place in the world (height above the ground or table, z = 0 in both
suites), how level it is, its image box, the segmenter network's features
averaged over it (``SegNet.features``), the camera, and the same averaged over
its neighbours. A boundary by its length, the colour and depth steps across it,
how far apart the network says the two regions' instance centres are, and the
two regions' own rows.

Numpy and scipy only; a 128 x 128 frame of ~80 regions takes about 2 ms.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage
from scipy.sparse import csr_matrix

CAMERAS = ("scene", "wrist", "head")  # one-hot; any other camera gets zeros
GEOMETRY = ("log_px", "log_m2", "r", "g", "b", "r_sd", "g_sd", "b_sd", "depth", "depth_sd", "z", "z_min", "z_max",
            "x_extent", "y_extent", "z_extent", "level", "rows", "cols", "fill", "border", "log_perimeter")


def node_columns(n_features: int) -> list[str]:
    """Names of a node row's columns, for ``n_features`` network channels."""
    own = list(GEOMETRY) + [f"cam_{c}" for c in CAMERAS] + [f"f{k}" for k in range(n_features)]
    around = ["near_r", "near_g", "near_b", "near_z", "near_depth_step"] + [f"near_f{k}" for k in range(n_features)]
    return own + around


PAIR_OWN = ("log_boundary", "share_min", "share_max", "colour_step", "depth_step", "depth_continuous",
            "centre_gap", "centre_gap_rel", "rgb_gap", "z_gap", "dist_3d", "level_gap")


def pair_dim(n_features: int) -> int:
    return len(PAIR_OWN) + 2 * len(node_columns(n_features))


@dataclass
class RegionGraph:
    nodes: np.ndarray  # (n, D) float32
    pairs: np.ndarray  # (m, 2) int64, a < b
    edges: np.ndarray  # (m, P) float32
    area: np.ndarray  # (n,) float32 px


def _summing(order: np.ndarray, area: np.ndarray) -> csr_matrix:
    """(n, N) 0/1 matrix whose product with a per-pixel column (N,) sums it per region: row i holds the
    pixels of region i, ``order`` (N,) the pixels sorted by region (stably: pixel order within a region,
    the order the sums run in), ``area`` (n,) each region's pixel count."""
    indptr = np.zeros(len(area) + 1, np.int64)
    np.cumsum(area, out=indptr[1:])
    return csr_matrix((np.ones(len(order), np.float32), order, indptr), shape=(len(area), len(order)))


def _grouped_sums(group: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """(n, K) sums of the rows of ``values`` (M,K) by ``group`` (M,) in [0, n)."""
    k = values.shape[1]
    flat = (group[:, None] * k + np.arange(k)).ravel()
    return np.bincount(flat, values.ravel(), minlength=n * k).reshape(n, k)


def world_points(depth: np.ndarray, K: np.ndarray, cam_to_world: np.ndarray) -> np.ndarray:
    """(3,H,W) float32 world x, y, z of every pixel (no return: the camera's own position)."""
    h, w = depth.shape
    z = depth.astype(np.float32)
    x = (np.arange(w, dtype=np.float32) - np.float32(K[0, 2])) / np.float32(K[0, 0]) * z
    y = (np.arange(h, dtype=np.float32)[:, None] - np.float32(K[1, 2])) / np.float32(K[1, 1]) * z
    R, t = cam_to_world[:3, :3].astype(np.float32), cam_to_world[:3, 3].astype(np.float32)
    return np.stack([R[k, 0] * x + R[k, 1] * y + R[k, 2] * z + t[k] for k in range(3)])


def _level(p: np.ndarray) -> np.ndarray:
    """(H,W) |world z| of each pixel's surface normal (1: a level surface, 0: an upright one), from the
    point map (3,H,W)'s steps to the right and down (the last row and column repeat their neighbours')."""
    a = p[:, :-1, 1:] - p[:, :-1, :-1]  # along a row
    b = p[:, 1:, :-1] - p[:, :-1, :-1]  # down a column
    nx = a[1] * b[2] - a[2] * b[1]
    ny = a[2] * b[0] - a[0] * b[2]
    nz = a[0] * b[1] - a[1] * b[0]
    level = np.abs(nz) / np.maximum(np.sqrt(nx * nx + ny * ny + nz * nz), np.float32(1e-12))
    return np.pad(level, ((0, 1), (0, 1)), mode="edge")


_GRIDS: dict[tuple[int, int], np.ndarray] = {}


def _pixel_grid(h: int, w: int) -> np.ndarray:
    """(H*W, 2) float32 row and column of every pixel, made once per image size."""
    if (h, w) not in _GRIDS:
        vy, vx = np.mgrid[0:h, 0:w].astype(np.float32)
        _GRIDS[h, w] = np.column_stack([vy.ravel(), vx.ravel()])
    return _GRIDS[h, w]


def _pixel_planes(rgb: np.ndarray, z: np.ndarray, points: np.ndarray, K: np.ndarray) -> np.ndarray:
    """(18, H*W) float32 per-pixel planes whose region means the graph reads: colour (3), colour^2 (3),
    depth, depth^2, world xyz (3), xyz^2 (3), level, m^2 covered, pixel row and column. Planes, not a
    pixel-major table: each is written contiguously (a third of the time)."""
    h, w = z.shape
    planes = np.empty((18, h * w), np.float32)
    np.multiply(rgb.reshape(-1, 3).T, np.float32(1 / 255), out=planes[0:3])
    np.multiply(planes[0:3], planes[0:3], out=planes[3:6])
    planes[6] = z.ravel()
    np.multiply(planes[6], planes[6], out=planes[7])
    planes[8:11] = points.reshape(3, -1)
    np.multiply(planes[8:11], planes[8:11], out=planes[11:14])
    planes[14] = _level(points).ravel()
    np.divide(planes[7], np.float32(K[0, 0] * K[1, 1]), out=planes[15])
    planes[16:18] = _pixel_grid(h, w).T
    return planes


def region_graph(rgb: np.ndarray, depth: np.ndarray, K: np.ndarray, cam_to_world: np.ndarray, features: np.ndarray,
                 offset_weight: np.ndarray, offset_bias: np.ndarray, regions: np.ndarray, n: int,
                 camera: str = "") -> RegionGraph:
    """rgb (H,W,3) uint8, depth (H,W) m (0 = no return), K (3,3) px, cam_to_world (4,4), features (H,W,C) the
    network's per-pixel features (``SegNet.pixel_features``), ``offset_weight`` (2,C) / ``offset_bias`` (2,)
    its linear offset head in px (dy, dx), regions (H,W) int in [0, n)."""
    h, w = depth.shape
    r = regions.ravel().astype(np.int64)
    area = np.bincount(r, minlength=n).astype(np.float64)
    inv = 1.0 / np.maximum(area, 1.0)
    depth = depth.astype(np.float32)
    points = world_points(depth, K, cam_to_world)
    # Per-region means in sparse products over the pixels in region order (a stable sort keeps pixel order
    # within a region; 16-bit labels sort by radix): the pixel planes one by one, then the network's features.
    order = np.argsort(regions.ravel().astype(np.int16 if n < 2 ** 15 else np.int64), kind="stable")
    summing = _summing(order, area.astype(np.int64))
    planes = _pixel_planes(rgb, depth, points, K)
    s = np.column_stack([summing @ plane for plane in planes] + [summing @ features.reshape(h * w, -1)])
    s = s.astype(np.float64) * inv[:, None]
    mean_rgb, sq_rgb = s[:, 0:3], s[:, 3:6]
    mean_d, sq_d = s[:, 6], s[:, 7]
    mean_p, sq_p = s[:, 8:11], s[:, 11:14]
    sd_rgb = np.sqrt(np.maximum(sq_rgb - mean_rgb ** 2, 0))
    sd_d = np.sqrt(np.maximum(sq_d - mean_d ** 2, 0))
    sd_p = np.sqrt(np.maximum(sq_p - mean_p ** 2, 0))
    starts = np.minimum(np.cumsum(area, dtype=np.int64) - area.astype(np.int64), h * w - 1)
    height = points[2].ravel()[order]
    z_min, z_max = np.minimum.reduceat(height, starts), np.maximum.reduceat(height, starts)
    boxes = ndimage.find_objects(regions + 1, max_label=n)
    rows = np.array([b[0].stop - b[0].start if b else 0 for b in boxes], np.float64)
    cols = np.array([b[1].stop - b[1].start if b else 0 for b in boxes], np.float64)
    border = np.zeros(n, bool)
    border[np.unique(np.concatenate([regions[0], regions[-1], regions[:, 0], regions[:, -1]]))] = True
    mean_yx, mean_f = s[:, 16:18], s[:, 18:]

    # Boundaries: every pair of 4-neighbours in different regions, both ways once (row pairs, then
    # column pairs, each in pixel order).
    right, down = regions[:, :-1] != regions[:, 1:], regions[:-1] != regions[1:]

    def across(image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The values of ``image`` on the two sides of every boundary pixel pair."""
        return (np.concatenate([image[:, :-1][right], image[:-1][down]]),
                np.concatenate([image[:, 1:][right], image[1:][down]]))

    ra, rb = (side.astype(np.int64) for side in across(regions))
    da, db = (side.astype(np.float64) for side in across(depth))
    ca, cb = across(rgb)
    lo, hi = np.minimum(ra, rb), np.maximum(ra, rb)
    key = lo * n + hi
    pair_keys, which, boundary = np.unique(key, return_inverse=True, return_counts=True)
    pairs = np.stack([pair_keys // n, pair_keys % n], 1)
    m = len(pairs)
    perimeter = np.bincount(ra, minlength=n) + np.bincount(rb, minlength=n) + 0.0
    step_c = (np.maximum(ca, cb) - np.minimum(ca, cb)).max(1) / 255.0
    step_d = np.abs(da - db) / np.maximum(np.minimum(da, db), 0.05)
    continuous = (np.abs(da - db) <= 0.01 + 0.05 * np.minimum(da, db)).astype(np.float64)
    # Which side is nearer the camera across the boundary (signed, from the lower-numbered region's side).
    signed = np.where(ra == lo, db - da, da - db)
    per_pair = _grouped_sums(which, np.column_stack([step_c, step_d, continuous, signed]), m) / boundary[:, None]

    # Neighbourhood: boundary-weighted means of the neighbours' colour, height and features, and how far
    # the region stands out of its surroundings towards the camera.
    weight = boundary.astype(np.float64)
    x, y = np.concatenate([pairs[:, 0], pairs[:, 1]]), np.concatenate([pairs[:, 1], pairs[:, 0]])
    both = np.concatenate([weight, weight])
    own = np.column_stack([mean_rgb, mean_p[:, 2], mean_f])
    total = np.maximum(np.bincount(x, both, minlength=n), 1.0)
    around = _grouped_sums(x, own[y] * both[:, None], n) / total[:, None]
    stands_out = np.bincount(x, np.concatenate([per_pair[:, 3], -per_pair[:, 3]]) * both, minlength=n) / total
    near = np.column_stack([around[:, :4], stands_out, around[:, 4:]])

    cam = np.zeros((n, len(CAMERAS)))
    if camera in CAMERAS:
        cam[:, CAMERAS.index(camera)] = 1.0
    nodes = np.column_stack([
        np.log1p(area), np.log(np.maximum(s[:, 15], 1e-8)), mean_rgb, sd_rgb, mean_d, sd_d, mean_p[:, 2], z_min, z_max,
        sd_p * 3.46, s[:, 14], rows / h, cols / w, area / np.maximum(rows * cols, 1), border,
        np.log1p(perimeter), cam, mean_f, near])

    # The network's offsets are linear in its features: a region's mean vote for its instance's centre
    # is its mean pixel plus the offset head applied to its mean features.
    centre = mean_yx + mean_f @ offset_weight.T.astype(np.float64) + offset_bias.astype(np.float64)
    pa, pb = pairs[:, 0], pairs[:, 1]
    gap = np.linalg.norm(centre[pa] - centre[pb], axis=1)
    size = np.sqrt(np.minimum(area[pa], area[pb]))
    edges = np.column_stack([
        np.log(boundary), boundary / np.maximum(np.minimum(perimeter[pa], perimeter[pb]), 1),
        boundary / np.maximum(np.maximum(perimeter[pa], perimeter[pb]), 1), per_pair[:, 0], per_pair[:, 1],
        per_pair[:, 2], np.log1p(gap), gap / np.maximum(size, 1.0), np.abs(mean_rgb[pa] - mean_rgb[pb]).sum(1),
        np.abs(mean_p[pa, 2] - mean_p[pb, 2]), np.linalg.norm(mean_p[pa] - mean_p[pb], axis=1),
        np.abs(s[pa, 14] - s[pb, 14]),
        nodes[pa] + nodes[pb], np.abs(nodes[pa] - nodes[pb])])
    return RegionGraph(nodes.astype(np.float32), pairs, edges.astype(np.float32), area.astype(np.float32))
