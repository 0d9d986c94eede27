#!/usr/bin/env bash
# The numbers of docs/perception.md: segmenter quality on held-out frames (the shipped pipeline, then the one
# without the region grouper step by step), speed per mode, and the whole agent on masks vs learned perception (default look and
# visual=randomized), 10 seeds per task from 930000 (no test or training frame uses them; masks and learned 10 more
# from 930010), every task but Lifelong (one 20,700-step episode), and geometric mode on the workcell's tasks.
# About 2.5 hours on the two cores; run the bench (speed) alone on a quiet machine.
#   bash tools/measure_perception.sh [OUT_DIR]   # default runs/seg; prints the tables (tools/report_perception.py)
# then python3 tools/report_results.py --perception OUT_DIR   # writes them into docs/perception.md (--check: compare)
set -euo pipefail
cd "$(dirname "$0")/.."
export MUJOCO_GL=${MUJOCO_GL:-egl} OMP_NUM_THREADS=1
OUT=${1:-runs/seg}
EPISODES=${EPISODES:-10}
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
TASKS=$(python3 -c "from embodied.tasks import TASKS; print(' '.join('--task ' + t for t in TASKS if t != 'Lifelong-v0'))")
for mode in masks learned; do  # two parts of EPISODES seeds each (tools/report_perception.py merges them)
  $E ablate $TASKS --column agent --episodes "$EPISODES" --seed "$SEED" --perception $mode --workers 2 \
    --json > "$OUT/agent_${mode}_a.json"
  $E ablate $TASKS --column agent --episodes "$EPISODES" --seed $((SEED + EPISODES)) --perception $mode --workers 2 \
    --json > "$OUT/agent_${mode}_b.json"
done
$E ablate $TASKS --column agent --episodes "$EPISODES" --seed "$SEED" --perception learned --workers 2 \
  --option visual=randomized --json > "$OUT/agent_learned_visual.json"
# Geometric mode (RANSAC + DBSCAN, no masks) covers the workcell only.
WORKCELL=$(python3 -c "from embodied.tasks import TASKS, get_task; print(' '.join('--task ' + t for t in TASKS if get_task(t).suite == 'manipulation' and t != 'Lifelong-v0'))")
$E ablate $WORKCELL --column agent --episodes "$EPISODES" --seed "$SEED" --perception geometric --workers 2 \
  --json > "$OUT/agent_geometric.json"
python3 tools/report_perception.py "$OUT"
