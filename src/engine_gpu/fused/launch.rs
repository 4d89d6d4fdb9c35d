//! Launching a fused program: broadcasting the leaves, collapsing every operand's layout
//! jointly, planning the form as for eager kernels, finding (or compiling once) the kernel
//! of that [`FusedSpec`], packing the arguments and launching. The module's `unsafe` is the
//! launch itself, argued from the checks above it.

use std::sync::Arc;

use cudarc::driver::CudaContext;

use crate::element::DType;
use crate::engine_gpu::kernel::args::{operand_addresses, pack_args};
use crate::engine_gpu::kernel::cache::{KernelFront, LoadedKernel};
use crate::engine_gpu::kernel::form::launch_grid;
use crate::engine_gpu::kernel::launch::{
    launch_and_keep, launch_cached, LaunchPlan, PlanKey, MAX_LAUNCH_OPERANDS,
};
use crate::engine_gpu::kernel::plan::plan_checked_outputs;
use crate::engine_gpu::kernel::profile::Lap;
use crate::error::{Error, GpuError, LayoutError};
use crate::layout::{collapse, CollapsedLayout, Dims, Layout};
use crate::runtime::{Gpu, Stream};
use crate::tensor::expr::inline::InlineList;
use crate::tensor::expr::program::Program;
use crate::tensor::expr::{FusedOutputs, MAX_LEAVES, MAX_OUTPUTS};

use super::rows::{self, RowOperands};
use super::signature;
use super::source::{scalar_arg, scalar_arg_bytes, FusedBody, FusedKernel, FusedSpec};

const OP: &str = "fused";

/// The fused kernels loaded so far, by device and spec.
static KERNELS: KernelFront<FusedSpec> = KernelFront::new();

/// How many fused kernels this process has loaded (all devices) for programs of signature
/// `signature` ([`Program::signature`]): one per layout class and index width. A new scalar
/// value does not add one; a new layout class does.
#[cfg(test)]
pub fn loaded_kernels_for(signature: &str) -> usize {
    KERNELS.count(|spec| spec.signature == signature)
}

/// Most operands of a fused launch: outputs, then leaves and current values.
const MAX_OPERANDS: usize = MAX_OUTPUTS + MAX_LEAVES;

/// Every operand's layout over the output shape, outputs first.
type OperandLayouts = InlineList<Layout, MAX_OPERANDS>;

/// Runs `program` into `outs` on `stream`. Allocates nothing on the host when this thread
/// has launched the same signature before (the plan cache hits) and every layout has at
/// most 8 dims: the lists here are inline, the signature buffer is the thread's.
///
/// # Errors
/// [`LayoutError`]s for too many operands, leaves that do not broadcast to the outputs'
/// shape, or layouts outside their storage; [`GpuError`]s for another GPU's memory or
/// stream, compilation and launch.
pub(crate) fn launch(
    stream: &Stream,
    program: Program<'_, Gpu>,
    mut outs: FusedOutputs<'_, Gpu>,
) -> Result<(), Error> {
    let n_out = outs.len();
    // Current values of outputs (in-place updates) are read as extra inputs.
    let n_leaves = program.leaves.len() + program.currents.len();
    if n_leaves > MAX_LEAVES || n_out == 0 || n_out > MAX_OUTPUTS {
        return Err(LayoutError::TooManyOperands {
            op: OP,
            leaves: n_leaves,
            outputs: n_out,
            max_leaves: MAX_LEAVES,
        }
        .into());
    }
    let shape: Dims<usize> = Dims::from_slice(outs[0].layout.shape());
    // Every operand's layout over the output shape, checked against its storage.
    let mut layouts = OperandLayouts::new();
    for o in outs.iter() {
        o.layout.check_within(OP, o.handle.elements())?;
        o.layout.check_writable(OP)?;
        layouts.push(o.layout.clone());
    }
    let mut out_spans = [(0u64, 0u64); MAX_OUTPUTS];
    for (span, o) in out_spans.iter_mut().zip(outs.iter_mut()) {
        *span = byte_span(o.handle.address_mut(), o.handle.elements(), o.dtype);
    }
    let out_spans = &out_spans[..n_out];
    for (l, leaf) in program.leaves.iter().enumerate() {
        leaf.layout.check_within(OP, leaf.handle.elements())?;
        layouts.push(leaf.layout.broadcast_to(&shape)?);
        let span = byte_span(leaf.handle.address(), leaf.handle.elements(), leaf.dtype);
        for (o, out_span) in out_spans.iter().enumerate() {
            if span.0 < out_span.1 && out_span.0 < span.1 {
                return Err(LayoutError::LeafOverlapsOutput {
                    op: OP,
                    leaf: l,
                    output: o,
                }
                .into());
            }
        }
    }
    for &(o, dtype) in &program.currents {
        // Checked by the evaluator (`UnboundCurrent`): output `o` exists and holds `dtype`.
        match outs.get(o) {
            Some(out) if out.dtype == dtype => layouts.push(out.layout.clone()),
            _ => {
                return Err(LayoutError::UnboundCurrent {
                    op: OP,
                    output: o,
                    dtype: dtype.name(),
                    reason: "the launch has no such output",
                }
                .into())
            }
        }
    }
    // Stream order: every leaf read and every output write waits for what it must.
    for leaf in program.leaves.iter() {
        leaf.handle.order_read(OP, stream)?;
    }
    for o in outs.iter_mut() {
        o.handle.order_write(OP, stream)?;
    }
    if layouts[0].numel() == 0 {
        return Ok(());
    }
    let n = n_out + n_leaves;
    let mut ptrs = [0u64; MAX_OPERANDS];
    let mut lens = [0usize; MAX_OPERANDS];
    let mut dtypes = [DType::Bool; MAX_OPERANDS];
    for (k, o) in outs.iter_mut().enumerate() {
        ptrs[k] = o.handle.address_mut();
        lens[k] = o.handle.elements();
        dtypes[k] = o.dtype;
    }
    for (k, leaf) in program.leaves.iter().enumerate() {
        ptrs[n_out + k] = leaf.handle.address();
        lens[n_out + k] = leaf.handle.elements();
        dtypes[n_out + k] = leaf.dtype;
    }
    for (j, &(o, t)) in program.currents.iter().enumerate() {
        let k = n_out + program.leaves.len() + j;
        ptrs[k] = ptrs[o];
        lens[k] = lens[o];
        dtypes[k] = t;
    }
    if program.row_stage().is_some() {
        // One kernel per row of the stage's dim (`rows.rs`), not the Apply forms.
        let all: Vec<Layout> = layouts.iter().cloned().collect();
        let ops = RowOperands {
            layouts: &all,
            ptrs: &ptrs[..n],
            dtypes: &dtypes[..n],
            n_out,
        };
        return rows::launch(stream, &program, ops);
    }
    let operands = Operands {
        layouts: &layouts,
        ptrs: &ptrs[..n],
        lens: &lens[..n],
        dtypes: &dtypes[..n],
        n_out,
    };
    match n {
        1 => go::<1>(stream, &program, operands),
        2 => go::<2>(stream, &program, operands),
        3 => go::<3>(stream, &program, operands),
        4 => go::<4>(stream, &program, operands),
        5 => go::<5>(stream, &program, operands),
        6 => go::<6>(stream, &program, operands),
        7 => go::<7>(stream, &program, operands),
        8 => go::<8>(stream, &program, operands),
        9 => go::<9>(stream, &program, operands),
        10 => go::<10>(stream, &program, operands),
        11 => go::<11>(stream, &program, operands),
        _ => go::<12>(stream, &program, operands),
    }
}

/// The bytes `[start, end)` of a storage of `elements` elements of `dtype` at `address`.
fn byte_span(address: u64, elements: usize, dtype: DType) -> (u64, u64) {
    let bytes = (elements as u64).saturating_mul(dtype.size_in_bytes() as u64);
    (address, address.saturating_add(bytes))
}

/// Every operand of one launch, outputs first.
struct Operands<'a> {
    layouts: &'a OperandLayouts,
    ptrs: &'a [u64],
    /// Each operand's storage length in elements.
    lens: &'a [usize],
    dtypes: &'a [DType],
    n_out: usize,
}

thread_local! {
    /// The signature buffer of this thread's fused launches, reused so a cached launch
    /// allocates nothing for it.
    static SIGNATURE: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The launch for `N` operands (outputs then leaves): the cached plan of its signature when
/// this thread has launched it before (`kernel::launch`), else planned, packed, launched and
/// cached.
fn go<const N: usize>(
    stream: &Stream,
    program: &Program<'_, Gpu>,
    ops: Operands<'_>,
) -> Result<(), Error> {
    debug_assert_eq!(ops.layouts.len(), N);
    const { assert!(N <= MAX_LAUNCH_OPERANDS && N <= MAX_OPERANDS) };
    let ordinal = stream.cuda().context().ordinal();
    // Borrowed out of the thread-local and put back below (a nested launch, impossible
    // here, or a thread being torn down finds none and only allocates).
    let mut words = SIGNATURE
        .try_with(|w| w.try_borrow_mut().map(|mut w| std::mem::take(&mut *w)))
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    signature::write(
        &mut words,
        ordinal,
        program,
        ops.layouts,
        ops.dtypes,
        ops.ptrs,
        ops.n_out,
    );
    let key = PlanKey::new(&words);
    let scalars = program.scalars.iter().map(|v| {
        let (bytes, len) = scalar_arg_bytes(v);
        (u64::from_le_bytes(bytes), len)
    });
    // SAFETY: the caller (`launch`) checked these views against their storages, which
    // the handles keep alive and whose frees are stream-ordered after the launch; the
    // aliasing argument of the uncached launch below holds for any buffers with this
    // signature (outputs borrowed mutably, `LeafOverlapsOutput`, current values read
    // through their output's own layout); the scalars are this program's.
    let hit = unsafe {
        launch_cached(
            stream.cuda(),
            key,
            ops.ptrs,
            ops.lens,
            scalars,
            &mut Lap::off(),
        )
    };
    if let Some(launched) = hit {
        put_back(words);
        return launched;
    }
    let layout: CollapsedLayout<N> = collapse(std::array::from_fn(|k| &ops.layouts[k]));
    let sizes: [usize; N] = std::array::from_fn(|k| ops.dtypes[k].size_in_bytes());
    let ptrs: [u64; N] = std::array::from_fn(|k| ops.ptrs[k]);
    let addrs = operand_addresses(OP, &layout, sizes, ptrs)?;
    let p = plan_checked_outputs(OP, &layout, sizes, addrs, ops.n_out)?;
    let spec = FusedSpec {
        signature: program.signature(),
        form: p.form,
        index: p.index,
    };
    let kernel = kernel(stream.cuda().context(), &spec, program)?;
    let scalars: Vec<Vec<u8>> = program.scalars.iter().map(scalar_arg).collect();
    let args = pack_args(OP, &layout, p, addrs, scalars.iter().map(Vec::as_slice))?;
    let grid = launch_grid(
        layout.numel(),
        spec.form.elements_per_unit(),
        spec.block(),
        spec.work_per_thread(),
        spec.index,
        spec.form.grid_cap(kernel.max_blocks),
    );
    let plan = LaunchPlan::new(
        kernel,
        grid,
        spec.block(),
        args,
        ops.layouts.iter(),
        &layout.offsets,
        &sizes,
    );
    // SAFETY: the plan's arguments are the parameters of `spec`'s entry point in declaration
    // order (`write_entry`: outputs, leaves, `n`, the scalars, the calculator), each pointer
    // addressing its operand's first element; every layout was checked to lie within its
    // storage (`check_within`, with the leaves broadcast to the output shape, which only
    // repeats elements), the outputs to be non-overlapping, and no output is a leaf (the
    // outputs are borrowed mutably by the caller while the leaves are borrowed shared), so
    // every access is in bounds and no element is written twice or read after another
    // thread wrote it. An output read in place (`program.currents`) is an extra input at
    // the output's own address and layout, over the same linear index, so each of its
    // elements is read by the thread that writes it, in the same grid-stride step, before
    // the store (`ts_grid_stride`: all loads, then all stores); in the tiled form, by the
    // block that writes it, in the same tile, before the barrier that precedes the stores.
    // No other operand addresses an output's memory (`LeafOverlapsOutput` above), and no
    // pointer is `__restrict__`. The storages stay alive: the handles borrow them for the
    // call, and their frees are stream-ordered after this launch (`order_read` /
    // `order_write`). The kernel was loaded in the stream's context; the grid is
    // `launch_grid`'s and the block the kernel's `__launch_bounds__`. Any later launch with
    // this signature has the same views over buffers of the same alignment.
    let launched = unsafe { launch_and_keep(stream.cuda(), key, plan) };
    put_back(words);
    launched
}

/// The kernel of `spec`, compiled on first use per device.
fn kernel(
    ctx: &Arc<CudaContext>,
    spec: &FusedSpec,
    program: &Program<'_, Gpu>,
) -> Result<Arc<LoadedKernel>, GpuError> {
    // Current values (in-place reads) are the last inputs, read like leaves.
    let leaves: Vec<DType> = program
        .leaves
        .iter()
        .map(|l| l.dtype)
        .chain(program.currents.iter().map(|&(_, t)| t))
        .collect();
    let instrs = program.instrs_with_currents_as_leaves();
    let source = FusedKernel {
        spec,
        body: FusedBody {
            leaves: &leaves,
            scalars: &program.scalars,
            instrs: &instrs,
            results: &program.results,
            types: program.types(),
        },
    };
    KERNELS.kernel(ctx, spec, &source)
}

/// Returns the signature buffer to this thread's slot for the next launch (dropped instead
/// when the slot is borrowed or the thread is being torn down).
fn put_back(words: Vec<u64>) {
    let _ = SIGNATURE.try_with(|w| {
        if let Ok(mut w) = w.try_borrow_mut() {
            *w = words;
        }
    });
}
