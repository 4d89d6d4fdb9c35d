//! The uncached half of a pointwise launch: from the operands' views to a complete
//! [`LaunchPlan`]. Collapse the layouts (drop size-1 dims, merge dims contiguous in every
//! operand), plan the form, index width and vector width
//! ([`plan_checked`](crate::engine_gpu::kernel::plan::plan_checked)), find (or compile once)
//! the kernel of that [`KernelSpec`], pack the arguments and size the grid. Pure host logic
//! but for the kernel lookup, so [`prepare`] is tested on any machine.

use std::sync::Arc;

use cudarc::driver::CudaContext;

use crate::engine_gpu::kernel::args::{operand_addresses, pack_args, KernelArgs, ScalarBytes};
use crate::engine_gpu::kernel::cache::KernelFront;
use crate::engine_gpu::kernel::form::launch_grid;
use crate::engine_gpu::kernel::launch::LaunchPlan;
use crate::engine_gpu::kernel::plan::plan_checked;
use crate::engine_gpu::kernel::profile::{Lap, Stage};
use crate::engine_gpu::kernel::source::Operand;
use crate::error::{Error, LayoutError};
use crate::layout::{collapse, CollapsedLayout, Layout};

use super::source::{KernelSpec, MAX_INPUTS};

/// One operand of a launch: a device buffer and the strided view of it that the op reads or
/// writes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawOperand<'a> {
    /// Device address of the buffer's first element.
    pub(crate) ptr: u64,
    /// The buffer's length in elements.
    pub(crate) len: usize,
    /// The view, in elements of the buffer.
    pub(crate) layout: &'a Layout,
}

/// What an op contributes to a launch besides its operands.
pub(crate) struct OpParts {
    /// The op's name (the op table's).
    pub(crate) name: &'static str,
    /// The op's CUDA expression (the op table's).
    pub(crate) expr: &'static str,
    /// The type whose compute type the scalars have.
    pub(crate) scalar: Operand,
    /// `p0`, `p1`.
    pub(crate) scalars: [ScalarBytes; 2],
}

/// The pointwise kernels loaded so far, by device and spec.
static KERNELS: KernelFront<KernelSpec> = KernelFront::new();

/// The complete plan of launching `op` over `operands` (output first, views of one shape,
/// each checked within its buffer, the output writable and not empty) in `ctx`; laps the
/// collapse, plan and lookup stages.
///
/// # Errors
/// [`LayoutError::SizeOverflow`] when an address overflows, the planner's
/// [`LayoutError::GpuRankTooLarge`]; the kernel cache's errors.
pub(crate) fn plan_launch<const N: usize>(
    ctx: &Arc<CudaContext>,
    op: &OpParts,
    operands: &[(Operand, RawOperand<'_>); N],
    lap: &mut Lap,
) -> Result<LaunchPlan, Error> {
    let layout = collapse(std::array::from_fn(|k| operands[k].1.layout));
    lap.lap(Stage::Collapse);
    let types: [Operand; N] = std::array::from_fn(|k| operands[k].0);
    let ptrs: [u64; N] = std::array::from_fn(|k| operands[k].1.ptr);
    let (spec, args) = prepare(op, &layout, types, ptrs)?;
    lap.lap(Stage::Plan);
    let kernel = KERNELS.kernel(ctx, &spec, &spec)?;
    lap.lap(Stage::Lookup);
    let grid = launch_grid(
        layout.numel(),
        spec.form.elements_per_unit(),
        spec.block(),
        spec.work_per_thread(),
        spec.index,
        spec.form.grid_cap(kernel.max_blocks),
    );
    let sizes = types.map(|t| t.dtype.size_in_bytes());
    Ok(LaunchPlan::new(
        kernel,
        grid,
        spec.block(),
        args,
        operands.iter().map(|(_, o)| o.layout),
        &layout.offsets,
        &sizes,
    ))
}

/// The kernel spec and packed arguments of one launch: pure, so tests check it on any host.
///
/// # Errors
/// [`LayoutError::SizeOverflow`] when an address overflows, and the offset calculator's
/// errors (rank above its maximum).
pub(crate) fn prepare<const N: usize>(
    op: &OpParts,
    layout: &CollapsedLayout<N>,
    types: [Operand; N],
    ptrs: [u64; N],
) -> Result<(KernelSpec, KernelArgs), LayoutError> {
    const { assert!(N >= 1 && N <= MAX_INPUTS + 1) };
    let sizes = types.map(|t| t.dtype.size_in_bytes());
    let addrs = operand_addresses(op.name, layout, sizes, ptrs)?;
    let p = plan_checked(op.name, layout, sizes, addrs)?;
    let mut inputs = [types[0]; MAX_INPUTS];
    inputs[..N - 1].copy_from_slice(&types[1..]);
    let spec = KernelSpec {
        op: op.name,
        expr: op.expr,
        out: types[0],
        inputs,
        n_inputs: (N - 1) as u8,
        scalar: op.scalar,
        form: p.form,
        index: p.index,
    };
    let args = pack_args(
        op.name,
        layout,
        p,
        addrs,
        op.scalars.iter().map(ScalarBytes::as_bytes),
    )?;
    Ok((spec, args))
}
