"""Input checks, corruptions, back-projection and per-object cloud description.

Pixel (u, v) with z-depth z back-projects to camera point
    x = (u - cx) z / fx,  y = (v - cy) z / fy,  z
and to the world by the camera-to-world extrinsics (OpenCV axes).
"""

from __future__ import annotations

import numpy as np

from embodied.perception.types import CameraView, PerceptionConfig


def cameras_in(obs: dict, wanted: tuple[str, ...] = ()) -> list[str]:
    """Camera names with a depth image in ``obs`` (or ``wanted``, checked to exist)."""
    if not isinstance(obs, dict):
        raise TypeError(f"observation must be a dict, got {type(obs).__name__}")
    found = [key.split("/", 1)[1] for key in obs if key.startswith("depth/")]
    if wanted:
        for cam in wanted:
            if f"depth/{cam}" not in obs:
                raise ValueError(f"observation has no key 'depth/{cam}' (cameras present: {found})")
        return list(wanted)
    if not found:
        raise ValueError("observation has no 'depth/<camera>' key: perception needs RGB-D images")
    return found


def camera_arrays(obs: dict, cam: str, need_masks: bool, copy: bool = False) -> dict[str, np.ndarray]:
    """The camera's images and matrices, checked for presence, shape and dtype.

    NaN and infinite depths are documented as "no return": they become 0 and
    their pixels are ignored, like dropped-out pixels. RGB stays as given
    (uint8, or float in [0, 1]); see ``pixel_colours``. ``copy``: the caller
    will modify depth in place.
    """
    keys = ["rgb", "depth", "intrinsics", "extrinsics"] + (["segmentation"] if need_masks else [])
    out = {}
    for kind in keys:
        key = f"{kind}/{cam}"
        if key not in obs or obs[key] is None:
            raise ValueError(f"observation is missing {key!r}, needed by perception")
        out[kind] = np.asarray(obs[key])
    depth = out["depth"]
    if depth.ndim != 2:
        raise ValueError(f"'depth/{cam}' must be (H,W), got shape {depth.shape}")
    h, w = depth.shape
    if out["rgb"].shape != (h, w, 3):
        raise ValueError(
            f"'rgb/{cam}' has shape {out['rgb'].shape} but 'depth/{cam}' is {(h, w)}: expected {(h, w, 3)}"
        )
    if need_masks and out["segmentation"].shape != (h, w):
        raise ValueError(f"'segmentation/{cam}' has shape {out['segmentation'].shape}, expected {(h, w)}")
    if out["intrinsics"].shape != (3, 3):
        raise ValueError(f"'intrinsics/{cam}' must be (3,3), got {out['intrinsics'].shape}")
    if out["extrinsics"].shape != (4, 4):
        raise ValueError(f"'extrinsics/{cam}' must be (4,4), got {out['extrinsics'].shape}")
    if not (np.all(np.isfinite(out["intrinsics"])) and np.all(np.isfinite(out["extrinsics"]))):
        raise ValueError(f"'intrinsics/{cam}' or 'extrinsics/{cam}' contains NaN or infinite values")
    # Copy only when something will be written (NaNs zeroed, corruptions): most frames are read-only.
    bad = ~np.isfinite(depth)
    if copy or bad.any() or depth.dtype != np.float32:
        depth = depth.astype(np.float32, copy=True)
        depth[bad] = 0.0
    out["depth"] = depth
    if need_masks:
        out["segmentation"] = out["segmentation"].astype(np.int32, copy=False)
    return out


def pixel_colours(rgb: np.ndarray, flat_index: np.ndarray) -> np.ndarray:
    """Colours (N,3) float64 in [0, 1] of flat pixel indices of an (H,W,3) uint8 or float image."""
    picked = rgb.reshape(-1, 3)[flat_index]
    return picked / 255.0 if rgb.dtype == np.uint8 else picked.astype(np.float64)


def make_view(cam: str, arrays: dict[str, np.ndarray]) -> CameraView:
    pose = arrays["extrinsics"].astype(np.float64)
    return CameraView(cam, arrays["depth"], arrays["intrinsics"].astype(np.float64), pose, np.linalg.inv(pose),
                      depth_noise(arrays["depth"]))


MAD_TO_STD = 1.4826  # the std of a Gaussian is this times its median absolute deviation
SMOOTH_MAX = 0.05  # 1/m: second differences of inverse depth larger than this are edges, not noise
NOISELESS = 1e-5  # m at 1 m: an estimate this small is the float rounding of a noiseless render (7e-8 here)


def depth_noise(depth: np.ndarray) -> float:
    """The depth noise of one image as its std at 1 m (m), read from the image itself.

    On any plane, inverse depth is an affine function of the pixel, so its second difference along a
    row or a column is zero; depth noise of std s*z^2 puts noise of std s on inverse depth, and its
    second difference then has std s*sqrt(6), whatever the range. The median absolute deviation over
    every valid triple of pixels, away from edges (whose second differences are far larger), gives s.
    0 for a noiseless renderer (to float precision)."""
    z = np.asarray(depth, dtype=np.float32)
    inv = np.where(z > 0, 1.0 / np.maximum(z, 1e-6), np.nan).astype(np.float32)
    # Every other row and column: as good an estimate from a 128 px image at half the cost.
    parts = [inv[::2, :-2] - 2 * inv[::2, 1:-1] + inv[::2, 2:], inv[:-2, ::2] - 2 * inv[1:-1, ::2] + inv[2:, ::2]]
    d2 = np.abs(np.concatenate([p.ravel() for p in parts]))
    d2 = d2[np.isfinite(d2) & (d2 < SMOOTH_MAX)]
    if len(d2) < 64:
        return 0.0
    sigma = float(MAD_TO_STD * np.median(d2) / np.sqrt(6.0))
    return sigma if sigma > NOISELESS else 0.0


def corrupt(arrays: dict[str, np.ndarray], cfg: PerceptionConfig, rng: np.random.Generator) -> None:
    """Apply the robustness-test corruptions in place (depth noise, dropout, mask erosion)."""
    depth = arrays["depth"]
    if cfg.depth_noise > 0:
        valid = depth > 0
        # Structured-light sensors: noise grows with the square of the distance.
        noise = rng.normal(0.0, 1.0, depth.shape).astype(np.float32) * cfg.depth_noise * depth**2
        depth[valid] = np.maximum(depth[valid] + noise[valid], 1e-3)
    if cfg.dropout > 0:
        depth[rng.random(depth.shape) < cfg.dropout] = 0.0
    if cfg.mask_erosion > 0 and "segmentation" in arrays:
        arrays["segmentation"] = erode_ids(arrays["segmentation"], cfg.mask_erosion)


def erode_ids(seg: np.ndarray, iterations: int) -> np.ndarray:
    """Erode every instance mask by ``iterations`` pixels (4-neighbourhood); eroded pixels become 0."""
    seg = seg.copy()
    for _ in range(iterations):
        keep = np.ones(seg.shape, dtype=bool)
        keep[1:, :] &= seg[1:, :] == seg[:-1, :]
        keep[:-1, :] &= seg[:-1, :] == seg[1:, :]
        keep[:, 1:] &= seg[:, 1:] == seg[:, :-1]
        keep[:, :-1] &= seg[:, :-1] == seg[:, 1:]
        seg[~keep] = 0
    return seg


def back_project(u: np.ndarray, v: np.ndarray, z: np.ndarray, K: np.ndarray, cam_to_world: np.ndarray) -> np.ndarray:
    """World points (N,3) float64 of pixels (u, v) [px] with z-depths z [m]."""
    x = (u - K[0, 2]) * z / K[0, 0]
    y = (v - K[1, 2]) * z / K[1, 1]
    cam = np.stack([x, y, z], axis=1)
    return cam @ cam_to_world[:3, :3].T + cam_to_world[:3, 3]


def project(points: np.ndarray, view: CameraView) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pixel coordinates (u, v) and camera z-depth of world points (N,3)."""
    cam = points @ view.world_to_cam[:3, :3].T + view.world_to_cam[:3, 3]
    z = cam[:, 2]
    safe = np.where(z > 1e-6, z, 1e-6)
    u = view.K[0, 0] * cam[:, 0] / safe + view.K[0, 2]
    v = view.K[1, 1] * cam[:, 1] / safe + view.K[1, 2]
    return u, v, z


def stride_subsample(index: np.ndarray, limit: int) -> np.ndarray:
    """At most ``limit`` entries of ``index`` on a regular stride (deterministic, keeps spatial spread)."""
    if len(index) <= limit:
        return index
    return index[np.linspace(0, len(index) - 1, limit).astype(np.int64)]


SMALL_MAX = 0.06  # m: a box this long along some axis is no longer "small"


def shape_class(extent: np.ndarray) -> str:
    """Coarse shape class from a box extent (3,) m: flat / small / medium / tall / large."""
    horizontal = float(max(extent[0], extent[1]))
    height = float(extent[2])
    if height < 0.012 and horizontal > 0.03:
        return "flat"
    if max(horizontal, height) < SMALL_MAX:
        return "small"
    if height > 1.5 * horizontal and height > 0.08:
        return "tall"
    return "medium" if max(horizontal, height) < 0.2 else "large"
