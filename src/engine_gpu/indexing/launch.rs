//! Gather and scatter launches over GPU views: shape checks, the offset calculator, kernel
//! lookup, argument packing, stream order and the driver call. The `unsafe` of the indexing
//! engine is here.
//!
//! Stream order is the reductions' (docs/STREAMS.md): the inputs are asked for `access_read`
//! and the destination for `access_write` on the device's default stream right before the
//! kernel is queued.

use std::sync::Arc;

use crate::element::Element;
use crate::engine_gpu::kernel::args::{KernelArgs, LaunchArgs, ScalarBytes};
use crate::engine_gpu::kernel::cache::{KernelFront, LoadedKernel};
use crate::engine_gpu::kernel::form::IndexWidth;
use crate::engine_gpu::kernel::launch::launch_kernel;
use crate::engine_gpu::kernel::source::Operand;
use crate::engine_gpu::offset_calculator::OffsetCalculator;
use crate::error::{LayoutError, Result};
use crate::layout::Layout;
use crate::runtime::{Gpu, GpuStorage, Stream};
use crate::tensor::indexing::{GatherJob, IndexElement, ScatterJob, ScatterReduce};
use crate::tensor::{TensorView, TensorViewMut};

use super::source::{IndexKind, IndexSpec, THREADS};

/// The indexing kernels loaded so far, by device and spec.
static KERNELS: KernelFront<IndexSpec> = KernelFront::new();

fn overflow(op: &'static str, what: &'static str) -> crate::Error {
    LayoutError::SizeOverflow {
        op,
        shape: vec![],
        what,
    }
    .into()
}

fn bad_job(op: &'static str, expected: &[usize], got: &[usize]) -> crate::Error {
    LayoutError::ShapeMismatch {
        op,
        expected: expected.to_vec(),
        got: got.to_vec(),
    }
    .into()
}

/// The farthest offset `layout` reaches from its first element.
fn extent(layout: &Layout) -> usize {
    layout
        .shape()
        .iter()
        .zip(layout.strides())
        .map(|(&n, &s)| n.saturating_sub(1).saturating_mul(s.unsigned_abs()))
        .fold(0usize, usize::saturating_add)
}

/// The byte address of element `offset` of a buffer at `ptr`.
fn address(op: &'static str, ptr: u64, offset: usize, size: usize) -> Result<u64> {
    (offset as u64)
        .checked_mul(size as u64)
        .and_then(|b| b.checked_add(ptr))
        .ok_or_else(|| overflow(op, "device address"))
}

/// The width, the calculator's dims and its byte image over `shape` with three operands.
fn calc(
    numel: usize,
    max_extent: usize,
    shape: &[usize],
    strides: [&[isize]; 3],
) -> Result<(IndexWidth, usize, Vec<u8>)> {
    let width = IndexWidth::for_extent(numel, max_extent);
    Ok(match width {
        IndexWidth::Bits32 => {
            let c = OffsetCalculator::<u32, 3>::new(shape, strides)?;
            (width, c.ndims(), c.kernel_param_bytes())
        }
        IndexWidth::Bits64 => {
            let c = OffsetCalculator::<u64, 3>::new(shape, strides)?;
            (width, c.ndims(), c.kernel_param_bytes())
        }
    })
}

fn push_index(p: &mut KernelArgs, width: IndexWidth, v: usize) -> Result<()> {
    match width {
        IndexWidth::Bits32 => {
            let v = u32::try_from(v).map_err(|_| overflow("gather (GPU)", "a count"))?;
            p.push(&v.to_le_bytes());
        }
        IndexWidth::Bits64 => p.push(&(v as u64).to_le_bytes()),
    }
    Ok(())
}

/// The spec of a kernel of `kind` moving `unit` bytes per position of a `dims`-dim
/// calculator.
fn spec_of(
    op: &'static str,
    kind: IndexKind,
    elem: Operand,
    index_type: Operand,
    (dims, width): (usize, IndexWidth),
    unit: usize,
) -> Result<IndexSpec> {
    Ok(IndexSpec {
        kind,
        elem,
        index_type,
        dims: u8::try_from(dims).map_err(|_| overflow(op, "rank"))?,
        width,
        unit: u8::try_from(unit).map_err(|_| overflow(op, "element size"))?,
    })
}

/// The kernel of `spec` on `gpu` and its grid for `n` positions. A gather moving words
/// ([`IndexSpec::covers_in_one_pass`]) gets enough blocks to cover them in one pass, four
/// words a thread, as the pointwise engine's launches do: 2890 against 2734 GB/s for
/// `index_select` of 2^20 rows of 1024 `f32` on the H100 (1.02x PyTorch, from 0.96x). Every
/// other kernel keeps a grid capped at the resident blocks and loops over the rest: the
/// element-form gather along the last dim measured slower with a full grid (2394 against
/// 2614 GB/s), the random source reads of nearby rows staying in cache when fewer blocks
/// sweep the tensor.
fn kernel_and_grid(gpu: &Gpu, spec: &IndexSpec, n: usize) -> Result<(Arc<LoadedKernel>, u32)> {
    let kernel = KERNELS.kernel(gpu.context(), spec, spec)?;
    let blocks = if spec.covers_in_one_pass() {
        n.div_ceil(THREADS as usize * 4).max(1)
    } else {
        n.div_ceil(THREADS as usize)
            .max(1)
            .min((kernel.max_blocks as usize).max(1))
    };
    // The kernels loop over positions past the grid, so clamping to the driver's limit of
    // 2^31 - 1 blocks stays correct.
    let grid = u32::try_from(blocks.min(i32::MAX as usize)).unwrap_or(1);
    Ok((kernel, grid))
}

/// A kernel's report of an out-of-range index (`ts_idx_report`): two `u64` on the device, a
/// flag and the value, zeroed on the launch stream.
struct BadIndex(GpuStorage<u64>);

impl BadIndex {
    fn new(gpu: &Gpu, op: &'static str, stream: &Stream) -> Result<Self> {
        let mut words = GpuStorage::<u64>::zeros(gpu, 2, stream)?;
        words.access_write(op, stream)?;
        Ok(BadIndex(words))
    }

    /// The device address for the kernel's argument.
    fn ptr(&mut self) -> u64 {
        self.0.device_ptr_mut()
    }

    /// Reads the report back after the kernel (one synchronisation, the price of a typed
    /// error): `IndexOutOfRange` naming the value when the kernel met one.
    fn read(self, stream: &Stream, op: &'static str, dim: usize, size: usize) -> Result<()> {
        let report = self.0.to_vec(stream)?;
        if report.first() == Some(&0) {
            return Ok(());
        }
        Err(LayoutError::IndexOutOfRange {
            op,
            index: report.get(1).map_or(0, |&v| v as i64),
            dim,
            size,
        }
        .into())
    }
}

/// Queues `kernel` on `stream` with `grid` blocks of [`THREADS`].
///
/// # Safety
/// `args` are the entry point's parameters in order and size, every address in them valid
/// for the kernel's accesses until it has run on `stream`, and stream order registered for
/// each storage it touches.
unsafe fn queue(
    stream: &Stream,
    kernel: &LoadedKernel,
    grid: u32,
    args: &mut LaunchArgs,
) -> Result<()> {
    // SAFETY: forwarded from this function's contract; the kernel was loaded in the context
    // of the storages' GPU (`access_*` checked `stream` belongs to it); THREADS is its
    // `__launch_bounds__`.
    unsafe { launch_kernel(stream.cuda(), kernel, (grid, 1, 1), (THREADS, 1, 1), args) }
}

/// A gather's shape and its destination's and source's strides, in elements, with the
/// source's step along the gathered dim.
struct Words<'a> {
    shape: Vec<usize>,
    dst_strides: &'a mut [isize],
    src_strides: &'a mut [isize],
    index_strides: &'a [isize],
    step: isize,
}

impl Words<'_> {
    /// The widest word (16, 8 or 4 bytes, or the element's own `es`) whose copies move the
    /// same bytes as the element-wise gather, with the shape and strides rescaled to it.
    ///
    /// A word may cover several elements when the innermost dim is not the gathered one, is
    /// contiguous in the destination and the source and takes one index for its whole run
    /// (index stride 0): every element of the run comes from the same source row. Every
    /// other stride, the step, the run's length in bytes and both base addresses (`ptrs`)
    /// must then be multiples of the word, so each word is one aligned load and store.
    fn widen(&mut self, es: usize, dim: usize, ptrs: [u64; 2]) -> usize {
        let Some(last) = self.shape.len().checked_sub(1) else {
            return es;
        };
        let run = self.dst_strides[last] == 1
            && self.src_strides[last] == 1
            && self.index_strides[last] == 0
            && last != dim;
        if !run {
            return es;
        }
        let fits = |w: usize| {
            let bytes = |s: isize| (s.unsigned_abs() * es).is_multiple_of(w);
            (self.shape[last] * es).is_multiple_of(w)
                && bytes(self.step)
                && ptrs.iter().all(|&p| p.is_multiple_of(w as u64))
                && (0..last).all(|d| bytes(self.dst_strides[d]) && bytes(self.src_strides[d]))
        };
        let Some(w) = [16, 8, 4].into_iter().find(|&w| w > es && fits(w)) else {
            return es;
        };
        let per = (w / es) as isize;
        self.shape[last] /= w / es;
        for d in 0..last {
            self.dst_strides[d] /= per;
            self.src_strides[d] /= per;
        }
        self.step /= per;
        w
    }
}

/// Queues a gather (see [`GatherJob`]) into `dst` on `gpu`'s default stream.
pub(crate) fn gather<T: Element, I: IndexElement>(
    gpu: &Gpu,
    job: &GatherJob<'_, T, I, Gpu>,
    dst: &mut TensorViewMut<'_, T, Gpu>,
) -> Result<()> {
    let op = job.op;
    let (src, index, dim) = (&job.src, &job.index, job.dim);
    let shape = dst.shape().to_vec();
    let fits = index.shape() == shape.as_slice()
        && src.rank() == shape.len()
        && dim < shape.len()
        && (0..shape.len()).all(|d| d == dim || src.shape()[d] == shape[d]);
    if !fits {
        return Err(bad_job(op, &shape, index.shape()));
    }
    src.layout().check_within(op, src.storage().len())?;
    index.layout().check_within(op, index.storage().len())?;
    dst.layout().check_within(op, dst.storage().len())?;
    dst.layout().check_writable(op)?;
    let n = dst.numel();
    if n == 0 {
        return Ok(());
    }
    let mut src_strides = src.strides().to_vec();
    let step = src_strides[dim];
    src_strides[dim] = 0;
    let max_extent = extent(src.layout())
        .max(extent(index.layout()))
        .max(extent(dst.layout()));
    let mut dst_strides = dst.strides().to_vec();
    let (es, is) = (std::mem::size_of::<T>(), std::mem::size_of::<I>());
    let src_ptr = address(op, src.storage().device_ptr(), src.layout().offset(), es)?;
    let idx_ptr = address(
        op,
        index.storage().device_ptr(),
        index.layout().offset(),
        is,
    )?;
    let dst_offset = dst.layout().offset();
    let out_ptr = address(op, dst.slice_mut().device_ptr_mut(), dst_offset, es)?;
    let mut words = Words {
        shape,
        dst_strides: &mut dst_strides,
        src_strides: &mut src_strides,
        index_strides: index.strides(),
        step,
    };
    let unit = words.widen(es, dim, [out_ptr, src_ptr]);
    let Words { shape, step, .. } = words;
    let n = n / (unit / es);
    let (width, dims, calc_bytes) = calc(
        n,
        max_extent,
        &shape,
        [&dst_strides, index.strides(), &src_strides],
    )?;
    let spec = spec_of(
        op,
        IndexKind::Gather,
        Operand::of::<T>(),
        Operand::of::<I>(),
        (dims, width),
        unit,
    )?;
    let (kernel, grid) = kernel_and_grid(gpu, &spec, n)?;
    let stream = gpu.default_stream();
    let mut bad = BadIndex::new(gpu, op, stream)?;
    let bad_ptr = bad.ptr();
    src.storage().access_read(op, stream)?;
    index.storage().access_read(op, stream)?;
    dst.slice_mut().access_write(op, stream)?;
    let mut p = KernelArgs::default();
    p.push(&out_ptr.to_le_bytes());
    p.push(&src_ptr.to_le_bytes());
    p.push(&idx_ptr.to_le_bytes());
    push_index(&mut p, width, n)?;
    p.push(&(src.shape()[dim] as i64).to_le_bytes());
    p.push(&(step as i64).to_le_bytes());
    p.push(&i32::from(job.wrap).to_le_bytes());
    p.push(&calc_bytes);
    p.push(&bad_ptr.to_le_bytes());
    let mut args = LaunchArgs::new(p);
    // SAFETY: `args` are the entry point's parameters in order and of its declared sizes
    // (`IndexSpec::tail`); `bad` is two live `u64` this kernel alone writes (ordered above).
    // The three pointers address the first elements of the views, whose
    // layouts were checked within their live storages above (moved as `unit`-byte words, the
    // shape and strides are the same bytes counted in words: `Words::widen`); the calculator maps each of the
    // `n` positions to offsets inside the destination's (non-overlapping, exclusively
    // borrowed) layout, the index's, and the source's with its `dim` held at 0, to which the
    // kernel adds `v * step` only for `0 <= v < size` (`ts_idx_resolve`), a position of the
    // source's layout. Stream order: the reads and the write were registered on `stream`,
    // the stream the kernel is queued on, of the storages' GPU (checked by `access_*`).
    unsafe { queue(stream, &kernel, grid, &mut args) }?;
    // The destination is fully written either way; the tensor layer drops it on an error.
    bad.read(stream, op, dim, src.shape()[dim])
}

/// Checks every value of `index` against `[0, size)` (`[-size, size)` with `wrap`) with one
/// kernel (`ts_idx_check`) and one read-back of its report: `LayoutError::IndexOutOfRange`
/// naming the first value out of range it met. Broadcast dims are read once.
pub(crate) fn check<I: IndexElement>(
    gpu: &Gpu,
    op: &'static str,
    index: &TensorView<'_, I, Gpu>,
    dim: usize,
    size: usize,
    wrap: bool,
) -> Result<()> {
    index.layout().check_within(op, index.storage().len())?;
    let shape: Vec<usize> = index
        .shape()
        .iter()
        .zip(index.strides())
        .map(|(&n, &s)| if s == 0 { n.min(1) } else { n })
        .collect();
    let n: usize = shape.iter().product();
    if n == 0 {
        return Ok(());
    }
    let width = IndexWidth::for_extent(n, extent(index.layout()));
    let (dims, calc_bytes) = match width {
        IndexWidth::Bits32 => {
            let c = OffsetCalculator::<u32, 1>::new(&shape, [index.strides()])?;
            (c.ndims(), c.kernel_param_bytes())
        }
        IndexWidth::Bits64 => {
            let c = OffsetCalculator::<u64, 1>::new(&shape, [index.strides()])?;
            (c.ndims(), c.kernel_param_bytes())
        }
    };
    let spec = spec_of(
        op,
        IndexKind::Check,
        Operand::of::<I>(),
        Operand::of::<I>(),
        (dims, width),
        size_of::<I>(),
    )?;
    let (kernel, grid) = kernel_and_grid(gpu, &spec, n)?;
    let stream = gpu.default_stream();
    let mut bad = BadIndex::new(gpu, op, stream)?;
    index.storage().access_read(op, stream)?;
    let idx_ptr = address(
        op,
        index.storage().device_ptr(),
        index.layout().offset(),
        size_of::<I>(),
    )?;
    let mut p = KernelArgs::default();
    p.push(&idx_ptr.to_le_bytes());
    push_index(&mut p, width, n)?;
    p.push(&(size as i64).to_le_bytes());
    p.push(&i32::from(wrap).to_le_bytes());
    p.push(&calc_bytes);
    p.push(&bad.ptr().to_le_bytes());
    let mut args = LaunchArgs::new(p);
    // SAFETY: `args` are the entry point's parameters in order and size (`IndexSpec::tail`,
    // the check form). The calculator maps each of the `n` positions of the index's layout
    // (broadcast dims kept at one position) inside it, checked within its live storage above;
    // the kernel only reads those and writes the two `u64` of `bad`, which nothing else
    // uses. Stream order: the read and the write registered on `stream` above.
    unsafe { queue(stream, &kernel, grid, &mut args) }?;
    bad.read(stream, op, dim, size)
}

/// Queues a scatter (see [`ScatterJob`]) with reduction `reduce` into `dst` on `gpu`'s
/// default stream. A job not `range_checked` has the kernel report the first out-of-range
/// index it meets, read back after it (one synchronisation) as
/// `LayoutError::IndexOutOfRange`; `dst` is then partly written.
pub(crate) fn scatter<T: Element, I: IndexElement>(
    gpu: &Gpu,
    job: &ScatterJob<'_, T, I, Gpu>,
    reduce: ScatterReduce,
    dst: &mut TensorViewMut<'_, T, Gpu>,
) -> Result<()> {
    let op = job.op;
    let (index, dim) = (&job.index, job.dim);
    let shape = index.shape().to_vec();
    let fits = shape.len() == dst.rank()
        && dim < shape.len()
        && (0..shape.len()).all(|d| d == dim || shape[d] <= dst.shape()[d])
        && job
            .src
            .as_ref()
            .is_none_or(|s| s.shape() == shape.as_slice());
    if !fits {
        return Err(bad_job(op, dst.shape(), &shape));
    }
    let k: u8 = match reduce {
        ScatterReduce::Assign => 0,
        ScatterReduce::Sum => 1,
        ScatterReduce::Prod => 2,
        ScatterReduce::Amax => 3,
        ScatterReduce::Amin => 4,
        ScatterReduce::Mean => return Err(bad_job(op, &[], &[])),
    };
    index.layout().check_within(op, index.storage().len())?;
    if let Some(s) = &job.src {
        s.layout().check_within(op, s.storage().len())?;
    }
    dst.layout().check_within(op, dst.storage().len())?;
    dst.layout().check_writable(op)?;
    let n = index.numel();
    if n == 0 {
        return Ok(());
    }
    let zeros = vec![0isize; shape.len()];
    let src_strides = job.src.as_ref().map_or(&zeros[..], |s| s.strides());
    let mut dst_strides = dst.strides().to_vec();
    let step = dst_strides[dim];
    dst_strides[dim] = 0;
    let max_extent = extent(index.layout())
        .max(job.src.as_ref().map_or(0, |s| extent(s.layout())))
        .max(extent(dst.layout()));
    let (width, dims, calc_bytes) = calc(
        n,
        max_extent,
        &shape,
        [index.strides(), src_strides, &dst_strides],
    )?;
    let spec = spec_of(
        op,
        IndexKind::Scatter(k),
        Operand::of::<T>(),
        Operand::of::<I>(),
        (dims, width),
        size_of::<T>(),
    )?;
    let (kernel, grid) = kernel_and_grid(gpu, &spec, n)?;
    let stream = gpu.default_stream();
    let (es, is) = (std::mem::size_of::<T>(), std::mem::size_of::<I>());
    index.storage().access_read(op, stream)?;
    let src_ptr = match &job.src {
        Some(s) => {
            s.storage().access_read(op, stream)?;
            address(op, s.storage().device_ptr(), s.layout().offset(), es)?
        }
        None => 0,
    };
    let idx_ptr = address(
        op,
        index.storage().device_ptr(),
        index.layout().offset(),
        is,
    )?;
    let dst_offset = dst.layout().offset();
    let size = dst.shape()[dim];
    let out = dst.slice_mut();
    out.access_write(op, stream)?;
    let out_ptr = address(op, out.device_ptr_mut(), dst_offset, es)?;
    let mut p = KernelArgs::default();
    p.push(&out_ptr.to_le_bytes());
    p.push(&src_ptr.to_le_bytes());
    p.push(ScalarBytes::of(job.value).as_bytes());
    p.push(&idx_ptr.to_le_bytes());
    push_index(&mut p, width, n)?;
    p.push(&(size as i64).to_le_bytes());
    p.push(&(step as i64).to_le_bytes());
    p.push(&i32::from(job.wrap).to_le_bytes());
    p.push(&i32::from(job.src.is_some()).to_le_bytes());
    p.push(&calc_bytes);
    // An unchecked job (a destination the op made) has the kernel report a bad index.
    let mut bad = if job.range_checked {
        None
    } else {
        Some(BadIndex::new(gpu, op, stream)?)
    };
    p.push(&bad.as_mut().map_or(0, BadIndex::ptr).to_le_bytes());
    let mut args = LaunchArgs::new(p);
    // SAFETY: as in `gather`: the parameters match the entry point (`IndexSpec::tail`; the
    // scalar in the element's compute type, as `ScalarBytes` writes it); the calculator maps
    // each of the `n` index positions inside the index's and the source's checked layouts
    // (the source pointer is read only when `has_src`, which is set exactly when it is a
    // live storage) and the destination's with its `dim` held at 0, to which the kernel adds
    // `v * step` only for `0 <= v < size`, a position of the destination's layout (the index
    // is no larger than it in every other dim, checked above). Atomics and plain stores touch
    // only those elements (the 16-bit CAS rewrites the neighbouring half of the aligned word
    // unchanged, atomically). `bad`, when given, is two live `u64` only this kernel writes
    // (ordered at its creation); null otherwise, which the kernel never dereferences. Stream
    // order as in `gather`.
    unsafe { queue(stream, &kernel, grid, &mut args) }?;
    match bad {
        // The destination is the op's own, dropped by the tensor layer on an error.
        Some(bad) => bad.read(stream, op, dim, size),
        None => Ok(()),
    }
}
