"""Depth clouds, the voxel map they build, and planar point-to-plane ICP against it.

Frames, units: world frame, metres, z up; camera poses are (4,4)
camera-to-world in OpenCV axes; ``depth (H,W) float32`` metres (z-depth),
``K (3,3)`` pixels with pixel centres at integer coordinates.

A planar pose change is ``(dx, dy, dyaw)`` about a pivot ``c`` (the camera):
``p' = Rz(dyaw) (p - c) + c + (dx, dy, 0)``, as the (4,4) ``planar_about``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from embodied.perception.geometry import depth_noise


def planar(yaw: float, xy) -> np.ndarray:
    """(4,4) rotation by ``yaw`` (rad) about world z, then translation ``(x, y, 0)`` (m)."""
    c, s = np.cos(yaw), np.sin(yaw)
    out = np.eye(4)
    out[:2, :2] = [[c, -s], [s, c]]
    out[:2, 3] = xy
    return out


def planar_about(step, pivot) -> np.ndarray:
    """(4,4) of the planar change ``step = (dx, dy, dyaw)`` about ``pivot`` (2+,)."""
    c = np.asarray(pivot, dtype=np.float64)[:2]
    rot = planar(step[2], (0.0, 0.0))[:2, :2]
    return planar(step[2], c + np.asarray(step[:2]) - rot @ c)


def yaw_of(T: np.ndarray) -> float:
    """Heading (rad) of a camera pose: its optical axis (OpenCV z) projected on the floor."""
    return float(np.arctan2(T[1, 2], T[0, 2]))


def wrap(angle: float) -> float:
    return float((angle + np.pi) % (2 * np.pi) - np.pi)


# Smoothing of noisy depth before the grid cloud (``grid_cloud``'s ``sigma``):
SMOOTH_RADIUS = 2  # px: each grid pixel's depth is fitted over the (2r+1)^2 pixels around it
SMOOTH_FILL = 0.6  # share of a block's pixels that must have a return for the fit to count
# A block whose residual RMS is more than this many of its own standard errors above the noise straddles an edge
# or a crease: dropped. Pure noise leaves an RMS of sigma within sigma / sqrt(2 dof) or so (a chi test).
SMOOTH_K = 4.0
SMOOTH_FLOOR = 1e-4  # 1/m: the residual always allowed (float precision of a noiseless renderer)


def image_noise(depth: np.ndarray) -> float:
    """The depth noise of one image as its std at 1 m (m), read from the image itself
    (``perception.geometry.depth_noise``); 0 for a noiseless camera."""
    return depth_noise(depth)


def smooth_grid_depth(depth: np.ndarray, v: np.ndarray, u: np.ndarray, lo: float, hi: float, sigma: float,
                      ignore=None, radius: int = SMOOTH_RADIUS) -> np.ndarray:
    """Depth (m, 0: none) at the grid pixels ``(v, u)`` from a plane fitted to the block of pixels around each.

    A stereo camera's depth noise ``sigma * z^2`` is a constant ``sigma`` (1/m) in inverse depth, and on any
    plane inverse depth is an affine function of the pixel, so a weighted least-squares affine fit of inverse
    depth over the ``(2r+1)^2`` block (pixels without a return, outside ``[lo, hi]`` m, or in ``ignore`` left
    out) gives the centre's depth with the noise cut by about the block's width, and exactly the centre's
    depth on a noiseless plane. On a plane the fit's residual RMS is ``sigma`` give or take
    ``sigma / sqrt(2 dof)``; a block whose RMS exceeds that by ``SMOOTH_K`` of these (plus
    ``SMOOTH_FLOOR``) holds an edge or a crease, where a fit would invent a surface between the two (a
    point in the gap behind a sofa, a rounded floor-wall corner pulled into the room): 0. So does one with
    fewer than ``SMOOTH_FILL`` of its pixels valid.
    """
    z = depth.astype(np.float64)
    valid = np.isfinite(z) & (z > lo) & (z < hi)
    if ignore is not None:
        valid &= ~np.asarray(ignore, dtype=bool)
    r = int(radius)
    inv = np.pad(np.where(valid, 1.0 / np.where(valid, z, 1.0), 0.0), r)
    wts = np.pad(valid.astype(np.float64), r)
    offsets = np.arange(-r, r + 1)
    du, dv = (a.ravel() for a in np.meshgrid(offsets, offsets))
    rows = v.ravel()[:, None] + r + dv[None, :]
    cols = u.ravel()[:, None] + r + du[None, :]
    x, w = inv[rows, cols], wts[rows, cols]  # (N, B) inverse depths and weights of each block
    A = np.stack([np.ones(len(du)), du, dv], axis=1).astype(np.float64)  # (B, 3): 1, du, dv
    n = w.sum(axis=1)
    ok = n >= SMOOTH_FILL * len(du)
    M = np.einsum("nb,bi,bj->nij", w, A, A)
    M[~ok] = np.eye(3)
    coef = np.linalg.solve(M, np.einsum("nb,bi,nb->ni", w, A, x)[..., None])[..., 0]
    dof = np.maximum(n - 3, 1)
    res = np.sqrt((w * (x - coef @ A.T) ** 2).sum(axis=1) / dof)
    ok &= (res <= sigma * (1.0 + SMOOTH_K / np.sqrt(2.0 * dof)) + SMOOTH_FLOOR) & (coef[:, 0] > 1.0 / hi)
    return np.where(ok, 1.0 / np.where(ok, coef[:, 0], 1.0), 0.0).reshape(v.shape)


def grid_cloud(depth: np.ndarray, K: np.ndarray, stride: int, lo: float, hi: float, ignore=None,
               crease: float = 0.97, sigma: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Camera-frame points (N,3) and unit normals (N,3), facing the camera, of the pixel grid every ``stride`` px.

    Normals: cross products of the grid neighbours' differences; pixels with a
    missing neighbour, a depth step over 10 %, or whose two one-sided normals
    differ by more than ``acos(crease)`` (an edge or a corner) are dropped, as
    are pixels outside ``[lo, hi]`` m and those ``ignore (H,W) bool`` marks.
    ``sigma`` (m): the image's depth noise, its std at 1 m (``perception.geometry.depth_noise``); above
    0 each grid pixel's depth is a plane fitted to the block around it (``smooth_grid_depth``): at 2-3 m a
    4 mm camera's single pixels are 2-4 cm off, and normals from them swing by tens of degrees. 0 (a
    noiseless camera): the pixels as they are.
    """
    h, w = depth.shape
    v, u = np.mgrid[stride // 2 : h : stride, stride // 2 : w : stride]
    z = smooth_grid_depth(depth, v, u, lo, hi, sigma, ignore) if sigma > 0 else depth[v, u].astype(np.float64)
    ok = np.isfinite(z) & (z > lo) & (z < hi)
    if ignore is not None:
        ok &= ~np.asarray(ignore, dtype=bool)[v, u]
    z = np.where(ok, z, 0.0)
    pts = np.stack([(u - K[0, 2]) / K[0, 0] * z, (v - K[1, 2]) / K[1, 1] * z, z], axis=-1)
    c = pts[1:-1, 1:-1]
    # Two one-sided normals (right/down and left/up): on a plane they agree, across a crease they do not.
    n = np.cross(pts[1:-1, 2:] - c, pts[2:, 1:-1] - c)
    n2 = np.cross(c - pts[1:-1, :-2], c - pts[:-2, 1:-1])
    zc = z[1:-1, 1:-1]
    near = [z[1:-1, 2:], z[1:-1, :-2], z[2:, 1:-1], z[:-2, 1:-1]]
    keep = ok[1:-1, 1:-1] & np.all([np.abs(q - zc) < 0.1 * zc for q in near], axis=0)
    lengths = np.linalg.norm(n, axis=-1) * np.linalg.norm(n2, axis=-1)
    keep &= np.einsum("ijk,ijk->ij", n, n2) > crease * np.maximum(lengths, 1e-24)
    n = n + n2
    norm = np.linalg.norm(n, axis=-1)
    keep &= norm > 1e-12
    n = n[keep] / norm[keep][:, None]
    n *= -np.sign(np.einsum("ij,ij->i", n, c[keep]))[:, None]
    return c[keep], n


def voxel_keys(pts: np.ndarray, voxel: float) -> np.ndarray:
    """One int64 per point naming its voxel (21 bits per axis, offset so negatives fit)."""
    idx = np.floor(pts / voxel).astype(np.int64) + (1 << 20)
    return (idx[:, 0] << 42) | (idx[:, 1] << 21) | idx[:, 2]


def voxel_thin(pts: np.ndarray, normals: np.ndarray, voxel: float) -> tuple[np.ndarray, np.ndarray]:
    """The first point (in order) of each voxel, with its normal."""
    _, first = np.unique(voxel_keys(pts, voxel), return_index=True)
    first.sort()
    return pts[first], normals[first]


class VoxelMap:
    """World points (N,3) with normals (N,3), one per ``voxel`` cell, first come first kept.

    Nearest-neighbour queries go to a KD-tree of the points within ``crop`` m
    (xy) of where it was built, rebuilt when the query point leaves half that
    radius or the points added since outnumber ``rebuild`` x the tree; points
    added since the build sit in a second, small tree rebuilt on demand.
    """

    def __init__(self, voxel: float, crop: float, rebuild: float = 0.5):
        self.voxel, self.crop, self.rebuild = voxel, crop, rebuild
        self.points = np.zeros((0, 3))
        self.normals = np.zeros((0, 3))
        self._keys = np.zeros(0, dtype=np.int64)  # sorted
        self._tree: tuple[cKDTree, np.ndarray, np.ndarray] | None = None  # tree, its point indices, centre xy
        self._recent: tuple[cKDTree, np.ndarray] | None = None
        self._built_n = 0

    def __len__(self) -> int:
        return len(self.points)

    def add(self, pts: np.ndarray, normals: np.ndarray) -> int:
        """Add the points whose voxel the map lacks; returns how many were added."""
        keys, first = np.unique(voxel_keys(pts, self.voxel), return_index=True)
        known = np.zeros(len(keys), dtype=bool)
        if len(self._keys):
            pos = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
            known = self._keys[pos] == keys
        new = first[~known]
        if len(new):
            self.points = np.concatenate([self.points, pts[new]])
            self.normals = np.concatenate([self.normals, normals[new]])
            self._keys = np.sort(np.concatenate([self._keys, keys[~known]]))
            self._recent = None
        return len(new)

    def state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON-plain: voxel, crop, rebuild m; the KD-tree's centre xy and point count or null), arrays
        ``points``/``normals`` (N,3) float64 and ``keys`` (N,) int64. The trees rebuild from these as they
        were: the same points in the same order."""
        tree = None if self._tree is None else {"centre": [float(v) for v in self._tree[2]], "n": self._built_n}
        doc = {"voxel": float(self.voxel), "crop": float(self.crop), "rebuild": float(self.rebuild), "tree": tree}
        return doc, {"points": self.points.copy(), "normals": self.normals.copy(), "keys": self._keys.copy()}

    @classmethod
    def from_state(cls, doc: dict, arrays: dict[str, np.ndarray]) -> VoxelMap:
        """The map ``state`` describes; ValueError naming what is wrong."""
        m = cls(float(doc["voxel"]), float(doc["crop"]), float(doc["rebuild"]))
        if not (np.isfinite([m.voxel, m.crop, m.rebuild]).all() and m.voxel > 0 and m.crop > 0):
            raise ValueError(f"voxel map: voxel {m.voxel}, crop {m.crop}, rebuild {m.rebuild} out of range")
        for key, dtype, width in (("points", np.float64, 3), ("normals", np.float64, 3), ("keys", np.int64, 0)):
            a = arrays.get(key)
            if a is None or a.dtype != dtype or a.shape[1:] != ((width,) if width else ()) or \
                    len(a) != len(arrays["points"]) or (width and not np.isfinite(a).all()):
                raise ValueError(f"array {key}: missing, misshapen or not finite (voxel map)")
        m.points, m.normals, m._keys = arrays["points"].copy(), arrays["normals"].copy(), arrays["keys"].copy()
        tree = doc["tree"]
        if tree is not None:
            n = int(tree["n"])
            if not 0 <= n <= len(m.points):
                raise ValueError(f"voxel map: tree.n {n} is not within the {len(m.points)} points")
            m._build(np.asarray(tree["centre"], dtype=np.float64).reshape(2), n)  # as it was: over the first n
        return m

    def query(self, pts: np.ndarray, centre: np.ndarray, k: int, radius: float) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest map points within ``radius`` of each of ``pts`` (M,3): distances (M,k) (inf: none)
        and map indices (M,k) (len(self): none), nearest first, over both trees."""
        self._refresh(np.asarray(centre, dtype=np.float64)[:2])
        parts = []
        for tree, index in ((self._tree[0], self._tree[1]), self._recent or (None, None)):
            if tree is None or not len(index):
                continue
            d, j = tree.query(pts, k=k, distance_upper_bound=radius)
            d, j = d.reshape(len(pts), k), j.reshape(len(pts), k)
            parts.append((d, np.where(j < len(index), index[np.minimum(j, len(index) - 1)], len(self.points))))
        if not parts:
            return np.full((len(pts), k), np.inf), np.full((len(pts), k), len(self.points))
        d = np.concatenate([p[0] for p in parts], axis=1)
        j = np.concatenate([p[1] for p in parts], axis=1)
        order = np.argsort(d, axis=1)[:, :k]
        return np.take_along_axis(d, order, 1), np.take_along_axis(j, order, 1)

    def _build(self, centre: np.ndarray, n: int) -> None:
        """The main tree over the first ``n`` points within 1.5 ``crop`` of ``centre`` (xy)."""
        index = np.flatnonzero(np.linalg.norm(self.points[:n, :2] - centre, axis=1) < self.crop * 1.5)
        self._tree = (cKDTree(self.points[index]) if len(index) else None, index, centre)
        self._built_n, self._recent = n, None

    def _refresh(self, centre: np.ndarray) -> None:
        tree = self._tree
        stale = tree is None or np.linalg.norm(centre - tree[2]) > self.crop / 2 or \
            len(self.points) - self._built_n > self.rebuild * max(len(tree[1]), 1)
        if stale:
            self._build(centre, len(self.points))
        if self._recent is None:
            index = np.arange(self._built_n, len(self.points))
            self._recent = (cKDTree(self.points[index]) if len(index) else None, index)


@dataclass
class Fit:
    """Result of :func:`planar_icp`: the change (4,4, planar, world frame), fitness (share of source points
    with a match), RMSE (m, point-to-plane, inliers), inliers on vertical surfaces, directions left weak."""

    delta: np.ndarray
    fitness: float
    rmse: float
    structure: int
    weak: int
    # How far the change is from none, in standard errors of the fit (the step's Mahalanobis length along the
    # directions it fixed, its covariance the weighted residual variance over the information); inf: not known.
    significance: float = float("inf")


def planar_icp(pts: np.ndarray, normals: np.ndarray, target: VoxelMap, pivot: np.ndarray, max_corr: float,
               iterations: int = 12, min_eigen: float = 0.02, kernel: float = 0.05, k: int = 4) -> Fit:
    """Point-to-plane ICP of world points ``pts`` (N,3) with normals against ``target``, in (x, y, yaw) only.

    Correspondences: of the ``k`` nearest map points within ``max_corr``, the
    first whose surface faces the camera at ``pivot`` (3,) and whose normal
    is within 45 degrees of the source normal (so the far face of a thin wall
    never matches the near one). Each Gauss-Newton step solves the 3x3
    normal equations (Tukey weights, their width halving from ``max_corr`` down to ``kernel``) along the
    eigen-directions whose information per correspondence is at least
    ``min_eigen``; the others keep the prior (a blank wall fixes no slide along it).
    """
    pivot = np.asarray(pivot, dtype=np.float64)
    step = np.zeros(3)
    weak, r, ok, nt = 0, np.zeros(0), np.zeros(len(pts), dtype=bool), np.zeros((0, 3))
    for it in range(iterations):
        D = planar_about(step, pivot)
        q, qn = pts @ D[:3, :3].T + D[:3, 3], normals @ D[:3, :3].T
        d, j = target.query(q, pivot, k, max_corr)
        valid = np.isfinite(d)
        jj = np.minimum(j, len(target) - 1)
        tn, tp = target.normals[jj], target.points[jj]
        facing = np.einsum("mkc,mc->mk", tn, qn) > 0.7
        facing &= np.einsum("mkc,mkc->mk", tn, pivot - tp) > 0
        good = valid & facing
        ok = good.any(axis=1)
        pick = np.argmax(good, axis=1)[ok]
        rows_idx = np.flatnonzero(ok)
        nt, pt = tn[rows_idx, pick], tp[rows_idx, pick]
        qq = q[ok]
        r = np.einsum("mc,mc->m", nt, qq - pt)
        if len(r) < 6:
            return Fit(np.eye(4), 0.0, 0.0, 0, 3)
        rel = qq[:, :2] - (pivot[:2] + step[:2])
        J = np.stack([nt[:, 0], nt[:, 1], nt[:, 1] * rel[:, 0] - nt[:, 0] * rel[:, 1]], axis=1)
        width = max(kernel, max_corr * 0.5**it)  # annealed: wide while far off, ``kernel`` once close
        w = np.clip(1 - (r / width) ** 2, 0, None) ** 2 if kernel > 0 else np.ones(len(r))
        if w.sum() < 3:
            return Fit(np.eye(4), 0.0, 0.0, 0, 3)
        H = (J * w[:, None]).T @ J / w.sum()
        g = (J * w[:, None]).T @ r / w.sum()
        vals, vecs = np.linalg.eigh(H)
        keep = vals >= min_eigen
        weak = int((~keep).sum())
        inc = -(vecs[:, keep] @ ((vecs[:, keep].T @ g) / vals[keep])) if keep.any() else np.zeros(3)
        step = step + inc
        if np.linalg.norm(inc[:2]) < 1e-4 and abs(inc[2]) < 1e-4:
            break
    inlier = np.abs(r) < max_corr
    rmse = float(np.sqrt(np.mean(r[inlier] ** 2))) if inlier.any() else 0.0
    structure = int((np.abs(nt[:, 2]) < 0.5).sum())
    # The step's covariance along the fixed eigen-directions: residual variance / (information per match x matches).
    var_r = float((w * r**2).sum() / w.sum())
    along = vecs[:, keep].T @ step
    z2 = float((along**2 * vals[keep]).sum() * w.sum() / max(var_r, 1e-12))
    return Fit(planar_about(step, pivot), float(ok.mean()), rmse, structure, weak, float(np.sqrt(z2)))
