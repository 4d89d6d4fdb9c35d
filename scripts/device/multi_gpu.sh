#!/usr/bin/env bash
# Issue 11 on a machine with two GPUs: tests, the data-parallel example in its three starts,
# and the peer-copy and all-reduce benchmarks beside PyTorch's in the same call.
#   bash scripts/device/multi_gpu.sh     (after ../shared/tools/gpu-bundle --features multi-gpu-tests and scripts/device/bundle-bench.sh)
set -u
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
nvidia-smi -L; nvidia-smi topo -m 2>/dev/null | head -4; echo "nccl: $nccl_dir"
stage multi_gpu tests; tests multi_gpu --nocapture
stage multi_gpu tests, staged path forced; TAG=multi_gpu_staged TYPESTATE_TENSOR_PEER_PATH=staged tests multi_gpu
stage collective tests; tests collective --nocapture
stage data_parallel, one process; timeout 120 $E/data_parallel 2>&1 | tail -4
stage data_parallel --spawn 2; timeout 120 $E/data_parallel --spawn 2 2>&1 | tail -5
stage data_parallel under torchrun; timeout 150 torchrun --no-python --standalone --nproc-per-node 2 $E/data_parallel 2>&1 | tail -5
stage data_parallel --overlap-bench; timeout 120 $E/data_parallel --overlap-bench 2>&1 | tail -10
stage peer copy: ours then PyTorch; timeout 150 $E/gpu_peer_bench --json $O/peer_ours.json >$O/peer_ours.txt 2>&1; tail -3 $O/peer_ours.txt
timeout 150 python3 scripts/bench_torch_peer.py --json $O/peer_torch.json --compare $O/peer_ours.json 2>&1 | tail -32
stage all-reduce: ours then PyTorch; timeout 150 $E/gpu_allreduce_bench --json $O/ar_ours.json >$O/ar_ours.txt 2>&1; tail -12 $O/ar_ours.txt
timeout 200 python3 scripts/bench_torch_allreduce.py --json $O/ar_torch.json --compare $O/ar_ours.json 2>&1 | tail -24
