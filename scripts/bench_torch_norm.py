#!/usr/bin/env python3
"""PyTorch baseline for bench/examples/gpu_norm_bench.rs (issue 28): softmax, log_softmax, layer_norm
(weight and bias) and rms_norm (weight) over the last dim of 65536 x 1024 and 65536 x 4096, f32
and bf16, PyTorch eager and torch.compile, beside the copy bandwidth measured in the same run.

Each case: random data (uniform in [-1, 1)), 3 warm-up calls (torch.compile's first call
compiles), then the median of --repeats CUDA-event timings of one call, output allocation
included. GB/s counts the bytes read plus written (2 * rows * n * size). "copy" is
dst.copy_(x) into a preallocated tensor.

    python3 scripts/bench_torch_norm.py [--repeats 20] [--json torch.json] [--compare ours.json]

With --compare, prints ours / eager and ours / compile per case from the JSON the Rust example
wrote, and the issue's targets: >= 1.0x torch.compile and >= 0.9x the copy bandwidth.
The fused_* cases are the Rust example's row stages in fused expressions (see its docs);
fused_softmax_mul moves three [rows, n] tensors and is counted so.
"""

import argparse
import json

import torch
import torch.nn.functional as F

from bench_timing import time_ms  # scripts/bench_timing.py, beside this file

ROWS = 65536
OPS = ["softmax", "log_softmax", "layer_norm", "rms_norm",
       "fused_softmax", "fused_layer_norm", "fused_softmax_mul", "fused_centre"]
# [rows, n] tensors each op reads or writes (gpu_norm_bench.rs's `tensors_moved`).
MOVED = {"fused_softmax_mul": 3.0}


def op_fn(op, n):
    if op == "softmax":
        return lambda x, w, b, y: torch.softmax(x, -1)
    if op == "log_softmax":
        return lambda x, w, b, y: torch.log_softmax(x, -1)
    if op == "layer_norm":
        return lambda x, w, b, y: F.layer_norm(x, (n,), w, b, 1e-5)
    if op == "rms_norm":
        return lambda x, w, b, y: F.rms_norm(x, (n,), w, 1e-6)
    # The fused cases of gpu_norm_bench.rs, written as a PyTorch user would.
    if op == "fused_softmax":
        return lambda x, w, b, y: torch.softmax(x * 0.125, -1)
    if op == "fused_layer_norm":
        return lambda x, w, b, y: F.layer_norm(x, (n,), None, None, 1e-5) * w + b
    if op == "fused_softmax_mul":
        return lambda x, w, b, y: torch.softmax(x, -1) * y
    return lambda x, w, b, y: x - x.mean(-1, keepdim=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--json")
    p.add_argument("--compare")
    p.add_argument("--no-compile", action="store_true")
    args = p.parse_args()
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    out = {}
    print("| op | shape | dtype | eager GB/s | compile GB/s | copy GB/s |\n| --- | --- | --- | ---: | ---: | ---: |")
    for n in (1024, 4096):
        for dname, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
            g = torch.Generator(device="cuda")
            g.manual_seed(n)
            x = (torch.rand((ROWS, n), device="cuda", generator=g) * 2 - 1).to(dtype)
            w = (torch.rand((n,), device="cuda", generator=g) * 2 - 1).to(dtype)
            b = (torch.rand((n,), device="cuda", generator=g) * 2 - 1).to(dtype)
            y = (torch.rand((ROWS, n), device="cuda", generator=g) * 2 - 1).to(dtype)
            nbytes = 2.0 * x.numel() * x.element_size()
            gbps = lambda ms: nbytes / (ms * 1e-3) / 1e9
            dst = torch.empty_like(x)
            copy = gbps(time_ms(lambda: dst.copy_(x), args.repeats))
            shape = f"{ROWS}x{n}"
            out[f"copy | {shape} | {dname}"] = copy
            for op in OPS:
                fn = op_fn(op, n)
                k = MOVED.get(op, 2.0) / 2.0
                eager = k * gbps(time_ms(lambda: fn(x, w, b, y), args.repeats))
                comp = float("nan")
                if not args.no_compile:
                    cf = torch.compile(fn)
                    comp = k * gbps(time_ms(lambda: cf(x, w, b, y), args.repeats))
                out[f"{op} | {shape} | {dname} | eager"] = eager
                out[f"{op} | {shape} | {dname} | compile"] = comp
                print(f"| {op} | {shape} | {dname} | {eager:.0f} | {comp:.0f} | {copy:.0f} |", flush=True)
            del x, w, b, y, dst
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    if args.compare:
        with open(args.compare) as f:
            ours = json.load(f)
        print("\n| op | shape | dtype | ours GB/s | / eager | / compile | / our copy | targets met |")
        print("| --- | --- | --- | ---: | ---: | ---: | ---: | --- |")
        for key, g in ours.items():
            if key.startswith("copy"):
                continue
            op, shape, dname = key.split(" | ")
            e = out.get(f"{key} | eager", float("nan"))
            c = out.get(f"{key} | compile", float("nan"))
            cp = ours.get(f"copy | {shape} | {dname}", float("nan"))
            met = g >= c and g >= 0.9 * cp
            print(f"| {op} | {shape} | {dname} | {g:.0f} | {g / e:.2f} | {g / c:.2f} | {g / cp:.2f} | {'yes' if met else 'NO'} |")


if __name__ == "__main__":
    main()
