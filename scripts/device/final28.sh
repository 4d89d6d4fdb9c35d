#!/usr/bin/env bash
# Issue 28 on the device: the GPU tests of every new module (shape basics, normalisations,
# indexing, scans, sorting) and the matmul tests (issue 27's epilogue tolerance), the four
# tasks of the issue on both engines, then each family's benchmark beside PyTorch eager and
# torch.compile in the same call.
# Needs .gpu-pack/it.gz (the `it` test binary, gpu-tests, release) and .gpu/examples/
# {four_tasks,gpu_norm_bench,gpu_index_bench,gpu_sort_bench} (/work/notes/bundle28.sh).
#   bash scripts/device/final28.sh [tests] [bench]   (default: both)
# MODULES picks the test modules (default: every issue-28 module, then matmul and four_tasks);
# BENCHES the benchmark families (default: norm index sort). A binary missing from the bundle
# is skipped with a line saying so.
set -u
cd "$(dirname "$0")/../.."
[ -f .gpu/tests/it ] || { mkdir -p .gpu/tests; gunzip -c .gpu-pack/it.gz > .gpu/tests/it; chmod +x .gpu/tests/it; }
source scripts/device/common.sh
ARGS="$*"; [ -z "$ARGS" ] && ARGS="tests bench"
want() { [[ " $ARGS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__)"
has() { [ -x "$1" ] || { echo "skipped: $1 is not in this bundle"; return 1; }; }
MODULES=${MODULES:-shape_basics normalize indexing scan sort matmul four_tasks}
BENCHES=${BENCHES:-norm index sort}
if want tests; then
  stage "issue 28 tests (both engines; the GPU variants run here): $MODULES"
  for m in $MODULES; do
    case $m in
      four_tasks) has $E/four_tasks && { timeout 120 $E/four_tasks; echo "[four_tasks exit $?]"; } ;;
      *) LIMIT=240 tests $m ;;
    esac
  done
fi
if want bench; then
  for b in $BENCHES; do
    has $E/gpu_${b}_bench || continue
    stage "bench: $b"
    case $b in
      norm)
        timeout 200 $E/gpu_norm_bench --repeats 20 --json $O/ours_norm.json | tail -30
        timeout 400 python3 scripts/bench_torch_norm.py --repeats 20 --json $O/torch_norm.json --compare $O/ours_norm.json | tail -40 ;;
      index)
        timeout 200 $E/gpu_index_bench --json $O/ours_index.json | tail -20
        timeout 300 python3 scripts/bench_torch_index.py --compare $O/ours_index.json | tail -30 ;;
      sort)
        timeout 200 $E/gpu_sort_bench --repeats 10 | tail -20
        timeout 300 python3 scripts/bench_torch_sort.py --repeats 10 | tail -20 ;;
    esac
  done
fi
