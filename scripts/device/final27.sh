#!/usr/bin/env bash
# Issue 27's closing device call: the public matmul tests on the GPU (tests/it/matmul.rs and
# matmul_gpu.rs, one thread: a capture in global mode refuses other threads' driver calls),
# the f16 NaN-sign fix of issue 26 (pointwise_int_logic), the training example on both
# engines, and the matmul benchmark beside torch.matmul / eager / torch.compile.
# Needs .gpu-pack/it.gz (the `it` test binary, gpu-tests, release) and .gpu/examples/
# {train_mlp,gpu_matmul_bench}.
set -u
cd "$(dirname "$0")/../.."
[ -f .gpu/tests/it ] || { mkdir -p .gpu/tests; gunzip -c .gpu-pack/it.gz > .gpu/tests/it; chmod +x .gpu/tests/it; }
source scripts/device/common.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
stage "matmul tests (public API, both engines)"
LIMIT=300 tests matmul
LIMIT=300 tests matmul_gpu
stage "pointwise_int_logic (f16 NaN sign)"
timeout 200 $T/it pointwise_int_logic:: >$O/intlogic.log 2>&1; echo "[exit $?]"
grep -E "^test result|FAILED|panicked" $O/intlogic.log | head -20
stage "train_mlp"
timeout 120 $E/train_mlp 2>&1 | tail -20; echo "[exit ${PIPESTATUS[0]}]"
INNER=${INNER:-10} bash scripts/device/bench27.sh bench
stage "CPU matmul on the device host: ours, then PyTorch's CPU"
timeout 150 $E/cpu_matmul_bench --repeats 7; echo "[exit $?]"
timeout 150 python3 scripts/bench_torch_matmul_cpu.py --repeats 7; echo "[exit $?]"
