"""PyTorch eager and torch.compile on the fused cases of examples/gpu_fused_bench.rs.

GB/s counts the bytes one fused kernel must move (inputs read once, outputs written once),
as the Rust benchmark does; "first call" is torch.compile's first call (compilation).
Usage: python scripts/bench_torch_fused.py [--log2 26] [--repeats 20]
"""
import argparse
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
    a = p.parse_args()
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
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}")
    print("| case | torch eager GB/s | torch.compile GB/s | compile first call s |")
    print("| --- | --- | --- | --- |")
    for name, fn, make, nbytes in cases:
        args = make()
        eager = time_ms(lambda: fn(*args), a.repeats)
        comp = torch.compile(fn)
        torch.cuda.synchronize()
        t = time.perf_counter()
        comp(*args)
        torch.cuda.synchronize()
        first = time.perf_counter() - t
        compiled = time_ms(lambda: comp(*args), a.repeats)
        print(f"| {name} | {nbytes / eager / 1e6:.0f} | {nbytes / compiled / 1e6:.0f} | {first:.1f} |")
        del args
        torch.cuda.empty_cache()
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


if __name__ == "__main__":
    main()
