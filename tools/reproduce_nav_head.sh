#!/usr/bin/env bash
# Reproduce the navigation head (docs/heads.md, "Navigation head"): record the agent's demos on the
# three apartment tasks, train the ACT head on its navigate calls, ship the EMA weights, evaluate the agent with it.
#   bash tools/reproduce_nav_head.sh [OUT_DIR]      # default out/nav_head
# EPISODES (demos per task, default 20), STEPS (default 3000), EVAL_EPISODES (per task, default 40) and
# SHIP=1 (overwrite policies/checkpoints/act_nav) are knobs. On this 2-core machine, shared: recording
# about 20 min, training about 16 min, evaluation 10-35 s per episode.
set -euo pipefail
cd "$(dirname "$0")/.."
export MUJOCO_GL=${MUJOCO_GL:-egl} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
OUT=${1:-out/nav_head}
EPISODES=${EPISODES:-20}
STEPS=${STEPS:-3000}
EVAL_EPISODES=${EVAL_EPISODES:-40}
TASKS="ObjectRevisit-v0 MovedObject-v0 MultiGoal-v0"
mkdir -p "$OUT"
save() { local file=$1; shift; "$@" > "$file.part" && mv "$file.part" "$file"; }

# 1. Demos: the memory agent (scripted skills), seeds 3000.., at the agent's own camera size. Its frames carry
#    the running call (skill.id, skill.params) and the navigate skill's route features (skill.guide).
task_args=""; for t in $TASKS; do task_args="$task_args --task $t"; done
nice -n 10 embodied record-demos $task_args --episodes "$EPISODES" --seed 3000 --policy agent --image-size 128 \
  --workers 1 --out "$OUT/demos" --resume --json > "$OUT/record.json"

# 2. ACT on the navigate frames: closed loop (a chunk every step), odometry pose ignored (only what is
#    relative to the robot: the call's target, the route's next waypoints, the base's velocities).
nice -n 10 embodied train --head act --data "$OUT/demos" --out "$OUT/act_nav" --skills navigate --steps "$STEPS" \
  --set horizon=8 --set n_action_steps=1 --set ignore_pose=true --resume --json > "$OUT/train.json"

# 3. Export: EMA weights (float32), safetensors + JSON + sha256 manifest; the demo runs its navigate skill.
SHIP_TO="$OUT/shipped"; [ "${SHIP:-0}" = 1 ] && SHIP_TO=policies/checkpoints/act_nav
embodied export-head --run "$OUT/act_nav" --out "$SHIP_TO" --dtype float32 --agent-skills navigate --json \
  > "$OUT/ship.json"

# 4. The whole agent with the learned navigate skill, seeds 7000.. (no test uses them).
for task in $TASKS; do
  [ -f "$OUT/eval_$task.json" ] || save "$OUT/eval_$task.json" nice -n 10 embodied run --task "$task" \
    --policy agent --head "act:$SHIP_TO" --episodes "$EVAL_EPISODES" --seed 7000 --json
done
python3 - "$OUT" $TASKS <<'EOF'
import json, sys
out = sys.argv[1]
for task in sys.argv[2:]:
    r = json.load(open(f"{out}/eval_{task}.json"))
    ok = sum(e["success"] for e in r["episodes"])
    print(f"{task}: {ok}/{len(r['episodes'])} ({r['success_rate']:.0%}), mean steps {r['mean_steps']:.0f}")
EOF
