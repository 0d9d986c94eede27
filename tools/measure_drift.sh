#!/usr/bin/env bash
# The drift table of docs/results.md: the memory agent with drift correction on and off against odom_noise.
#   bash tools/measure_drift.sh [OUT_DIR]     # default out/drift; OUT_DIR/all/drift.json + drift.png + the table
# then python3 tools/report_results.py --drift OUT_DIR   # writes the table into docs/results.md (--check: only compare)
# odom_noise 0.05: seeds 2000-2019 (20 per task and mode); 0, 0.02, 0.1: seeds 2000-2002. Five processes in
# parallel (each episode renders, perceives and plans; about 10 s of CPU each).
set -euo pipefail
cd "$(dirname "$0")/.."
export MUJOCO_GL=${MUJOCO_GL:-egl} OMP_NUM_THREADS=1
OUT=${1:-out/drift}
mkdir -p "$OUT"
run() { embodied bench drift --json "$@" > /dev/null; }
for mode in on off; do
  for seed in 2000 2010; do
    run --noise 0.05 --mode "$mode" --episodes 10 --seed "$seed" --out "$OUT/n05_${mode}_$seed" &
  done
done
run --noise 0 0.02 0.1 --mode both --episodes 3 --seed 2000 --out "$OUT/sweep" &
wait
embodied bench drift --episodes 0 --out "$OUT/all" \
  --pool "$OUT"/n05_on_2000/drift.json "$OUT"/n05_on_2010/drift.json "$OUT"/n05_off_2000/drift.json \
         "$OUT"/n05_off_2010/drift.json "$OUT"/sweep/drift.json
