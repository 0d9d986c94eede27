"""Compose MuJoCo scenes from the MJCF assets in ``scenes/``.

A scene is a base model (the workcell) plus props attached at given poses.
Every prop becomes an *entity*: a named object with a class label whose
geoms share one instance id in the segmentation images. The label map
(instance id -> class) is what a detector's vocabulary would be.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from embodied.envs.visual import add_textures

# An installed wheel carries the scenes inside the package (setup.py copies them there); a source checkout
# keeps them at the repository's top level.
_PACKAGED = Path(__file__).resolve().parents[1] / "_scenes"
SCENES_DIR = _PACKAGED if _PACKAGED.is_dir() else Path(__file__).resolve().parents[2] / "scenes"


def scene_path(*parts: str) -> Path:
    path = SCENES_DIR.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(f"scene asset not found: {path}")
    return path


def look_at_quat(eye: np.ndarray, target: np.ndarray, up=(0.0, 0.0, 1.0)) -> np.ndarray:
    """Quaternion (w,x,y,z) of a MuJoCo camera at ``eye`` looking at ``target``.

    MuJoCo cameras look along their local -z with +y up.
    """
    forward = np.asarray(target, float) - np.asarray(eye, float)
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, up)
    right /= np.linalg.norm(right)
    cam_up = np.cross(right, forward)
    rot = np.stack([right, cam_up, -forward], axis=1)
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, rot.flatten())
    return quat


@dataclass
class Entity:
    """One object in the scene, as perception would name it."""

    name: str
    cls: str
    root_body: str
    instance_id: int = 0
    body_ids: list[int] = field(default_factory=list)
    geom_ids: list[int] = field(default_factory=list)


class SceneBuilder:
    """Attach props from ``scenes/<base>/props`` to a base MJCF and compile."""

    def __init__(self, base: str = "workcell"):
        self.base = base
        self.spec = mujoco.MjSpec.from_file(str(scene_path(base, f"{base}.xml")))
        add_textures(self.spec)  # unused unless visual="randomized" puts them on the scenery
        self.entities: list[Entity] = []

    def add_entity(self, name: str, cls: str, root_body: str) -> Entity:
        entity = Entity(name=name, cls=cls, root_body=root_body)
        self.entities.append(entity)
        return entity

    def attach(self, prop: str, name: str, cls: str, pos, yaw: float = 0.0) -> Entity:
        """Attach ``props/<prop>.xml`` as entity ``name``; element names get ``name/``."""
        child = mujoco.MjSpec.from_file(str(scene_path(self.base, "props", f"{prop}.xml")))
        quat = np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])
        frame = self.spec.worldbody.add_frame(pos=list(pos), quat=list(quat))
        root = child.worldbody.first_body()
        root_name = root.name
        frame.attach_body(root, f"{name}/", "")
        return self.add_entity(name, cls, f"{name}/{root_name}")

    def add_camera(self, name: str, eye, target, fovy: float) -> None:
        self.spec.worldbody.add_camera(
            name=name, pos=list(eye), quat=list(look_at_quat(np.array(eye), np.array(target))), fovy=fovy
        )

    def compile(self) -> tuple[mujoco.MjModel, list[Entity]]:
        model = self.spec.compile()
        self._resolve_ids(model)
        return model, self.entities

    def _resolve_ids(self, model: mujoco.MjModel) -> None:
        owner = np.full(model.nbody, -1)
        for index, entity in enumerate(self.entities):
            entity.instance_id = index + 1
            root = model.body(entity.root_body).id
            owner[root] = index
        # Bodies belong to the nearest ancestor that is an entity root.
        for body in range(1, model.nbody):
            if owner[body] < 0 and owner[model.body_parentid[body]] >= 0:
                owner[body] = owner[model.body_parentid[body]]
        for body in range(model.nbody):
            if owner[body] >= 0:
                self.entities[owner[body]].body_ids.append(body)
        for geom in range(model.ngeom):
            body = model.geom_bodyid[geom]
            if owner[body] >= 0:
                self.entities[owner[body]].geom_ids.append(geom)
