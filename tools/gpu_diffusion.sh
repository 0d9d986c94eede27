#!/usr/bin/env bash
# Train the diffusion skill head on a lent GPU machine (torch there, none of the simulator stack), and bring
# back what `embodied export-head` needs in the few files the device returns (at most 8, two folders down).
#
#   embodied pack-windows --data runs/v/manip_demos --out .gpu/diffpack --skills pick,place,open,close,lift,press,touch
#   python3 -m pip download --no-deps -d .whl gymnasium==1.4.0 farama-notifications diffusers==0.35.2 \
#       importlib_metadata huggingface_hub==0.35.3 zipp          # what the GPU machine lacks
#   (device, carry .gpu and .whl)  STEPS=9000 GUARD=500 FAR=0.2:4 bash tools/gpu_diffusion.sh
#   (back here) mkdir RUN && cp FILES_AT/*.json FILES_AT/log.jsonl RUN/ && tar xf FILES_AT/ckpt.tar -C RUN
#   embodied export-head --run RUN --out HEAD --set ensemble_skills=place
#
# Knobs: STEPS, BATCH (1,024: about 31-39 ms per step on an H100; two runs side by side cost 104 ms each at
# 2,048), GUARD (seconds before the run is stopped; the latest checkpoint comes back), FAR (--oversample-far).
set -u
: "${OUT:?run this on the device machine, where OUT is the folder that comes back}"
T0=$(date +%s)
mkdir -p /tmp/pk && pip install -q --no-deps --no-index --target /tmp/pk .whl/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/pk:$PWD PYTHONUNBUFFERED=1
R=/tmp/run; rm -rf $R
timeout "${GUARD:-500}" python -m embodied.cli.train_cmds train --head diffusion --data .gpu/diffpack \
  --batch-size "${BATCH:-1024}" --lr 1e-3 --set use_elapsed=true --skills pick,place,open,close,lift,press,touch \
  --device cuda --threads 0 --json --out $R --steps "${STEPS:-9000}" --checkpoint-every 1000 \
  ${FAR:+--oversample-far $FAR} > "$OUT/result.json" 2> /tmp/err
echo "train exit $? after $(( $(date +%s) - T0 )) s"; tail -c 300 /tmp/err
cp $R/log.jsonl $R/config.json $R/stats.json $R/latest.json "$OUT/"
last=$(basename "$(ls -d $R/checkpoints/step_* | sort | tail -1)")
# The EMA and model weights with their manifest; the optimizer state stays behind (resume is not possible).
tar cf "$OUT/ckpt.tar" -C $R $(for f in ema.safetensors ema.json model.safetensors model.json manifest.json; do
  echo "checkpoints/$last/$f"; done)
echo "latest $last"
