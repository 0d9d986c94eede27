#!/usr/bin/env bash
# Reproduce the learned high-level policies (none / implicit / explicit) and their results table:
# record the scripted agent's decision points -> train each memory input on the same data, as many steps
# as fit the 30-minute CPU budget (explicit and none 8,000, implicit 3,000) -> evaluate inside the agent
# with the shipped skill heads -> export.
#
#   bash tools/reproduce_memory_policies.sh [WORK_DIR]
# then python3 tools/report_results.py --memory-policies WORK_DIR   # the results table into docs/learned-policy.md
#
# Knobs (environment): STEPS (every input's steps), or per input EXPLICIT_STEPS (8000, 24 min on one core),
# NONE_STEPS (8000, 13 min) and IMPLICIT_STEPS (3000, 21 min); BATCH; EVAL_EPISODES and EVAL_SEED (held-out seeds,
# 9000+ by default: no test and no demo uses them), MEMORIES (which inputs), EXPORT=1 to overwrite the
# shipped policies in policies/checkpoints/.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${1:-runs/memory}
export MUJOCO_GL=${MUJOCO_GL:-egl} OMP_NUM_THREADS=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
EMB=(nice -n 10 python3 -m embodied.cli.main)
EXPLICIT_STEPS=${EXPLICIT_STEPS:-${STEPS:-8000}}
NONE_STEPS=${NONE_STEPS:-${STEPS:-8000}}
IMPLICIT_STEPS=${IMPLICIT_STEPS:-${STEPS:-3000}}
BATCH=${BATCH:-32}
EVAL_SEED=${EVAL_SEED:-9000}
N=${EVAL_EPISODES:-100}
MEMORIES=${MEMORIES:-"explicit none implicit"}
mkdir -p "$WORK"

# 1. Decision points of the scripted memory agent (seeds 0+): 200 workcell demos, most of them of the long
#    multi-call Rearrange (six other tasks 15 each, Rearrange 30 + 80 from seed 300), and 140 apartment demos.
MANIP_DEMOS=(RememberColor-v0:15 ShellGame-v0:15 ReopenDrawer-v0:15 PutBlockBack-v0:15 HiddenObject-v0:15
             SequenceRecall-v0:15 Rearrange-v0:30)
for td in "${MANIP_DEMOS[@]}"; do
  "${EMB[@]}" record-demos --policy agent --task "${td%%:*}" --episodes "${td##*:}" --out "$WORK/manip" \
    --resume --json > "$WORK/record_${td%%-v0*}.json"
done
"${EMB[@]}" record-demos --policy agent --task Rearrange-v0 --episodes 80 --seed 300 --out "$WORK/manip" \
  --resume --json > "$WORK/record_Rearrange_more.json"
"${EMB[@]}" record-demos --policy agent --task ObjectRevisit-v0 --task MovedObject-v0 --task MultiGoal-v0 \
  --task RoomRecall-v0 --episodes 35 --out "$WORK/nav" --resume --json > "$WORK/record_nav.json"

# 2. One policy per memory input over both suites, the same data and batch. The explicit policy's own inputs
#    (docs/learned-policy.md, "Inputs and losses"), its steps, and its decoding limit on a repeated call.
EXPLICIT_SET=(any_order anchor_features spot_features where_pointer first_box_features free_spots goal_hop_features)
for m in $MEMORIES; do
  resume=() options=() export_options=()
  case $m in explicit) steps=$EXPLICIT_STEPS ;; none) steps=$NONE_STEPS ;; *) steps=$IMPLICIT_STEPS ;; esac
  [ -e "$WORK/$m/latest.json" ] && resume=(--resume)
  if [ "$m" = explicit ]; then
    for o in "${EXPLICIT_SET[@]}"; do options+=(--set "$o=true"); done
    export_options=(--set max_repeats=3)
  fi
  /usr/bin/time -p "${EMB[@]}" train --head memory --memory "$m" --data "$WORK/manip" --data "$WORK/nav" \
    --out "$WORK/$m" --steps "$steps" --batch-size "$BATCH" --checkpoint-every 500 "${resume[@]}" "${options[@]}" \
    --json > "$WORK/train_$m.json" 2> "$WORK/train_$m.time"
  "${EMB[@]}" export-head --run "$WORK/$m" --out "$WORK/memory_$m" "${export_options[@]}" --json > "$WORK/export_$m.json"
done

# 3. Every task: the scripted agent, each learned policy (the shipped skill heads executing its calls),
#    the explicit one with its memory wiped at recall, and chance (in every row).
columns=(--column agent)
for m in $MEMORIES; do columns+=(--column "learned:$WORK/memory_$m"); done
case " $MEMORIES " in *" explicit "*) columns+=(--column "learned:$WORK/memory_explicit:wiped") ;; esac
for t in $("${EMB[@]}" tasks --json | python3 -c "import json,sys; print(' '.join(r['name'] for r in json.load(sys.stdin)))"); do
  "${EMB[@]}" ablate --task "$t" --episodes "$N" --seed "$EVAL_SEED" "${columns[@]}" --json > "$WORK/eval_${t%-v0}.json"
done
python3 tools/report_memory_policies.py "$WORK"

if [ "${EXPORT:-0}" = 1 ]; then
  for m in $MEMORIES; do
    rm -rf "policies/checkpoints/memory_$m" && cp -r "$WORK/memory_$m" "policies/checkpoints/memory_$m"
  done
fi
