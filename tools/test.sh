#!/usr/bin/env bash
# Set up (when needed) and run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
export MUJOCO_GL=${MUJOCO_GL:-egl}
python3 -m pytest tests "$@"
