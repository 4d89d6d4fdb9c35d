//! Normalisation launches: the form of a job (vector width, register chunks, a warp or a
//! block per row), kernel lookup, argument packing, stream order and the driver call. The
//! `unsafe` of the normalisation engine is here.

use crate::element::FloatElement;
use crate::engine_gpu::kernel::args::{KernelArgs, LaunchArgs};
use crate::engine_gpu::kernel::cache::KernelFront;
use crate::engine_gpu::kernel::launch::launch_kernel;
use crate::engine_gpu::kernel::rows::{form, THREADS};
use crate::engine_gpu::kernel::source::Operand;
use crate::error::{Error, LayoutError};
use crate::runtime::Gpu;
use crate::tensor::{TensorView, TensorViewMut};

use super::source::{NormOp, NormSpec};

/// The normalisation kernels loaded so far, by device and spec.
static KERNELS: KernelFront<NormSpec> = KernelFront::new();

/// Most blocks of one launch; rows beyond are covered by the kernels' grid-stride loop.
const MAX_GRID: usize = 1 << 20;

fn overflow(what: &'static str) -> LayoutError {
    LayoutError::SizeOverflow {
        op: "normalize (GPU)",
        shape: vec![],
        what,
    }
}

/// The byte address of element `offset` of a buffer at `ptr`.
fn address(ptr: u64, offset: usize, size: usize) -> Result<u64, LayoutError> {
    (offset as u64)
        .checked_mul(size as u64)
        .and_then(|b| b.checked_add(ptr))
        .ok_or_else(|| overflow("device address"))
}

/// The arguments of one job, checked by the caller (`super`): `src` `[rows, n]`, `dst`
/// row-major `[rows, n]` (row ops) or `[rows]` (statistics), `mean` `[rows]`, `weight` and
/// `bias` `[n]` stride 1.
pub(super) struct Job<'a, 'v, T: FloatElement> {
    pub op: NormOp,
    pub src: &'a TensorView<'v, T, Gpu>,
    pub weight: Option<&'a TensorView<'v, T, Gpu>>,
    pub bias: Option<&'a TensorView<'v, T, Gpu>>,
    pub param: f64,
    pub flags: i32,
}

/// Queues `job` writing `dst` (and `mean`) on the GPU's default stream.
pub(super) fn run<T: FloatElement>(
    gpu: &Gpu,
    job: &Job<'_, '_, T>,
    dst: &mut TensorViewMut<'_, T, Gpu>,
    mean: Option<&mut TensorViewMut<'_, T, Gpu>>,
) -> Result<(), Error> {
    let name = "normalize (GPU)";
    let (rows, n) = (job.src.shape()[0], job.src.shape()[1]);
    let size = std::mem::size_of::<T>();
    let (rs, cs) = (job.src.strides()[0], job.src.strides()[1]);
    job.src
        .layout()
        .check_within(name, job.src.storage().len())?;
    dst.layout().check_within(name, dst.storage().len())?;
    for p in [job.weight, job.bias].into_iter().flatten() {
        p.layout().check_within(name, p.storage().len())?;
    }
    let src_addr = address(
        job.src.storage().device_ptr(),
        job.src.layout().offset(),
        size,
    )?;
    let row_op = matches!(
        job.op,
        NormOp::Softmax | NormOp::LogSoftmax | NormOp::Layer | NormOp::Rms
    );
    let vmax = 16 / size;
    let aligned = |a: u64| a.is_multiple_of(16);
    let dst_first = dst.layout().offset();
    let out_addr = address(dst.slice_mut().device_ptr_mut(), dst_first, size)?;
    // The weight and bias are `[n]` stride 1: read as vectors too when their first element is.
    let mut aux_aligned = true;
    for p in [job.weight, job.bias].into_iter().flatten() {
        aux_aligned &= aligned(address(
            p.storage().device_ptr(),
            p.layout().offset(),
            size,
        )?);
    }
    let vectorised = vmax > 1
        && n.is_multiple_of(vmax)
        && (n <= 1 || cs == 1)
        && (rows <= 1 || rs.rem_euclid(vmax as isize) == 0)
        && aligned(src_addr)
        && (!row_op || aligned(out_addr))
        && aux_aligned;
    let (vec, chunks, warp) = form(n, size, vectorised);
    let spec = NormSpec {
        op: job.op,
        elem: Operand::of::<T>(),
        vec,
        chunks,
        warp,
    };
    let stream = gpu.default_stream();
    let kernel = KERNELS.kernel(gpu.context(), &spec, &spec)?;
    let rows_per_block = if warp { (THREADS / 32) as usize } else { 1 };
    let grid = rows.div_ceil(rows_per_block).clamp(1, MAX_GRID) as u32;

    // Stream order, then the pointers (nothing above queued work).
    job.src.storage().access_read(name, stream)?;
    let mut ptrs = [0u64; 3];
    for (slot, p) in [job.weight, job.bias].into_iter().enumerate() {
        if let Some(p) = p {
            p.storage().access_read(name, stream)?;
            ptrs[slot] = address(p.storage().device_ptr(), p.layout().offset(), size)?;
        }
    }
    let storage = dst.slice_mut();
    storage.access_write(name, stream)?;
    if let Some(mean) = mean {
        let first = mean.layout().offset();
        mean.layout().check_within(name, mean.storage().len())?;
        let m = mean.slice_mut();
        m.access_write(name, stream)?;
        ptrs[2] = address(m.device_ptr_mut(), first, size)?;
    }
    let mut args = KernelArgs::default();
    args.push(&src_addr.to_le_bytes());
    args.push(&out_addr.to_le_bytes());
    args.push(&ptrs[2].to_le_bytes());
    args.push(&ptrs[0].to_le_bytes());
    args.push(&ptrs[1].to_le_bytes());
    let long = |v: usize| i64::try_from(v).map_err(|_| overflow("a count past i64"));
    args.push(&long(rows)?.to_le_bytes());
    args.push(&long(n)?.to_le_bytes());
    args.push(&(rs as i64).to_le_bytes());
    args.push(&(cs as i64).to_le_bytes());
    args.push(&job.param.to_le_bytes());
    args.push(&job.flags.to_le_bytes());
    let mut args = LaunchArgs::new(args);
    // SAFETY: the parameters are the entry point's (`NormSpec::tail`), in order and of the
    // declared sizes. `in` addresses element `offset` of the source's live storage, and the
    // kernel reads only elements `offset + r·rs + j·cs` for `r < rows`, `j < n`: those of
    // the `[rows, n]` layout checked within the storage above (vector loads only where the
    // job is contiguous and aligned, so each covers `VEC` of those elements). `out` addresses
    // the destination's first element; the kernel writes `out[r·n + j]` (row ops) or
    // `out[r]`, the elements of the row-major layout checked within the exclusively borrowed
    // storage (`NormalizeEngine`'s contract gives its shape and strides, checked by the
    // caller); `mean` likewise for `[rows]`, written only with the mean flag, which the
    // caller sets only when it passes a mean. `weight` and `bias` are read at `j < n` of
    // `[n]` stride-1 layouts checked within their storages, only under their flags (as
    // `VEC`-element vectors only in a vectorised job, where their first elements are aligned
    // and `n` is a multiple of `VEC`). Stream
    // order: `access_read` / `access_write` above, on `stream`, whose context loaded the
    // kernel. Blocks of `THREADS` threads (the `__launch_bounds__`); the grid at most 2^20.
    unsafe {
        launch_kernel(
            stream.cuda(),
            &kernel,
            (grid, 1, 1),
            (THREADS, 1, 1),
            &mut args,
        )
    }
}
