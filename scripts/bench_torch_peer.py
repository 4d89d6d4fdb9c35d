"""Peer copy bandwidth between GPU 0 and GPU 1 in PyTorch, timed as
bench/examples/gpu_peer_bench.rs times ours: `dst.copy_(src)` across devices (which PyTorch runs on
the source device's current stream), both directions, at 1 MiB to 1 GiB.

    python3 scripts/bench_torch_peer.py [--json torch.json] [--compare ours.json] [--repeats 7]

Each figure is bytes copied over GPU time: CUDA events on the source device's current stream
around a batch of back-to-back copies into a preallocated destination, the median of
--repeats batches (the same batch sizes as the Rust example).

"direct" rows are `dst.copy_(src)` (peer-to-peer when the devices allow it, as PyTorch
enables it). "staged" rows copy through a preallocated pinned host buffer by hand
(`tmp.copy_(src, non_blocking=True)` on the source device, the destination stream waiting
for it, `dst.copy_(tmp, non_blocking=True)` there, one whole-size buffer), the PyTorch
counterpart of our staged fallback.

With --compare ours.json (written by `gpu_peer_bench --json`), prints ours/torch GB/s per
case (above 1 means ours is faster) against the targets: >= 1.0x at 16 MiB and above,
>= 0.9x at 1 MiB (direct rows). With fewer than two GPUs it prints a line and exits.
"""
import argparse
import json
import statistics

import torch

MIB = 1 << 20
SIZES = [MIB, 16 * MIB, 64 * MIB, 256 * MIB, 1024 * MIB]


def copies_per_batch(nbytes):
    if nbytes <= MIB:
        return 100
    if nbytes <= 16 * MIB:
        return 20
    if nbytes <= 64 * MIB:
        return 8
    if nbytes <= 256 * MIB:
        return 3
    return 2


def size_name(nbytes):
    return f"{nbytes // (1024 * MIB)} GiB" if nbytes >= 1024 * MIB else f"{nbytes // MIB} MiB"


def measure(a, b, nbytes, path, repeats):
    n = nbytes // 4
    src = torch.full((n,), 1.5, dtype=torch.float32, device=f"cuda:{a}")
    dst = torch.zeros((n,), dtype=torch.float32, device=f"cuda:{b}")
    s_src = torch.cuda.current_stream(a)
    s_dst = torch.cuda.current_stream(b)
    tmp = torch.empty((n,), dtype=torch.float32, pin_memory=True) if path == "staged" else None

    def copy():
        if path == "direct":
            dst.copy_(src)
        else:
            with torch.cuda.device(a):
                tmp.copy_(src, non_blocking=True)
            s_dst.wait_stream(s_src)
            with torch.cuda.device(b):
                dst.copy_(tmp, non_blocking=True)
            # The next fill of `tmp` must wait until this drain has read it.
            s_src.wait_stream(s_dst)

    copies = copies_per_batch(nbytes)
    for _ in range(max(copies, 3)):
        copy()
    torch.cuda.synchronize(a)
    torch.cuda.synchronize(b)
    samples = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        with torch.cuda.device(a):
            start.record(s_src)
            for _ in range(copies):
                copy()
            if path == "staged":
                s_src.wait_stream(s_dst)
            end.record(s_src)
        end.synchronize()
        samples.append(start.elapsed_time(end) / copies)
    ms = statistics.median(samples)
    if not bool((dst == 1.5).all()):
        raise SystemExit(f"copy {a}->{b} {size_name(nbytes)} {path}: wrong elements")
    del src, dst, tmp
    torch.cuda.empty_cache()
    return dict(case="peer_copy", bytes=nbytes, **{"from": a}, to=b, path=path,
                gbps=nbytes / (ms * 1e-3) / 1e9, us=ms * 1e3)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", help="write the results here")
    p.add_argument("--compare", help="JSON written by bench/examples/gpu_peer_bench.rs --json")
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args()
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < 2:
        print(f"bench_torch_peer: skipped, needs two GPUs ({count} present)")
        return
    access = (torch.cuda.can_device_access_peer(0, 1), torch.cuda.can_device_access_peer(1, 0))
    print(f"PyTorch {torch.__version__}: {torch.cuda.get_device_name(0)} (GPU 0) and "
          f"{torch.cuda.get_device_name(1)} (GPU 1); can access peer 0->1 {access[0]}, 1->0 {access[1]}")
    rows = []
    print("| size | direction | path | GB/s | µs per copy |\n| --- | --- | --- | --- | --- |")
    for path in ["direct", "staged"]:
        for nbytes in SIZES:
            for a, b in [(0, 1), (1, 0)]:
                r = measure(a, b, nbytes, path, args.repeats)
                print(f"| {size_name(nbytes)} | {a}->{b} | {path} | {r['gbps']:.1f} | {r['us']:.1f} |")
                rows.append(r)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
        print(f"wrote {args.json}")
    if not args.compare:
        return
    with open(args.compare) as f:
        ours = {(r["bytes"], r["from"], r["to"], r["path"]): r for r in json.load(f)}
    print("\nours / torch (GB/s: above 1 means ours is faster)")
    print("| size | direction | path | ours route | ours GB/s | torch GB/s | ratio | target |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    missed = 0
    for r in rows:
        o = ours.get((r["bytes"], r["from"], r["to"], r["path"]))
        if o is None:
            print(f"| {size_name(r['bytes'])} | {r['from']}->{r['to']} | {r['path']} | missing | | | | |")
            continue
        ratio = o["gbps"] / r["gbps"]
        target = ""
        if r["path"] == "direct":
            want = 0.9 if r["bytes"] < 16 * MIB else 1.0
            ok = ratio >= want
            missed += not ok
            target = f">= {want:.1f}: {'met' if ok else 'MISSED'}"
        print(f"| {size_name(r['bytes'])} | {r['from']}->{r['to']} | {r['path']} | {o['route']} | "
              f"{o['gbps']:.1f} | {r['gbps']:.1f} | {ratio:.2f} | {target} |")
    print(f"\ndirect targets missed: {missed}")


if __name__ == "__main__":
    main()
