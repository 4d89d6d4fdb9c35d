#!/usr/bin/env bash
# Prints the folder holding libcublasLt to put on LD_LIBRARY_PATH for the GPU matmul (issue 27).
#
# cudarc loads cuBLASLt at run time under the names `libcublasLt.so`, `libcublasLt.so.13`, ...
# (see `cudarc::get_lib_name_candidates("cublasLt")`). Where this looks, in order:
#   1. $CUBLASLT_LIB_DIR (a folder holding libcublasLt.so*);
#   2. PyTorch's pip packages: <site-packages>/nvidia/cu13/lib (CUDA 13 wheels), then
#      <site-packages>/nvidia/cublas/lib (nvidia-cublas-cu12);
#   3. the system's linker cache (ldconfig -p), then /usr/local/cuda/lib64.
# Prints nothing (and exits 0) when there is none: the matmul then reports
# `GpuError::NoCublasLt`.
#
#   export LD_LIBRARY_PATH=$(bash scripts/cublaslt-lib.sh)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
set -euo pipefail
has() { ls "$1"/libcublasLt.so* >/dev/null 2>&1; }
if [ -n "${CUBLASLT_LIB_DIR:-}" ] && has "$CUBLASLT_LIB_DIR"; then echo "$CUBLASLT_LIB_DIR"; exit 0; fi
for py in python3 python; do
  command -v "$py" >/dev/null 2>&1 || continue
  # `nvidia` is a namespace package (no __file__): use __path__.
  for sub in cu13/lib cublas/lib; do
    dir=$("$py" -c "import os, nvidia as n; print(os.path.join(list(n.__path__)[0], '$sub'))" 2>/dev/null || true)
    if [ -n "$dir" ] && has "$dir"; then echo "$dir"; exit 0; fi
  done
done
if command -v ldconfig >/dev/null 2>&1; then
  f=$(ldconfig -p 2>/dev/null | awk '/libcublasLt\.so/{print $NF; exit}')
  [ -n "$f" ] && { dirname "$(readlink -f "$f")"; exit 0; }
fi
if has /usr/local/cuda/lib64; then echo /usr/local/cuda/lib64; fi
exit 0
