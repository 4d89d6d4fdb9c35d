#!/usr/bin/env python3
"""PyTorch eager on the cases of `gpu_pointwise_bench --all-ops`, and the comparison table.

    cargo run --release -p typestate-tensor-bench --example gpu_pointwise_bench -- --all-ops --json ops.json
    python3 scripts/bench_torch_ops.py --compare ops.json [--json torch_ops.json]

Runs every case of the JSON the Rust example wrote (op, input dtype, output dtype, layout) with
the PyTorch call of OPS below, on inputs of the same shape and distribution (floats uniform in
[0.5, 1.5), integers in [1, 64), bool 0/1), timed the same way: --warmup launches, then the
median over --repeats samples of --inner back-to-back launches per CUDA-event pair (defaults:
the JSON's). Layout `a.T`: the first operand is `a.t()`, the others and the output row-major.
The output is preallocated and passed as `out=` where torch has one, ATen's `out=` variants of
the nn.functional activations included (`with_out`), and `isnan` as ATen computes it
(`ne(x, x, out=)`); where it has none (`isinf`, `isfinite`, the composite `softsign` /
`tanhshrink`, `prelu`, `float_power`), the call allocates from torch's caching allocator.

Prints per case ours/torch (bandwidth ratio: above 1 means ours is faster), each side's
fraction of its own device-to-device copy bandwidth (2^26 f32, measured in the same process),
and a summary: min and median of ours/torch over all cases, the cases below 1.0x torch, and the
memory-bound cases below 0.95 of copy. Memory-bound: every case but the compute-bound ones,
which are the special functions (any dtype) and the transcendental ops in f64; those are
listed apart, with their ratio to torch only.
"""

import argparse
import json
import signal
import statistics

import torch
import torch.nn.functional as F

DTYPES = {
    "f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64,
    "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64,
    "u8": torch.uint8, "u16": torch.uint16, "u32": torch.uint32, "u64": torch.uint64,
    "bool": torch.bool,
}

# Compute-bound classes (see the module docs): special functions with series or loops in
# every dtype (float_power computes in f64), and transcendental math in f64 (no f64 hardware
# approximations).
SPECIAL = {"erfinv", "lgamma", "digamma", "i0", "float_power"}
TRANSCENDENTAL = {"exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "silu", "gelu",
                  "pow", "exp2", "expm1", "log2", "log10", "log1p", "logaddexp", "logaddexp2",
                  "xlogy", "xlog1py", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
                  "asinh", "acosh", "atanh", "hypot", "sinc", "erf", "erfc", "logit", "elu",
                  "selu", "celu", "softplus", "mish", "logsigmoid", "tanhshrink", "gelu_tanh"}


def compute_bound(op, dtype):
    return op in SPECIAL or (dtype == "f64" and op in TRANSCENDENTAL)


def sc(x, like):
    """A Python scalar of `like`'s kind, the way the Rust side's `T::from_f64` converts it."""
    if like.dtype == torch.bool:
        return x != 0
    if like.dtype.is_floating_point:
        return x
    return int(x)


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def with_out(primary, fallback):
    """`primary` (an `out=` form), or `fallback` where this PyTorch build rejects it.

    The `nn.functional` activations take no `out=`: called bare, they allocate their result in
    the input's layout, which for the `a.T` case is the easier problem (a contiguous write)
    than ours (`_into` a row-major output). ATen's `out=` variants of the same kernels
    (`torch._C._nn.*`, `torch.hardshrink`, ...) write the row-major `o`, so both sides do the
    same memory traffic. Probed once per op, on the first call; a fallback is printed."""
    state = {}

    def call(x, o):
        if "fn" not in state:
            try:
                primary(x, o)
                state["fn"] = primary
            except (TypeError, RuntimeError, AttributeError) as e:
                print(f"note: out= form refused ({str(e).splitlines()[0][:60]}); timing the allocating form")
                state["fn"] = fallback
        return state["fn"](x, o)

    return call


def nn_out(name, fallback, *args):
    """`torch._C._nn.<name>(x, *args, out=o)`, see [`with_out`]."""
    return with_out(lambda x, o: getattr(torch._C._nn, name)(x, *args, out=o), fallback)


# Our kernel name -> the PyTorch call, by kind:
#   unary (x, o), binary (x, y, o), ternary (x, y, z, o), select (mask, x, y, o).
# Scalars are the ones `op_list!` in bench/examples/pointwise_all/mod.rs passes.
UNARY = {
    "copy": lambda x, o: o.copy_(x),
    "cast": lambda x, o: o.copy_(x),
    "abs": lambda x, o: torch.abs(x, out=o),
    "sign": lambda x, o: torch.sign(x, out=o),
    "square": lambda x, o: torch.square(x, out=o),
    "relu": lambda x, o: torch.clamp_min(x, sc(0, x), out=o),
    "add_scalar": lambda x, o: torch.add(x, sc(3.0, x), out=o),
    "mul_scalar": lambda x, o: torch.mul(x, sc(3.0, x), out=o),
    "clamp_scalar": lambda x, o: torch.clamp(x, sc(0.75, x), sc(1.25, x), out=o),
    "neg": lambda x, o: torch.neg(x, out=o),
    "exp": lambda x, o: torch.exp(x, out=o),
    "log": lambda x, o: torch.log(x, out=o),
    "sqrt": lambda x, o: torch.sqrt(x, out=o),
    "rsqrt": lambda x, o: torch.rsqrt(x, out=o),
    "sin": lambda x, o: torch.sin(x, out=o),
    "cos": lambda x, o: torch.cos(x, out=o),
    "tanh": lambda x, o: torch.tanh(x, out=o),
    "sigmoid": lambda x, o: torch.sigmoid(x, out=o),
    "gelu": nn_out("gelu", lambda x, o: F.gelu(x)),
    "silu": nn_out("silu", lambda x, o: F.silu(x)),
    "recip": lambda x, o: torch.reciprocal(x, out=o),
    "floor": lambda x, o: torch.floor(x, out=o),
    "ceil": lambda x, o: torch.ceil(x, out=o),
    "round": lambda x, o: torch.round(x, out=o),
    # Issue 26's ops (unused until the Rust side has them).
    "exp2": lambda x, o: torch.exp2(x, out=o),
    "expm1": lambda x, o: torch.expm1(x, out=o),
    "log2": lambda x, o: torch.log2(x, out=o),
    "log10": lambda x, o: torch.log10(x, out=o),
    "log1p": lambda x, o: torch.log1p(x, out=o),
    "tan": lambda x, o: torch.tan(x, out=o),
    "asin": lambda x, o: torch.asin(x, out=o),
    "acos": lambda x, o: torch.acos(x, out=o),
    "atan": lambda x, o: torch.atan(x, out=o),
    "sinh": lambda x, o: torch.sinh(x, out=o),
    "cosh": lambda x, o: torch.cosh(x, out=o),
    "asinh": lambda x, o: torch.asinh(x, out=o),
    "acosh": lambda x, o: torch.acosh(x, out=o),
    "atanh": lambda x, o: torch.atanh(x, out=o),
    "deg2rad": lambda x, o: torch.deg2rad(x, out=o),
    "rad2deg": lambda x, o: torch.rad2deg(x, out=o),
    "sinc": lambda x, o: torch.sinc(x, out=o),
    "trunc": lambda x, o: torch.trunc(x, out=o),
    "frac": lambda x, o: torch.frac(x, out=o),
    "round_decimals": lambda x, o: torch.round(x, decimals=2, out=o),
    "erf": lambda x, o: torch.erf(x, out=o),
    "erfc": lambda x, o: torch.erfc(x, out=o),
    "erfinv": lambda x, o: torch.erfinv(x, out=o),
    "lgamma": lambda x, o: torch.lgamma(x, out=o),
    "digamma": lambda x, o: torch.digamma(x, out=o),
    "i0": lambda x, o: torch.i0(x, out=o),
    "logit": lambda x, o: torch.logit(x, out=o),
    "clamp_min": lambda x, o: torch.clamp_min(x, 0.75, out=o),
    "clamp_max": lambda x, o: torch.clamp_max(x, 1.25, out=o),
    "logit_eps": lambda x, o: torch.logit(x, eps=1e-6, out=o),
    "nan_to_num": lambda x, o: torch.nan_to_num(x, nan=0.0, posinf=1e4, neginf=-1e4, out=o),
    "relu6": nn_out("hardtanh", lambda x, o: F.relu6(x), 0.0, 6.0),
    "leaky_relu": nn_out("leaky_relu", lambda x, o: F.leaky_relu(x, 0.01), 0.01),
    "elu": nn_out("elu", lambda x, o: F.elu(x, 1.0), 1.0, 1.0, 1.0),
    "selu": nn_out("elu", lambda x, o: F.selu(x), SELU_ALPHA, SELU_SCALE, 1.0),
    "celu": nn_out("elu", lambda x, o: F.celu(x, 1.0), 1.0, 1.0, 1.0),
    "softplus": nn_out("softplus", lambda x, o: F.softplus(x, 1.0, 20.0), 1.0, 20.0),
    "softsign": lambda x, o: F.softsign(x),
    "mish": nn_out("mish", lambda x, o: F.mish(x)),
    "hardtanh": nn_out("hardtanh", lambda x, o: F.hardtanh(x, -1.0, 1.0), -1.0, 1.0),
    "hardsigmoid": nn_out("hardsigmoid", lambda x, o: F.hardsigmoid(x)),
    "hardswish": nn_out("hardswish", lambda x, o: F.hardswish(x)),
    "logsigmoid": nn_out("log_sigmoid", lambda x, o: F.logsigmoid(x)),
    "tanhshrink": lambda x, o: F.tanhshrink(x),
    "softshrink": nn_out("softshrink", lambda x, o: F.softshrink(x, 0.5), 0.5),
    "hardshrink": with_out(lambda x, o: torch.hardshrink(x, 0.5, out=o), lambda x, o: F.hardshrink(x, 0.5)),
    "threshold": with_out(lambda x, o: torch.threshold(x, 1.0, 0.0, out=o), lambda x, o: F.threshold(x, 1.0, 0.0)),
    "gelu_tanh": with_out(lambda x, o: torch._C._nn.gelu(x, approximate="tanh", out=o), lambda x, o: F.gelu(x, approximate="tanh")),
    # ATen's isnan is `x != x`: the same kernel with `out=`.
    "isnan": with_out(lambda x, o: torch.ne(x, x, out=o), lambda x, o: torch.isnan(x)),
    "isinf": lambda x, o: torch.isinf(x),
    "isposinf": lambda x, o: torch.isposinf(x, out=o),
    "isneginf": lambda x, o: torch.isneginf(x, out=o),
    "isfinite": lambda x, o: torch.isfinite(x),
    "signbit": lambda x, o: torch.signbit(x, out=o),
    "logical_not": lambda x, o: torch.logical_not(x, out=o),
    "bitwise_not": lambda x, o: torch.bitwise_not(x, out=o),
}
BINARY = {
    "add": lambda x, y, o: torch.add(x, y, out=o),
    "sub": lambda x, y, o: torch.sub(x, y, out=o),
    "mul": lambda x, y, o: torch.mul(x, y, out=o),
    # Integers truncate (ours: C division); floats divide.
    "div": lambda x, y, o: (torch.div(x, y, out=o) if x.dtype.is_floating_point
                            else torch.div(x, y, rounding_mode="trunc", out=o)),
    "maximum": lambda x, y, o: torch.maximum(x, y, out=o),
    "minimum": lambda x, y, o: torch.minimum(x, y, out=o),
    "pow": lambda x, y, o: torch.pow(x, y, out=o),
    "eq": lambda x, y, o: torch.eq(x, y, out=o),
    "ne": lambda x, y, o: torch.ne(x, y, out=o),
    "lt": lambda x, y, o: torch.lt(x, y, out=o),
    "le": lambda x, y, o: torch.le(x, y, out=o),
    "gt": lambda x, y, o: torch.gt(x, y, out=o),
    "ge": lambda x, y, o: torch.ge(x, y, out=o),
    # Issue 26's ops.
    "remainder": lambda x, y, o: torch.remainder(x, y, out=o),
    "fmod": lambda x, y, o: torch.fmod(x, y, out=o),
    "floor_divide": lambda x, y, o: torch.floor_divide(x, y, out=o),
    "true_divide": lambda x, y, o: torch.true_divide(x, y, out=o),


    "copysign": lambda x, y, o: torch.copysign(x, y, out=o),
    "nextafter": lambda x, y, o: torch.nextafter(x, y, out=o),
    "logaddexp": lambda x, y, o: torch.logaddexp(x, y, out=o),
    "logaddexp2": lambda x, y, o: torch.logaddexp2(x, y, out=o),
    # torch computes float_power in f64 and returns f64 (more bytes than ours, if ours keeps T).
    "float_power": lambda x, y, o: torch.float_power(x, y),
    "xlogy": lambda x, y, o: torch.xlogy(x, y, out=o),
    "xlog1py": lambda x, y, o: torch.special.xlog1py(x, y, out=o),
    "atan2": lambda x, y, o: torch.atan2(x, y, out=o),
    "hypot": lambda x, y, o: torch.hypot(x, y, out=o),
    "fmax": lambda x, y, o: torch.fmax(x, y, out=o),
    "fmin": lambda x, y, o: torch.fmin(x, y, out=o),
    # torch's prelu weight is per channel (dim 1): a row, fewer bytes than our full operand.
    "prelu": lambda x, y, o: F.prelu(x, y[0].contiguous()),
    "logical_and": lambda x, y, o: torch.logical_and(x, y, out=o),
    "logical_or": lambda x, y, o: torch.logical_or(x, y, out=o),
    "logical_xor": lambda x, y, o: torch.logical_xor(x, y, out=o),
    "bitwise_and": lambda x, y, o: torch.bitwise_and(x, y, out=o),
    "bitwise_or": lambda x, y, o: torch.bitwise_or(x, y, out=o),
    "bitwise_xor": lambda x, y, o: torch.bitwise_xor(x, y, out=o),
    "left_shift": lambda x, y, o: torch.bitwise_left_shift(x, y, out=o),
    "right_shift": lambda x, y, o: torch.bitwise_right_shift(x, y, out=o),
    "gcd": lambda x, y, o: torch.gcd(x, y, out=o),
    "lcm": lambda x, y, o: torch.lcm(x, y, out=o),
}
TERNARY = {
    "clamp": lambda x, y, z, o: torch.clamp(x, y, z, out=o),
    # torch has no fused multiply-add op: addcmul computes z + x * y, the same bytes.
    "fma": lambda x, y, z, o: torch.addcmul(z, x, y, out=o),
    "lerp": lambda x, y, z, o: torch.lerp(x, y, z, out=o),
    "addcmul": lambda x, y, z, o: torch.addcmul(x, y, z, out=o),
    "addcdiv": lambda x, y, z, o: torch.addcdiv(x, y, z, out=o),
}
SELECT = {
    "where": lambda m, x, y, o: torch.where(m, x, y, out=o),
}
OPS = {"unary": UNARY, "binary": BINARY, "ternary": TERNARY, "select": SELECT}


def random(shape, dtype, seed):
    """The Rust side's distributions (not its values)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.rand(shape, device="cuda", generator=g) + 0.5).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, device="cuda", generator=g).bool()
    return torch.randint(1, 64, shape, device="cuda", generator=g).to(dtype)


def time_ms(fn, warmup, repeats, inner):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(max(repeats, 1)):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / inner)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--compare", required=True, help="JSON of gpu_pointwise_bench --all-ops")
    p.add_argument("--json", help="write torch's rows here")
    p.add_argument("--warmup", type=int)
    p.add_argument("--repeats", type=int)
    p.add_argument("--inner", type=int)
    args = p.parse_args()
    with open(args.compare) as f:
        ours = json.load(f)
    warmup = args.warmup if args.warmup is not None else ours.get("warmup", 2)
    repeats = args.repeats if args.repeats is not None else ours.get("repeats", 5)
    inner = args.inner if args.inner is not None else ours.get("inner", 3)
    side = ours["side"]
    shape = (side, side)
    n = side * side

    x = random((1 << 26,), torch.float32, 9)
    y = torch.empty_like(x)
    copy_gbps = 8 * (1 << 26) / (time_ms(lambda: y.copy_(x), warmup, repeats, inner) * 1e-3) / 1e9
    del x, y

    rows = []
    # A time limit (`timeout` sends SIGTERM) ends the cases; the table still prints.
    signal.signal(signal.SIGTERM, stop)
    try:
        run_cases(ours, shape, warmup, repeats, inner, rows)
    except Stopped:
        print(f"stopped by SIGTERM after {len(rows)} cases")
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    report(ours, rows, copy_gbps, side, warmup, repeats, inner, args.json)


class Stopped(BaseException):
    """SIGTERM (a time limit): not an `Exception`, so no per-case handler swallows it."""


def stop(signum, frame):
    raise Stopped


def run_cases(ours, shape, warmup, repeats, inner, rows):
    """Times every case of `ours` in torch, appending to `rows`."""
    inputs = {}

    def get(dtype_name):
        if dtype_name not in inputs:
            inputs.clear()
            torch.cuda.empty_cache()
            dt = DTYPES[dtype_name]
            inputs[dtype_name] = (random(shape, dt, 1), random(shape, dt, 2), random(shape, dt, 3),
                                  random(shape, torch.bool, 4))
        return inputs[dtype_name]

    # Group the cases by input dtype, so that each dtype's inputs are made once.
    cases = sorted(ours["rows"], key=lambda r: list(DTYPES).index(r["dtype"]) if r["dtype"] in DTYPES else 99)
    for r in cases:
        fn = OPS.get(r["kind"], {}).get(r["op"])
        row = dict(r)
        row["torch_ms"] = None
        if fn is None or r["dtype"] not in DTYPES or r["out"] not in DTYPES:
            row["torch_error"] = "no torch mapping"
            rows.append(row)
            continue
        try:
            a, b, c, m = get(r["dtype"])
        except Exception as e:  # a dtype torch cannot make on CUDA
            row["torch_error"] = str(e).splitlines()[0][:80]
            rows.append(row)
            continue
        first = a.t() if r["layout"] == "a.T" else a
        o = torch.empty(shape, device="cuda", dtype=DTYPES[r["out"]])
        kind = r["kind"]
        if kind == "unary":
            call = lambda: fn(first, o)  # noqa: E731
        elif kind == "binary":
            call = lambda: fn(first, b, o)  # noqa: E731
        elif kind == "ternary":
            call = lambda: fn(first, b, c, o)  # noqa: E731
        else:
            call = lambda: fn(m, first, b, o)  # noqa: E731
        try:
            row["torch_ms"] = time_ms(call, warmup, repeats, inner)
        except Exception as e:  # an op or dtype torch does not implement on CUDA
            row["torch_error"] = str(e).splitlines()[0][:80]
        rows.append(row)
        del o
    inputs.clear()


def report(ours, rows, copy_gbps, side, warmup, repeats, inner, json_path):
    """Prints the comparison (see the module docs); writes torch's rows to `json_path`."""
    n = side * side
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}: copy {copy_gbps:.0f} GB/s; "
          f"ours on {ours['device']}: copy {ours['copy_gbps']:.0f} GB/s; {side}x{side} = {n} elements, "
          f"warm-up {warmup}, median of {repeats} samples of {inner} launches")
    head = (f"{'op':<14} {'dtype':<5} {'out':<5} {'layout':<10} {'ours GB/s':>9} {'of copy':>7} "
            f"{'torch GB/s':>10} {'of copy':>7} {'ours/torch':>10}  flags")
    mem, comp, missing = [], [], []
    for r in rows:
        (comp if compute_bound(r["op"], r["dtype"]) else mem).append(r)
    for title, group in (("memory-bound", mem), ("compute-bound (special functions; f64 transcendentals)", comp)):
        print(f"\n{title}: {len(group)} cases")
        print(head)
        for r in sorted(group, key=lambda r: (r["kind"], r["op"], r["dtype"], r["out"], r["layout"])):
            if r["torch_ms"] is None:
                missing.append(r)
                print(f"{r['op']:<14} {r['dtype']:<5} {r['out']:<5} {r['layout']:<10} {r['gbps']:>9.0f} "
                      f"{r['of_copy']:>7.2f} {'-':>10} {'-':>7} {'-':>10}  torch: {r['torch_error']}")
                continue
            r["torch_gbps"] = r["bytes"] / (r["torch_ms"] * 1e-3) / 1e9
            r["torch_of_copy"] = r["torch_gbps"] / copy_gbps
            r["ratio"] = r["torch_ms"] / r["ms"]
            flags = []
            if r["ratio"] < 1.0:
                flags.append("<1.0x torch")
            if group is mem and r["of_copy"] < 0.95:
                flags.append("<0.95 copy")
            print(f"{r['op']:<14} {r['dtype']:<5} {r['out']:<5} {r['layout']:<10} {r['gbps']:>9.0f} "
                  f"{r['of_copy']:>7.2f} {r['torch_gbps']:>10.0f} {r['torch_of_copy']:>7.2f} "
                  f"{r['ratio']:>10.2f}  {' '.join(flags)}")

    def summary(title, group):
        timed = [r for r in group if r.get("ratio") is not None]
        if not timed:
            print(f"{title}: no case timed on both sides")
            return
        ratios = sorted(r["ratio"] for r in timed)
        below = [r for r in timed if r["ratio"] < 1.0]
        print(f"{title}: {len(timed)} cases; ours/torch min {ratios[0]:.2f}, median "
              f"{statistics.median(ratios):.2f}, max {ratios[-1]:.2f}; below 1.0x torch: {len(below)}")
        for r in sorted(below, key=lambda r: r["ratio"])[:12]:
            print(f"  {r['op']} {r['dtype']}->{r['out']} {r['layout']}: {r['ratio']:.2f}x torch, "
                  f"{r['of_copy']:.2f} of copy")

    print()
    summary("all", mem + comp)
    summary("memory-bound", mem)
    summary("compute-bound", comp)
    for layout in ("contiguous", "a.T"):
        summary(f"layout {layout}", [r for r in mem + comp if r["layout"] == layout])
    slow = sorted((r for r in mem if r["of_copy"] < 0.95), key=lambda r: r["of_copy"])
    oc = sorted(r["of_copy"] for r in mem)
    if oc:
        print(f"memory-bound of copy: min {oc[0]:.2f}, median {statistics.median(oc):.2f}; "
              f"below 0.95: {len(slow)} of {len(oc)} (contiguous {sum(r['layout'] == 'contiguous' for r in slow)}, "
              f"a.T {sum(r['layout'] == 'a.T' for r in slow)})")
        for r in slow[:12]:
            print(f"  {r['op']} {r['dtype']}->{r['out']} {r['layout']}: {r['of_copy']:.2f} of copy")
    if missing:
        print(f"not timed in torch: {len(missing)} cases ({', '.join(sorted({r['op'] + ' ' + r['dtype'] for r in missing})[:20])})")
    if ours.get("errors"):
        print(f"errors on our side: {len(ours['errors'])}")
        for e in ours["errors"][:10]:
            print(f"  {e}")
    if json_path:
        with open(json_path, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__,
                           copy_gbps=copy_gbps, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
