#!/usr/bin/env bash
# Issue 25's hot-path target, like against like: the host time of a cached eager 1024-element
# add (`bench/examples/gpu_launch_bench`) against the driver floor (`scripts/launch_floor.cu`,
# `cuLaunchKernelEx` with the PDL attribute on a kernel shaped like ours, compiled by nvcc and
# by NVRTC) on the same kind of stream, in rounds that alternate the two processes, pinned
# to one host core. Prints one line per round and the medians.
#   bash scripts/device/hot_path.sh [rounds]
set -u
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
ROUNDS=${1:-8}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc -O2 -arch=sm_90 -o /tmp/launch_floor scripts/launch_floor.cu -lcuda -lnvrtc || exit 1
for r in $(seq "$ROUNDS"); do
  taskset -c 3 timeout 60 /tmp/launch_floor >"$O/floor_$r.txt" 2>&1
  taskset -c 3 timeout 120 "$E/gpu_launch_bench" --calls 4000 >"$O/ours_$r.txt" 2>&1
done
python3 - "$O" "$ROUNDS" <<'PY'
import re, sys, statistics as st
o, n = sys.argv[1], int(sys.argv[2])
def val(path, pat):
    for line in open(path):
        if pat in line:
            return float(line.rstrip().rstrip('|').split('|')[-1])
    return None
rows = {"legacy": [], "created": []}
print("| round | floor legacy | ours legacy | ratio | floor non-blocking | ours non-blocking | ratio |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for r in range(1, n + 1):
    f, u = f"{o}/floor_{r}.txt", f"{o}/ours_{r}.txt"
    fl = val(f, "NVRTC (cuModuleLoadData) | legacy stream")
    fc = val(f, "NVRTC (cuModuleLoadData) | non-blocking stream")
    ol = val(u, "add_into, contiguous (output preallocated)")
    oc = val(u, "add_into on a non-blocking stream (Gpu::on)")
    rows["legacy"].append(ol / fl); rows["created"].append(oc / fc)
    print(f"| {r} | {fl:.2f} | {ol:.2f} | {ol/fl:.2f} | {fc:.2f} | {oc:.2f} | {oc/fc:.2f} |")
for k, v in rows.items():
    print(f"{k}: median ratio {st.median(v):.3f}, min {min(v):.3f}, max {max(v):.3f}")
PY
