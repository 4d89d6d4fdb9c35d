#!/usr/bin/env python3
"""PyTorch CPU baseline for bench/examples/cpu_engine_bench.rs (issue 29): the same cases, timed the
same way, in GB/s (bytes read + written), at several thread counts (torch.set_num_threads).

Cases on 2^log2 float32 elements (a square matrix; 2^24 by default), data uniform in [-2, 2):
add, mul (contiguous), add_transposed (a.T + b), add_broadcast_row (a + row), exp, tanh,
gelu (erf form), gelu(a*b+c) as one torch.compile'd function ("fused", skipped with
--no-compile or when torch.compile fails) and as three eager ops ("eager"), a full sum and
sums along each axis. Each case: 3 warm-up calls, then the median of --repeats wall-clock
timings of one call, output allocation included (bench_timing.host_time_ms).

    python3 scripts/bench_torch_cpu.py [--threads 1,2,4,8,16] [--repeats 7] [--log2 24] [--json torch.json] [--compare ours.json]

With --compare, prints ours / torch per row from the JSON the Rust example wrote (above 1
means ours is faster); the issue's target is >= 1.0x on pointwise, fused and reductions.
"""

import argparse
import json

import torch
import torch.nn.functional as F

from bench_timing import host_time_ms


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", default="1,2,4,8,16")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--log2", type=int, default=24)
    p.add_argument("--json")
    p.add_argument("--compare")
    p.add_argument("--no-compile", action="store_true")
    args = p.parse_args()
    side = 1 << (args.log2 // 2)
    rows = (1 << args.log2) // side
    n = rows * side
    g = torch.Generator().manual_seed(0)

    def rand(*shape):
        return torch.rand(shape, generator=g) * 4 - 2

    a, b, c = rand(rows, side), rand(rows, side), rand(rows, side)
    sq, sq2, row = rand(side, side), rand(side, side), rand(side)

    def chain(a, b, c):
        return F.gelu(a * b + c)

    compiled = None
    if not args.no_compile:
        try:
            compiled = torch.compile(chain)
            compiled(a, b, c)
        except Exception as e:  # no compiler on the host: report and go on eagerly
            print("torch.compile unavailable:", type(e).__name__, e)
            compiled = None

    cases = [
        ("add", 12, lambda: a + b),
        ("mul", 12, lambda: a * b),
        ("add_transposed", 12, lambda: sq.T + sq2),
        ("add_broadcast_row", 8, lambda: a + row),
        ("exp", 8, lambda: torch.exp(a)),
        ("tanh", 8, lambda: torch.tanh(a)),
        ("gelu", 8, lambda: F.gelu(a)),
    ]
    if compiled is not None:
        cases.append(("gelu(a*b+c) fused", 16, lambda: compiled(a, b, c)))
    cases += [
        ("gelu(a*b+c) eager", 16, lambda: chain(a, b, c)),
        ("sum", 4, lambda: a.sum()),
        ("sum_axis0", 4, lambda: a.sum(0)),
        ("sum_axis1", 4, lambda: a.sum(1)),
    ]
    ours = None
    if args.compare:
        with open(args.compare) as f:
            ours = json.load(f)
    print(f"torch {torch.__version__} CPU, 2^{args.log2} float32, {torch.get_num_threads()} threads by default")
    if ours is None:
        print("| case | threads | GB/s |\n| --- | ---: | ---: |")
    else:
        print("| case | threads | torch GB/s | ours GB/s | ours / torch |\n| --- | ---: | ---: | ---: | ---: |")
    out = {}
    for threads in [int(t) for t in args.threads.split(",")]:
        torch.set_num_threads(threads)
        for name, nbytes, fn in cases:
            ms = host_time_ms(fn, args.repeats)
            gbs = nbytes * n / (ms * 1e-3) / 1e9
            key = f"{name} | {threads}"
            out[key] = gbs
            mine = None if ours is None else ours.get(key)
            if ours is None:
                print(f"| {name} | {threads} | {gbs:.1f} |", flush=True)
            elif mine is None:
                print(f"| {name} | {threads} | {gbs:.1f} | - | - |", flush=True)
            else:
                print(f"| {name} | {threads} | {gbs:.1f} | {mine:.1f} | {mine / gbs:.2f}x |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
