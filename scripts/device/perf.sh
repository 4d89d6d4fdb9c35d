#!/usr/bin/env bash
# Issues 9 and 10 on one GPU: fused / launch / graph / permute benchmarks beside PyTorch in the same call, and the driver's own launch floor.
#   bash scripts/device/perf.sh [launch|graph|fused|permute ...]   (default: all)
set -u
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
want() { [ $# -eq 0 ] || [[ " $ARGS " == *" $1 "* ]]; }
ARGS="$*"; [ -z "$ARGS" ] && ARGS="launch graph fused permute"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if want launch; then
  stage launch floor, our launch path, PyTorch
  nvcc -O2 -arch=sm_90 -o /tmp/launch_floor scripts/launch_floor.cu -lcuda -lnvrtc && timeout 60 /tmp/launch_floor
  timeout 120 $E/gpu_launch_bench 2>&1 | tail -40
  # Where a cached launch's host time goes (the engine's stage profiler, from its own tests).
  [ -x "$T/typestate_tensor" ] && timeout 120 "$T/typestate_tensor" \
    engine_gpu::tests::launch_gpu::the_profiler_sees_the_cached_path --exact --nocapture \
    --test-threads=1 2>&1 | grep -A8 "^stage breakdown"
  timeout 120 python3 scripts/bench_torch_launch.py 2>&1 | tail -12
fi
if want graph; then
  stage graph replay, then torch.cuda.graph
  timeout 120 $E/gpu_graph_bench 2>&1 | tail -14
  timeout 120 python3 scripts/bench_torch_graph.py 2>&1 | tail -8
fi
if want fused; then
  stage fused bench; timeout 150 $E/gpu_fused_bench 2>&1 | tail -16
  stage torch eager and torch.compile; timeout 240 python3 scripts/bench_torch_fused.py 2>&1 | tail -16
fi
if want permute; then
  stage permutes
  timeout 200 $E/gpu_pointwise_bench --permute --json $O/p1.json >$O/p1.txt 2>&1
  timeout 240 python3 scripts/bench_torch.py --permute --compare $O/p1.json >$O/cmp_p1.txt 2>&1
  grep -A30 -E "^[0-9]+ cases:" $O/cmp_p1.txt
  echo "== u8 add (ours, of copy)"
  grep -E "add +u8" $O/p1.txt | head -12
fi
