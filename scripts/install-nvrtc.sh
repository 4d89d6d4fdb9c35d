#!/usr/bin/env bash
# Installs NVIDIA's run-time compiler (libnvrtc, CUDA 13.0, from its PyPI wheel) into
# .nvrtc/ so that machines without a GPU or a CUDA toolkit (CI, developers' laptops) still
# compile every kernel source with NVRTC in the tests: NVRTC needs no GPU. Prints the
# library folder to put on LD_LIBRARY_PATH. Best effort: with no network it prints nothing
# and the NVRTC tests skip.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/.nvrtc"
lib="$dest/nvidia/cu13/lib"
if [ ! -e "$lib/libnvrtc.so.13" ]; then
  tmp=$(mktemp -d)
  if python3 -m pip download -q --no-deps --only-binary=:all:\
      -d "$tmp" 'nvidia-cuda-nvrtc==13.0.*' >&2; then
    mkdir -p "$dest"
    python3 -m zipfile -e "$tmp"/nvidia_cuda_nvrtc-*.whl "$dest" >&2
  fi
  rm -rf "$tmp"
fi
[ -e "$lib/libnvrtc.so.13" ] && echo "$lib"
exit 0
