#!/usr/bin/env bash
# Reproduce the "memory agent" numbers of docs/results.md: the ablation table over 100 seeds per task
# that no test uses (1000-1099), and the agent at 10x each task's default delay (seeds 2000-2099).
#   bash tools/measure_agent.sh [OUT_DIR]       # JSON per task in OUT_DIR (default out/agent)
#   python3 tools/report_agent.py OUT_DIR       # the tables of docs/results.md, as markdown
# then python3 tools/report_results.py --agent OUT_DIR   # writes them into docs/results.md (--check: only compare)
# At 100 seeds everywhere this takes 4-5 h on 2 cores; TASKS="A-v0 B-v0" limits the run, and
# ABLATION_EPISODES / DELAY_EPISODES shorten the slow columns. An extra_<task>.json (ablate --column
# agent on the following seeds) is pooled into the agent column by report_agent.py.
set -euo pipefail
cd "$(dirname "$0")/.."
export MUJOCO_GL=${MUJOCO_GL:-egl}
OUT=${1:-out/agent}
EPISODES=${EPISODES:-100}
# The wiped-memory and blank-cue agents mostly idle to the horizon (Rearrange: 2500 steps): fewer seeds.
ABLATION_EPISODES=${ABLATION_EPISODES:-100}
DELAY_EPISODES=${DELAY_EPISODES:-100}
mkdir -p "$OUT"
save() { local file=$1; shift; "$@" > "$file.part" && mv "$file.part" "$file"; }

TASKS=${TASKS:-$(python3 -c "from embodied.tasks import TASKS; print(' '.join(TASKS))")}
for task in $TASKS; do
  [ -f "$OUT/ablate_$task.json" ] || save "$OUT/ablate_$task.json" \
    embodied ablate --task "$task" --episodes "$EPISODES" --ablation-episodes "$ABLATION_EPISODES" --seed 1000 --json
  delay=$(python3 -c "from embodied.tasks import get_task; print(10 * get_task('$task').env_class().Options().delay)")
  [ -f "$OUT/delay10_$task.json" ] || save "$OUT/delay10_$task.json" \
    embodied ablate --task "$task" --episodes "$DELAY_EPISODES" --seed 2000 --column agent --option "delay=$delay" --json
done
echo "measurements in $OUT; tables: python3 tools/report_agent.py $OUT"
echo "into docs/results.md: python3 tools/report_results.py --agent $OUT"
