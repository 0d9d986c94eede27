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
$PY -m pip install -q -e ".[perception,viz,dev,data,ray]"
