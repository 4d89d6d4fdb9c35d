"""PyTorch's CPU torch.matmul on the cases of bench/examples/cpu_matmul_bench.rs (issue 27): f32 and
f64, every core (torch's default intra-op threads) and one thread, GFLOP/s, the median of
--repeats wall-clock timings after two warm-up calls. Run it in the same call as the example.

    python3 scripts/bench_torch_matmul_cpu.py [--repeats 7]
"""
import argparse
import time

import torch

CASES = [
    ("square 256", 256, 256, 256),
    ("square 512", 512, 512, 512),
    ("square 1024", 1024, 1024, 1024),
    ("square 2048", 2048, 2048, 2048),
    ("tall 4096x256x256", 4096, 256, 256),
]


def gflops(m, k, n, dtype, repeats):
    g = torch.Generator().manual_seed(1)
    a = torch.rand(m, k, generator=g, dtype=dtype)
    b = torch.rand(k, n, generator=g, dtype=dtype)
    for _ in range(2):
        torch.matmul(a, b)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        torch.matmul(a, b)
        times.append(time.perf_counter() - t)
    times.sort()
    return 2.0 * m * n * k / times[len(times) // 2] / 1e9


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args()
    threads = torch.get_num_threads()
    print(f"| case | dtype | torch, {threads} threads (GFLOP/s) | torch, 1 thread (GFLOP/s) |")
    print("| --- | --- | ---: | ---: |")
    for name, m, k, n in CASES:
        for dname, dtype in (("f32", torch.float32), ("f64", torch.float64)):
            torch.set_num_threads(threads)
            all_cores = gflops(m, k, n, dtype, args.repeats)
            torch.set_num_threads(1)
            one = gflops(m, k, n, dtype, args.repeats)
            torch.set_num_threads(threads)
            print(f"| {name} | {dname} | {all_cores:.1f} | {one:.1f} |", flush=True)


if __name__ == "__main__":
    main()
