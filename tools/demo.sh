#!/usr/bin/env bash
# Set up (when needed) and run the main demo: the memory agent on every task (learned skills from
# the shipped heads where measured to work, see docs/heads.md), printing success rates and an mp4.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
export MUJOCO_GL=${MUJOCO_GL:-egl}
embodied demo "$@"
