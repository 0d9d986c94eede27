#!/usr/bin/env bash
# Set up (when needed) and run the main demo: the scripted expert on the memory
# tasks, printing success rates and writing an mp4.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
export MUJOCO_GL=${MUJOCO_GL:-egl}
embodied demo "$@"
