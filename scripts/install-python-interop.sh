#!/usr/bin/env bash
# Installs numpy and safetensors (from PyPI, into .pyinterop/) so that the file-format tests
# (tests/it/io_npy.rs, io_safetensors.rs) also check files written by numpy and Hugging Face's
# safetensors here, and files written here read by them. Prints the folder to put on
# PYTHONPATH. Best effort: without python3 or the network it prints nothing, and those
# tests print a `skipped:` line (the committed fixtures in tests/it/io_fixtures/ still run).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/.pyinterop"
command -v python3 >/dev/null || exit 0
if ! PYTHONPATH="$dest" python3 -c 'import numpy, safetensors.numpy' 2>/dev/null; then
  python3 -m pip install -q --disable-pip-version-check --only-binary=:all: \
    --target "$dest" numpy safetensors >&2 || true
fi
PYTHONPATH="$dest" python3 -c 'import numpy, safetensors.numpy' 2>/dev/null && echo "$dest"
exit 0
