#!/usr/bin/env bash
# Every test of the bundle on one GPU machine, in parallel processes: groups of modules of
# the integration-test binary `it` and of the library's own tests, spread over the visible GPUs (one GPU per process; the
# two-GPU tests are left to multi_gpu.sh). Each line of each log is stamped with the time, so
# a slow test shows. Logs land in $OUT as they are written.
#   bash scripts/device/tests_parallel.sh
set -u
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
ngpu=$(nvidia-smi -L | wc -l); [ "$ngpu" -lt 1 ] && ngpu=1
groups=(
  "pointwise::"
  "fused_random::"
  "dtypes:: pointwise_activations:: pointwise_int_logic:: pointwise_float_math:: any_all::"
  "fused:: syncedmem:: blob:: stream_order:: transfer_gpu::"
  "graph:: reduce:: basics:: tensor::"
  "allocation:: allocator_caching:: allocator_config:: allocator_contract:: allocator_event_failures:: allocator_gpu:: allocator_host_pinned:: allocator_naive:: allocator_pooled:: allocator_stress:: architecture:: bad_input:: bf16_rounding:: collective:: gpu_runtime:: host_source:: layout:: memory_history:: multi_gpu:: ndarray_interop:: harness:: common::"
)
# The library's own tests (the GPU engine's private parts: `engine_gpu::tests::...`), split
# the same way: its two long GPU modules apart, the rest together.
lib_groups=(
  "engine_gpu::tests::pointwise_gpu::"
  "engine_gpu::tests::tiled_gpu::"
  "--skip engine_gpu::tests::pointwise_gpu:: --skip engine_gpu::tests::tiled_gpu::"
)
stamp() { while IFS= read -r l; do printf '%s %s\n' "$(date +%s)" "$l"; done; }
pids=()
for i in "${!groups[@]}"; do
  ( export CUDA_VISIBLE_DEVICES=$((i % ngpu))
    timeout "${LIMIT:-520}" "$T/it" ${groups[$i]} --test-threads=1 2>&1 | stamp > "$O/it_g$i.log" ) &
  pids+=($!)
done
for i in "${!lib_groups[@]}"; do
  ( export CUDA_VISIBLE_DEVICES=$(( (${#groups[@]} + i) % ngpu ))
    timeout "${LIMIT:-520}" "$T/typestate_tensor" ${lib_groups[$i]} --test-threads=1 2>&1 | stamp > "$O/lib_g$i.log" ) &
  pids+=($!)
done
[ -x "$T/fused_alloc" ] && ( export CUDA_VISIBLE_DEVICES=$(( (${#groups[@]} + ${#lib_groups[@]}) % ngpu ))
  timeout 200 "$T/fused_alloc" --test-threads=1 2>&1 | stamp > "$O/fused_alloc.log" ) &
pids+=($!)
wait "${pids[@]}"
pass=0; fail=0
for f in "$O"/it_g*.log "$O"/lib_g*.log "$O"/fused_alloc.log; do
  r=$(grep -E "test result:" "$f" | tail -1); echo "$(basename "$f"): ${r:-NO RESULT (killed?) last: $(tail -1 "$f")}"
  grep -E " FAILED$|panicked" "$f" | head -10
  p=$(echo "$r" | sed -nE 's/.* ([0-9]+) passed.*/\1/p'); f2=$(echo "$r" | sed -nE 's/.* ([0-9]+) failed.*/\1/p')
  pass=$((pass+${p:-0})); fail=$((fail+${f2:-0}))
done
echo "slowest tests (s):"
awk 'FNR == 1 { prev = "" } { d = (prev == "") ? 0 : $1 - prev; prev = $1; if ($2 == "test" && $NF == "ok") print d, $3 }' "$O"/it_g*.log "$O"/lib_g*.log | sort -rn | head -12
echo "$pass passed, $fail failed"
