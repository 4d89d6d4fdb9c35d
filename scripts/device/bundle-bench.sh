#!/usr/bin/env bash
# Adds the benchmark binaries (the `bench/` package's examples: gpu_*_bench, cpu_*_bench) to
# the device bundle in .gpu/examples/, built here in release and stripped, as
# ../shared/tools/gpu-bundle does for the crate's own examples (which it builds; the
# benchmarks are a package of their own so that `cargo test` never builds them).
#   bash scripts/device/bundle-bench.sh [--example NAME ...]   (default: every benchmark)
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="$PWD/target/gpu-bundle"
export CARGO_PROFILE_RELEASE_STRIP=symbols CARGO_PROFILE_RELEASE_DEBUG=0
mkdir -p .gpu/examples
which=(--examples); [ $# -gt 0 ] && which=("$@")
cargo build --release -p typestate-tensor-bench "${which[@]}" --message-format=json 2>/dev/null |
  python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["name"] + "\t" + m["executable"])
' | while IFS=$'\t' read -r name exe; do cp "$exe" ".gpu/examples/$name"; echo "bundled $name"; done
