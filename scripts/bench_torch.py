#!/usr/bin/env python3
"""PyTorch baseline for bench/examples/gpu_pointwise_bench.rs: the same cases, timed the same way.

Every case runs on 16384 x 16384 tensors (2^28 elements) of random non-zero data: warm-up,
then the median of --repeats CUDA-event timings of one op. GB/s counts the bytes the op must
read plus write (a broadcast row once); "of copy" divides by the bandwidth of a measured
device-to-device copy (torch's `copy_`) of the same f32 size. The small-op case times the host
side of 1024-element adds: N back-to-back calls, microseconds per call.

    python3 scripts/bench_torch.py [--json torch.json] [--compare ours.json]

    python3 scripts/bench_torch.py --permute [--json torch_perm.json] [--compare perm.json]

--permute runs the permute cases of `gpu_pointwise_bench --permute` instead (the same
shapes and the same seeded permutations, identity left out): torch.exp(x.permute(p), out=o)
and torch.add(x.permute(p), y, out=o) into a contiguous o, f32 for ranks 3 to 6, f16 and u8
(add only) for rank 4; with --compare, ours/torch bandwidth per case, its min and median,
the worst cases, and each side's fraction of its own measured copy bandwidth.

With --compare, also prints ours/torch per case (time ratio: below 1 means ours is faster;
and bandwidth ratio: above 1 means ours is faster), from the JSON the Rust example wrote.
"""

import argparse
import itertools
import json
import statistics
import time

import torch

from bench_timing import time_ms  # scripts/bench_timing.py, beside this file

N = 16384


def rand(shape, dtype):
    # Uniform in [0.5, 1.5): non-zero, and safe for exp.
    return (torch.rand(shape, device="cuda", dtype=torch.float32) + 0.5).to(dtype)


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


PERMUTE_SHAPES = [
    (256, 512, 512),
    (32, 64, 128, 256),
    (16, 16, 32, 64, 128),
    (8, 16, 16, 16, 32, 64),
]
MASK64 = (1 << 64) - 1


def random_perms(rank, count, seed):
    """The Rust example's random_perms: Fisher-Yates over a xorshift64, no identity, distinct."""
    state = seed
    out = []
    while len(out) < count:
        p = list(range(rank))
        for i in range(rank - 1, 0, -1):
            state ^= (state << 13) & MASK64
            state ^= state >> 7
            state ^= (state << 17) & MASK64
            j = state % (i + 1)
            p[i], p[j] = p[j], p[i]
        if p != list(range(rank)) and p not in out:
            out.append(p)
    return out


def permutes_of(shape):
    rank = len(shape)
    if rank <= 4:
        return [list(p) for p in itertools.permutations(range(rank)) if list(p) != list(range(rank))]
    return random_perms(rank, 10, 0x9E3779B97F4A7C15 ^ rank)


def run_permute(args):
    f32, f16, u8 = torch.float32, torch.float16, torch.uint8
    n = 1 << 26
    a = rand((n,), f32)
    o = torch.empty_like(a)
    copy_ms = time_ms(lambda: o.copy_(a), args.repeats)
    copy_gbps = 8 * n / (copy_ms * 1e-3) / 1e9
    del a, o
    rows = []
    names = {f32: "f32", f16: "f16", u8: "u8"}
    plan = [(s, f32, True) for s in PERMUTE_SHAPES] + [(PERMUTE_SHAPES[1], f16, True), (PERMUTE_SHAPES[1], u8, False)]
    for shape, dtype, with_exp in plan:
        size = torch.tensor([], dtype=dtype).element_size()
        if dtype == u8:
            x = torch.randint(0, 2, shape, device="cuda", dtype=u8)
            y = torch.randint(0, 2, (n,), device="cuda", dtype=u8)
        else:
            x = rand(shape, dtype)
            y = rand((n,), dtype)
        out = torch.empty((n,), device="cuda", dtype=dtype)
        for perm in permutes_of(shape):
            xv = x.permute(*perm)
            o = out.view(xv.shape)
            yv = y.view(xv.shape)
            key_shape = "x".join(map(str, shape))
            key_perm = "[" + ",".join(map(str, perm)) + "]"
            if with_exp:
                ms = time_ms(lambda: torch.exp(xv, out=o), args.repeats)
                rows.append(dict(op="exp", dtype=names[dtype], shape=key_shape, perm=key_perm, ms=ms,
                                 gbps=2 * n * size / (ms * 1e-3) / 1e9))
            ms = time_ms(lambda: torch.add(xv, yv, out=o), args.repeats)
            rows.append(dict(op="add", dtype=names[dtype], shape=key_shape, perm=key_perm, ms=ms,
                             gbps=3 * n * size / (ms * 1e-3) / 1e9))
        del x, y, out
        torch.cuda.empty_cache()
    for r in rows:
        r["of_copy"] = r["gbps"] / copy_gbps
    print(f"PyTorch {torch.__version__} permutes on {torch.cuda.get_device_name()}: "
          f"device-to-device copy {copy_gbps:.0f} GB/s (2^26 f32)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__,
                           copy_gbps=copy_gbps, rows=rows), f, indent=1)
    if not args.compare:
        print(f"{'op':<4} {'dtype':<5} {'shape':<16} {'perm':<15} {'ms':>8} {'GB/s':>7} {'of copy':>7}")
        for r in rows:
            print(f"{r['op']:<4} {r['dtype']:<5} {r['shape']:<16} {r['perm']:<15} {r['ms']:>8.3f} "
                  f"{r['gbps']:>7.0f} {r['of_copy']:>7.2f}")
        return
    with open(args.compare) as f:
        theirs = json.load(f)
    ours = {(r["op"], r["dtype"], r["shape"], r["perm"]): r for r in theirs["rows"]}
    print(f"ours: copy {theirs['copy_gbps']:.0f} GB/s on {theirs['device']}")
    print(f"{'op':<4} {'dtype':<5} {'shape':<16} {'perm':<15} {'ours form':<28} {'ours GB/s':>9} "
          f"{'of copy':>7} {'torch GB/s':>10} {'of copy':>7} {'ratio':>6}")
    ratios = []
    for r in rows:
        k = (r["op"], r["dtype"], r["shape"], r["perm"])
        o = ours.get(k)
        if o is None:
            print(f"{' '.join(k)}: missing from {args.compare}")
            continue
        ratio = o["gbps"] / r["gbps"]
        ratios.append((ratio, k, o["of_copy"]))
        print(f"{r['op']:<4} {r['dtype']:<5} {r['shape']:<16} {r['perm']:<15} {o['form']:<28} "
              f"{o['gbps']:>9.0f} {o['of_copy']:>7.2f} {r['gbps']:>10.0f} {r['of_copy']:>7.2f} {ratio:>6.2f}")
    if ratios:
        rs = sorted(x[0] for x in ratios)
        print(f"\n{len(rs)} cases: ours/torch min {rs[0]:.2f}, median {statistics.median(rs):.2f}, "
              f"max {rs[-1]:.2f}; cases below 1.0x: {sum(1 for x in rs if x < 1.0)}")
        oc = sorted(x[2] for x in ratios)
        print(f"ours of copy: min {oc[0]:.2f}, median {statistics.median(oc):.2f}; "
              f"cases below 0.60: {sum(1 for x in oc if x < 0.6)}")
        print("worst ratios:")
        for ratio, k, of_copy in sorted(ratios)[:6]:
            print(f"  {' '.join(k)}: {ratio:.2f}x torch, {of_copy:.2f} of copy")
        print("lowest of copy:")
        for ratio, k, of_copy in sorted(ratios, key=lambda x: x[2])[:6]:
            print(f"  {' '.join(k)}: {of_copy:.2f} of copy, {ratio:.2f}x torch")


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
    p.add_argument("--compare", help="JSON written by bench/examples/gpu_pointwise_bench.rs")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--small-calls", type=int, default=20000)
    p.add_argument("--permute", action="store_true", help="the permute cases instead")
    args = p.parse_args()
    if args.permute:
        run_permute(args)
        return

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
