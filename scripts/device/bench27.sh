#!/usr/bin/env bash
# Issue 27's GPU matmul in one device call: where cuBLASLt was found, the engine's tests
# (f64 reference over random layouts, graph capture, side streams, the typed error without
# the library), then the benchmark against torch.matmul, PyTorch eager and torch.compile on
# the same cases (scripts/bench_torch_matmul.py), on the same card.
# Needs .gpu/tests/lib (`cargo test --release --no-run --features gpu-tests --lib`) and
# .gpu/examples/gpu_matmul_bench (`cargo build --release -p typestate-tensor-bench --example gpu_matmul_bench`).
#   [INNER=10] bash scripts/device/bench27.sh [tests] [bench]   (default: both)
# INNER: calls per timing, back to back on both sides (default 1: one call per timing, the
# host's launch time between the events included, which favours the faster host side).
set -u
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
ARGS="$*"; [ -z "$ARGS" ] && ARGS="tests bench"
want() { [[ " $ARGS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.memory --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
stage "cuBLASLt: ${cublaslt_dir:-<not found>}"
ls "${cublaslt_dir:-/nonexistent}"/libcublasLt* 2>/dev/null | head -3
if want tests; then
  stage "matmul tests (lib, engine_gpu::matmul)"
  # One thread: a capture in global mode refuses some driver calls of other threads (a
  # stream made elsewhere meanwhile would fail), so the capture test runs alone.
  timeout 300 $T/lib engine_gpu::matmul --test-threads=1 >$O/tests27.log 2>&1
  echo "[exit $?]"
  grep -E "^test |^test result|panicked|skipped" $O/tests27.log | head -40
  stage "without cuBLASLt on the library path: the typed error"
  LD_LIBRARY_PATH=$(echo "$LD_LIBRARY_PATH" | tr ':' '\n' | grep -v "^${cublaslt_dir:-/none}$" | paste -sd:) \
    timeout 60 $T/lib a_missing_cublaslt --nocapture >$O/missing27.log 2>&1
  echo "[exit $?]"; grep -E "typed_error|test result" $O/missing27.log | head -5
fi
if want bench; then
  stage "ours: gpu_matmul_bench"
  timeout 200 $E/gpu_matmul_bench --repeats 10 --inner ${INNER:-1} --json $O/ours27.json >$O/ours27.txt 2>&1
  echo "[exit $?]"; cat $O/ours27.txt | head -60
  stage "PyTorch: torch.matmul, eager and torch.compile on the same cases"
  timeout 240 python3 scripts/bench_torch_matmul.py --repeats 10 --inner ${INNER:-1} --json $O/torch27.json \
    --compare $O/ours27.json >$O/cmp27.txt 2>&1
  echo "[exit $?]"; sed -n '/ours \/ torch |/,$p' $O/cmp27.txt; tail -3 $O/cmp27.txt | grep -iE "error" || true
fi
stage done
