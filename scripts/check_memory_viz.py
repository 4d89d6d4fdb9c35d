#!/usr/bin/env python3
"""Check a typestate-tensor memory-history pickle with PyTorch's own memory viewer code.

Usage (on a machine with PyTorch; no Rust needed):

    python scripts/check_memory_viz.py OUTDIR/snapshot.pickle

It loads the pickle written by `MemoryHistory::write_torch_pickle` (e.g. by
`cargo run --example memory_history OUTDIR`), runs the functions of
`torch.cuda._memory_viz` that exist in this PyTorch (segsum, trace, segments/memory flame
graph input, trace_plot, segment_plot), checks that their numbers agree with what the file
says, and, when CUDA is available, records a real PyTorch snapshot with
`torch.cuda.memory._record_memory_history()` to compare the key sets. Exits non-zero on
any failure; prints what it checked.
"""

import io
import pickle
import re
import sys


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    with open(sys.argv[1], "rb") as f:
        data = pickle.load(f)

    import torch
    from torch.cuda import _memory_viz as mv

    print(f"torch {torch.__version__}")
    for key in ("segments", "device_traces"):
        if key not in data:
            fail(f"missing key {key!r}")
    segments = data["segments"]
    traces = data["device_traces"]
    events = [e for d in traces for e in d]
    print(f"{len(segments)} segments, {len(events)} trace entries")

    # Our own invariants, which _memory_viz relies on.
    total_reserved = 0
    total_allocated_requested = 0
    for seg in segments:
        blocks = seg["blocks"]
        if sum(b["size"] for b in blocks) != seg["total_size"]:
            fail(f"blocks of segment {seg['address']:#x} do not tile it")
        addr = seg["address"]
        for b in blocks:
            if b["address"] != addr:
                fail(f"block at {b['address']:#x} is not where the previous one ended")
            addr += b["size"]
        active = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
        if active != seg["allocated_size"]:
            fail(f"allocated_size of {seg['address']:#x}: {seg['allocated_size']} != {active}")
        total_reserved += seg["total_size"]
        total_allocated_requested += sum(
            b["requested_size"] for b in blocks if b["state"] == "active_allocated"
        )

    # segsum: totals must match ours (it asserts its own internal consistency too).
    if hasattr(mv, "segsum"):
        text = mv.segsum(data)
        m = re.search(r"total_reserved: (\S+)", text)
        want = repr(mv.Bytes(total_reserved))
        if not m or m.group(1) != want:
            fail(f"segsum total_reserved {m and m.group(1)} != {want}")
        m = re.search(r"total_allocated: (\S+)", text)
        want = repr(mv.Bytes(total_allocated_requested))
        if not m or m.group(1) != want:
            fail(f"segsum total_allocated {m and m.group(1)} != {want}")
        print(f"segsum ok: reserved {mv.Bytes(total_reserved)}, "
              f"allocated {mv.Bytes(total_allocated_requested)}")
    else:
        print("segsum: not in this PyTorch")

    # trace: one line per entry per device, ending with the live total.
    if hasattr(mv, "trace"):
        text = mv.trace(data)
        for i, d in enumerate(traces):
            if d and f"Device {i} ----" not in text:
                fail(f"trace printed no section for device {i}")
            if d and f"{len(d)} entries" not in text:
                fail(f"trace did not count {len(d)} entries for device {i}")
        allocs = sum(1 for e in events if e["action"] == "alloc")
        if text.count(" = ") < allocs:
            fail(f"trace printed fewer than {allocs} allocations")
        print(f"trace ok: {len(events)} entries, {allocs} allocations")

    # segments / memory build flame graph input; call their writer with a capturing
    # formatter so no flamegraph.pl download is needed.
    captured = {}

    def capture(name):
        def fmt(lines, *args, **kwargs):
            captured[name] = lines
            return lines
        return fmt

    for name in ("segments", "memory"):
        if hasattr(mv, name):
            getattr(mv, name)(data, format_flamegraph=capture(name))
            total = 0
            for line in captured[name].splitlines():
                total += int(line.rsplit(" ", 1)[1])
            if total != total_reserved:
                fail(f"{name} flame graph covers {total} bytes, segments hold {total_reserved}")
            print(f"{name} ok: flame graph input covers {mv.Bytes(total)}")

    # The HTML viewers embed the pickle: they must accept it.
    for name, args in (("trace_plot", {}), ("segment_plot", {})):
        if hasattr(mv, name):
            html = getattr(mv, name)(data, **args)
            if "snapshot.pickle" not in html:
                fail(f"{name} produced no viewer page")
            print(f"{name} ok: {len(html)} bytes of HTML")

    # A real PyTorch snapshot: compare key sets (ours may lack optional keys).
    if torch.cuda.is_available():
        torch.cuda.memory._record_memory_history(max_entries=1000)
        x = torch.empty(1 << 20, device="cuda")
        y = torch.empty(300, device="cuda")
        del x
        real = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        del y

        def report(what, ours, theirs):
            ours, theirs = set(ours), set(theirs)
            missing = sorted(ours - theirs)
            print(f"{what}: keys only in ours {missing}, only in PyTorch's {sorted(theirs - ours)}")
            if missing:
                fail(f"{what}: we write keys PyTorch does not: {missing}")

        report("snapshot", data.keys(), real.keys())
        if segments and real["segments"]:
            report("segment", segments[0].keys(), real["segments"][0].keys())
            ours_b = segments[0]["blocks"][0]
            real_b = real["segments"][0]["blocks"][0]
            report("block", ours_b.keys(), real_b.keys())
        real_events = [e for d in real["device_traces"] for e in d]
        for action in ("alloc", "free_requested", "free_completed", "segment_alloc"):
            ours_e = next((e for e in events if e["action"] == action), None)
            real_e = next((e for e in real_events if e["action"] == action), None)
            if ours_e and real_e:
                report(f"trace entry {action!r}", ours_e.keys(), real_e.keys())
        for e in real_events + events:
            for fr in e.get("frames", []):
                if set(fr) - {"filename", "line", "name"}:
                    pass  # PyTorch may add fx fields; ours are the three basic ones
        print("real PyTorch snapshot compared")
    else:
        print("CUDA not available: skipped the comparison with a real PyTorch snapshot")
    print("OK")


if __name__ == "__main__":
    main()
