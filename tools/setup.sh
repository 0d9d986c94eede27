#!/usr/bin/env bash
# Idempotent setup: system libraries, the CPU build of torch, then the project.
# Safe to run again; it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

# open3d needs libusb-1.0 to import; install it from apt when we can.
if ! ldconfig -p 2>/dev/null | grep -q 'libusb-1.0.so.0'; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq libusb-1.0-0) >/dev/null
  else
    echo "setup: open3d needs libusb-1.0; install it with: sudo apt-get install libusb-1.0-0" >&2
  fi
fi

# The viewer's browser tests and `embodied bench viz` drive the system Chromium through
# Playwright (Playwright's own browser download does not work offline).
if ! command -v chromium >/dev/null && [ ! -x /usr/bin/chromium ]; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null
  else
    echo "setup: the viewer tests need Chromium; install it with: sudo apt-get install chromium" >&2
  fi
fi

PY=${PYTHON:-python3}
# torch first, pinned to the CPU build, so nothing later pulls the CUDA one.
if ! $PY -c "import torch" 2>/dev/null; then
  $PY -m pip install -q "torch==2.13.0"
fi
$PY -m pip install -q -e ".[perception,viz,dev,data,ray,heads,rerun]"

# LeRobot's own reader, for the compatibility test (tests/test_data_lerobot.py). Everything that
# depends on torch goes in with --no-deps so pip can never swap the CPU torch for a CUDA build:
# - lerobot 0.4.4 (the newest for Python 3.11) pins torch<2.11, which is wrong for us but harmless;
# - torchcodec 0.13.0 is PyPI's CPU build for torch 2.13 and decodes LeRobot's videos (it loads the
#   system FFmpeg libraries: apt ffmpeg);
# - torchvision: PyPI's wheels are built against CUDA torch, and from 0.17 on `import torchvision`
#   fails without its compiled ops; 0.16.2 imports with its ops missing, which is all LeRobot's
#   reader needs (it imports torchvision.transforms at module level and decodes with torchcodec).
if ! $PY -c "import lerobot.datasets.lerobot_dataset, torchcodec" 2>/dev/null; then
  if ! ldconfig -p 2>/dev/null | grep -q 'libavcodec.so'; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
      (apt-get update -qq && apt-get install -y -qq ffmpeg) >/dev/null
    else
      echo "setup: torchcodec needs the FFmpeg libraries; install them with: sudo apt-get install ffmpeg" >&2
    fi
  fi
  $PY -m pip install -q --no-deps "lerobot==0.4.4" "torchvision==0.16.2" "torchcodec==0.13.0" "accelerate>=1.10,<2"
  # What importing and reading with LeRobotDataset needs (not draccus: it installs a top-level `tests`
  # package that shadows ours).
  $PY -m pip install -q "datasets>=4,<5" "huggingface-hub>=0.34.2,<0.36" pandas pillow psutil pyyaml
fi
