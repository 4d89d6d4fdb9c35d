#!/usr/bin/env bash
# Issue 28 on the device: the GPU tests of every new module (shape basics, normalisations,
# indexing, scans, sorting) and the matmul tests (issue 27's epilogue tolerance), the four
# tasks of the issue on both engines, then each family's benchmark beside PyTorch eager and
# torch.compile in the same call.
# Needs .gpu-pack/it.gz (the `it` test binary, gpu-tests, release) and .gpu/examples/
# {four_tasks,gpu_norm_bench,gpu_index_bench,gpu_sort_bench} (/work/notes/bundle28.sh).
#   bash scripts/device/final28.sh [tests] [bench]   (default: both)
set -u
cd "$(dirname "$0")/../.."
[ -f .gpu/tests/it ] || { mkdir -p .gpu/tests; gunzip -c .gpu-pack/it.gz > .gpu/tests/it; chmod +x .gpu/tests/it; }
source scripts/device/common.sh
ARGS="$*"; [ -z "$ARGS" ] && ARGS="tests bench"
want() { [[ " $ARGS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__)"
if want tests; then
  stage "issue 28 tests (both engines; the GPU variants run here)"
  for m in shape_basics normalize indexing scan sort; do LIMIT=240 tests $m; done
  stage "matmul tests (issue 27, the epilogue tolerance)"
  LIMIT=200 tests matmul
  stage "four tasks"
  timeout 120 $E/four_tasks; echo "[exit $?]"
fi
if want bench; then
  stage "bench: normalisations"
  timeout 200 $E/gpu_norm_bench --repeats 20 --json $O/ours_norm.json | tail -30
  timeout 400 python3 scripts/bench_torch_norm.py --repeats 20 --json $O/torch_norm.json --compare $O/ours_norm.json | tail -40
  stage "bench: indexing"
  timeout 200 $E/gpu_index_bench --json $O/ours_index.json | tail -20
  timeout 300 python3 scripts/bench_torch_index.py --compare $O/ours_index.json | tail -30
  stage "bench: scans and sorting"
  timeout 200 $E/gpu_sort_bench --repeats 10 | tail -20
  timeout 300 python3 scripts/bench_torch_sort.py --repeats 10 | tail -20
fi
