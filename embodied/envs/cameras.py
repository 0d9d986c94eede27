"""RGB-D and instance-segmentation rendering with camera intrinsics/extrinsics.

Conventions (as in OpenCV and most RGB-D datasets):
- ``rgb``  (H,W,3) uint8
- ``depth`` (H,W) float32 metres along the optical axis (z-depth, not range)
- ``segmentation`` (H,W) int32 instance ids; 0 is background
- ``intrinsics`` (3,3) float32 pinhole K in pixels
- ``extrinsics`` (4,4) float32 camera-to-world transform, camera axes
  x right, y down, z forward.

Observation cameras render without shadows, reflections or skybox: they cost
20x more on a software renderer and only make images prettier.
"""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

# MuJoCo cameras look along -z with y up; OpenCV looks along +z with y down.
GL_TO_CV = np.diag([1.0, -1.0, -1.0])
_GEOM = int(mujoco.mjtObj.mjOBJ_GEOM)


def intrinsics(model: mujoco.MjModel, camera: str, width: int, height: int) -> np.ndarray:
    fovy = np.deg2rad(model.cam_fovy[model.camera(camera).id])
    focal = 0.5 * height / np.tan(fovy / 2)
    return np.array(
        [[focal, 0.0, (width - 1) / 2], [0.0, focal, (height - 1) / 2], [0.0, 0.0, 1.0]], dtype=np.float32
    )


def extrinsics(data: mujoco.MjData, camera_id: int) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3] = data.cam_xmat[camera_id].reshape(3, 3) @ GL_TO_CV
    pose[:3, 3] = data.cam_xpos[camera_id]
    return pose.astype(np.float32)


class _Offscreen:
    """A bare MuJoCo offscreen renderer that reads colour and depth from one pass."""

    def __init__(self, model: mujoco.MjModel, width: int, height: int):
        self.model = model
        self.viewport = mujoco.MjrRect(0, 0, width, height)
        self.gl = mujoco.GLContext(width, height)
        self.gl.make_current()
        self.scene = mujoco.MjvScene(model, maxgeom=2000)
        self.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
        self.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
        self.scene.flags[mujoco.mjtRndFlag.mjRND_SKYBOX] = False
        self.context = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self.context)
        self.option = mujoco.MjvOption()
        self.perturb = mujoco.MjvPerturb()
        self.camera = mujoco.MjvCamera()
        self.camera.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self.rgb = np.empty((height, width, 3), np.uint8)
        self.zbuf = np.empty((height, width), np.float32)
        extent = model.stat.extent
        self.near, self.far = model.vis.map.znear * extent, model.vis.map.zfar * extent

    def render(self, data: mujoco.MjData, camera_id: int, rgb: bool, depth: bool, seg: bool):
        self.gl.make_current()
        self.camera.fixedcamid = camera_id
        mujoco.mjv_updateScene(
            self.model, data, self.option, self.perturb, self.camera, mujoco.mjtCatBit.mjCAT_ALL, self.scene
        )
        out_rgb = out_depth = out_ids = None
        if rgb or depth:
            mujoco.mjr_render(self.viewport, self.scene, self.context)
            mujoco.mjr_readPixels(self.rgb if rgb else None, self.zbuf if depth else None, self.viewport, self.context)
            if rgb:
                out_rgb = np.flipud(self.rgb).copy()
            if depth:
                # Non-linear z-buffer to metric z-depth; the far plane means "no return".
                z = np.flipud(self.zbuf)
                out_depth = (self.near / (1.0 - z * (1.0 - self.near / self.far))).astype(np.float32)
                out_depth[z >= 1.0] = 0.0
        if seg:
            self.scene.flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = True
            self.scene.flags[mujoco.mjtRndFlag.mjRND_IDCOLOR] = True
            mujoco.mjr_render(self.viewport, self.scene, self.context)
            mujoco.mjr_readPixels(self.rgb, None, self.viewport, self.context)
            self.scene.flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = False
            self.scene.flags[mujoco.mjtRndFlag.mjRND_IDCOLOR] = False
            img = np.flipud(self.rgb).astype(np.int32)
            # IDCOLOR encodes (segid + 1) in the 24 colour bits; 0 is background.
            code = img[..., 0] + (img[..., 1] << 8) + (img[..., 2] << 16)
            out_ids = code - 1
        return out_rgb, out_depth, out_ids

    def segment_geoms(self) -> np.ndarray:
        """Model geom id of every visual-scene geom in the last update (-1: not a geom)."""
        n = self.scene.ngeom
        geoms = self.scene.geoms
        return np.array(
            [geoms[i].objid if geoms[i].objtype == _GEOM else -1 for i in range(n)], dtype=np.int32
        )

    def close(self) -> None:
        """Free the GL objects in this renderer's own context. Freed with another context current (as
        garbage collection of an unclosed env does), MuJoCo deletes that context's textures and buffers
        of the same ids, and the other env renders garbage."""
        if self.gl is None:
            return
        self.gl.make_current()
        self.context.free()
        self.gl.free()
        self.gl = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001, S110 - at interpreter shutdown the GL library may be gone already
            pass


class CameraRig:
    """Renders a fixed set of cameras at one resolution."""

    def __init__(self, model: mujoco.MjModel, cameras: tuple[str, ...], size: int, instance_of_geom: np.ndarray):
        self.model = model
        self.cameras = tuple(cameras)
        self.size = size
        for name in self.cameras:
            if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, name) < 0:
                available = [model.camera(i).name for i in range(model.ncam)]
                raise ValueError(f"unknown camera {name!r}; available: {available}")
        self.camera_ids = {name: model.camera(name).id for name in self.cameras}
        self.K = {name: intrinsics(model, name, size, size) for name in self.cameras}
        self._instance_of_geom = instance_of_geom.astype(np.int32)
        self._renderer: _Offscreen | None = None

    def render(self, data: mujoco.MjData, rgb: bool = True, depth: bool = True, seg: bool = True) -> dict:
        """Render every camera; returns ``{"rgb/<cam>": ..., "depth/<cam>": ..., ...}``."""
        if self._renderer is None:
            self._renderer = _Offscreen(self.model, self.size, self.size)
        out = {}
        for name, cam_id in self.camera_ids.items():
            color, z, ids = self._renderer.render(data, cam_id, rgb, depth, seg)
            if rgb:
                out[f"rgb/{name}"] = color
            if depth:
                out[f"depth/{name}"] = z
            if seg:
                # Segment ids index the visual scene's geoms, which change per frame.
                geoms = self._renderer.segment_geoms()
                lut = np.zeros(len(geoms) + 1, dtype=np.int32)
                lut[1:] = np.where(geoms >= 0, self._instance_of_geom[geoms], 0)
                out[f"segmentation/{name}"] = lut[np.clip(ids + 1, 0, len(geoms))]
        return out

    def extrinsics(self, data: mujoco.MjData) -> dict[str, np.ndarray]:
        return {name: extrinsics(data, cam_id) for name, cam_id in self.camera_ids.items()}

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
