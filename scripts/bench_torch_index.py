#!/usr/bin/env python3
"""PyTorch baseline for bench/examples/gpu_index_bench.rs (issue 28): the same indexing cases, timed the
same way, in GB/s (bytes read + written, each tensor counted once), eager and torch.compile.

Cases (f32, int64 indices uniform with repeats): index_select of R random rows of a [R, 1024]
table; gather along dim 1 of [R/4, 1024] with a full index; F.embedding of R indices into a
[65536, 1024] table; scatter_add of 2^24 values into 2^16 bins; index_add of [R/4, 256] rows into
[65536, 256]; masked_fill of [R, 1024] with a random mask. R = --rows (default 2^20).

Each case: 3 warm-up calls, then the median of --repeats CUDA-event timings of one call (output
allocation included).

    python3 scripts/bench_torch_index.py [--rows 1048576] [--repeats 10] [--json torch.json] [--compare ours.json]

With --compare, prints ours / torch eager per case from the JSON the Rust example wrote (above 1
means ours is faster) beside the issue's target (>= 1.0x PyTorch eager).
"""

import argparse
import json

import torch
import torch.nn.functional as F

from bench_timing import time_ms  # scripts/bench_timing.py, beside this file


def cases(r):
    W, f = 1024, 4
    g = torch.Generator(device="cuda")
    g.manual_seed(0)

    def floats(*shape):
        return torch.rand(shape, device="cuda", generator=g) * 2 - 1

    def idx(n, below, shape=None):
        return torch.randint(0, below, shape or (n,), device="cuda", generator=g)

    q = r // 4
    out = []
    x = floats(r, W)
    i = idx(r, r)
    out.append(("index_select", f"[{r}, {W}] dim 0", 2 * r * W * f + r * 8, lambda: torch.index_select(x, 0, i)))
    xg = floats(q, W)
    ig = idx(0, W, (q, W))
    out.append(("gather dim1", f"[{q}, {W}]", q * W * (2 * f + 8), lambda: torch.gather(xg, 1, ig)))
    w = floats(65536, W)
    ie = idx(r, 65536)
    out.append(("embedding", f"[65536, {W}] x {r}", 2 * r * W * f + r * 8, lambda: F.embedding(ie, w)))
    n = 1 << 24
    v = floats(n)
    iv = idx(n, 1 << 16)
    z = torch.zeros(1 << 16, device="cuda")
    out.append(("scatter_add", "2^24 -> 2^16 bins", n * (f + 8) + 2 * (1 << 16) * f, lambda: z.scatter_add(0, iv, v)))
    c = 256
    src = floats(q, c)
    ia = idx(q, 65536)
    za = torch.zeros(65536, c, device="cuda")
    out.append(("index_add", f"[{q}, {c}] -> [65536, {c}]", q * c * f + q * 8 + 2 * 65536 * c * f,
                lambda: za.index_add(0, ia, src)))
    xm = floats(r, W)
    m = floats(r, W) > 0
    out.append(("masked_fill", f"[{r}, {W}]", r * W * (2 * f + 1), lambda: xm.masked_fill(m, 0.0)))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=1 << 20)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--json")
    p.add_argument("--compare")
    a = p.parse_args()
    r, W = a.rows, 1024
    x = torch.rand(r, W, device="cuda")
    ms = time_ms(lambda: x.clone(), a.repeats)
    copy = 2 * r * W * 4 / (ms * 1e-3) / 1e9
    del x
    print(f"copy           [{r}, {W}] f32              {ms:9.3f} ms {copy:8.1f} GB/s")
    rows = []
    for name, shape, nbytes, fn in cases(r):
        ms = time_ms(fn, a.repeats)
        cfn = torch.compile(fn)
        try:
            cms = time_ms(cfn, a.repeats)
        except Exception as e:  # noqa: BLE001 (a compile failure is a row, not a crash)
            print(f"{name}: torch.compile failed: {e}")
            cms = float("nan")
        gb = nbytes / (ms * 1e-3) / 1e9
        cgb = nbytes / (cms * 1e-3) / 1e9
        print(f"{name:<14} {shape:<28} eager {ms:9.3f} ms {gb:8.1f} GB/s   compile {cms:9.3f} ms {cgb:8.1f} GB/s")
        rows.append({"case": name, "shape": shape, "ms": ms, "gbps": gb, "compile_ms": cms, "compile_gbps": cgb})
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()} (copy {copy:.0f} GB/s)")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"device": torch.cuda.get_device_name(), "copy_gbps": copy, "rows": rows}, fh)
    if a.compare:
        with open(a.compare) as fh:
            ours = {row["case"]: row for row in json.load(fh)["rows"]}
        print("| case | ours GB/s | eager GB/s | compile GB/s | ours/eager | target |")
        print("|---|---|---|---|---|---|")
        for row in rows:
            o = ours.get(row["case"])
            if o is None:
                continue
            ratio = row["ms"] / o["ms"]
            print(f"| {row['case']} | {o['gbps']:.0f} | {row['gbps']:.0f} | {row['compile_gbps']:.0f} | {ratio:.2f}x | "
                  f"{'ok' if ratio >= 1.0 else 'below 1.0x'} |")


if __name__ == "__main__":
    main()
