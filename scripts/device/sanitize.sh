#!/usr/bin/env bash
# compute-sanitizer over the GPU test binaries that launch our kernels, GPU tests only.
#   bash scripts/device/sanitize.sh TOOL FILTER ...   e.g. memcheck fused::fused_gpu tiled_gpu::
# Each FILTER selects tests of the integration-test binary `it` by name (module path).
set -u
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
tool=$1; shift
for filter in "$@"; do
  log="$O/san_${tool}_${filter//[^a-z0-9_]/_}.log"
  stage "$tool $filter"
  timeout "${LIMIT:-200}" compute-sanitizer --require-cuda-init=no --error-exitcode 99 --tool "$tool" \
    "$T/it" "$filter" --test-threads=1 >"$log" 2>&1; rc=$?
  grep -E "^test result|ERROR SUMMARY|FAILED|Invalid|Race|Uninitialized" "$log" | head -12; echo "[$filter exit $rc]"
done
