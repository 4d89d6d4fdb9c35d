"""PyTorch eager and torch.compile on the fused cases of bench/examples/gpu_fused_bench.rs.

GB/s counts the bytes one fused kernel must move (inputs read once, outputs written once),
as the Rust benchmark does; "first call" is torch.compile's first call (compilation).
Usage: python scripts/bench_torch_fused.py [--log2 26] [--repeats 20] [--only a,b]
       [--compare ours.json]

Issue 26's cases (2^26 elements each, whatever --log2) are the Rust example's, same shapes and
math: `sigmoid(x' * y + y) * x'` with x' a permuted view that keeps its innermost dim (ranks 3
to 6) and y row-major; `exp(a) * tanh(b) + sigmoid(a)` ("cast3") and
`log(exp(a * b) + 1) * sigmoid(a - b) + tanh(a)` ("cast4") in f32 between f16/bf16 casts.
With --compare (the JSON of `gpu_fused_bench --json`), also prints ours (fused) against
torch.compile and torch eager per case, the min and median of ours/torch.compile, and the
cases below 1.0x. --only keeps the cases whose name contains one of the words.
"""
import argparse
import json
import signal
import statistics
import time

import torch


def time_ms(fn, repeats):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--log2", type=int, default=26)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--only", help="comma-separated words; keep the cases whose name contains one")
    p.add_argument("--compare", help="JSON written by gpu_fused_bench --json")
    a = p.parse_args()
    words = a.only.split(",") if a.only else None
    wanted = lambda name: words is None or any(w in name for w in words)  # noqa: E731
    n = 1 << a.log2
    side = 1 << (a.log2 // 2)
    dev = "cuda"
    r = lambda *s, dt=torch.float32: torch.rand(*s, device=dev, dtype=dt) * 2 - 1

    def gelu_case(x, y, z):
        return torch.nn.functional.gelu(x * y + z)

    def chain(x, y, z):
        return torch.sigmoid(torch.tanh(torch.exp(-torch.abs(x * y + z)) * 0.5 + x)) * z - y

    def ln_tail(x, mu, rs, w, b):
        return (x - mu) * rs * w + b

    def relu_t(x, y, z):
        return torch.relu(x.t() * y + z)

    def adam(p_, g, m, v, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
        m2 = m * b1 + g * (1 - b1)
        v2 = v * b2 + g * g * (1 - b2)
        return p_ - m2 * lr / (torch.sqrt(v2) + eps), m2, v2

    cases = [
        ("gelu(a*b+c) f32", gelu_case, lambda: (r(n), r(n), r(n)), 16 * n),
        ("8-op chain f16", chain, lambda: (r(n, dt=torch.half), r(n, dt=torch.half), r(n, dt=torch.half)), 8 * n),
        ("layernorm tail (bcast) f32", ln_tail,
         lambda: (r(side, side), r(side, 1), r(side, 1), r(side), r(side)), 8 * side * side),
        ("relu(a.T*b+c) f32", relu_t, lambda: (r(side, side), r(side, side), r(side, side)), 16 * side * side),
        ("adam p,m,v f32", adam, lambda: (r(n), r(n), r(n), r(n).abs()), 28 * n),
    ]
    cases += issue26_cases(r)
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}")
    print("| case | torch eager GB/s | torch.compile GB/s | compile first call s |")
    print("| --- | --- | --- | --- |")
    results = {}
    # A time limit (`timeout` sends SIGTERM) ends the loop; the comparison still prints.
    signal.signal(signal.SIGTERM, stop)
    try:
        run_cases(cases, wanted, a.repeats, results)
    except Stopped:
        print(f"stopped by SIGTERM after {len(results)} cases")
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if a.compare:
        compare(a.compare, results)
    # Fused Adam (PyTorch's multi-tensor fused kernel).
    params = [torch.nn.Parameter(r(n))]
    params[0].grad = r(n)
    opt = torch.optim.Adam(params, lr=1e-3, fused=True)
    ms = time_ms(opt.step, a.repeats)
    print(f"| torch.optim.Adam(fused=True) | {28 * n / ms / 1e6:.0f} | | |")
    x = r(n)
    y = torch.empty_like(x)
    ms = time_ms(lambda: y.copy_(x), a.repeats)
    print(f"| copy f32 (ceiling) | {8 * n / ms / 1e6:.0f} | | |")


class Stopped(BaseException):
    """SIGTERM (a time limit): not an `Exception`, so no per-case handler swallows it."""


def stop(signum, frame):
    raise Stopped


def run_cases(cases, wanted, repeats, results):
    for name, fn, make, nbytes in cases:
        if not wanted(name):
            continue
        args = make()
        eager = time_ms(lambda: fn(*args), repeats)
        # Several cases share a function: start each from a clean cache, static shapes, so
        # that none reuses another's guards or compiles with dynamic shapes.
        torch._dynamo.reset()
        comp = torch.compile(fn, dynamic=False)
        torch.cuda.synchronize()
        t = time.perf_counter()
        comp(*args)
        torch.cuda.synchronize()
        first = time.perf_counter() - t
        compiled = time_ms(lambda: comp(*args), repeats)
        print(f"| {name} | {nbytes / eager / 1e6:.0f} | {nbytes / compiled / 1e6:.0f} | {first:.1f} |")
        results[name] = dict(bytes=nbytes, eager_ms=eager, compiled_ms=compiled, first_s=first)
        del args, comp
        torch.cuda.empty_cache()


def issue26_cases(r):
    """The Rust example's issue-26 cases: (name, fn, make, bytes), same names."""
    n = 1 << 26
    dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    permuted = [
        ("perm3", (1024, 512, 128), (1, 0, 2), ["f32"]),
        ("attn-split", (8, 2048, 64, 64), (0, 2, 1, 3), ["f32", "f16"]),
        ("batched-mid-T", (16, 256, 256, 64), (0, 2, 1, 3), ["f32"]),
        ("perm5", (16, 32, 32, 64, 64), (2, 0, 3, 1, 4), ["f32", "f16"]),
        ("perm6", (8, 16, 16, 16, 32, 64), (0, 3, 1, 4, 2, 5), ["f32"]),
    ]

    def perm_chain(xp, y):
        return torch.sigmoid(xp * y + y) * xp

    def name_of(label, shape, perm, dt):
        return f"{label} {'x'.join(map(str, shape))} ({','.join(map(str, perm))}) {dt}"

    def make_perm(shape, perm, dt):
        def make():
            xp = r(*shape, dt=dtypes[dt]).permute(*perm)
            return xp, r(*xp.shape, dt=dtypes[dt])
        return make

    cases = []
    for label, shape, perm, dts in permuted:
        for dt in dts:
            size = torch.tensor([], dtype=dtypes[dt]).element_size()
            cases.append((name_of(label, shape, perm, dt), perm_chain, make_perm(shape, perm, dt), 3 * n * size))
    for label, shape, perm, dt in [("flat", (n,), (0,), "f16"), ("flat", (n,), (0,), "bf16"),
                                   ("attn-split", (8, 2048, 64, 64), (0, 2, 1, 3), "f16")]:
        leaf = f"{'x'.join(map(str, shape))} ({','.join(map(str, perm))})"
        for chain, fn in (("cast3", cast_chain3), ("cast4", cast_chain4)):
            cases.append((f"{label} {chain} {leaf} {dt}", fn, make_perm(shape, perm, dt), 3 * n * 2))
    return cases


def cast_chain3(a, b):
    x, y = a.float(), b.float()
    return (torch.exp(x) * torch.tanh(y) + torch.sigmoid(x)).to(a.dtype)


def cast_chain4(a, b):
    x, y = a.float(), b.float()
    return (torch.log(torch.exp(x * y) + 1) * torch.sigmoid(x - y) + torch.tanh(x)).to(a.dtype)


def compare(path, results):
    with open(path) as f:
        ours = json.load(f)
    print(f"\nours (fused) on {ours['device']} against torch.compile and torch eager, same call")
    print("| case | ours GB/s | torch.compile GB/s | ours/compile | torch eager GB/s | ours/eager | ours eager GB/s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    ratios = []
    for o in ours["rows"]:
        t = results.get(o["case"])
        fused = o["bytes"] / o["fused_ms"] / 1e6
        if t is None:
            print(f"| {o['case']} | {fused:.0f} | not run | | | | |")
            continue
        comp = t["bytes"] / t["compiled_ms"] / 1e6
        eager = t["bytes"] / t["eager_ms"] / 1e6
        ratio = t["compiled_ms"] / o["fused_ms"]
        ratios.append((ratio, o["case"]))
        flag = " **<1.0x**" if ratio < 1.0 else ""
        print(f"| {o['case']} | {fused:.0f} | {comp:.0f} | {ratio:.2f}x{flag} | {eager:.0f} | "
              f"{t['eager_ms'] / o['fused_ms']:.2f}x | {o['bytes'] / o['eager_ms'] / 1e6:.0f} |")
    if ratios:
        rs = sorted(x[0] for x in ratios)
        below = sorted(x for x in ratios if x[0] < 1.0)
        print(f"\n{len(rs)} cases: ours/torch.compile min {rs[0]:.2f}, median {statistics.median(rs):.2f}, "
              f"max {rs[-1]:.2f}; below 1.0x: {len(below)}" + "".join(f"\n  {c}: {x:.2f}x" for x, c in below))


if __name__ == "__main__":
    main()
