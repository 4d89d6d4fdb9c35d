#!/usr/bin/env python3
"""Times every algorithm cuBLASLt's heuristic offers for a few matmul problems, beside
torch.matmul / F.linear in the same process (issue 27: is the heuristic's first choice the
fastest, and by how much?). Calls cuBLASLt through ctypes on torch's tensors.

    python3 scripts/lt_algos.py [--count 16] [--inner 10] [--repeats 7]
"""
import argparse
import ctypes as C
import glob
import os
import statistics

import torch
import torch.nn.functional as F


def load():
    import nvidia  # PyTorch's CUDA wheels

    for base in nvidia.__path__:
        for p in glob.glob(os.path.join(base, "**", "libcublasLt.so*"), recursive=True):
            return C.CDLL(p)
    return C.CDLL("libcublasLt.so")


LT = load()
R16F, R32F, R16BF = 2, 0, 14
C32F, C32F_TF32 = 68, 77
TRANSA, TRANSB, EPILOGUE, BIAS_PTR = 3, 4, 7, 8
EPI = {"none": 1, "bias": 4, "gelu_bias": 36}
PREF_WS = 1


class Algo(C.Structure):
    _fields_ = [("data", C.c_uint64 * 8)]


class Result(C.Structure):
    _fields_ = [
        ("algo", Algo),
        ("ws", C.c_size_t),
        ("state", C.c_int),
        ("waves", C.c_float),
        ("reserved", C.c_int * 4),
    ]


def ok(s, what):
    if s != 0:
        raise RuntimeError(f"{what}: status {s}")


handle = C.c_void_p()
ok(LT.cublasLtCreate(C.byref(handle)), "create")
WS_BYTES = 32 << 20
workspace = torch.empty(WS_BYTES, dtype=torch.uint8, device="cuda")


def layout(dtype, rows, cols, ld):
    l = C.c_void_p()
    ok(LT.cublasLtMatrixLayoutCreate(C.byref(l), dtype, C.c_uint64(rows), C.c_uint64(cols), C.c_int64(ld)), "layout")
    return l


def setattr_(desc, attr, value, ctype):
    v = ctype(value)
    ok(LT.cublasLtMatmulDescSetAttribute(desc, attr, C.byref(v), C.sizeof(v)), f"attr {attr}")


def problem(kind, dtype, m, n, k, epi="none", tf32=False):
    """Row-major D[m,n] = A[m,k] @ B[k,n] (B given as [n,k] transposed when kind == 'bT')."""
    tdt = {R16F: torch.float16, R16BF: torch.bfloat16, R32F: torch.float32}[dtype]
    a = torch.randn(m, k, device="cuda", dtype=tdt)
    b0 = torch.randn(n, k, device="cuda", dtype=tdt) if kind == "bT" else torch.randn(k, n, device="cuda", dtype=tdt)
    bias = torch.randn(n, device="cuda", dtype=tdt)
    d = torch.empty(m, n, device="cuda", dtype=tdt)
    desc = C.c_void_p()
    comp = C32F_TF32 if tf32 else C32F
    ok(LT.cublasLtMatmulDescCreate(C.byref(desc), comp, R32F), "desc")
    # Column-major view: D^T[n,m] = op(LtA)[n,k] . LtB[k,m]; LtA is b, LtB is a.
    if kind == "bT":
        setattr_(desc, TRANSA, 1, C.c_int)
        la = layout(dtype, k, n, k)
    else:
        la = layout(dtype, n, k, n)
    lb = layout(dtype, k, m, k)
    ld = layout(dtype, n, m, n)
    setattr_(desc, EPILOGUE, EPI[epi], C.c_int)
    if epi != "none":
        setattr_(desc, BIAS_PTR, bias.data_ptr(), C.c_void_p)
    pref = C.c_void_p()
    ok(LT.cublasLtMatmulPreferenceCreate(C.byref(pref)), "pref")
    ws = C.c_uint64(WS_BYTES)
    ok(LT.cublasLtMatmulPreferenceSetAttribute(pref, PREF_WS, C.byref(ws), 8), "pref ws")
    return dict(a=a, b0=b0, bias=bias, d=d, desc=desc, la=la, lb=lb, ld=ld, pref=pref, tdt=tdt,
                kind=kind, epi=epi)


def algos(p, count):
    res = (Result * count)()
    found = C.c_int()
    ok(LT.cublasLtMatmulAlgoGetHeuristic(handle, p["desc"], p["la"], p["lb"], p["ld"], p["ld"], p["pref"],
                                         count, res, C.byref(found)), "heuristic")
    return [res[i] for i in range(found.value) if res[i].state == 0]


def lt_call(p, r):
    alpha, beta = C.c_float(1.0), C.c_float(0.0)
    stream = C.c_void_p(torch.cuda.current_stream().cuda_stream)
    ok(LT.cublasLtMatmul(handle, p["desc"], C.byref(alpha), C.c_void_p(p["b0"].data_ptr()), p["la"],
                         C.c_void_p(p["a"].data_ptr()), p["lb"], C.byref(beta), C.c_void_p(p["d"].data_ptr()),
                         p["ld"], C.c_void_p(p["d"].data_ptr()), p["ld"], C.byref(r.algo),
                         C.c_void_p(workspace.data_ptr()), C.c_size_t(r.ws), stream), "matmul")


def timed(fn, inner, repeats):
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(repeats):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(inner):
            fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / inner)
    return statistics.median(ts)


def torch_fn(p):
    a, b0, bias = p["a"], p["b0"], p["bias"]
    bt = b0.t() if p["kind"] == "bT" else b0
    if p["epi"] == "gelu_bias":
        return lambda: F.gelu(F.linear(a, b0, bias), approximate="tanh")
    if p["epi"] == "bias":
        return lambda: F.linear(a, b0, bias)
    return lambda: torch.matmul(a, bt)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=16)
    ap.add_argument("--inner", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True
    cases = [
        ("tf32 4096 b.T", ("bT", R32F, 4096, 4096, 4096, "none", True)),
        ("tf32 4096", ("N", R32F, 4096, 4096, 4096, "none", True)),
        ("tf32 tall 65536x1024x1024", ("N", R32F, 65536, 1024, 1024, "none", True)),
        ("bf16 8192", ("N", R16BF, 8192, 8192, 8192, "none", False)),
        ("f16 linear+bias 16384x4096x4096", ("bT", R16F, 16384, 4096, 4096, "bias", False)),
        ("f16 linear+bias+gelu 16384x4096x4096", ("bT", R16F, 16384, 4096, 4096, "gelu_bias", False)),
    ]
    for name, spec in cases:
        p = problem(*spec)
        m, n, k = spec[2], spec[3], spec[4]
        flop = 2 * m * n * k
        tt = timed(torch_fn(p), args.inner, args.repeats)
        print(f"\n## {name}: torch {flop / tt / 1e9:.1f} TFLOP/s")
        found = algos(p, args.count)
        rows = []
        for i, r in enumerate(found):
            try:
                t = timed(lambda: lt_call(p, r), args.inner, args.repeats)
            except RuntimeError as e:
                print(f"  algo {i}: {e}")
                continue
            rows.append((i, t, r.ws, r.waves))
        best = min(rows, key=lambda x: x[1]) if rows else None
        for i, t, ws, waves in rows:
            mark = " <- best" if best and i == best[0] else ""
            print(f"  algo {i:2d}: {flop / t / 1e9:7.1f} TFLOP/s  {flop / t / 1e9 / (flop / tt / 1e9):.3f}x torch"
                  f"  ws {ws >> 10} KiB waves {waves:.2f}{mark}")
        # The first choice again after the others (clock drift check).
        if rows:
            t0 = timed(lambda: lt_call(p, found[0]), args.inner, args.repeats)
            tt2 = timed(torch_fn(p), args.inner, args.repeats)
            print(f"  again: algo 0 {flop / t0 / 1e9:.1f}, torch {flop / tt2 / 1e9:.1f} TFLOP/s")


if __name__ == "__main__":
    main()
