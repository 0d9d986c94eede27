#!/usr/bin/env bash
# The segmenter's three trainers on a lent GPU (torch there; the simulator's wheels carried, no PyAV): the
# network (cut at half its schedule, then resumed), the crop classifier, the region grouper, the export and
# the held-out scores; the exported file comes back and scores the same on a CPU here.
#
#   embodied perception make-data --out .gpu/frames --episodes 12
#   embodied perception make-data --out .gpu/heldout --episodes 4 --seed 800000
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
#       --platform manylinux_2_27_x86_64 -d .whl mujoco==3.3.7 gymnasium==1.2.2 farama-notifications==0.0.4 \
#       pyopengl==3.1.10 glfw==2.10.0                                 # what the GPU machine lacks
#   (device, carry .gpu and .whl)  pip install -q --no-deps --no-index --target /tmp/site .whl/*.whl; \
#       PYTHONPATH=/tmp/site:$PWD MUJOCO_GL=disable STEPS=1000 bash tools/gpu_perception.sh
#
# Knobs: DEV (cuda; cpu runs the same steps here), STEPS. OUT (the device's folder that comes back) receives
# results.jsonl (one summary line a command), seg_log.jsonl and gpu_seg.safetensors.
set -uo pipefail
: "${OUT:?OUT is the folder that comes back}"
DEV=${DEV:-cuda}; S=${STEPS:-400}
export MUJOCO_GL=${MUJOCO_GL:-egl} PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
E="python3 -m embodied.cli.perception_cmds perception"
R=$OUT/results.jsonl
step() { echo "== $*" >&2; local t0=$(date +%s.%N); "$@" > /tmp/step.json; local rc=$?; local t1=$(date +%s.%N);
  python3 -c "import json,sys; d=json.load(open('/tmp/step.json')) if $rc==0 else {}; d.update(cmd=sys.argv[1], rc=$rc, wall_s=round($t1-$t0,1)); print(json.dumps(d))" "$*" >> $R; tail -1 $R >&2; }
rm -rf /tmp/seg /tmp/segb /tmp/cls /tmp/grp /tmp/segcpu
step $E train --data .gpu/frames --out /tmp/seg --device $DEV --steps $S --stop-at $((S/2)) --checkpoint-every 100 --json
step $E train --data .gpu/frames --out /tmp/seg --device $DEV --steps $S --resume --checkpoint-every 100 --json
step $E train --data .gpu/frames --out /tmp/segb --device $DEV --steps 60 --batch-size 64 --json
step $E train --data .gpu/frames --out /tmp/segcpu --device cpu --steps 20 --json
step $E train-classifier --data .gpu/frames --segmenter /tmp/seg --out /tmp/cls --device $DEV --steps $S --json
step $E train-grouper --data .gpu/frames --segmenter /tmp/seg --out /tmp/grp --device $DEV --steps $S --json
step $E export --run /tmp/seg --classifier /tmp/cls --grouper /tmp/grp --out $OUT/gpu_seg.safetensors --json
step $E eval --weights $OUT/gpu_seg.safetensors --data .gpu/heldout --max-frames 60 --json
cp /tmp/seg/log.jsonl $OUT/seg_log.jsonl
