#!/usr/bin/env bash
# Set up (when needed) and run the test suite. It fuzzes every loader with a few dozen malformed files
# each; bash tools/fuzz_loaders.sh runs 1,000 per loader (about 6 min).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
export MUJOCO_GL=${MUJOCO_GL:-egl}
python3 -m pytest tests "$@"
