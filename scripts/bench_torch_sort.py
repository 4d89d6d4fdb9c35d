#!/usr/bin/env python3
"""PyTorch baseline for bench/examples/gpu_sort_bench.rs (issue 28): the same scan and sort cases,
timed the same way, in ms and GB/s, beside a device copy of 2^26 f32 measured in the same run.

Cases (f32): cumsum(-1) and sort(-1) of one row of 2^26 elements and of 2^16 rows of 1024;
topk(k, -1) for k = 1, 8, 64 on 2^14 rows of 32768. Each: random data (uniform in [-1, 1)), 3
warm-up calls, then the median of --repeats CUDA-event timings of one call (output allocation
included). GB/s counts bytes read and written once: cumsum 4 + 4 per element, sort 4 in + 4
values + 8 indices, topk 4 in + 12 per kept element. Eager, and torch.compile where it applies
(cumsum).

    python3 scripts/bench_torch_sort.py [--repeats 10]
"""

import argparse

import torch

from bench_timing import time_ms  # scripts/bench_timing.py, beside this file


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=10)
    args = p.parse_args()
    r = args.repeats
    print(f"{torch.cuda.get_device_name()} (PyTorch {torch.__version__})")
    print("| case | eager ms | eager GB/s | compiled ms | compiled GB/s |")
    print("| --- | ---: | ---: | ---: | ---: |")

    def row(name, ms, nbytes, cms=None):
        c = f"{cms:.3f} | {nbytes / cms / 1e6:.0f}" if cms else "- | -"
        print(f"| {name} | {ms:.3f} | {nbytes / ms / 1e6:.0f} | {c} |")

    big = 1 << 26
    g = torch.Generator(device="cuda")
    g.manual_seed(1)
    x = torch.rand(big, device="cuda", generator=g) * 2 - 1
    y = torch.empty_like(x)
    row("copy 2^26 f32", time_ms(lambda: y.copy_(x), r), big * 8)
    ccum = torch.compile(lambda t: torch.cumsum(t, -1))
    for name, shape in [("2^26", (big,)), ("2^16 x 1024", (1 << 16, 1024))]:
        xs = x.view(shape)
        row(
            f"cumsum {name} f32",
            time_ms(lambda: torch.cumsum(xs, -1), r),
            big * 8,
            time_ms(lambda: ccum(xs), r),
        )
        row(f"sort {name} f32", time_ms(lambda: torch.sort(xs, -1), r), big * 16)
    rows, n = 1 << 14, 32768
    t = torch.rand(rows, n, device="cuda", generator=g) * 2 - 1
    for k in (1, 8, 64):
        row(
            f"topk k={k} 2^14 x 32768 f32",
            time_ms(lambda: torch.topk(t, k, -1), r),
            rows * n * 4 + rows * k * 12,
        )


if __name__ == "__main__":
    main()
