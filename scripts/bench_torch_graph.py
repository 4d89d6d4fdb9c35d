"""torch.cuda.graph against eager PyTorch on the chain of bench/examples/gpu_graph_bench.rs:
100 pointwise ops (* y, + x, exp in turn) on 1024-element float32 tensors.

Prints per-op host+device µs (wall clock over many chains or replays queued back to back,
one synchronisation) and device µs (CUDA events), medians of 7, as the Rust example does.
Run in the same session as `cargo run --release -p typestate-tensor-bench --example gpu_graph_bench`.
"""
import sys
import time

import torch

N = 1024
OPS = 100


def chain(x, y):
    t = x * y
    for i in range(1, OPS):
        r = i % 3
        if r == 0:
            t = t * y
        elif r == 1:
            t = t + x
        else:
            t = torch.exp(t)
    return t


def per_op(rounds, run):
    for _ in range(20):
        run()
    torch.cuda.synchronize()
    wall, dev = [], []
    for _ in range(7):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        t = time.perf_counter()
        start.record()
        for _ in range(rounds):
            run()
        end.record()
        end.synchronize()
        wall.append((time.perf_counter() - t) * 1e6 / (rounds * OPS))
        dev.append(start.elapsed_time(end) * 1e3 / (rounds * OPS))
    wall.sort()
    dev.sort()
    return wall[3], dev[3]


def main():
    rounds = 200
    if "--repeats" in sys.argv:
        rounds = int(sys.argv[sys.argv.index("--repeats") + 1])
    i = torch.arange(N, device="cuda")
    x = ((i * 37 % 101).float() / 101.0) - 0.5
    y = 0.05 + (i * 53 % 97).float() / 970.0

    eager_wall, eager_dev = per_op(rounds, lambda: chain(x, y))
    eager = chain(x, y)

    # Warm up on a side stream, as the torch.cuda.graph docs ask, then capture.
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            chain(x, y)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    t = time.perf_counter()
    with torch.cuda.graph(g):
        out = chain(x, y)
    g.replay()
    torch.cuda.synchronize()
    capture_ms = (time.perf_counter() - t) * 1e3
    max_diff = (out - eager).abs().max().item()
    graph_wall, graph_dev = per_op(rounds, g.replay)

    print(f"device: {torch.cuda.get_device_name()} (torch {torch.__version__}, CUDA {torch.version.cuda})")
    print(f"chain: {OPS} ops (* y, + x, exp in turn) on {N} float32 elements; {rounds} chains per measurement, median of 7")
    print(f"graph capture + first replay: {capture_ms:.2f} ms; graph output vs eager: max |diff| {max_diff:e}")
    print()
    print("| run | host+device µs/op | device µs/op |")
    print("| --- | ---: | ---: |")
    print(f"| PyTorch eager | {eager_wall:.3f} | {eager_dev:.3f} |")
    print(f"| torch.cuda.graph replay | {graph_wall:.3f} | {graph_dev:.3f} |")


if __name__ == "__main__":
    main()
