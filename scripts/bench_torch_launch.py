"""Host time of small PyTorch ops, the cases of bench/examples/gpu_launch_bench.rs.

1024-element f32 tensors on the GPU; median host time per call over batches of 200 calls,
each batch started on an idle stream (as the Rust benchmark). Run in the same device call as
`gpu_launch_bench` for side-by-side figures.
"""
import statistics
import sys
import time

import torch


def host_us(fn, calls=10_000, batch=200):
    for _ in range(batch):
        fn()
    per_call = []
    for _ in range(max(5, -(-calls // batch))):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(batch):
            fn()
        per_call.append((time.perf_counter() - t) / batch * 1e6)
    torch.cuda.synchronize()
    return statistics.median(per_call)


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    dev = torch.device("cuda")
    g = torch.Generator(device="cpu").manual_seed(0)
    a, b = (torch.rand(1024, generator=g).to(dev) for _ in range(2))
    a2, b2 = (torch.rand(32, 32, generator=g).to(dev) for _ in range(2))
    out = torch.empty(1024, device=dev)
    out2 = torch.empty(32, 32, device=dev)
    rows = [
        ("add_into, contiguous (output preallocated)", lambda: torch.add(a, b, out=out)),
        ("add, contiguous (out of place)", lambda: a + b),
        ("add_into, permuted a.t() + b.t() (32x32)", lambda: torch.add(a2.t(), b2.t(), out=out2)),
        ("add, permuted a.t() + b.t() (out of place)", lambda: a2.t() + b2.t()),
        ("exp_into, contiguous", lambda: torch.exp(a, out=out)),
        # One bare kernel launch (a zero-cycle spin kernel) from Python: the floor of any op.
        ("torch.cuda._sleep(0): a bare launch from Python", lambda: torch.cuda._sleep(0)),
    ]
    print(f"PyTorch {torch.__version__} host time per op on {torch.cuda.get_device_name()} "
          f"(1024 f32, median of {calls} calls in batches of 200)")
    print("| case | us per call |")
    print("| --- | --- |")
    for name, fn in rows:
        print(f"| {name} | {host_us(fn, calls):.2f} |")


if __name__ == "__main__":
    main()
