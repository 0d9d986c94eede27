"""The ``visual="randomized"`` knob: scenery colours, textures, lighting and camera mounts drawn per episode.

Only the scenery changes: the floor, the walls, the table, the apartment's
furniture and any background geometry. The task's objects (blocks, cups,
balls, drawers, the things on the furniture) and the robot keep their look,
since their colours are part of the cues. Draws come from their own generator
(seeded by the episode's layout seed), so the layout and the cue, and so the
task's truth, are the same with and without the knob.
"""

from __future__ import annotations

import colorsys

import mujoco
import numpy as np

from embodied.envs.env_knobs import check_env_knob
TEXTURES = (  # builtin, first colour, second colour, mark: drawn into extra materials at build time
    ("checker", (0.8, 0.8, 0.8), (0.35, 0.35, 0.35), "none"),
    ("checker", (0.9, 0.85, 0.7), (0.6, 0.5, 0.4), "none"),
    ("gradient", (0.95, 0.95, 0.95), (0.3, 0.3, 0.3), "none"),
    ("flat", (0.7, 0.7, 0.7), (0.2, 0.2, 0.2), "random"),
)
CAMERA_SHIFT = 0.01  # m, std of the camera mount's offset (clipped at 2 std)
CAMERA_TILT = 1.5  # degrees, std of the mount's rotation (clipped at 2 std)


def check_visual(visual: str) -> str:
    return check_env_knob("visual", visual)


def add_textures(spec: mujoco.MjSpec) -> None:
    """Extra textured materials ``visual/mat<k>`` the randomizer may put on scenery."""
    builtins = {"checker": mujoco.mjtBuiltin.mjBUILTIN_CHECKER, "gradient": mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
                "flat": mujoco.mjtBuiltin.mjBUILTIN_FLAT}
    marks = {"none": mujoco.mjtMark.mjMARK_NONE, "random": mujoco.mjtMark.mjMARK_RANDOM}
    for k, (builtin, rgb1, rgb2, mark) in enumerate(TEXTURES):
        tex = spec.add_texture(name=f"visual/tex{k}", type=mujoco.mjtTexture.mjTEXTURE_2D, builtin=builtins[builtin],
                               rgb1=list(rgb1), rgb2=list(rgb2), mark=marks[mark], markrgb=[0.1, 0.1, 0.1],
                               random=0.05, width=64, height=64)
        mat = spec.add_material(name=f"visual/mat{k}", texrepeat=[4, 4], texuniform=True)
        mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = tex.name


def _tilt(rng: np.random.Generator) -> np.ndarray:
    """A small random rotation as a quaternion (w, x, y, z)."""
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    angle = np.deg2rad(np.clip(rng.normal(0.0, CAMERA_TILT), -2 * CAMERA_TILT, 2 * CAMERA_TILT))
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


class VisualRandomizer:
    """Keeps the model's default look and redraws the scenery's on every ``apply``."""

    def __init__(self, model: mujoco.MjModel, scenery_geoms: np.ndarray, cameras: tuple[str, ...]):
        self.model = model
        self.geoms = np.asarray(scenery_geoms, dtype=np.int64)
        self.materials = np.array([model.material(f"visual/mat{k}").id for k in range(len(TEXTURES))])
        self.cameras = np.array([model.camera(c).id for c in cameras])
        self.default = {
            "geom_rgba": model.geom_rgba.copy(), "geom_matid": model.geom_matid.copy(),
            "mat_rgba": model.mat_rgba.copy(), "light_diffuse": model.light_diffuse.copy(),
            "light_dir": model.light_dir.copy(), "cam_pos": model.cam_pos.copy(), "cam_quat": model.cam_quat.copy(),
            "ambient": model.vis.headlight.ambient.copy(), "diffuse": model.vis.headlight.diffuse.copy(),
        }

    def restore(self) -> None:
        m, d = self.model, self.default
        m.geom_rgba[:], m.geom_matid[:], m.mat_rgba[:] = d["geom_rgba"], d["geom_matid"], d["mat_rgba"]
        m.light_diffuse[:], m.light_dir[:] = d["light_diffuse"], d["light_dir"]
        m.cam_pos[:], m.cam_quat[:] = d["cam_pos"], d["cam_quat"]
        m.vis.headlight.ambient[:], m.vis.headlight.diffuse[:] = d["ambient"], d["diffuse"]

    def apply(self, rng: np.random.Generator) -> None:
        self.restore()
        m = self.model
        for g in self.geoms:
            rgb = colorsys.hsv_to_rgb(rng.random(), rng.uniform(0.0, 0.6), rng.uniform(0.25, 0.95))
            m.geom_rgba[g, :3] = rgb
            if rng.random() < 0.4:  # a texture, tinted with the drawn colour
                m.geom_matid[g] = rng.choice(self.materials)
        for mat in self.materials:
            m.mat_rgba[mat, :3] = colorsys.hsv_to_rgb(rng.random(), rng.uniform(0.0, 0.5), rng.uniform(0.6, 1.0))
        m.light_diffuse[:] = self.default["light_diffuse"] * rng.uniform(0.6, 1.4)
        for k in range(m.nlight):
            d = self.default["light_dir"][k] + rng.normal(0.0, 0.15, 3)
            m.light_dir[k] = d / max(np.linalg.norm(d), 1e-6)
        m.vis.headlight.ambient[:] = np.clip(self.default["ambient"] * rng.uniform(0.7, 1.3), 0, 1)
        m.vis.headlight.diffuse[:] = np.clip(self.default["diffuse"] * rng.uniform(0.7, 1.3), 0, 1)
        for cam in self.cameras:
            m.cam_pos[cam] = self.default["cam_pos"][cam] + np.clip(rng.normal(0, CAMERA_SHIFT, 3),
                                                                    -2 * CAMERA_SHIFT, 2 * CAMERA_SHIFT)
            q = np.empty(4)
            mujoco.mju_mulQuat(q, self.default["cam_quat"][cam], _tilt(rng))
            m.cam_quat[cam] = q
