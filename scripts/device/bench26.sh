#!/usr/bin/env bash
# Issue 26's benchmarks in one device call (about 6 minutes; every stage has its own time
# limit, 9.7 minutes in all; a PyTorch stage stopped by its limit still prints the cases it
# timed): the device-to-device copy bandwidth (measured inside each
# program, in the same process as its cases), every op x element type of the op table and
# every cast at 2^26 elements (8192 x 8192, contiguous and with the first operand transposed)
# against PyTorch eager, then the fused benchmark (issue 26's permuted-leaf and cast-heavy
# cases and the older ones) against torch eager and torch.compile. Needs .gpu/examples/ built
# with `cargo build --release -p typestate-tensor-bench --example gpu_pointwise_bench --example gpu_fused_bench`.
#   bash scripts/device/bench26.sh [pointwise] [fused]   (default: both)
# Repetitions, sized for the time: pointwise, 2 warm-up launches (the first compiles) and the
# median of 5 samples of 3 back-to-back launches each, per case and side (about 600 cases);
# fused, 3 warm-up launches and the median of 10 single-launch samples. Tables under $OUT:
# ops_cmp.txt (per case and summary), ops_ours.txt, fused_ours.txt, fused_cmp.txt, and the
# JSON of each side.
set -u
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
ARGS="$*"; [ -z "$ARGS" ] && ARGS="pointwise fused"
want() { [[ " $ARGS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.memory --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
if want pointwise; then
  stage "all ops, ours: 2^26 elements, contiguous and a.T; warm-up 2, median of 5 x 3 launches"
  timeout 235 $E/gpu_pointwise_bench --all-ops --warmup 2 --repeats 5 --inner 3 \
    --json $O/ops_ours.json >$O/ops_ours.txt 2>&1
  echo "[exit $?] $(grep -c '' $O/ops_ours.txt) lines"
  head -1 $O/ops_ours.txt
  grep -E "^error" $O/ops_ours.txt | head -10
  stage "all ops, PyTorch eager on the same cases"
  timeout 100 python3 scripts/bench_torch_ops.py --compare $O/ops_ours.json \
    --json $O/ops_torch.json >$O/ops_cmp.txt 2>&1
  echo "[exit $?]"
  head -1 $O/ops_cmp.txt
  sed -n '/^all: /,$p' $O/ops_cmp.txt | head -80
  tail -3 $O/ops_cmp.txt | grep -E "Error|error" || true
fi
if want fused; then
  stage "fused, ours (10 samples)"
  timeout 75 $E/gpu_fused_bench --repeats 10 --json $O/fused_ours.json >$O/fused_ours.txt 2>&1
  echo "[exit $?]"
  grep -E "^\|" $O/fused_ours.txt | head -30
  stage "fused, torch eager and torch.compile on the same cases (10 samples)"
  timeout 170 python3 scripts/bench_torch_fused.py --repeats 10 --compare $O/fused_ours.json \
    >$O/fused_cmp.txt 2>&1
  echo "[exit $?]"
  sed -n '/^ours (fused)/,$p' $O/fused_cmp.txt
  tail -3 $O/fused_cmp.txt | grep -E "Error|error" || true
fi
stage done
