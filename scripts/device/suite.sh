#!/usr/bin/env bash
# One GPU: every bundled test binary (GPU tests included), then the reduction benchmark
# beside PyTorch's in the same call.
#   bash scripts/device/suite.sh [--no-bench]   (after ../shared/tools/gpu-bundle --features multi-gpu-tests and scripts/device/bundle-bench.sh)
set -u
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
stage all test binaries on GPU 0
timeout 420 bash .gpu/run.sh 2>&1 | tail -60
[ "${1:-}" = "--no-bench" ] && exit 0
stage reductions: ours then PyTorch
timeout 120 $E/gpu_reduce_bench --json $O/reduce_ours.json >$O/reduce_ours.txt 2>&1; tail -3 $O/reduce_ours.txt
timeout 150 python3 scripts/bench_torch_reduce.py --json $O/reduce_torch.json --compare $O/reduce_ours.json 2>&1 | tail -40
