#!/usr/bin/env bash
# Issue 30, DLPack against PyTorch on the device (which has PyTorch but no Rust toolchain).
#
#   bash scripts/device/dlpack.sh build   # HERE: the Python extension (python/, pyo3 abi3,
#                                         # release, stripped) into .gpu/dlpack/, and the `it`
#                                         # test binary (gpu-tests, release) into .gpu-pack/it.gz
#   bash scripts/device/dlpack.sh build-so   # HERE: only the extension
#   bash scripts/device/dlpack.sh run     # ON THE DEVICE: scripts/dlpack_check.py, then the
#                                         # GPU tests of tests/it/dlpack.rs
#
# The device call: carry [".gpu", ".gpu-pack"], command `bash scripts/device/dlpack.sh run`.
set -u
cd "$(dirname "$0")/../.."
mode=${1:-run}

build_so() {
  # Keep the bundles out of git (a worktree's exclude file lives in the common git dir).
  ex=$(git rev-parse --git-path info/exclude); mkdir -p "$(dirname "$ex")"
  for p in /.gpu/ /.gpu-pack/; do grep -qx "$p" "$ex" 2>/dev/null || echo "$p" >> "$ex"; done
  # Its own target dir: the extension's workspace is python/ alone (never the main build).
  (cd python && CARGO_TARGET_DIR="$PWD/../target/python" cargo build --release) || exit 1
  mkdir -p .gpu/dlpack
  # abi3: one file for every CPython >= 3.9; `.abi3.so` is a suffix CPython imports.
  cp target/python/release/libtt_dlpack.so .gpu/dlpack/tt_dlpack.abi3.so
  strip .gpu/dlpack/tt_dlpack.abi3.so
  ls -l .gpu/dlpack/tt_dlpack.abi3.so
}

build_tests() {
  mkdir -p .gpu-pack
  exe=$(cargo test --release --features gpu-tests --no-run --test it --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    try: m = json.loads(l)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable"): print(m["executable"])' | tail -1)
  [ -n "$exe" ] || { echo "dlpack.sh: the it test binary did not build" >&2; exit 1; }
  strip -o /tmp/it.stripped "$exe" && gzip -c /tmp/it.stripped > .gpu-pack/it.gz
  ls -l .gpu-pack/it.gz
}

case "$mode" in
  build) build_so; build_tests; du -sh .gpu .gpu-pack ;;
  build-so) build_so ;;
  run)
    source scripts/device/common.sh
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 -c "import torch, numpy; print('torch', torch.__version__, 'numpy', numpy.__version__)"
    stage "DLPack check against PyTorch (scripts/dlpack_check.py)"
    PYTHONPATH=.gpu/dlpack timeout 300 python3 scripts/dlpack_check.py 2>&1 | tee "$O/dlpack_check.log" | tail -80
    echo "[dlpack_check exit ${PIPESTATUS[0]}]"
    if [ -f .gpu/tests/it ] || [ -f .gpu-pack/it.gz ]; then
      [ -f .gpu/tests/it ] || { mkdir -p .gpu/tests; gunzip -c .gpu-pack/it.gz > .gpu/tests/it; chmod +x .gpu/tests/it; }
      stage "tests/it/dlpack.rs (both engines, the GPU variants here)"
      LIMIT=240 tests dlpack
      LIMIT=60 tests dlpack_foreign
      stage "stream order and architecture (the foreign storage touches both)"
      LIMIT=240 tests stream_order
      LIMIT=60 tests architecture
    else
      echo "no .gpu-pack/it.gz: the Rust tests were not bundled"
    fi
    ;;
  *) echo "usage: bash scripts/device/dlpack.sh build|build-so|run" >&2; exit 2 ;;
esac
