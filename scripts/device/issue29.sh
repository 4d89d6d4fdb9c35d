#!/usr/bin/env bash
# Issue 29 on the device, one argument per call (each fits the 10-minute limit):
#   tests  every test of the `it` binary (gpu-tests: both engines), as CI would run it with a
#          GPU; the CPU engine's vector loops (AVX2 where the host has it) and the shared
#          layout collapse checked beside the GPU kernels that use the same collapse;
#   cpu    the CPU engine on the host's cores beside PyTorch's CPU kernels, 1 to 16 threads,
#          in the same call (ratios ours / torch).
# Needs .gpu-pack/it.gz (`it` with gpu-tests) and .gpu/examples/cpu_engine_bench (release):
#   bash scripts/device/bundle-it.sh, then bash scripts/device/issue29.sh tests|cpu
set -u
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "host: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), flags: $(grep -o -w 'avx2\|fma\|avx512f\|f16c' /proc/cpuinfo | sort -u | tr '\n' ' ')"
case "${1:-}" in
  tests)
    [ -f .gpu/tests/it ] || { mkdir -p .gpu/tests; gunzip -c .gpu-pack/it.gz > .gpu/tests/it; chmod +x .gpu/tests/it; }
    stage "the whole it binary (gpu-tests), 4 test threads"
    timeout 560 .gpu/tests/it --test-threads=4 >"$O/it.log" 2>&1; rc=$?
    grep -E "^test result|FAILED|panicked|^failures:" "$O/it.log" | head -60
    grep -c " ok$" "$O/it.log" | sed 's/^/ok lines: /'
    echo "[it exit $rc]"
    ;;
  cpu)
    python3 -c "import torch; print('torch', torch.__version__)"
    stage "CPU engine vs PyTorch CPU"
    timeout 280 $E/cpu_engine_bench --threads 1,2,4,8,16 --json $O/cpu_ours.json | tail -70
    timeout 290 python3 scripts/bench_torch_cpu.py --threads 1,2,4,8,16 --json $O/cpu_torch.json --compare $O/cpu_ours.json | tail -90
    ;;
  *) echo "usage: issue29.sh tests|cpu" >&2; exit 2 ;;
esac
