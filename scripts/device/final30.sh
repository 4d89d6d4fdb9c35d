#!/usr/bin/env bash
# Issues 29 and 30 on the device, in one call:
#   tests  the GPU tests of the new modules (file formats and the GPU loader, DLPack, the
#          foreign producer), the stream-order and intended-use tests, and the issue-28 and
#          issue-27 tests changed since their last device run (normalisations of empty rows,
#          topk, the matmul epilogue's tolerance);
#   dlpack scripts/dlpack_check.py: tensors made here read by torch.from_dlpack and PyTorch's
#          read here, both without a copy, with the stream handshake both ways;
#   cpu    the CPU engine on the host's cores beside PyTorch's CPU kernels, 1 to 16 threads.
# Needs .gpu-pack/it.gz (`it`, gpu-tests), .gpu/examples/cpu_engine_bench (release) and
# .gpu/dlpack/tt_dlpack.abi3.so (scripts/device/dlpack.sh build-so).
#   bash scripts/device/final30.sh [tests] [dlpack] [cpu]   (default: all three)
set -u
cd "$(dirname "$0")/../.."
[ -f .gpu/tests/it ] || { mkdir -p .gpu/tests; gunzip -c .gpu-pack/it.gz > .gpu/tests/it; chmod +x .gpu/tests/it; }
source scripts/device/common.sh
ARGS="$*"; [ -z "$ARGS" ] && ARGS="tests dlpack cpu"
want() { [[ " $ARGS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, numpy; print('torch', torch.__version__, 'numpy', numpy.__version__)"
python3 -c "import safetensors; print('safetensors', safetensors.__version__)" 2>/dev/null || echo "no safetensors package"
if want tests; then
  stage "issue 30 tests (both engines; the GPU variants run here)"
  for m in io_gpu io_safetensors io_npy io_fuzz dlpack dlpack_foreign; do LIMIT=240 tests $m; done
  stage "stream order, intended use, architecture"
  for m in stream_order intended_use architecture; do LIMIT=240 tests $m; done
  stage "issue 28/27 tests changed since their device run"
  for m in normalize sort matmul; do LIMIT=240 tests $m; done
fi
if want dlpack; then
  stage "DLPack against PyTorch (scripts/dlpack_check.py)"
  PYTHONPATH=.gpu/dlpack timeout 300 python3 scripts/dlpack_check.py 2>&1 | tee "$O/dlpack_check.log" | tail -60
  echo "[dlpack_check exit ${PIPESTATUS[0]}]"
fi
if want cpu; then
  stage "CPU engine vs PyTorch CPU ($(nproc) cores: $(lscpu | sed -n 's/^Model name: *//p'))"
  timeout 300 $E/cpu_engine_bench --threads 1,2,4,8,16 --json $O/cpu_ours.json | tail -80
  timeout 400 python3 scripts/bench_torch_cpu.py --threads 1,2,4,8,16 --json $O/cpu_torch.json --compare $O/cpu_ours.json | tail -100
fi
