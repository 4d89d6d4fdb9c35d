#!/usr/bin/env python3
"""All-reduce bandwidth in PyTorch (torch.distributed, NCCL backend), the same cases as
bench/examples/gpu_allreduce_bench.rs: f32 sum in place at 1 MiB, 16 MiB, 64 MiB, 256 MiB and
1 GiB per GPU, one process per GPU (torch.multiprocessing.spawn).

For each size, the time of one all-reduce is the median over 7 batches of back-to-back
all-reduces (CUDA events on rank 0's current stream around each batch, divided by its
length, after 5 warm-up calls), as the Rust example measures. algbw = bytes / time,
busbw = algbw * 2(n-1)/n (as nccl-tests).

    python3 scripts/bench_torch_allreduce.py [--gpus N] [--json torch.json] [--compare ours.json]

With --compare, prints ours/torch per size: the bus-bandwidth ratio (above 1 means ours is
faster) and the time ratio (below 1 means ours is faster), and the targets (>= 1.0 at
16 MiB and above, >= 0.9 at 1 MiB). NCCL_NVLS_ENABLE=0 (NVLink multicast off) is set for
the ranks if absent.
"""
import argparse
import json
import os
import statistics
import tempfile

SIZES_MIB = [1, 16, 64, 256, 1024]
MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


def worker(rank, world, sizes_mib, init_file, out_path):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl",
        init_method=f"file://{init_file}",
        rank=rank,
        world_size=world,
        device_id=torch.device("cuda", rank),
    )
    rows = []
    for mib in sizes_mib:
        nbytes = mib << 20
        x = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda")
        dist.all_reduce(x)
        torch.cuda.synchronize()
        if rank == 0 and (x[0].item() != world or x[-1].item() != world):
            raise SystemExit(f"all_reduce gave {x[0].item()} .. {x[-1].item()}, not {world}")
        x.zero_()
        for _ in range(5):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        per_batch = 5 if mib >= 256 else 20
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(7):
            dist.barrier()
            torch.cuda.synchronize()
            start.record()
            for _ in range(per_batch):
                dist.all_reduce(x)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3 / per_batch)
        t = statistics.median(times)
        algbw = nbytes / (t * 1e-6) / 1e9
        busbw = algbw * 2 * (world - 1) / world
        rows.append(dict(bytes=nbytes, time_us=t, algbw_gbs=algbw, busbw_gbs=busbw))
        del x
        torch.cuda.empty_cache()
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump(rows, f)
    dist.destroy_process_group()


def size_name(nbytes):
    mib = nbytes >> 20
    return f"{mib >> 10} GiB" if mib >= 1024 else f"{mib} MiB"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpus", type=int, help="number of GPUs (default: all)")
    p.add_argument("--sizes-mib", help="comma-separated sizes in MiB (default: 1,16,64,256,1024)")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--compare", help="JSON written by bench/examples/gpu_allreduce_bench.rs --json")
    args = p.parse_args()

    for k, v in MULTICAST_OFF.items():
        os.environ.setdefault(k, v)
    import torch
    import torch.multiprocessing as mp

    world = args.gpus or torch.cuda.device_count()
    if world < 1:
        raise SystemExit("no GPU")
    sizes = [int(s) for s in args.sizes_mib.split(",")] if args.sizes_mib else SIZES_MIB
    with tempfile.TemporaryDirectory() as tmp:
        init_file = os.path.join(tmp, "init")
        out_path = os.path.join(tmp, "rows.json")
        mp.spawn(worker, args=(world, sizes, init_file, out_path), nprocs=world, join=True)
        with open(out_path) as f:
            rows = json.load(f)

    device = torch.cuda.get_device_name(0)
    print(f"all-reduce f32 sum in place, torch {torch.__version__}, NCCL "
          f"{'.'.join(map(str, torch.cuda.nccl.version()))}, {world} process(es) x {device}")
    print("| size | time (µs) | algbw (GB/s) | busbw (GB/s) |")
    print("| --- | --- | --- | --- |")
    for r in rows:
        print(f"| {size_name(r['bytes'])} | {r['time_us']:.1f} | {r['algbw_gbs']:.1f} | {r['busbw_gbs']:.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(impl="torch", device=device, gpus=world, torch=torch.__version__,
                           results=rows), f, indent=1)
    if args.compare:
        with open(args.compare) as f:
            ours = {r["bytes"]: r for r in json.load(f)["results"]}
        print()
        print(f"ours ({args.compare}) / torch")
        print("| size | busbw ratio | time ratio (ours/torch) | target | met |")
        print("| --- | --- | --- | --- | --- |")
        for r in rows:
            o = ours.get(r["bytes"])
            if o is None:
                print(f"| {size_name(r['bytes'])} | missing | | | |")
                continue
            time_ratio = o["time_us"] / r["time_us"]
            speed = r["time_us"] / o["time_us"]  # = busbw ratio for equal sizes and GPUs
            target = 1.0 if r["bytes"] >= (16 << 20) else 0.9
            print(f"| {size_name(r['bytes'])} | {speed:.3f} | {time_ratio:.3f} | >= {target} | "
                  f"{'yes' if speed >= target else 'NO'} |")


if __name__ == "__main__":
    main()
