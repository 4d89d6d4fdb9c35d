"""DLPack against PyTorch (and NumPy): tensors made by typestate-tensor read by
`torch.from_dlpack` / `numpy.from_dlpack`, and tensors made by PyTorch / NumPy read by
typestate-tensor, all without a copy (pointer identity), on the CPU and the GPU, with the
stream handshake (pending producer work must be seen by the consumer) and the producer kept
alive after Python drops its last reference.

Needs the extension module `tt_dlpack` (python/, built by `bash scripts/device/dlpack.sh
build`) on PYTHONPATH. Runs what it can: NumPy checks without PyTorch, CPU checks without a
GPU. Prints one line per check and `N passed, M failed`; exits 1 on any failure.

    PYTHONPATH=.gpu/dlpack python3 scripts/dlpack_check.py
"""

import gc
import sys

import tt_dlpack as tt

try:
    import numpy as np
except ImportError:
    np = None
try:
    import torch
except ImportError:
    torch = None

results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(f"{'PASS' if ok else 'FAIL'} {name}" + (f": {detail}" if detail and not ok else ""))


def raises(exc, f):
    try:
        f()
    except exc:
        return True
    return False


def vals(n, seed=1):
    # Distinct, exactly representable, non-zero values.
    return [float(((i * 7919 + seed * 104729) % 2003) - 1001 or 5) for i in range(n)]


def reference(values, shape):
    rows, cols = shape
    return [[values[i * cols + j] for j in range(cols)] for i in range(rows)]


def numpy_checks():
    v = vals(12)
    t = tt.Tensor(v, [3, 4])
    a = np.from_dlpack(t)
    check("numpy reads ours: values", a.tolist() == reference(v, (3, 4)))
    check("numpy reads ours: no copy", a.ctypes.data == t.data_ptr(), f"{a.ctypes.data:#x} vs {t.data_ptr():#x}")
    check("numpy reads ours: read-only flag honoured (shared export)", not a.flags.writeable)
    at = np.from_dlpack(t.t())
    check("numpy reads our transposed view", at.tolist() == np.array(reference(v, (3, 4))).T.tolist() and at.strides == (4, 16), str(at.strides))
    st = np.from_dlpack(t.slice(1, 0, 4, 2))
    check("numpy reads our stepped view", st.tolist() == np.array(reference(v, (3, 4)))[:, ::2].tolist() and st.ctypes.data == t.data_ptr())
    fl = np.from_dlpack(t.slice(1, 0, 4, -1))
    check("numpy reads our flipped view (byte_offset)", fl.tolist() == np.array(reference(v, (3, 4)))[:, ::-1].tolist(), str(fl.tolist()))
    i = np.from_dlpack(tt.Tensor([1, 2, 3], [3], dtype="int64"))
    check("numpy reads our int64", i.dtype == np.int64 and i.tolist() == [1, 2, 3])
    w = np.from_dlpack(tt.Tensor(v, [3, 4]).take())
    w += 1
    check("numpy reads a take()n export writable", w.flags.writeable and w[0, 0] == v[0] + 1)
    # Kept alive: the capsule's context owns an Arc of the tensor.
    t2 = tt.Tensor(v, [3, 4])
    a2 = np.from_dlpack(t2)
    del t2
    gc.collect()
    junk = [tt.Tensor([9.0] * 12, [3, 4]) for _ in range(8)]
    check("numpy's array outlives our Tensor", a2.tolist() == reference(v, (3, 4)))
    del junk
    # Writes refused while exported; allowed once the consumer lets go (the deleter ran).
    t3 = tt.Tensor(v, [3, 4])
    a3 = np.from_dlpack(t3)
    check("no writes of ours while a consumer holds the tensor", raises(BufferError, lambda: t3.fill_after_sleep(0.0, 0)))
    del a3
    gc.collect()
    t3.fill_after_sleep(2.0, 0)
    check("writes allowed after the consumer's deleter", t3.tolist() == [2.0] * 12)
    check("a legacy request of a read-only export is a BufferError", raises(BufferError, lambda: t.__dlpack__()))
    # NumPy -> ours.
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    imp = tt.from_dlpack(x)
    check("we read numpy's: sum by our engine", imp.sum() == 78.0)
    check("we read numpy's: no copy", imp.data_ptr() == x.ctypes.data)
    check("we read numpy's transposed view", tt.from_dlpack(x.T).tolist() == x.T.ravel().tolist())
    imp.add_(1.0)
    check("our writes land in numpy's memory", x[0, 0] == 2.0 and x[2, 3] == 13.0)
    ro = x.copy()
    ro.flags.writeable = False
    r = tt.from_dlpack(ro)
    check("numpy's read-only array imports read-only", r.read_only and raises(ValueError, lambda: r.add_(1.0)))
    check("a wrong dtype is a typed error", raises(ValueError, lambda: tt.from_dlpack(np.zeros(3, dtype=np.complex64))))


def torch_reads_read_only():
    # Our `Tensor.__dlpack__` exports shared, with DLPACK_FLAG_BITMASK_READ_ONLY. A torch that
    # refuses such tensors is reported once here, and the checks that read our shared exports
    # are skipped (those through `take()`, writable, still run).
    try:
        torch.from_dlpack(tt.Tensor([1.0], [1]))
        return True
    except Exception as e:  # noqa: BLE001 - report whatever torch raises
        check("torch reads a read-only (shared) export", False, repr(e))
        return False


def torch_cpu_checks(shared_ok):
    v = vals(12, 2)
    w = torch.from_dlpack(tt.Tensor(v, [3, 4]).take())
    check("torch reads a take()n export (cpu)", w.tolist() == reference(v, (3, 4)))
    if shared_ok:
        torch_cpu_shared(v)
    x = torch.arange(1, 13, dtype=torch.float32).reshape(3, 4)
    imp = tt.from_dlpack(x)
    check("we read torch's (cpu): sum", imp.sum() == 78.0)
    check("we read torch's (cpu): no copy", imp.data_ptr() == x.data_ptr())
    check("we read torch's transposed view (cpu)", tt.from_dlpack(x.t()).tolist() == x.t().reshape(-1).tolist())
    xi = torch.arange(5, dtype=torch.int64)
    check("we read torch's int64 (cpu)", tt.from_dlpack(xi).sum() == 10.0)


def torch_cpu_shared(v):
    t = tt.Tensor(v, [3, 4])
    y = torch.from_dlpack(t)
    check("torch reads ours (cpu): values", y.tolist() == reference(v, (3, 4)))
    check("torch reads ours (cpu): no copy", y.data_ptr() == t.data_ptr())
    yt = torch.from_dlpack(t.t())
    check("torch reads our transposed view (cpu)", yt.stride() == (1, 4) and yt.tolist() == torch.tensor(reference(v, (3, 4))).T.tolist())


def torch_gpu_checks(shared_ok):
    dev = "cuda:0"
    rows, cols = 256, 1024
    v = vals(rows * cols, 3)
    want = torch.tensor(v, dtype=torch.float32).reshape(rows, cols)
    n = 1 << 22
    # Warm-up: our kernels compiled and our allocator's first cuMemAlloc (which may
    # synchronise the device) done before the timed rounds, so no round passes by accident.
    warm = tt.Tensor([0.0] * n, [n], device=dev)
    warm.fill_after_sleep(1.0, 1)
    check("warm-up", warm.sum() == n and tt.from_dlpack(torch.ones(n, device=dev)).sum() == n)
    del warm
    # Handshake, ours -> torch, through a writable take()n export: our write is queued behind
    # a 300 ms sleep on our producer stream (non-blocking: torch's stream does not wait for it
    # by itself).
    for rnd in range(2):
        big = tt.Tensor([0.0] * n, [n], device=dev)
        big.fill_after_sleep(2.0 + rnd, 300)
        yb = torch.from_dlpack(big.take())
        s = yb.sum().item()
        check(f"torch sees our pending write (handshake, take(), round {rnd})", s == (2.0 + rnd) * n, f"sum {s}")
    w = torch.from_dlpack(tt.Tensor(v, [rows, cols], device=dev).take())
    w.add_(1)
    check("torch writes a take()n export (gpu)", torch.equal(w.cpu(), want + 1))
    if shared_ok:
        torch_gpu_shared(dev, rows, cols, v, want, n)
    torch_gpu_imports(dev, rows, cols, n)


def torch_gpu_shared(dev, rows, cols, v, want, n):
    t = tt.Tensor(v, [rows, cols], device=dev)
    y = torch.from_dlpack(t)
    check("torch reads ours (gpu): values", torch.equal(y.cpu(), want))
    check("torch reads ours (gpu): no copy", y.data_ptr() == t.data_ptr(), f"{y.data_ptr():#x} vs {t.data_ptr():#x}")
    check("torch reads ours (gpu): device", y.device == torch.device(dev))
    yt = torch.from_dlpack(t.t())
    check("torch reads our transposed view (gpu)", yt.stride() == (1, cols) and torch.equal(yt.cpu(), want.T))
    ys = torch.from_dlpack(t.slice(0, 1, rows, 3))
    check("torch reads our stepped, offset view (gpu)", torch.equal(ys.cpu(), want[1::3]) and ys.data_ptr() == y.data_ptr() + cols * 4)

    # Handshake, ours -> torch, through the shared export.
    for rnd in range(3):
        big = tt.Tensor([0.0] * n, [n], device=dev)
        big.fill_after_sleep(5.0 + rnd, 300)
        yb = torch.from_dlpack(big)
        s = yb.sum().item()
        check(f"torch sees our pending write (handshake, round {rnd})", s == (5.0 + rnd) * n, f"sum {s}")
        del yb

    # Kept alive: Python drops our Tensor, our allocator is asked for memory again.
    t2 = tt.Tensor(v, [rows, cols], device=dev)
    y2 = torch.from_dlpack(t2)
    del t2
    gc.collect()
    junk = [tt.Tensor([9.0] * (rows * cols), [rows, cols], device=dev) for _ in range(8)]
    check("torch's tensor outlives our Tensor (gpu)", torch.equal(y2.cpu(), want))
    del junk
    # Our writes refused while torch holds the tensor; allowed after torch lets go.
    t3 = tt.Tensor(v, [rows, cols], device=dev)
    y3 = torch.from_dlpack(t3)
    check("no writes of ours while torch holds the tensor (gpu)", raises(BufferError, lambda: t3.fill_after_sleep(0.0, 0)))
    del y3
    gc.collect()
    t3.fill_after_sleep(4.0, 0)
    check("writes allowed after torch's deleter (gpu)", t3.sum() == 4.0 * rows * cols)


def torch_gpu_imports(dev, rows, cols, n):
    # Handshake, torch -> ours: torch's write is queued behind a sleep on its current stream.
    for rnd in range(3):
        x = torch.zeros(n, device=dev)
        torch.cuda._sleep(int(5e8))
        x.fill_(7.0 + rnd)
        imp = tt.from_dlpack(x)  # torch's __dlpack__ makes our consumer stream wait
        s = imp.sum()
        check(f"we see torch's pending write (handshake, round {rnd})", s == (7.0 + rnd) * n, f"sum {s}")
        check(f"we read torch's (gpu): no copy (round {rnd})", imp.data_ptr() == x.data_ptr())
        del imp

    # Torch's views and dtypes.
    x = torch.arange(rows * cols, device=dev, dtype=torch.float32).reshape(rows, cols)
    check("we read torch's transposed view (gpu)", tt.from_dlpack(x.t()).tolist() == x.t().reshape(-1).tolist())
    xi = torch.arange(1000, device=dev, dtype=torch.int64)
    check("we read torch's int64 (gpu)", tt.from_dlpack(xi).sum() == 499500.0)
    imp = tt.from_dlpack(x)
    imp.add_(1.0)
    torch.cuda.synchronize()
    check("our writes land in torch's memory (gpu)", x[0, 0].item() == 1.0 and x[-1, -1].item() == rows * cols)


def main():
    if np is not None:
        numpy_checks()
    else:
        print("numpy: not installed, skipped")
    if torch is not None:
        print("torch", torch.__version__)
        shared_ok = torch_reads_read_only()
        torch_cpu_checks(shared_ok)
        if torch.cuda.is_available() and tt.gpu_available():
            torch_gpu_checks(shared_ok)
        else:
            print("GPU checks: skipped, no CUDA GPU")
    else:
        print("torch: not installed, skipped")
    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    sys.exit(0 if passed == len(results) else 1)


if __name__ == "__main__":
    main()
