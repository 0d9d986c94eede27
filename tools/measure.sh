#!/usr/bin/env bash
# Reproduce the numbers of docs/results.md that it lists (about 2 hours on 2 cores).
#   bash tools/measure.sh [OUT_DIR]      # JSON per measurement in OUT_DIR (default out/measure)
#   python3 tools/report.py OUT_DIR      # the tables of docs/results.md, as markdown
# then python3 tools/report_results.py --measure OUT_DIR   # writes them into docs/results.md (--check: only compare)
# Timing benchmarks run first and one at a time, so nothing else shares the cores.
set -euo pipefail
cd "$(dirname "$0")/.."
export MUJOCO_GL=${MUJOCO_GL:-egl}
OUT=${1:-out/measure}
EPISODES=${EPISODES:-100}
mkdir -p "$OUT"

# save FILE CMD...: CMD's stdout into FILE, written atomically (a run cut short leaves no half file).
save() { local file=$1; shift; "$@" > "$file.part" && mv "$file.part" "$file"; }

save "$OUT/bench_env.json" embodied bench env --json
save "$OUT/bench_memory.json" embodied bench memory --json
save "$OUT/bench_viz.json" embodied bench viz --json

TASKS=$(python3 -c "from embodied.tasks import TASKS; print(' '.join(TASKS))")
MANIPULATION=$(python3 -c "from embodied.tasks import TASKS; print(' '.join(n for n, e in TASKS.items() if e.suite == 'manipulation'))")
for task in $TASKS; do
  for policy in expert random memoryless; do
    save "$OUT/run_${task}_${policy}.json" embodied run --task "$task" --policy "$policy" --episodes "$EPISODES" --json
  done
done

save "$OUT/eval_memory_masks.json" embodied eval-memory --episodes "$EPISODES" --json
GEOMETRIC_ARGS=()
for task in $MANIPULATION; do GEOMETRIC_ARGS+=(--task "$task"); done
save "$OUT/eval_memory_geometric.json" embodied eval-memory --mode geometric "${GEOMETRIC_ARGS[@]}" --episodes "$EPISODES" --json
echo "measurements in $OUT; tables: python3 tools/report.py $OUT"
echo "into docs/results.md: python3 tools/report_results.py --measure $OUT"
