"""Replays gpu_storage_bench's allocation trace through PyTorch's caching allocator.

Usage: python3 scripts/alloc_trace_torch.py TRACE
Prints peak reserved over peak requested (fragmentation) for PyTorch, to set beside the
Rust allocators' figures from the same trace, and PyTorch's alloc+free pair times.
"""
import sys
import time

import torch


def main(path):
    ops = []
    for line in open(path):
        parts = line.split()
        ops.append((parts[0] == "a", int(parts[1]), int(parts[2]) if parts[0] == "a" else 0))
    live, peak, sizes = 0, 0, {}
    for is_alloc, i, n in ops:
        if is_alloc:
            sizes[i] = n
            live += n
            peak = max(peak, live)
        else:
            live -= sizes[i]
    torch.cuda.init()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    held = {}
    t = time.perf_counter()
    for is_alloc, i, n in ops:
        if is_alloc:
            held[i] = torch.empty(n, dtype=torch.uint8, device="cuda")
        else:
            del held[i]
    ms = (time.perf_counter() - t) * 1e3
    reserved = torch.cuda.max_memory_reserved()
    print(f"\n## PyTorch {torch.__version__} on the same trace ({len(ops)} requests)\n")
    print("| allocator | peak reserved MiB | peak reserved / peak requested | replay ms |")
    print("| --- | --- | --- | --- |")
    print(f"| PyTorch caching | {reserved / 2**20:.1f} | {reserved / peak:.3f} | {ms:.2f} |")
    torch.cuda.empty_cache()
    print("\n## PyTorch alloc+free pairs (torch.empty + del, includes Python; median µs)\n")
    print("| 512 B | 1 MiB | 64 MiB |")
    cells = []
    for n in (512, 2**20, 64 * 2**20):
        x = torch.empty(n, dtype=torch.uint8, device="cuda")
        del x
        samples = []
        for _ in range(51):
            t = time.perf_counter()
            for _ in range(2000):
                x = torch.empty(n, dtype=torch.uint8, device="cuda")
                del x
            samples.append((time.perf_counter() - t) * 1e6 / 2000)
        samples.sort()
        cells.append(f"{samples[len(samples) // 2]:.3f}")
    print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
