#!/usr/bin/env bash
# Issue 25's before/after figures in one device call: the driver's launch floor, then each
# benchmark of the tree before the change (.gpu-base/, built from the parent commit with
# `cargo build --release --example ...`) and after it (.gpu/examples/), then PyTorch, all on
# the same card in the same call, so only ratios within this call are compared.
#   bash scripts/device/compare.sh [launch graph fused reduce pointwise]   (default: all)
set -u
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
B=.gpu-base
ARGS="$*"; [ -z "$ARGS" ] && ARGS="launch graph fused reduce pointwise"
want() { [[ " $ARGS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if want launch; then
  stage launch floor
  nvcc -O2 -arch=sm_90 -o /tmp/launch_floor scripts/launch_floor.cu -lcuda -lnvrtc && timeout 60 /tmp/launch_floor
  for round in 1 2; do
    stage "launch before (round $round)"; timeout 120 $B/gpu_launch_bench 2>&1 | tail -30
    stage "launch after (round $round)"; timeout 120 $E/gpu_launch_bench 2>&1 | tail -30
  done
  stage launch floor again; timeout 60 /tmp/launch_floor
  stage PyTorch launch; timeout 120 python3 scripts/bench_torch_launch.py 2>&1 | tail -12
fi
if want graph; then
  stage graph before; timeout 120 $B/gpu_graph_bench 2>&1 | tail -14
  stage graph after; timeout 120 $E/gpu_graph_bench 2>&1 | tail -14
  stage torch graph; timeout 120 python3 scripts/bench_torch_graph.py 2>&1 | tail -8
fi
if want fused; then
  stage fused before; timeout 150 $B/gpu_fused_bench 2>&1 | tail -16
  stage fused after; timeout 150 $E/gpu_fused_bench 2>&1 | tail -16
  stage torch eager and torch.compile; timeout 240 python3 scripts/bench_torch_fused.py 2>&1 | tail -16
fi
if want reduce; then
  stage reduce before; timeout 150 $B/gpu_reduce_bench 2>&1 | tail -30
  stage reduce after; timeout 150 $E/gpu_reduce_bench 2>&1 | tail -30
  stage torch reduce; timeout 200 python3 scripts/bench_torch_reduce.py 2>&1 | tail -30
fi
if want pointwise; then
  stage pointwise before; timeout 200 $B/gpu_pointwise_bench --json $O/pw_before.json >$O/pw_before.txt 2>&1
  stage pointwise after; timeout 200 $E/gpu_pointwise_bench --json $O/pw_after.json >$O/pw_after.txt 2>&1
  stage pointwise vs torch
  timeout 240 python3 scripts/bench_torch.py --compare $O/pw_after.json >$O/cmp_after.txt 2>&1
  grep -A30 -E "^[0-9]+ cases:" $O/cmp_after.txt | head -40
  python3 - "$O/pw_before.json" "$O/pw_after.json" <<'PY' 2>&1 | tail -20
import json, sys
def load(p):
    try: return json.load(open(p))["rows"]
    except Exception as e: print("cannot read", p, e); return None
a, b = load(sys.argv[1]), load(sys.argv[2])
if a is None or b is None: sys.exit(0)
key = lambda r: (r["op"], r["dtype"], r["shape"], r["perm"])
before = {key(r): r for r in a}
ratios = sorted((r["of_copy"] / before[key(r)]["of_copy"], key(r)) for r in b if key(r) in before and before[key(r)]["of_copy"])
if ratios:
    print(f"after/before (fraction of copy speed) over {len(ratios)} cases: min {ratios[0][0]:.3f} {ratios[0][1]}, median {ratios[len(ratios)//2][0]:.3f}, max {ratios[-1][0]:.3f} {ratios[-1][1]}")
else:
    print("no comparable cases")
PY
fi
