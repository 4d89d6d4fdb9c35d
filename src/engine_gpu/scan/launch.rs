//! Scan launches: the plan (one pass, or tiles of few long rows in three passes), kernel
//! lookup, argument packing, stream order and the driver calls. The `unsafe` of the scan
//! engine is here.
//!
//! Stream order is the reductions': the source is asked for `access_read` and each output
//! for `access_write` on the launch stream right before the kernels are queued. The tile
//! totals of a split scan are a fresh buffer allocated on that stream, written by the first
//! launch, rewritten in place by the second and read by the third, all on the same stream.

use crate::element::Element;
use crate::engine_gpu::kernel::args::{KernelArgs, LaunchArgs};
use crate::engine_gpu::kernel::cache::{KernelFront, LoadedKernel};
use crate::engine_gpu::kernel::launch::launch_kernel;
use crate::error::{Error, LayoutError, Result};
use crate::runtime::{Gpu, GpuStorage, Stream};
use crate::tensor::order::check_rows;
use crate::tensor::{TensorView, TensorViewMut};

use super::source::{ScanForm, ScanKind, ScanSpec, ITEMS, THREADS};

/// The scan kernels loaded so far, by device and spec.
static KERNELS: KernelFront<ScanSpec> = KernelFront::new();

fn overflow(op: &'static str, what: &'static str) -> Error {
    LayoutError::SizeOverflow {
        op,
        shape: vec![],
        what,
    }
    .into()
}

/// The byte address of element `offset` of a buffer at `ptr`.
pub(crate) fn address(op: &'static str, ptr: u64, offset: usize, size: usize) -> Result<u64> {
    (offset as u64)
        .checked_mul(size as u64)
        .and_then(|b| b.checked_add(ptr))
        .ok_or_else(|| overflow(op, "device address"))
}

/// A `usize` count as a kernel's `long long`.
pub(crate) fn ll(op: &'static str, v: usize) -> Result<[u8; 8]> {
    i64::try_from(v)
        .map(i64::to_le_bytes)
        .map_err(|_| overflow(op, "a count past 63 bits"))
}

/// Scans the row-major `[rows, n]` `src` into `out` (and `idx` for `cummax` / `cummin`),
/// both row-major `[rows, n]`, on `gpu`'s default stream.
pub(crate) fn scan<T: Element, O: Element>(
    gpu: &Gpu,
    kind: ScanKind,
    src: &TensorView<'_, T, Gpu>,
    out: &mut TensorViewMut<'_, O, Gpu>,
    mut idx: Option<&mut TensorViewMut<'_, i64, Gpu>>,
) -> Result<()> {
    let op = kind.name();
    let (rows, n) = match src.shape() {
        &[r, n] => (r, n),
        s => {
            return Err(LayoutError::ShapeMismatch {
                op,
                expected: vec![0, 0],
                got: s.to_vec(),
            }
            .into())
        }
    };
    check_rows(op, src.layout(), &[rows, n])?;
    check_rows(op, out.layout(), &[rows, n])?;
    match (&idx, kind) {
        (Some(i), _) => check_rows(op, i.layout(), &[rows, n])?,
        // `cummax` / `cummin` kernels store an index per element: they need the buffer.
        (None, ScanKind::Max | ScanKind::Min) => {
            return Err(LayoutError::ShapeMismatch {
                op,
                expected: vec![rows, n],
                got: vec![],
            }
            .into())
        }
        (None, _) => {}
    }
    if rows == 0 || n == 0 {
        return Ok(());
    }
    src.layout().check_within(op, src.storage().len())?;
    let stream = gpu.default_stream();
    let ctx = gpu.context();
    let rows_spec = ScanSpec::of::<T, O>(kind, ScanForm::Rows);
    let rows_kernel = KERNELS.kernel(ctx, &rows_spec, &rows_spec)?;
    let resident = rows_kernel.max_blocks.max(1) as usize;
    let chunk = THREADS as usize * ITEMS;
    // Few long rows: split each into tiles so that about two blocks per resident slot work.
    let (tiles, tile_len) = if rows >= resident || n <= 4 * chunk {
        (1, n)
    } else {
        let want = (2 * resident).div_ceil(rows);
        let len = n.div_ceil(want).div_ceil(chunk) * chunk;
        (n.div_ceil(len), len)
    };
    let blocks = rows
        .checked_mul(tiles)
        .ok_or_else(|| overflow(op, "tiles"))?;
    let grid = u32::try_from(blocks.min(resident * 4)).unwrap_or(u32::MAX);

    let in_addr = address(
        op,
        src.storage().device_ptr(),
        src.layout().offset(),
        size_of::<T>(),
    )?;
    src.storage().access_read(op, stream)?;
    let out_offset = out.layout().offset();
    let out_storage = out.slice_mut();
    out_storage.access_write(op, stream)?;
    let out_addr = address(op, out_storage.device_ptr_mut(), out_offset, size_of::<O>())?;
    let idx_addr = match idx.as_mut() {
        Some(i) => {
            let off = i.layout().offset();
            let s = i.slice_mut();
            s.access_write(op, stream)?;
            address(op, s.device_ptr_mut(), off, 8)?
        }
        None => 0,
    };
    let rows_args = |out: u64, carry: u64, totals: u64| -> Result<LaunchArgs> {
        let mut a = KernelArgs::default();
        a.push(&in_addr.to_le_bytes());
        a.push(&out.to_le_bytes());
        a.push(&idx_addr.to_le_bytes());
        a.push(&carry.to_le_bytes());
        a.push(&totals.to_le_bytes());
        a.push(&ll(op, rows)?);
        a.push(&ll(op, n)?);
        a.push(&ll(op, tiles)?);
        a.push(&ll(op, tile_len)?);
        Ok(LaunchArgs::new(a))
    };
    if tiles == 1 {
        let mut args = rows_args(out_addr, 0, 0)?;
        // SAFETY: `rows_args` packs the entry's nine parameters in order and size. The input
        // address is element `offset` of a live storage whose row-major `[rows, n]` layout
        // was checked within it; out (and idx, when the op writes it) address row-major
        // `[rows, n]` layouts of exclusively borrowed storages (views are within their
        // storage by construction), ordered on `stream` above; the kernel reads and writes
        // `row * n + j` for `j < n`, `row < rows` only. No carries or totals (null).
        return unsafe { launch(stream, &rows_kernel, grid, &mut args) };
    }
    let acc = kind.acc_size(T::DTYPE);
    let bytes = blocks
        .checked_mul(acc)
        .ok_or_else(|| overflow(op, "tiles"))?;
    // SAFETY: the first launch below writes every tile's total (one per block index
    // `0..rows * tiles`) before the carry pass and the third launch, queued after it on the
    // same stream, read any; nothing else reads the buffer, and it never reaches the host.
    let mut totals = unsafe { GpuStorage::<u8>::uninit(gpu, bytes, stream) }?;
    totals.access_write(op, stream)?;
    let t = totals.device_ptr_mut();
    let carry_spec = ScanSpec::of::<T, O>(kind, ScanForm::Carry);
    let carry_kernel = KERNELS.kernel(ctx, &carry_spec, &carry_spec)?;
    let mut first = rows_args(0, 0, t)?;
    let mut carries = {
        let mut a = KernelArgs::default();
        a.push(&t.to_le_bytes());
        a.push(&ll(op, rows)?);
        a.push(&ll(op, tiles)?);
        LaunchArgs::new(a)
    };
    let mut third = rows_args(out_addr, t, 0)?;
    let carry_grid = u32::try_from(rows.min(resident * 4)).unwrap_or(u32::MAX);
    // SAFETY: as the one-pass launch; the first pass writes only the totals (out is null),
    // the carry pass rewrites them in place (`rows * tiles` accumulators of `acc` bytes,
    // the size the source's static_assert pins), and the third reads them as carries and
    // writes the outputs; all three on `stream`, in this order.
    unsafe {
        launch(stream, &rows_kernel, grid, &mut first)?;
        launch(stream, &carry_kernel, carry_grid, &mut carries)?;
        launch(stream, &rows_kernel, grid, &mut third)
    }
}

/// Queues `kernel` on `stream` with `grid` blocks of [`THREADS`].
///
/// # Safety
/// `args` are the entry point's parameters in order and size, and every address in them is
/// valid for the accesses the kernel makes until it has run on `stream`.
unsafe fn launch(
    stream: &Stream,
    kernel: &LoadedKernel,
    grid: u32,
    args: &mut LaunchArgs,
) -> Result<()> {
    // SAFETY: forwarded from this function's contract; the function was loaded in the
    // context of the storages' GPU (`access_read` / `access_write` checked `stream` belongs
    // to it); the block is the kernel's __launch_bounds__ and the grid at least 1 block.
    unsafe {
        launch_kernel(
            stream.cuda(),
            kernel,
            (grid.max(1), 1, 1),
            (THREADS, 1, 1),
            args,
        )
    }
}
