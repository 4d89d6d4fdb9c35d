//! Reduction launches over [`GpuStorage`]: geometry, plan, kernel lookup, argument packing,
//! stream order and the driver call. The `unsafe` of the reduction engine is here.
//!
//! Stream order is the pointwise launches' (docs/STREAMS.md): the input is asked for
//! `access_read` and the output for `access_write` on the launch stream right before the
//! kernels are queued, so a reduction on any stream reads the input after its last write and
//! the output's later readers wait for it. A split reduction's partial accumulators are a
//! fresh buffer allocated on the launch stream, written by the first launch and read by the
//! second on that same stream, and freed in stream order after them.

use std::sync::Arc;

use cudarc::driver::CudaContext;

use crate::element::Element;
use crate::engine_gpu::kernel::args::{KernelArgs, LaunchArgs};
use crate::engine_gpu::kernel::cache::{KernelFront, LoadedKernel};
use crate::engine_gpu::kernel::form::IndexWidth;
use crate::engine_gpu::kernel::launch::launch_kernel;
use crate::engine_gpu::offset_calculator::OffsetCalculator;
use crate::error::{Error, GpuError, LayoutError};
use crate::layout::reduce::ReduceGeometry;
use crate::layout::Layout;
use crate::ops::reduce::Reduction;
use crate::runtime::{GpuStorage, Stream};

use super::plan::{self, LaunchShape, RedForm, MAX_THREADS};
use super::source::ReduceSpec;

/// The reduction kernels loaded so far, by device and spec.
static KERNELS: KernelFront<ReduceSpec> = KernelFront::new();

/// The kernel of `spec` loaded in `ctx` (compiled once per process and machine), and how
/// many of its threads the device keeps resident (resident blocks of [`MAX_THREADS`]
/// threads, times [`MAX_THREADS`]).
fn kernel(
    ctx: &Arc<CudaContext>,
    spec: &ReduceSpec,
) -> Result<(Arc<LoadedKernel>, usize), GpuError> {
    let kernel = KERNELS.kernel(ctx, spec, spec)?;
    let resident = (kernel.max_blocks as usize).saturating_mul(MAX_THREADS as usize);
    Ok((kernel, resident))
}

/// A kernel's parameters as they are packed.
#[derive(Default)]
struct Params(KernelArgs);

impl Params {
    fn push(&mut self, bytes: &[u8]) {
        self.0.push(bytes);
    }

    fn index(&mut self, width: IndexWidth, v: usize) -> Result<(), LayoutError> {
        match width {
            IndexWidth::Bits32 => {
                // The plan chose 32 bits only for values that fit.
                let v = u32::try_from(v).map_err(|_| overflow("a count past 32 bits"))?;
                self.push(&v.to_le_bytes());
            }
            IndexWidth::Bits64 => self.push(&(v as u64).to_le_bytes()),
        }
        Ok(())
    }
}

fn overflow(what: &'static str) -> LayoutError {
    LayoutError::SizeOverflow {
        op: "reduce (GPU)",
        shape: vec![],
        what,
    }
}

/// The byte image of an `OffsetCalculator<N, 2>` over `shape` with two operands' strides,
/// and its `N`. Ranks up to 16 are padded with outer size-1 dims to a power of two (which
/// move no offset: the calculator stores stride 0 for them), so that launches of nearby
/// ranks share a kernel: 1, 2, 4, 8 or 16 dims, at a divmod by 1 per padded dim.
fn calc(
    width: IndexWidth,
    shape: &[usize],
    a: &[isize],
    b: &[isize],
) -> Result<(usize, Vec<u8>), LayoutError> {
    let rank = shape.len().max(1);
    let pad = if rank <= 16 {
        rank.next_power_of_two() - shape.len()
    } else {
        0
    };
    let padded = |xs: &[isize]| -> Vec<isize> {
        std::iter::repeat_n(0, pad)
            .chain(xs.iter().copied())
            .collect()
    };
    let sizes: Vec<usize> = std::iter::repeat_n(1, pad)
        .chain(shape.iter().copied())
        .collect();
    let (a, b) = (padded(a), padded(b));
    Ok(match width {
        IndexWidth::Bits32 => {
            let c = OffsetCalculator::<u32, 2>::new(&sizes, [&a, &b])?;
            (c.ndims(), c.kernel_param_bytes())
        }
        IndexWidth::Bits64 => {
            let c = OffsetCalculator::<u64, 2>::new(&sizes, [&a, &b])?;
            (c.ndims(), c.kernel_param_bytes())
        }
    })
}

/// The byte address of element `offset` of a buffer at `ptr`.
fn address(ptr: u64, offset: usize, size: usize) -> Result<u64, LayoutError> {
    (offset as u64)
        .checked_mul(size as u64)
        .and_then(|b| b.checked_add(ptr))
        .ok_or_else(|| overflow("device address"))
}

/// One launch: the kernel, its shape and its frozen parameters (the buffer addresses patched
/// in once allocated: slots [`IN`], [`OUT`], [`PARTIAL`]).
struct Launch {
    kernel: Arc<LoadedKernel>,
    shape: LaunchShape,
    args: LaunchArgs,
}

/// Parameter slots of the input, output and partial-accumulator addresses.
const IN: usize = 0;
const OUT: usize = 1;
const PARTIAL: usize = 2;

impl Launch {
    /// Puts `addr` into pointer slot `slot`.
    fn set(&self, slot: usize, addr: u64) -> Result<(), LayoutError> {
        if self.args.set_word(slot, addr, 8) {
            Ok(())
        } else {
            Err(overflow("a parameter slot"))
        }
    }
}

/// Reduces `src` (viewed through `src_layout`) over `dims` with `op` into `dst` (viewed
/// through `dst_layout`), on `stream`: the GPU side of
/// [`Backend::reduce`](crate::tensor::Backend::reduce).
///
/// # Errors
/// The geometry's [`LayoutError`]s; [`LayoutError`] when a view reaches outside its storage
/// or the output overlaps itself; [`GpuError`] when a storage lives on another GPU than
/// `stream`, or a kernel cannot be compiled or launched.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce<T: Element, R: Reduction<T>>(
    stream: &Stream,
    _op: R,
    src: &GpuStorage<T>,
    src_layout: &Layout,
    dims: &[usize],
    dst: &mut GpuStorage<R::Output>,
    dst_layout: &Layout,
) -> Result<(), Error> {
    let kind = R::KIND;
    let name = kind.name();
    let g = ReduceGeometry::new(
        name,
        src_layout,
        dims,
        dst_layout,
        !kind.has_identity(),
        kind.is_arg(),
    )?;
    src_layout.check_within(name, src.len())?;
    dst_layout.check_within(name, dst.len())?;
    dst_layout.check_writable(name)?;
    if g.num_out == 0 {
        return Ok(());
    }
    let gpu = src.gpu();
    let ctx = gpu.context();
    let in_size = std::mem::size_of::<T>();
    let out_size = std::mem::size_of::<R::Output>();
    let acc_size = R::CUDA_ACC_SIZE;
    let in_first = address(src.device_ptr(), g.input_offset, in_size)?;

    // The first (or only) pass.
    let form = plan::choose_form(&g, in_size, acc_size, in_first);
    let kept_sizes: Vec<usize> = g.kept.iter().map(|d| d.size).collect();
    let kept_in: Vec<isize> = g.kept.iter().map(|d| d.input).collect();
    let kept_out: Vec<isize> = g.kept.iter().map(|d| d.output).collect();
    let red_sizes: Vec<usize> = g.reduced.iter().map(|d| d.size).collect();
    let red_in: Vec<isize> = g.reduced.iter().map(|d| d.input).collect();
    let red_log: Vec<isize> = g.reduced.iter().map(|d| d.logical).collect();
    // The index width may depend on the splits, which depend on the kernel's occupancy:
    // plan at 32 bits, and replan at 64 if the shape needs it.
    let mut width = plan::index_width(&g, 1);
    let (first, splits) = loop {
        let (nk, kept_calc) = calc(width, &kept_sizes, &kept_in, &kept_out)?;
        let (nr, red_calc) = calc(width, &red_sizes, &red_in, &red_log)?;
        let spec = ReduceSpec::of::<T, R>(form, nk, nr, width);
        let (kernel, resident_threads) = kernel(ctx, &spec)?;
        let shape = plan::launch_shape(form, &g, resident_threads);
        let splits = shape.splits();
        let needed = plan::index_width(&g, splits);
        if needed != width {
            width = needed;
            continue;
        }
        let mut params = Params::default();
        params.push(&in_first.to_le_bytes());
        // Output and partial pointers are patched in below, once allocated.
        params.push(&0u64.to_le_bytes());
        params.push(&0u64.to_le_bytes());
        params.index(width, g.num_out)?;
        params.index(width, g.red_n)?;
        params.index(width, shape.chunk)?;
        params.push(&g.logical_offset.to_le_bytes());
        params.push(&(g.red_n as f64).to_le_bytes());
        params.push(&kept_calc);
        params.push(&red_calc);
        break (
            Launch {
                kernel,
                shape,
                args: LaunchArgs::new(params.0),
            },
            splits,
        );
    };

    // The second pass, over `splits` partial accumulators per output.
    let second = if splits > 1 {
        let partial_len = splits
            .checked_mul(g.num_out)
            .ok_or_else(|| overflow("partial results"))?;
        let contiguous = Layout::contiguous(&kept_sizes)?;
        let (nk, kept_calc) = calc(width, &kept_sizes, contiguous.strides(), &kept_out)?;
        // num_out <= isize::MAX: it counts elements of a valid layout.
        let stride = isize::try_from(g.num_out).map_err(|_| overflow("partial results"))?;
        let (nr, red_calc) = calc(width, &[splits], &[stride], &[0])?;
        let form = RedForm::Col {
            ovec: 1,
            from_acc: true,
        };
        let spec = ReduceSpec::of::<T, R>(form, nk, nr, width);
        let (kernel, _) = kernel(ctx, &spec)?;
        let shape = plan::second_pass(g.num_out, splits);
        let mut params = Params::default();
        // Input (the partials) and output are patched in below.
        params.push(&0u64.to_le_bytes());
        params.push(&0u64.to_le_bytes());
        params.push(&0u64.to_le_bytes());
        params.index(width, g.num_out)?;
        params.index(width, splits)?;
        params.index(width, shape.chunk)?;
        params.push(&0i64.to_le_bytes());
        params.push(&(g.red_n as f64).to_le_bytes());
        params.push(&kept_calc);
        params.push(&red_calc);
        Some((
            Launch {
                kernel,
                shape,
                args: LaunchArgs::new(params.0),
            },
            partial_len,
        ))
    } else {
        None
    };

    // Stream order, then the launches (nothing above queued work).
    src.access_read(name, stream)?;
    dst.access_write(name, stream)?;
    let out_first = address(dst.device_ptr_mut(), g.output_offset, out_size)?;
    match second {
        None => {
            let mut first = first;
            first.set(OUT, out_first)?;
            // SAFETY: see `launch`; one pass, so the kernel writes `dst`'s elements and no
            // partials (gridDim.y == 1).
            unsafe { launch(stream, &mut first) }
        }
        Some((mut second, partial_len)) => {
            let bytes = partial_len
                .checked_mul(acc_size)
                .ok_or_else(|| overflow("partial results"))?;
            // SAFETY: the first launch below writes every partial accumulator (each of its
            // `splits` chunks of every output writes its slot `split * num_out + o`) before
            // the second, queued after it on the same stream, reads any; nothing else reads
            // the buffer, and it is never copied to the host.
            let mut partials = unsafe { GpuStorage::<u8>::uninit(gpu, bytes, stream) }?;
            partials.access_write(name, stream)?;
            let p = partials.device_ptr_mut();
            let mut first = first;
            first.set(PARTIAL, p)?;
            // SAFETY: see `launch`; the first pass writes only partials (gridDim.y > 1).
            unsafe { launch(stream, &mut first) }?;
            second.set(IN, p)?;
            second.set(OUT, out_first)?;
            // SAFETY: see `launch`; the second pass reads the partials the first wrote (same
            // stream, queued after it) and writes `dst`'s elements.
            unsafe { launch(stream, &mut second) }
        }
    }
}

/// Queues `l` on `stream`.
///
/// # Safety
/// `l.args` are the parameters of `l.kernel`'s entry point, in order and of the declared
/// sizes, and every address in them is valid for the accesses the kernel makes until it has
/// run on `stream`: the input pointer addresses element `input_offset` of a live storage
/// whose view, mapped by the calculators in the parameters (made from a [`ReduceGeometry`] of
/// layouts checked within their storages), reaches only its elements; the output pointer
/// addresses element `output_offset` of a live, exclusively borrowed storage that no other
/// queued work on another stream touches while the kernel runs (stream order), whose
/// non-overlapping view the calculators map each output to once; the partial pointer, when
/// the grid has more than one split, addresses `splits * num_out` accumulators.
unsafe fn launch(stream: &Stream, l: &mut Launch) -> Result<(), Error> {
    // SAFETY: forwarded from this function's contract. The function was loaded in the
    // context of the storages' GPU, which `access_read` and `access_write` checked `stream`
    // belongs to. The block has at most MAX_THREADS threads (the kernels' __launch_bounds__),
    // the grid at most i32::MAX x 65535 blocks. The kernel is launched in full stream order
    // (`ReduceSpec` does not wait for its predecessor, so `pdl` is false).
    unsafe {
        launch_kernel(
            stream.cuda(),
            &l.kernel,
            (l.shape.grid.0, l.shape.grid.1, 1),
            (l.shape.block.0, l.shape.block.1, 1),
            &mut l.args,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calculators_pad_to_power_of_two_ranks() {
        let w = IndexWidth::Bits32;
        assert_eq!(calc(w, &[], &[], &[]).unwrap().0, 1);
        assert_eq!(calc(w, &[3], &[1], &[1]).unwrap().0, 1);
        assert_eq!(calc(w, &[3, 4, 5], &[20, 5, 1], &[0, 0, 1]).unwrap().0, 4);
        // The padded calculator maps like the unpadded one.
        let (_, bytes) = calc(w, &[3, 4, 5], &[20, 5, 1], &[1, 3, 12]).unwrap();
        let plain = OffsetCalculator::<u32, 2>::new(
            &[1, 3, 4, 5],
            [&[0, 20, 5, 1][..], &[0, 1, 3, 12][..]],
        )
        .unwrap();
        assert_eq!(bytes, plain.kernel_param_bytes());
        assert_eq!(plain.offsets(59), Some([59, 2 + 9 + 48]));
    }

    #[test]
    fn parameters_sit_at_aligned_slots() {
        let mut p = Params::default();
        p.push(&7u64.to_le_bytes());
        p.index(IndexWidth::Bits32, 5).unwrap();
        p.push(&[1u8; 20]);
        let ptrs = p.0.pointers();
        assert_eq!(ptrs.len(), 3);
        assert!(ptrs.iter().all(|q| (*q as usize).is_multiple_of(8)));
        assert_eq!(p.0.param(1).unwrap(), 5u32.to_le_bytes());
        assert!(p.index(IndexWidth::Bits32, 1 << 40).is_err());
    }
}
