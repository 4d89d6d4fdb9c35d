//! Sort and search launches: the plan, argument packing, stream order and the driver calls.
//! The `unsafe` of the sort engine is here.
//!
//! The plan, by row length `n`, kept count `m` (`n` for a sort, `k` for `topk`) and rows:
//! - rows of 257 to 4096 entries (2048 for 8-byte keys): one block per row radix-sorts it in
//!   registers and shared memory (`ts_radix_rows`, one launch);
//! - shorter rows, or others of at most [`TILE`]: one block per row runs a bitonic network in
//!   shared memory (one launch);
//! - `m <= TILE` of longer rows, with enough rows to fill the GPU or rows short enough for
//!   one block: a radix select per row (`ts_topk_rows`, one launch);
//! - otherwise, fewer than 2^32 elements in all: an LSD radix sort of every row at once
//!   (`kernels/radix.cuh`: three launches per byte of the key and of the row number, then one
//!   gathering the values);
//! - beyond that: the bitonic network in global scratch.
//!
//! Stream order as the scans': `access_read` of the sources and `access_write` of the
//! outputs on the launch stream right before the kernels; the scratch of the long-row path
//! is allocated on that stream, written by the first launch and used only by the launches
//! after it on the same stream.

use crate::element::Element;
use crate::engine_gpu::kernel::args::{KernelArgs, LaunchArgs};
use crate::engine_gpu::kernel::cache::{KernelFront, LoadedKernel};
use crate::engine_gpu::kernel::launch::launch_kernel;
use crate::engine_gpu::scan::{address, ll};
use crate::error::{Error, LayoutError, Result};
use crate::runtime::{Gpu, GpuStorage, Stream};
use crate::tensor::order::check_rows;
use crate::tensor::{TensorView, TensorViewMut};

use super::source::{radix_row_items, SortForm, SortSpec, RADIX_THREADS, THREADS, TILE};

/// The sort kernels loaded so far, by device and spec.
static KERNELS: KernelFront<SortSpec> = KernelFront::new();

fn too_long(op: &'static str, shape: &[usize]) -> Error {
    LayoutError::SizeOverflow {
        op,
        shape: shape.to_vec(),
        what: "a GPU sort row past 2^30 elements",
    }
    .into()
}

/// Argument packing.
#[derive(Default)]
struct Args(KernelArgs);

impl Args {
    fn ptr(mut self, p: u64) -> Self {
        self.0.push(&p.to_le_bytes());
        self
    }
    fn ll(mut self, op: &'static str, v: usize) -> Result<Self> {
        self.0.push(&ll(op, v)?);
        Ok(self)
    }
    fn int(mut self, v: bool) -> Self {
        self.0.push(&i32::from(v).to_le_bytes());
        self
    }
    fn i32(mut self, v: usize) -> Self {
        // Pass numbers and counts below 2^31 (callers' plans).
        self.0.push(&(v as i32).to_le_bytes());
        self
    }
    fn u32(mut self, v: usize) -> Self {
        // Row lengths below 2^30 (`sort` refuses longer rows first).
        self.0.push(&(v as u32).to_le_bytes());
        self
    }
    fn done(self) -> LaunchArgs {
        LaunchArgs::new(self.0)
    }
}

/// The kernel of `form` over `T`, and its grid cap (resident blocks times 8, at least 1).
fn kernel<T: Element>(gpu: &Gpu, form: SortForm) -> Result<(std::sync::Arc<LoadedKernel>, usize)> {
    let spec = SortSpec::of::<T>(form);
    let k = KERNELS.kernel(gpu.context(), &spec, &spec)?;
    let cap = (k.max_blocks.max(1) as usize).saturating_mul(8);
    Ok((k, cap))
}

/// Sorts each row of the row-major `[rows, n]` `src` (descending with `desc`, stably) and
/// writes the first `m` (`m <= n`) values and indices of each sorted row into the row-major
/// `[rows, m]` `vals` and `idx`.
pub(crate) fn sort<T: Element>(
    gpu: &Gpu,
    op: &'static str,
    src: &TensorView<'_, T, Gpu>,
    desc: bool,
    m: usize,
    vals: &mut TensorViewMut<'_, T, Gpu>,
    idx: &mut TensorViewMut<'_, i64, Gpu>,
) -> Result<()> {
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
    check_rows(op, vals.layout(), &[rows, m])?;
    check_rows(op, idx.layout(), &[rows, m])?;
    if m > n {
        return Err(LayoutError::KOutOfRange {
            op,
            k: m,
            dim: 1,
            size: n,
        }
        .into());
    }
    if rows == 0 || m == 0 {
        return Ok(());
    }
    if n > 1 << 30 {
        return Err(too_long(op, src.shape()));
    }
    src.layout().check_within(op, src.storage().len())?;
    let stream = gpu.default_stream();
    let p = n.next_power_of_two();
    let size = size_of::<T>();
    let in_addr = address(op, src.storage().device_ptr(), src.layout().offset(), size)?;
    let v_off = vals.layout().offset();
    let i_off = idx.layout().offset();
    src.storage().access_read(op, stream)?;
    let vs = vals.slice_mut();
    vs.access_write(op, stream)?;
    let v_addr = address(op, vs.device_ptr_mut(), v_off, size)?;
    let is = idx.slice_mut();
    is.access_write(op, stream)?;
    let i_addr = address(op, is.device_ptr_mut(), i_off, 8)?;

    // The arguments every one-block-per-row form starts with.
    let row_args = || -> Result<Args> {
        Args::default()
            .ptr(in_addr)
            .ptr(v_addr)
            .ptr(i_addr)
            .ll(op, rows)?
            .ll(op, n)
    };
    if let Some(items) = radix_row_items(n, size).filter(|_| n > 256) {
        let (k, cap) = kernel::<T>(gpu, SortForm::RadixRows(items))?;
        let mut args = row_args()?.ll(op, m)?.int(desc).done();
        // SAFETY: the arguments are `ts_radix_rows`'s, in order and size; the addresses are
        // as in the bitonic one-block path below. The kernel reads `row * n + q` for q < n
        // and writes `row * m + q` for q < m <= n; a row of `n <= 256 * items` entries (the
        // form's) fits its registers and shared arrays, and its ids (below 4096) its 16-bit
        // slots.
        return unsafe { launch(stream, &k, rows.min(cap), RADIX_THREADS, &mut args) };
    }
    if p <= TILE {
        let (k, cap) = kernel::<T>(gpu, SortForm::Rows)?;
        let threads = (p / 2).clamp(32, THREADS as usize) as u32;
        let mut args = row_args()?.ll(op, p)?.ll(op, m)?.int(desc).done();
        // SAFETY: the arguments are `ts_sort_rows`'s, in order and size. The input addresses
        // a live row-major `[rows, n]` layout checked within its storage; vals and idx
        // address row-major `[rows, m]` layouts of exclusively borrowed storages, ordered on
        // `stream` above. The kernel reads `row * n + j` (j < n, and gathers at sorted
        // indices, which are real positions: padding sorts after the first n) and writes
        // `row * m + i` for i < m <= n. `p <= TILE` entries fit its shared arrays.
        return unsafe { launch(stream, &k, rows.min(cap), threads, &mut args) };
    }

    // Rows worth one block each for the radix select: enough to fill the GPU, or short enough
    // that one block reads them in microseconds.
    if m <= TILE && (rows >= 128 || n <= 1 << 17) {
        let (k, cap) = kernel::<T>(gpu, SortForm::Select)?;
        let mut args = row_args()?.ll(op, m)?.int(desc).done();
        // SAFETY: the arguments are `ts_topk_rows`'s, in order and size; the addresses are
        // as in the one-block path. The kernel reads `row * n + i` for i < n (n < 2^30),
        // gathers at indices it took from `0..n`, and writes `row * m + i` for i < m; its
        // `m <= TILE` entries (padded to a power of two) fit its shared arrays. Blocks of
        // RADIX_THREADS (its bound): several rows in flight on each multiprocessor.
        return unsafe { launch(stream, &k, rows.min(cap), RADIX_THREADS, &mut args) };
    }
    if let Some(total) = rows.checked_mul(n).filter(|&t| t <= 1 << 32) {
        let plan = RadixPlan::new(rows, n, total, size);
        // SAFETY: `in_addr` addresses the row-major `[rows, n]` input, `v_addr` and `i_addr`
        // the row-major `[rows, m]` outputs, all ordered on `stream` above; `rows * n < 2^32`.
        return unsafe {
            radix_sort::<T>(gpu, op, stream, &plan, desc, m, [in_addr, v_addr, i_addr])
        };
    }

    let total = rows
        .checked_mul(p)
        .ok_or_else(|| too_long(op, src.shape()))?;
    let key_bytes = total
        .checked_mul(size)
        .ok_or_else(|| too_long(op, src.shape()))?;
    let id_bytes = total
        .checked_mul(4)
        .ok_or_else(|| too_long(op, src.shape()))?;
    // SAFETY: `ts_sort_init`, queued first on `stream`, writes every one of the `total` keys
    // and indices before any later launch on the stream reads them; they never reach the host.
    let mut keys = unsafe { GpuStorage::<u8>::uninit(gpu, key_bytes, stream) }?;
    // SAFETY: as for `keys`.
    let mut ids = unsafe { GpuStorage::<u8>::uninit(gpu, id_bytes, stream) }?;
    keys.access_write(op, stream)?;
    ids.access_write(op, stream)?;
    let (ka, ia) = (keys.device_ptr_mut(), ids.device_ptr_mut());
    let (init, cap) = kernel::<T>(gpu, SortForm::Init)?;
    let (tiles, tcap) = kernel::<T>(gpu, SortForm::Tiles)?;
    let (step, scap) = kernel::<T>(gpu, SortForm::Step)?;
    let (fin, fcap) = kernel::<T>(gpu, SortForm::Final)?;
    let elems = |count: usize, cap: usize| count.div_ceil(THREADS as usize).min(cap);
    let tile_args = |k: usize| -> Result<LaunchArgs> {
        Ok(Args::default()
            .ptr(ka)
            .ptr(ia)
            .ll(op, total)?
            .ll(op, p)?
            .ll(op, k)?
            .done())
    };
    let mut a_init = Args::default()
        .ptr(in_addr)
        .ptr(ka)
        .ptr(ia)
        .ll(op, rows)?
        .ll(op, n)?
        .ll(op, p)?
        .int(desc)
        .done();
    let n_tiles = (total / TILE).min(tcap);
    // SAFETY: every launch below: the arguments are the entry points', in order and size;
    // the scratch holds `total = rows * p` keys of `size` bytes and `total` 4-byte indices,
    // and every kernel addresses entries `0..total` only (`p` is a power of two at least
    // TILE, so tiles and compare-exchange pairs stay inside one row's `p` entries); the input
    // and the outputs are addressed as in the one-block path, the final gather reading
    // `row * n + j` at indices j < n the init pass wrote. All on `stream`, in this order.
    unsafe {
        launch(stream, &init, elems(total, cap), THREADS, &mut a_init)?;
        launch(stream, &tiles, n_tiles, THREADS, &mut tile_args(0)?)?;
        let mut k = 2 * TILE;
        while k <= p {
            let mut j = k / 2;
            while j >= TILE {
                let mut a = Args::default()
                    .ptr(ka)
                    .ptr(ia)
                    .ll(op, total)?
                    .ll(op, p)?
                    .ll(op, k)?
                    .ll(op, j)?
                    .done();
                launch(stream, &step, elems(total / 2, scap), THREADS, &mut a)?;
                j /= 2;
            }
            launch(stream, &tiles, n_tiles, THREADS, &mut tile_args(k)?)?;
            k *= 2;
        }
        let mut a_fin = Args::default()
            .ptr(in_addr)
            .ptr(ia)
            .ptr(v_addr)
            .ptr(i_addr)
            .ll(op, rows)?
            .ll(op, n)?
            .ll(op, p)?
            .ll(op, m)?
            .done();
        let out_count = rows
            .checked_mul(m)
            .ok_or_else(|| too_long(op, src.shape()))?;
        launch(stream, &fin, elems(out_count, fcap), THREADS, &mut a_fin)
    }
}

/// The shape of an LSD radix sort over every row at once.
struct RadixPlan {
    rows: usize,
    n: usize,
    /// `rows * n`, at most 2^32: the ids `row * n + i` are 32-bit.
    total: usize,
    /// Bytes of a key (the element's size): one pass each.
    key_passes: usize,
    /// Bytes of the largest row number: one pass each, after the key's.
    row_passes: usize,
    /// Tiles of `RADIX_THREADS * items` entries (8 items for keys up to 4 bytes, else 4:
    /// `ts_radix_items`).
    tiles: usize,
}

impl RadixPlan {
    fn new(rows: usize, n: usize, total: usize, key_bytes: usize) -> Self {
        let row_bits = (usize::BITS - rows.saturating_sub(1).leading_zeros()) as usize;
        let items = if key_bytes > 4 { 4 } else { 8 };
        RadixPlan {
            rows,
            n,
            total,
            key_passes: key_bytes,
            row_passes: row_bits.div_ceil(8),
            tiles: total.div_ceil(RADIX_THREADS as usize * items),
        }
    }
}

/// Sorts the row-major `[rows, n]` input at `addrs[0]` by an LSD radix sort of all rows at
/// once and writes the first `m` values and indices of each row to `addrs[1]` and `addrs[2]`
/// (row-major `[rows, m]`), on `stream`.
///
/// # Safety
/// `addrs` address live memory of `stream`'s device holding those layouts, ordered on
/// `stream` (the input read, the outputs written, by nothing else meanwhile); `m <= n`;
/// `plan` was made for `rows * n = total <= 2^32` and the element's size.
unsafe fn radix_sort<T: Element>(
    gpu: &Gpu,
    op: &'static str,
    stream: &Stream,
    plan: &RadixPlan,
    desc: bool,
    m: usize,
    addrs: [u64; 3],
) -> Result<()> {
    let size = size_of::<T>();
    let bytes = |count: usize, each: usize| {
        count
            .checked_mul(each)
            .ok_or_else(|| too_long(op, &[plan.rows, plan.n]))
    };
    // Two key and two id buffers, written alternately by the passes, the counts table and the
    // digits' totals.
    let scratch = |len: usize| -> Result<GpuStorage<u8>> {
        // SAFETY: every pass writes the whole of the buffers it writes (each of the `total`
        // entries once; the counts table fully, tile by tile) before any later launch on
        // `stream` reads them; none reaches the host.
        let mut b = unsafe { GpuStorage::<u8>::uninit(gpu, len.max(1), stream) }?;
        b.access_write(op, stream)?;
        Ok(b)
    };
    let mut keys = [
        scratch(bytes(plan.total, size)?)?,
        scratch(bytes(plan.total, size)?)?,
    ];
    let mut ids = [
        scratch(bytes(plan.total, 4)?)?,
        scratch(bytes(plan.total, 4)?)?,
    ];
    let mut hist = scratch(bytes(plan.tiles, 256 * 4)?)?;
    let mut totals = scratch(256 * 4)?;
    let key_addr = [keys[0].device_ptr_mut(), keys[1].device_ptr_mut()];
    let id_addr = [ids[0].device_ptr_mut(), ids[1].device_ptr_mut()];
    let (h_addr, t_addr) = (hist.device_ptr_mut(), totals.device_ptr_mut());
    let (hist_k, _) = kernel::<T>(gpu, SortForm::RadixHist)?;
    let (scan_k, _) = kernel::<T>(gpu, SortForm::RadixScan)?;
    let (scatter_k, _) = kernel::<T>(gpu, SortForm::RadixScatter)?;
    let (final_k, fcap) = kernel::<T>(gpu, SortForm::RadixFinal)?;
    let passes = plan.key_passes + plan.row_passes;
    // A whole sort's last pass writes the outputs itself; a partial one's are gathered after.
    let whole = m == plan.n;
    for pass in 0..passes {
        // Pass 0 reads the values; pass p reads what pass p - 1 wrote.
        let (src, dst) = ((pass + 1) % 2, pass % 2);
        let (k_in, i_in) = if pass == 0 {
            (0, 0)
        } else {
            (key_addr[src], id_addr[src])
        };
        let mut a_hist = Args::default()
            .ptr(addrs[0])
            .ptr(k_in)
            .ptr(i_in)
            .ptr(h_addr)
            .ll(op, plan.total)?
            .u32(plan.n)
            .i32(pass)
            .i32(plan.key_passes)
            .int(desc)
            .done();
        let mut a_scan = Args::default()
            .ptr(h_addr)
            .ptr(t_addr)
            .ll(op, plan.tiles)?
            .done();
        let mut a_scatter = Args::default()
            .ptr(addrs[0])
            .ptr(k_in)
            .ptr(i_in)
            .ptr(key_addr[dst])
            .ptr(id_addr[dst])
            .ptr(h_addr)
            .ptr(t_addr)
            .ll(op, plan.total)?
            .u32(plan.n)
            .i32(pass)
            .i32(plan.key_passes)
            .int(desc)
            .ptr(if whole && pass + 1 == passes {
                addrs[1]
            } else {
                0
            })
            .ptr(if whole && pass + 1 == passes {
                addrs[2]
            } else {
                0
            })
            .done();
        // SAFETY: the arguments are the entry points', in order and size. `ts_radix_hist`
        // and `ts_radix_scatter` run one block per tile (`plan.tiles` blocks of
        // RADIX_THREADS), reading entries `0..total` of the input (the values at pass 0,
        // else the other key / id buffer, written by the pass before on this stream) and
        // writing one count per digit and tile (`256 * tiles` entries of `hist`) and, for the
        // scatter, each of the `total` output entries once (a permutation: the offsets of
        // `ts_radix_scan`, one block per digit, partition `0..total`); on the last pass of a
        // whole sort (`m == n`) it writes those places of the `[rows, n]` outputs instead: the
        // input at the id (a real entry, `< total`) and the id's place in its row. Every
        // buffer holds `total` entries of its type; all on `stream`, in this order.
        unsafe {
            launch(stream, &hist_k, plan.tiles, RADIX_THREADS, &mut a_hist)?;
            launch(stream, &scan_k, 256, RADIX_THREADS, &mut a_scan)?;
            launch(
                stream,
                &scatter_k,
                plan.tiles,
                RADIX_THREADS,
                &mut a_scatter,
            )?;
        }
    }
    if whole {
        return Ok(());
    }
    let mut a_fin = Args::default()
        .ptr(addrs[0])
        .ptr(id_addr[(passes + 1) % 2])
        .ptr(addrs[1])
        .ptr(addrs[2])
        .ll(op, plan.rows)?
        .ll(op, plan.n)?
        .ll(op, m)?
        .done();
    let count = plan.rows * m;
    // SAFETY: the last pass wrote `total` ids, each `row * n + i` of a real entry, sorted by
    // row: `ts_radix_final` reads id `row * n + i` for i < m <= n, the input at that id, and
    // writes `row * m + i` of both outputs (the caller's layouts).
    unsafe {
        launch(
            stream,
            &final_k,
            count.div_ceil(THREADS as usize).min(fcap),
            THREADS,
            &mut a_fin,
        )
    }
}

/// For each of the `count` values of the row-major `[count]` `values`, the insertion point
/// in the row-major `[m]` `sorted`, into the row-major `[count]` `out`.
pub(crate) fn searchsorted<T: Element>(
    gpu: &Gpu,
    sorted: &TensorView<'_, T, Gpu>,
    values: &TensorView<'_, T, Gpu>,
    right: bool,
    out: &mut TensorViewMut<'_, i64, Gpu>,
) -> Result<()> {
    const OP: &str = "searchsorted";
    let (m, count) = (sorted.numel(), values.numel());
    check_rows(OP, sorted.layout(), &[m])?;
    check_rows(OP, values.layout(), &[count])?;
    check_rows(OP, out.layout(), &[count])?;
    if count == 0 {
        return Ok(());
    }
    let stream = gpu.default_stream();
    let size = size_of::<T>();
    // An empty sequence is never read (the search loop does not run): any address will do.
    let s_addr = address(
        OP,
        sorted.storage().device_ptr(),
        sorted.layout().offset(),
        size,
    )?;
    let v_addr = address(
        OP,
        values.storage().device_ptr(),
        values.layout().offset(),
        size,
    )?;
    sorted.storage().access_read(OP, stream)?;
    values.storage().access_read(OP, stream)?;
    let o_off = out.layout().offset();
    let os = out.slice_mut();
    os.access_write(OP, stream)?;
    let o_addr = address(OP, os.device_ptr_mut(), o_off, 8)?;
    let (k, cap) = kernel::<T>(gpu, SortForm::Search)?;
    let mut args = Args::default()
        .ptr(s_addr)
        .ll(OP, m)?
        .ptr(v_addr)
        .ll(OP, count)?
        .ptr(o_addr)
        .int(right)
        .done();
    // SAFETY: the arguments are `ts_searchsorted`'s; `sorted` and `values` address live
    // row-major layouts of `m` and `count` elements within their storages, `out` an
    // exclusively borrowed row-major `[count]` layout, ordered on `stream`; the kernel reads
    // `seq[mid]` for `mid < m` and `vals[e]`, and writes `out[e]`, for `e < count`.
    unsafe {
        launch(
            stream,
            &k,
            count.div_ceil(THREADS as usize).min(cap),
            THREADS,
            &mut args,
        )
    }
}

/// Queues `kernel` on `stream` with `grid` blocks of `threads`.
///
/// # Safety
/// `args` are the entry point's parameters in order and size, and every address in them is
/// valid for the accesses the kernel makes until it has run on `stream`.
unsafe fn launch(
    stream: &Stream,
    kernel: &LoadedKernel,
    grid: usize,
    threads: u32,
    args: &mut LaunchArgs,
) -> Result<()> {
    let grid = u32::try_from(grid.max(1)).unwrap_or(i32::MAX as u32);
    // SAFETY: forwarded from this function's contract; the function was loaded in the
    // context of the storages' GPU (`access_read` / `access_write` checked `stream` belongs
    // to it); `threads` is at most the kernels' __launch_bounds__ (TS_SORT_THREADS).
    unsafe { launch_kernel(stream.cuda(), kernel, (grid, 1, 1), (threads, 1, 1), args) }
}
