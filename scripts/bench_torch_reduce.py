#!/usr/bin/env python3
"""PyTorch baseline for bench/examples/gpu_reduce_bench.rs: the same reduction cases, timed the same way.

Cases: full reductions of 2^26 elements (sum, max, argmax, mean), last-axis reductions of
[8192, 8192] over dim 1, middle-axis reductions of [256, 1024, 256] over dim 1, first-axis
reductions of [8192, 8192] over dim 0, and permuted inputs (x.t() over dim 1, x.permute(2, 0, 1)
over dim 2, x.permute(0, 2, 1) over dim 1); f32, and f16 for the sum cases and the full max.
`max` over a dim is torch.amax (values only), as ours is.

Each case: random non-zero data (uniform in [0.5, 1.5)), 3 warm-up calls, then the median of
--repeats CUDA-event timings of one call (output allocation included). GB/s counts the bytes
read plus written.

    python3 scripts/bench_torch_reduce.py [--json torch.json] [--compare ours.json]

With --compare, prints ours / torch per case from the JSON the Rust example wrote (time: below
1 means ours is faster; GB/s: above 1 means ours is faster) and the targets of issue 16
(>= 1.0x on the f32 full and last-axis sum and max, >= 0.9x on the middle axis).
"""

import argparse
import json

import torch

from bench_timing import time_ms  # scripts/bench_timing.py, beside this file


def rand(shape, dtype, seed):
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    # Uniform in [0.5, 1.5): non-zero.
    return (torch.rand(shape, device="cuda", dtype=torch.float32, generator=g) + 0.5).to(dtype)


FULL = [1 << 26]
SQUARE = [8192, 8192]
CUBE = [256, 1024, 256]

# (label, op, shape, permutation or None, dim or None, also in f16): as cases() in
# bench/examples/gpu_reduce_bench.rs.
CASES = [
    ("sum all", "sum", FULL, None, None, True),
    ("max all", "max", FULL, None, None, True),
    ("argmax all", "argmax", FULL, None, None, False),
    ("mean all", "mean", FULL, None, None, False),
    ("sum last axis", "sum", SQUARE, None, 1, True),
    ("max last axis", "max", SQUARE, None, 1, False),
    ("argmax last axis", "argmax", SQUARE, None, 1, False),
    ("sum middle axis", "sum", CUBE, None, 1, True),
    ("max middle axis", "max", CUBE, None, 1, False),
    ("argmax middle axis", "argmax", CUBE, None, 1, False),
    ("sum first axis", "sum", SQUARE, None, 0, True),
    ("argmax first axis", "argmax", SQUARE, None, 0, False),
    ("sum x.t() dim 1", "sum", SQUARE, [1, 0], 1, True),
    ("sum permuted 201 dim 2", "sum", CUBE, [2, 0, 1], 2, False),
    ("max permuted 021 dim 1", "max", CUBE, [0, 2, 1], 1, False),
]

DTYPES = {"f32": torch.float32, "f16": torch.float16}


def op_fn(op, x, dim):
    if dim is None:
        return {"sum": x.sum, "max": x.max, "argmax": x.argmax, "mean": x.mean}[op]
    return {
        "sum": lambda: x.sum(dim=dim),
        "max": lambda: x.amax(dim=dim),
        "argmax": lambda: x.argmax(dim=dim),
        "mean": lambda: x.mean(dim=dim),
    }[op]


def key(row):
    return f"{row['case']} | {row['dtype']}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", help="write the results here")
    p.add_argument("--compare", help="JSON written by bench/examples/gpu_reduce_bench.rs")
    p.add_argument("--repeats", type=int, default=20)
    args = p.parse_args()

    rows = []
    for i, (label, op, shape, perm, dim, half) in enumerate(CASES):
        for dname in ["f32", "f16"] if half else ["f32"]:
            dtype = DTYPES[dname]
            x = rand(shape, dtype, i + 1)
            v = x.permute(*perm) if perm else x
            fn = op_fn(op, v, dim)
            ms = time_ms(fn, args.repeats)
            out = fn()
            nbytes = x.numel() * x.element_size() + out.numel() * out.element_size()
            rows.append(dict(case=label, shape=str(shape).replace(" ", ""),
                             dims="all" if dim is None else str(dim), dtype=dname, ms=ms,
                             gbps=nbytes / (ms * 1e-3) / 1e9))
            del x, v, fn, out
            torch.cuda.empty_cache()

    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}")
    print(f"{'case':<24} {'shape':<14} {'dims':<4} {'dtype':<5} {'ms':>9} {'GB/s':>8}")
    for r in rows:
        print(f"{r['case']:<24} {r['shape']:<14} {r['dims']:<4} {r['dtype']:<5} {r['ms']:>9.4f} {r['gbps']:>8.0f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows), f, indent=1)

    if args.compare:
        with open(args.compare) as f:
            ours = {key(r): r for r in json.load(f)["rows"]}
        print("\nours / torch (time: < 1 is faster; speed = torch time / ours: > 1 is faster)")
        print(f"{'case':<32} {'ours ms':>9} {'torch ms':>9} {'speed':>7}  plan")
        speed = {}
        for r in rows:
            o = ours.get(key(r))
            if o is None:
                print(f"{key(r):<32} {'missing':>9}")
                continue
            speed[key(r)] = r["ms"] / o["ms"]
            print(f"{key(r):<32} {o['ms']:>9.4f} {r['ms']:>9.4f} {speed[key(r)]:>7.2f}  {o.get('plan', '')}")
        print("\ntargets (issue 16):")
        for k, target in [("sum all | f32", 1.0), ("max all | f32", 1.0),
                          ("sum last axis | f32", 1.0), ("max last axis | f32", 1.0),
                          ("sum middle axis | f32", 0.9)]:
            s = speed.get(k)
            verdict = "missing" if s is None else ("met" if s >= target else "NOT met")
            shown = "-" if s is None else f"{s:.2f}x"
            print(f"  {k:<28} >= {target:.1f}x: {shown:>6} {verdict}")


if __name__ == "__main__":
    main()
