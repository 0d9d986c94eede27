#!/usr/bin/env bash
# Build the wheel, install it into a fresh virtual environment outside the checkout, and run from there:
# one agent episode per suite with the shipped heads (`embodied demo`), the heads loaded by name, the scenes
# found inside the package. CI runs it (tests/test_wheel.py); it needs no network (pip reads the local
# index and wheel folder that setup uses). About 2-3 min, most of it installing torch into the venv.
#   bash tools/check_wheel.sh [WORK_DIR]
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-$(mktemp -d /tmp/embodied-wheel.XXXXXX)}
mkdir -p "$WORK"
cd "$WORK"
python3 -m pip wheel "$REPO" --no-deps -q -w "$WORK/dist"
WHEEL=$(ls "$WORK"/dist/embodied-*.whl)
python3 -m venv "$WORK/venv"   # no system site packages: nothing of the checkout or its editable install
PY="$WORK/venv/bin/python"
"$PY" -m pip install -q "torch==2.13.0"     # the CPU build first, as tools/setup.sh does
"$PY" -m pip install -q "$WHEEL[heads,data]"
mkdir -p "$WORK/elsewhere" && cd "$WORK/elsewhere"
unset PYTHONPATH
export MUJOCO_GL=${MUJOCO_GL:-egl} OMP_NUM_THREADS=1
"$PY" - "$REPO" <<'PY'
import sys
from pathlib import Path

import embodied
from embodied.envs.scene import SCENES_DIR
from policies.export import load_run, resolve_run

repo = Path(sys.argv[1]).resolve()
where = Path(embodied.__file__).resolve()
assert repo not in where.parents, f"embodied was imported from the checkout ({where}), not the wheel"
assert SCENES_DIR.name == "_scenes" and (SCENES_DIR / "panda").is_dir(), f"scenes not in the package: {SCENES_DIR}"
for spec in ("act:manip", "act:nav", "diffusion:manip"):
    kind, _, run = spec.partition(":")
    head = load_run(resolve_run(kind, run))
    print(f"loaded {spec}: {head.name} head, skills {', '.join(head.config.skills)}")
from embodied.perception.learned.segmenter import SHIPPED
assert SHIPPED.exists(), SHIPPED
print(f"wheel ok: embodied from {where.parent}")
PY
"$WORK/venv/bin/embodied" demo --episodes 1 --task ShellGame-v0 --task ObjectRevisit-v0 --video "$WORK/demo.mp4" --json \
    > "$WORK/demo.json"
"$PY" - "$WORK/demo.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
print(json.dumps(doc)[:600])
PY
echo "wheel check passed in $WORK"
