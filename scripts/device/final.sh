#!/usr/bin/env bash
# The closing run on two GPUs: every test, then sanitizers on the newest kernels (reductions,
# printing, fused, launch path) split over the two GPUs, then host time per launch.
set -u
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
stage "all tests"
LIMIT=300 bash scripts/device/tests_parallel.sh 2>&1 | tail -24
stage sanitizers
( CUDA_VISIBLE_DEVICES=0 LIMIT=150 bash scripts/device/sanitize.sh memcheck reduce::large_reductions_gpu reduce::edge_cases_gpu reduce::backend_reduce_writes_strided_outputs_gpu basics::display_prints_exact_strings_gpu launch_gpu:: > $O/san0.txt 2>&1 ) &
( CUDA_VISIBLE_DEVICES=1 LIMIT=150 bash scripts/device/sanitize.sh racecheck reduce::large_reductions_gpu reduce::sum_matches_reference_gpu reduce::edge_cases_gpu > $O/san1.txt 2>&1;
  CUDA_VISIBLE_DEVICES=1 LIMIT=120 bash scripts/device/sanitize.sh memcheck fused::adam_gpu fused::chain_gpu >> $O/san1.txt 2>&1 ) &
wait
cat $O/san0.txt $O/san1.txt | grep -v "^$"
stage "host time per launch"
CUDA_VISIBLE_DEVICES=0 timeout 60 $E/gpu_launch_bench 2>&1 | sed -n '2,11p'
