#!/usr/bin/env python3
"""PyTorch baseline for bench/examples/gpu_matmul_bench.rs (issue 27): the same matmul cases, timed
the same way, in TFLOP/s.

Cases, in f16, bf16, f32 with TF32 off and f32 with TF32 on
(torch.backends.cuda.matmul.allow_tf32): square 512 to 8192, tall-skinny 65536x1024 . 1024x1024
and the reverse 1024x65536 . 65536x1024, 64 batched 512^3 products, transposed operands (4096^3
with a or b the .T view of a contiguous tensor); and in f16 gelu_tanh(linear(x, w, b)) of
16384x4096x4096, eager and torch.compile, beside the linear alone.

Each case: random data (uniform in [-1, 1)), 3 warm-up calls, then the median of --repeats
CUDA-event timings of one call (output allocation included), or of --inner calls back to back
(divided by it), so that Python's time between the events hides behind the GPU's work. TFLOP/s counts 2*m*n*k per product.

    python3 scripts/bench_torch_matmul.py [--repeats 10] [--inner 1] [--json torch.json] [--compare ours.json]

With --compare, prints ours / torch per case from the JSON the Rust example wrote (above 1 means
ours is faster), and the targets of issue 27: >= 0.95x torch.matmul on every case, the fused
epilogue >= 1.2x PyTorch eager and >= 1.0x torch.compile.
"""

import argparse
import json
import statistics

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # --load compares saved results without PyTorch
    torch = F = None


def rand(shape, dtype, seed):
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    return (torch.rand(shape, device="cuda", dtype=torch.float32, generator=g) * 2 - 1).to(dtype)


INNER = 1


def time_ms(fn, repeats, warmup=3):
    """Median ms per call of `repeats` timings, each of INNER calls back to back."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(INNER):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / INNER)
    return statistics.median(times)


# (name, batch, m, k, n, a transposed, b transposed): as cases() in the Rust example.
CASES = [(f"square {s}", 1, s, s, s, False, False) for s in (512, 1024, 2048, 4096, 8192)] + [
    ("tall 65536x1024x1024", 1, 65536, 1024, 1024, False, False),
    ("deep 1024x65536x1024", 1, 1024, 65536, 1024, False, False),
    ("batched 64x512^3", 64, 512, 512, 512, False, False),
    ("4096 a.T", 1, 4096, 4096, 4096, True, False),
    ("4096 b.T", 1, 4096, 4096, 4096, False, True),
]

DTYPES = [("f16", "float16", False), ("bf16", "bfloat16", False),
          ("f32", "float32", False), ("tf32", "float32", True)]


def operand(batch, r, c, t, dtype, seed):
    shape = (c, r) if t else (r, c)
    if batch > 1:
        shape = (batch,) + shape
    x = rand(shape, dtype, seed)
    return x.transpose(-1, -2) if t else x


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--json")
    p.add_argument("--compare")
    p.add_argument("--inner", type=int, default=1, help="calls per timing, back to back")
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--load", help="compare the torch results of an earlier --json run, measure nothing")
    args = p.parse_args()
    if args.load:
        with open(args.load) as f:
            out = json.load(f)
        compare(out, args.compare)
        return
    global INNER
    INNER = max(1, args.inner)
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    out = {}

    def emit(case, dtype, tflops):
        out[f"{case} | {dtype}"] = tflops
        print(f"| {case} | {dtype} | {tflops:.1f} |", flush=True)

    print("| case | dtype | TFLOP/s |\n| --- | --- | ---: |")
    for name, batch, m, k, n, ta, tb in CASES:
        for dname, dtype_name, tf32 in DTYPES:
            dtype = getattr(torch, dtype_name)
            torch.backends.cuda.matmul.allow_tf32 = tf32
            a = operand(batch, m, k, ta, dtype, 1)
            b = operand(batch, k, n, tb, dtype, 2)
            ms = time_ms(lambda: torch.matmul(a, b), args.repeats)
            emit(name, dname, 2.0 * batch * m * n * k / (ms * 1e-3) / 1e12)
            del a, b
    torch.backends.cuda.matmul.allow_tf32 = False
    m, k, n = 16384, 4096, 4096
    x, w, bias = rand((m, k), torch.float16, 3), rand((n, k), torch.float16, 4), rand((n,), torch.float16, 5)
    flop = 2.0 * m * n * k

    def fused(x, w, bias):
        return F.gelu(F.linear(x, w, bias), approximate="tanh")

    emit("linear+bias+gelu_tanh 16384x4096x4096", "f16",
         flop / (time_ms(lambda: fused(x, w, bias), args.repeats) * 1e-3) / 1e12)
    emit("linear 16384x4096x4096", "f16",
         flop / (time_ms(lambda: F.linear(x, w), args.repeats) * 1e-3) / 1e12)
    if not args.no_compile:
        compiled = torch.compile(fused)
        emit("linear+bias+gelu_tanh 16384x4096x4096 (compile)", "f16",
             flop / (time_ms(lambda: compiled(x, w, bias), args.repeats) * 1e-3) / 1e12)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    if args.compare:
        compare(out, args.compare)


def compare(out, path):
    """Prints ours / torch per case and the issue's targets."""
    if True:
        with open(path) as f:
            ours = json.load(f)
        print("\n| case | dtype | torch TFLOP/s | ours TFLOP/s | ours / torch |")
        print("| --- | --- | ---: | ---: | ---: |")
        worst = None
        for key, t in out.items():
            if "(compile)" in key:
                continue
            o = ours.get(key)
            if o is None:
                continue
            r = o / t
            worst = r if worst is None else min(worst, r)
            case, dtype = key.split(" | ")
            print(f"| {case} | {dtype} | {t:.1f} | {o:.1f} | {r:.2f} |")
        epi = "linear+bias+gelu_tanh 16384x4096x4096 | f16"
        print(f"\nworst ours / torch.matmul: {worst:.2f} (target >= 0.95)" if worst else "")
        if epi in ours:
            print(f"epilogue: ours / eager {ours[epi] / out[epi]:.2f} (target >= 1.2)")
            ck = "linear+bias+gelu_tanh 16384x4096x4096 (compile) | f16"
            if ck in out:
                print(f"epilogue: ours / torch.compile {ours[epi] / out[ck]:.2f} (target >= 1.0)")


if __name__ == "__main__":
    main()
