#!/usr/bin/env bash
# The device bundle for scripts/device/issue29.sh: the `it` test binary with gpu-tests (dev profile,
# stripped, gzipped into .gpu-pack/it.gz, under the 64 MiB carry limit) and the release
# cpu_engine_bench (scripts/device/bundle-bench.sh).
#   bash scripts/device/bundle-it.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -rf .gpu && mkdir -p .gpu/tests .gpu/examples .gpu-pack
pick() { python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["name"] + "\t" + m["executable"])
'; }
cargo test --no-run --features gpu-tests --test it --message-format=json 2>/dev/null | pick | while IFS=$'\t' read -r n e; do cp "$e" .gpu/tests/$n; done
strip .gpu/tests/it
gzip -c .gpu/tests/it > .gpu-pack/it.gz && rm .gpu/tests/it
bash scripts/device/bundle-bench.sh --example cpu_engine_bench
ls -la .gpu/tests .gpu/examples .gpu-pack
