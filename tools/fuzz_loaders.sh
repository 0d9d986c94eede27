#!/usr/bin/env bash
# Fuzz every loader the long way: 1,000 malformed files per loader (CI runs 60 each) for memories,
# recordings, datasets (info/stats JSON, parquet, mp4), checkpoints, trained and exported heads, segmenter
# weights and task options (tests/test_fuzz_loaders.py, tests/test_fuzz_checkpoints.py). Each file is cut,
# retyped, given NaN/inf/huge numbers, stripped of a key or replaced by random bytes; the loader must load
# it or raise its own error naming the file, never hang and never write. About 6 min on 2 cores (the CI
# run of the same tests: under a minute).
#   bash tools/fuzz_loaders.sh                 # everything
#   bash tools/fuzz_loaders.sh -k memory       # one loader (any pytest arguments)
# Prints hypothesis's statistics per loader: examples run, and how they ended (loaded, or which error
# named which file). A failure prints the smallest input found and a @reproduce_failure blob.
set -euo pipefail
cd "$(dirname "$0")/.."
export MUJOCO_GL=${MUJOCO_GL:-egl} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} EMBODIED_FUZZ=long
exec python3 -m pytest tests/test_fuzz_loaders.py tests/test_fuzz_checkpoints.py -p no:cacheprovider --timeout 0 \
  --hypothesis-show-statistics "$@"
