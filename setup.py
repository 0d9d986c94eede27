"""Build hook: the MJCF scenes ship inside the wheel.

The repository keeps the scenes at the top level (``scenes/``), next to the
packages. ``build_py`` copies them into the built package as ``embodied/_scenes``,
where :data:`embodied.envs.scene.SCENES_DIR` looks first; a source checkout
(or an editable install) reads ``scenes/`` directly. Everything else is in
pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SCENES = Path(__file__).resolve().parent / "scenes"


class BuildWithScenes(build_py):
    def run(self):
        super().run()
        if self.editable_mode:  # the checkout's scenes/ is read in place
            return
        if not SCENES.is_dir():
            raise FileNotFoundError(f"cannot build: the scene assets folder {SCENES} is missing")
        target = Path(self.build_lib) / "embodied" / "_scenes"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(SCENES, target, ignore=shutil.ignore_patterns("*.pyc", "__pycache__"))


setup(cmdclass={"build_py": BuildWithScenes})
