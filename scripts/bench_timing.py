"""The one timing rule of the PyTorch comparison scripts: a few warm-up calls, then the
median of `repeats` CUDA-event timings of one call each, in milliseconds (the same rule the
Rust benchmark binaries use, so both sides of a table are measured alike)."""

import statistics

import torch


def time_ms(fn, repeats, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


# issue 29 (cpu): the same rule for host (CPU) work, timed by the wall clock.
def host_time_ms(fn, repeats, warmup=3):
    import time

    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)
