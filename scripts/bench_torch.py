#!/usr/bin/env python3
"""PyTorch baseline for examples/gpu_pointwise_bench.rs: the same cases, timed the same way.

Every case runs on 16384 x 16384 tensors (2^28 elements) of random non-zero data: warm-up,
then the median of --repeats CUDA-event timings of one op. GB/s counts the bytes the op must
read plus write (a broadcast row once); "of copy" divides by the bandwidth of a measured
device-to-device copy (torch's `copy_`) of the same f32 size. The small-op case times the host
side of 1024-element adds: N back-to-back calls, microseconds per call.

    python3 scripts/bench_torch.py [--json torch.json] [--compare ours.json]

With --compare, also prints ours/torch per case (time ratio: below 1 means ours is faster;
and bandwidth ratio: above 1 means ours is faster), from the JSON the Rust example wrote.
"""

import argparse
import json
import statistics
import time

import torch

N = 16384


def rand(shape, dtype):
    # Uniform in [0.5, 1.5): non-zero, and safe for exp.
    return (torch.rand(shape, device="cuda", dtype=torch.float32) + 0.5).to(dtype)


def time_ms(fn, repeats, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def cases():
    """(name, shape, layout, dtype, make -> fn, bytes)."""
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    n = N * N

    def binary(dtype, ta, tb, row=False):
        def make():
            a = rand((N, N), dtype)
            b = rand((1, N) if row else (N, N), dtype)
            out = torch.empty((N, N), device="cuda", dtype=dtype)
            x = a.t() if ta else a
            y = b.t() if tb else b
            return lambda: torch.add(x, y, out=out)

        return make

    def fill():
        out = torch.empty((N, N), device="cuda", dtype=f32)
        return lambda: out.fill_(1.25)

    def exp(step):
        def make():
            a = rand((N, N), f32)
            src = a[:, ::step]
            out = torch.empty(src.shape, device="cuda", dtype=f32)
            return lambda: torch.exp(src, out=out)

        return make

    def copy():
        a = rand((N, N), f32)
        out = torch.empty_like(a)
        return lambda: out.copy_(a)

    return [
        ("copy", "16384x16384", "contiguous", "f32", copy, 8 * n),
        ("fill", "16384x16384", "contiguous", "f32", fill, 4 * n),
        ("add", "16384x16384", "contiguous", "f32", binary(f32, False, False), 12 * n),
        ("add", "16384x16384", "contiguous", "f16", binary(f16, False, False), 6 * n),
        ("add", "16384x16384", "contiguous", "bf16", binary(bf16, False, False), 6 * n),
        ("exp", "16384x16384", "contiguous", "f32", exp(1), 8 * n),
        ("add a.T+b", "16384x16384", "a transposed", "f32", binary(f32, True, False), 12 * n),
        ("add a.T+b.T", "16384x16384", "both transposed", "f32", binary(f32, True, True), 12 * n),
        ("add row bcast", "16384x16384", "b is [1, 16384]", "f32", binary(f32, False, False, row=True), 8 * n + 4 * N),
        ("exp a[:, ::2]", "16384x8192", "step 2 columns", "f32", exp(2), 4 * n),
        ("add a.T+b", "16384x16384", "a transposed", "f16", binary(f16, True, False), 6 * n),
    ]


def small_op_us(calls):
    a = rand((1024,), torch.float32)
    b = rand((1024,), torch.float32)
    out = torch.empty_like(a)
    for _ in range(100):
        torch.add(a, b, out=out)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        torch.add(a, b, out=out)
    host = time.perf_counter() - start
    torch.cuda.synchronize()
    return host / calls * 1e6


def key(row):
    return f"{row['case']} | {row['dtype']} | {row['layout']}"


def print_table(rows, title):
    print(title)
    print(f"{'case':<16} {'shape':<12} {'layout':<18} {'dtype':<5} {'ms':>9} {'GB/s':>8} {'of copy':>8}")
    for r in rows:
        if "us_per_call" in r:
            print(f"{r['case']:<16} {r['shape']:<12} {r['layout']:<18} {r['dtype']:<5} "
                  f"{r['us_per_call']:>7.2f}us/call (host)")
        else:
            print(f"{r['case']:<16} {r['shape']:<12} {r['layout']:<18} {r['dtype']:<5} "
                  f"{r['ms']:>9.3f} {r['gbps']:>8.0f} {r['of_copy']:>8.2f}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", help="write the results here")
    p.add_argument("--compare", help="JSON written by examples/gpu_pointwise_bench.rs")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--small-calls", type=int, default=20000)
    args = p.parse_args()

    rows = []
    copy_gbps = None
    for name, shape, layout, dtype, make, nbytes in cases():
        fn = make()
        ms = time_ms(fn, args.repeats)
        gbps = nbytes / (ms * 1e-3) / 1e9
        if name == "copy":
            copy_gbps = gbps
        rows.append(dict(case=name, shape=shape, layout=layout, dtype=dtype, ms=ms,
                         gbps=gbps, of_copy=gbps / copy_gbps))
        del fn
        torch.cuda.empty_cache()
    rows.append(dict(case="small add", shape="1024", layout="contiguous", dtype="f32",
                     us_per_call=small_op_us(args.small_calls)))
    print_table(rows, f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows), f, indent=1)

    if args.compare:
        with open(args.compare) as f:
            ours = {key(r): r for r in json.load(f)["rows"]}
        print("\nours / torch (time: < 1 is faster; GB/s: > 1 is faster)")
        print(f"{'case':<44} {'time':>7} {'GB/s':>7}")
        for r in rows:
            o = ours.get(key(r))
            if o is None:
                print(f"{key(r):<44} {'missing':>7}")
            elif "us_per_call" in r:
                print(f"{key(r):<44} {o['us_per_call'] / r['us_per_call']:>7.2f}     (host us/call)")
            else:
                print(f"{key(r):<44} {o['ms'] / r['ms']:>7.2f} {o['gbps'] / r['gbps']:>7.2f}")


if __name__ == "__main__":
    main()
