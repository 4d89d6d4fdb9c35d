#!/usr/bin/env bash
# Prints a folder holding `libnccl.so` to put on LD_LIBRARY_PATH for the collectives.
#
# cudarc loads NCCL at run time under the names `libnccl.so`, `libnccl.so.13`, ... (see
# `cudarc::get_lib_name_candidates("nccl")`), but NCCL's packages ship `libnccl.so.2`: this
# finds it and links it as `.nccl/libnccl.so`. Where it looks, in order:
#   1. $NCCL_LIB_DIR (a folder holding libnccl.so.2 or libnccl.so);
#   2. PyTorch's pip package (nvidia-nccl-cu13 or -cu12): <site-packages>/nvidia/nccl/lib;
#   3. the system's linker cache (ldconfig -p).
# Prints nothing (and exits 0) when there is no NCCL: the collectives then report
# `NcclError::NoLibrary` and their tests skip.
#
#   export LD_LIBRARY_PATH=$(bash scripts/nccl-lib.sh)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/.nccl"
so=""
pick() { for f in "$1/libnccl.so.2" "$1/libnccl.so"; do [ -e "$f" ] && { so=$(readlink -f "$f"); return 0; }; done; return 1; }
if [ -n "${NCCL_LIB_DIR:-}" ]; then pick "$NCCL_LIB_DIR" || true; fi
if [ -z "$so" ]; then
  for py in python3 python; do
    command -v "$py" >/dev/null 2>&1 || continue
    # `nvidia.nccl` is a namespace package (no __init__.py, so no __file__): use __path__.
    dir=$("$py" -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib"))' 2>/dev/null || true)
    if [ -n "$dir" ] && pick "$dir"; then break; fi
  done
fi
if [ -z "$so" ] && command -v ldconfig >/dev/null 2>&1; then
  f=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')
  [ -n "$f" ] && so=$(readlink -f "$f")
fi
[ -n "$so" ] || exit 0
mkdir -p "$dest"
ln -sf "$so" "$dest/libnccl.so"
echo "$dest"
