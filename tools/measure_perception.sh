#!/usr/bin/env bash
# The numbers of docs/perception.md: segmenter quality on held-out frames (the shipped pipeline, then the one
# without the region grouper step by step), speed per mode, and the whole agent on masks vs learned perception (default look and
# visual=randomized), EPISODES seeds per task from 930000 (no test or training frame uses them), every task but
# Lifelong (one 20,700-step episode), and geometric mode on the workcell's tasks (tools/measure_perception_agent.py).
# 100 seeds: about 5 hours for masks + learned on the two cores, as long again for the randomized look; run the
# bench (speed) alone on a quiet machine. VISUAL_EPISODES, GEOMETRIC_EPISODES: fewer seeds for those two.
#   bash tools/measure_perception.sh [OUT_DIR]   # default runs/seg; prints the tables (tools/report_perception.py)
# then python3 tools/report_results.py --perception OUT_DIR   # writes them into docs/perception.md (--check: compare)
set -euo pipefail
cd "$(dirname "$0")/.."
export MUJOCO_GL=${MUJOCO_GL:-egl} OMP_NUM_THREADS=1
OUT=${1:-runs/seg}
EPISODES=${EPISODES:-100}
SEED=${SEED:-930000}
E="python3 -m embodied.cli.main"
mkdir -p "$OUT"
$E perception eval --data "$OUT/frames_heldout" --json > "$OUT/eval_shipped.json"
$E perception eval --data "$OUT/frames_heldout_vis" --json > "$OUT/eval_shipped_vis.json"
for look in "" _vis; do  # the pipeline without the region grouper, step by step
  W="--without grouper"
  $E perception eval --data "$OUT/frames_heldout$look" $W --json > "$OUT/eval_no_grouper$look.json"
  $E perception eval --data "$OUT/frames_heldout$look" $W --without proposals --json > "$OUT/eval_no_proposals$look.json"
  $E perception eval --data "$OUT/frames_heldout$look" $W --without classifier --json \
    > "$OUT/eval_no_classifier$look.json"
  $E perception eval --data "$OUT/frames_heldout$look" $W --without snap --without classifier --json \
    > "$OUT/eval_network_only$look.json"
done
$E bench perception --json > "$OUT/bench_perception.json"
# The whole agent: resumable cells of 10 seeds per task (a rerun skips finished cells; see the tool's doc).
LAST=$((SEED + EPISODES - 1))
A="python3 tools/measure_perception_agent.py --out $OUT --first $SEED --workers 2"
$A --last "$LAST" --mode masks --mode learned
$A --last $((SEED + ${VISUAL_EPISODES:-$EPISODES} - 1)) --mode learned --option visual=randomized
$A --last $((SEED + ${GEOMETRIC_EPISODES:-$EPISODES} - 1)) --mode geometric --suite manipulation  # workcell only
python3 tools/report_perception.py "$OUT"
