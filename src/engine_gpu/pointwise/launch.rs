//! Raw pointwise launches over device addresses: validation, planning, argument packing and
//! the one `cuLaunchKernel` call. The only module of `gpu::pointwise` with `unsafe`; the safe
//! API over [`GpuStorage`](crate::gpu::GpuStorage) is [`super::safe`].
//!
//! Arguments go through `cuLaunchKernel`'s `void**` array rather than cudarc's launch builder:
//! a kernel's parameter list depends on the launch (arity, index width, and an
//! `OffsetCalculator` whose size depends on the rank), and the builder wants one `DeviceRepr`
//! Rust type per parameter type. [`KernelArgs`] (module `args`, which the plan cache stores
//! too) keeps every parameter's bytes in one buffer instead, in exactly the order the
//! generated entry point declares them ([`super::source::KernelSpec::source`]): `out`, the inputs, `n`, `p0`, `p1`, and for the
//! strided form the calculator's byte image from [`OffsetCalculator::kernel_param_bytes`].

use cudarc::driver::CudaStream;
use std::any::Any;
use std::ffi::c_void;

use crate::element::Element;
use crate::engine_gpu::offset_calculator::OffsetCalculator;
use crate::error::{Error, LayoutError};
use crate::layout::{collapse, CollapsedLayout, Layout};
use crate::ops::{BinaryOp, TernaryOp, UnaryOp};
use crate::runtime::driver;

use super::args::KernelArgs;
use super::kernel_cache::{self, LoadedKernel};
use super::plan::{launch_grid, plan_checked, Form, IndexWidth, Plan};
use super::plan_cache::{self, CachedLaunch, Signature};
use super::profile::{Lap, Stage};
use super::source::{KernelSpec, Operand, MAX_INPUTS};

/// One operand of a raw launch: a device buffer and the strided view of it that the op
/// reads or writes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawOperand<'a> {
    /// Device address of the buffer's first element.
    pub(crate) ptr: u64,
    /// The buffer's length in elements.
    pub(crate) len: usize,
    /// The view, in elements of the buffer.
    pub(crate) layout: &'a Layout,
}

/// A scalar in its compute type, as kernel parameter bytes (little-endian, like the device).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScalarBytes {
    bytes: [u8; 8],
    len: usize,
}

impl ScalarBytes {
    /// `v` converted to `T::CUDA_COMPUTE_TYPE` (exactly: f16 and bf16 widen to f32, u8 to
    /// u32; the others are their own compute type).
    pub fn of<T: Element>(v: T) -> Self {
        let any: &dyn Any = &v;
        let mut bytes = [0u8; 8];
        let mut put = |b: &[u8]| {
            bytes[..b.len()].copy_from_slice(b);
            b.len()
        };
        // `Element` is sealed to exactly these types, so one branch matches.
        let len = if let Some(x) = any.downcast_ref::<f32>() {
            put(&x.to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<f64>() {
            put(&x.to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<half::f16>() {
            put(&x.to_f32().to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<half::bf16>() {
            put(&x.to_f32().to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<i32>() {
            put(&x.to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<i64>() {
            put(&x.to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<u8>() {
            put(&u32::from(*x).to_le_bytes())
        } else if let Some(x) = any.downcast_ref::<bool>() {
            put(&[u8::from(*x)])
        } else {
            0
        };
        ScalarBytes { bytes, len }
    }

    /// The parameter's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// What an op contributes to a launch besides its operands.
struct OpParts {
    name: &'static str,
    expr: &'static str,
    scalar: Operand,
    scalars: [ScalarBytes; 2],
}

/// Launches `out[i] = op(a[i])` on `stream`.
///
/// # Errors
/// [`LayoutError`] when a layout reaches outside its buffer, the shapes differ (broadcast
/// the input first), or the output view has overlapping elements; [`GpuError`] when the
/// kernel cannot be compiled, loaded or launched.
///
/// # Safety
/// See [`launch_binary`].
pub(crate) unsafe fn launch_unary<T: Element, O: UnaryOp<T>>(
    stream: &CudaStream,
    op: &O,
    out: RawOperand<'_>,
    a: RawOperand<'_>,
) -> Result<(), Error> {
    let s = op.scalars();
    let parts = OpParts {
        name: O::NAME,
        expr: O::CUDA,
        scalar: Operand::of::<T>(),
        scalars: [ScalarBytes::of(s[0]), ScalarBytes::of(s[1])],
    };
    // SAFETY: forwarded from this function's contract.
    unsafe {
        launch(
            stream,
            parts,
            [(Operand::of::<O::Output>(), out), (Operand::of::<T>(), a)],
        )
    }
}

/// Launches `out[i] = op(a[i], b[i])` on `stream`.
///
/// # Errors
/// As [`launch_unary`].
///
/// # Safety
/// For every operand, `ptr` is the address of a device allocation of at least `len`
/// elements of the operand's type, made in `stream`'s context, that stays allocated until the
/// kernel has finished (stream order). No other work writes an input, or reads or writes the
/// output, while the kernel runs. The output's elements do not alias an input's elements,
/// except element for element (the same view of the same buffer: an in-place op).
pub(crate) unsafe fn launch_binary<T: Element, O: BinaryOp<T>>(
    stream: &CudaStream,
    op: &O,
    out: RawOperand<'_>,
    a: RawOperand<'_>,
    b: RawOperand<'_>,
) -> Result<(), Error> {
    let s = op.scalars();
    let parts = OpParts {
        name: O::NAME,
        expr: O::CUDA,
        scalar: Operand::of::<T>(),
        scalars: [ScalarBytes::of(s[0]), ScalarBytes::of(s[1])],
    };
    let t = Operand::of::<T>();
    // SAFETY: forwarded from this function's contract.
    unsafe {
        launch(
            stream,
            parts,
            [(Operand::of::<O::Output>(), out), (t, a), (t, b)],
        )
    }
}

/// Launches `out[i] = op(a[i], b[i], c[i])` on `stream`.
///
/// # Errors
/// As [`launch_unary`].
///
/// # Safety
/// See [`launch_binary`].
pub(crate) unsafe fn launch_ternary<A: Element, T: Element, O: TernaryOp<A, T>>(
    stream: &CudaStream,
    _op: &O,
    out: RawOperand<'_>,
    a: RawOperand<'_>,
    b: RawOperand<'_>,
    c: RawOperand<'_>,
) -> Result<(), Error> {
    let zero = ScalarBytes::of(T::ZERO);
    let parts = OpParts {
        name: O::NAME,
        expr: O::CUDA,
        scalar: Operand::of::<T>(),
        scalars: [zero, zero],
    };
    let t = Operand::of::<T>();
    // SAFETY: forwarded from this function's contract.
    unsafe {
        launch(
            stream,
            parts,
            [
                (Operand::of::<O::Output>(), out),
                (Operand::of::<A>(), a),
                (t, b),
                (t, c),
            ],
        )
    }
}

/// Launches `out[i] = value` on `stream` (THC's `TensorFillOp`).
///
/// # Errors
/// As [`launch_unary`].
///
/// # Safety
/// See [`launch_binary`].
pub(crate) unsafe fn launch_fill<T: Element>(
    stream: &CudaStream,
    value: T,
    out: RawOperand<'_>,
) -> Result<(), Error> {
    let parts = OpParts {
        name: "fill",
        expr: "p0",
        scalar: Operand::of::<T>(),
        scalars: [ScalarBytes::of(value), ScalarBytes::of(T::ZERO)],
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { launch(stream, parts, [(Operand::of::<T>(), out)]) }
}

/// Validates, plans, packs and launches one pointwise kernel over `N` operands (output
/// first). A launch whose [`Signature`] this thread has launched before takes the cached
/// plan ([`super::plan_cache`]): it patches the cached arguments and launches, without
/// collapsing, planning or allocating.
///
/// # Safety
/// As [`launch_binary`], for every operand.
unsafe fn launch<const N: usize>(
    stream: &CudaStream,
    op: OpParts,
    operands: [(Operand, RawOperand<'_>); N],
) -> Result<(), Error> {
    let mut lap = Lap::start();
    let out = operands[0].1;
    for (_, operand) in &operands {
        operand.layout.check_within(op.name, operand.len)?;
        if operand.layout.shape() != out.layout.shape() {
            return Err(LayoutError::ShapeMismatch {
                op: op.name,
                expected: out.layout.shape().to_vec(),
                got: operand.layout.shape().to_vec(),
            }
            .into());
        }
    }
    let signature = Signature::of(
        stream.context().ordinal(),
        op.name,
        op.expr,
        op.scalar,
        &operands.map(|(t, o)| (t, o.ptr, o.layout)),
    );
    if let Some(signature) = &signature {
        // The output's layout is part of the signature and was checked writable when the
        // plan was cached, so a hit skips that check.
        lap.lap(Stage::Validate);
        let ptrs = operands.map(|(_, o)| o.ptr);
        let scalars = op.scalars.map(|s| (s.bytes, s.len));
        // SAFETY: the views are those in the signature and were checked against these
        // buffers above, which the caller keeps alive for the kernel (this function's
        // contract); the scalars are this op's, of the signature's types.
        let hit = unsafe {
            launch_cached(stream, signature.words(), &ptrs, scalars, || {
                lap.lap(Stage::CacheHit)
            })
        };
        if let Some(launched) = hit {
            lap.lap(Stage::Driver);
            return launched;
        }
    }
    out.layout.check_writable(op.name)?;
    if out.layout.numel() == 0 {
        return Ok(());
    }
    lap.lap(Stage::Validate);
    let layout = collapse(std::array::from_fn(|k| operands[k].1.layout));
    lap.lap(Stage::Collapse);
    let types: [Operand; N] = std::array::from_fn(|k| operands[k].0);
    let ptrs: [u64; N] = std::array::from_fn(|k| operands[k].1.ptr);
    let (spec, mut args) = prepare(&op, &layout, types, ptrs)?;
    lap.lap(Stage::Plan);
    let kernel = kernel_cache::kernel(stream.context(), &spec)?;
    lap.lap(Stage::Lookup);
    let grid = launch_grid(
        layout.numel(),
        spec.form.elements_per_unit(),
        spec.block(),
        spec.work_per_thread(),
        spec.index,
        spec.form.grid_cap(kernel.max_blocks),
    );
    // SAFETY: `args` holds the parameters of `spec`'s entry point in declaration order
    // (`prepare`); the pointers in it address the operands' first elements, and the
    // offset calculator (or the contiguous form) only reaches elements of the checked views,
    // which lie inside the buffers (`check_within` above) that the caller keeps alive.
    unsafe { launch_kernel(stream, &kernel, grid, spec.block(), &mut args) }?;
    lap.lap(Stage::Driver);
    if let Some(signature) = &signature {
        let sizes = types.map(|t| t.dtype.size_in_bytes());
        let cached = CachedLaunch::new(kernel, grid, spec.block(), args, &layout.offsets, &sizes);
        plan_cache::insert(signature.words(), cached);
    }
    Ok(())
}

/// Launches the plan this thread cached for the signature `words`, with this launch's
/// buffer addresses `ptrs` (operands in the signature's order) and `scalars` patched in
/// (`patch_args`); `on_patched` runs between the patch and the driver call (the profiler's
/// lap). `None` when there is no such plan or the patch does not fit it: the caller then
/// takes the uncached path, which reports any error.
///
/// # Safety
/// The launch's operand views are the ones the signature was made from, each checked to lie
/// within its buffer (whose address is in `ptrs`) and kept alive until the kernel has run;
/// the aliasing rules of the uncached launch that cached the plan hold for these buffers;
/// `scalars` are the launch's scalars, of the types in the signature.
pub(crate) unsafe fn launch_cached(
    stream: &CudaStream,
    words: &[u64],
    ptrs: &[u64],
    scalars: impl IntoIterator<Item = ([u8; 8], usize)>,
    on_patched: impl FnOnce(),
) -> Option<Result<(), Error>> {
    plan_cache::with_hit(words, |cached| {
        if !patch_args(cached, ptrs, scalars) {
            return None;
        }
        on_patched();
        // SAFETY: the cached arguments were packed by an uncached launch with this
        // signature: the same kernel, form, count and offset calculator over the same views
        // and address alignments. `patch_args` replaced the addresses with this launch's
        // (each buffer's address plus the same first-element offset) and the scalars with
        // this launch's, so every access stays inside the checked views of live buffers
        // (this function's contract).
        Some(unsafe {
            launch_kernel(
                stream,
                &cached.kernel,
                cached.grid,
                cached.block,
                &mut cached.args,
            )
        })
    })
    .flatten()
}

/// Puts a launch's operand addresses (`ptrs[k]` plus the cached first-element offset) and
/// scalars into `cached`'s arguments: slots `0..ptrs.len()`, then, after the count, one slot
/// per scalar (`pack_args`'s order). `false`, leaving the launch to the uncached path (which
/// reports the error), when an address overflows or a scalar's size is not the cached one.
fn patch_args(
    cached: &mut CachedLaunch,
    ptrs: &[u64],
    scalars: impl IntoIterator<Item = ([u8; 8], usize)>,
) -> bool {
    for (k, &ptr) in ptrs.iter().enumerate() {
        let first = cached.first_byte.get(k).copied().unwrap_or(u64::MAX);
        let Some(addr) = ptr.checked_add(first) else {
            return false;
        };
        if !cached.args.set(k, &addr.to_le_bytes()) {
            return false;
        }
    }
    for (j, (bytes, len)) in scalars.into_iter().enumerate() {
        if !cached.args.set(ptrs.len() + 1 + j, &bytes[..len.min(8)]) {
            return false;
        }
    }
    true
}

/// The kernel spec and packed arguments of one launch: pure, so tests check it on any host.
///
/// # Errors
/// [`LayoutError::SizeOverflow`] when an address overflows, and the offset calculator's
/// errors (rank above its maximum).
fn prepare<const N: usize>(
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

/// The device address of each operand's first element in `layout`: its buffer address plus
/// its collapsed offset in bytes.
///
/// # Errors
/// [`LayoutError::SizeOverflow`] naming `op` when an address overflows.
pub(crate) fn operand_addresses<const N: usize>(
    op: &'static str,
    layout: &CollapsedLayout<N>,
    sizes: [usize; N],
    ptrs: [u64; N],
) -> Result<[u64; N], LayoutError> {
    let mut addrs = [0u64; N];
    for k in 0..N {
        addrs[k] = u64::try_from(layout.offsets[k])
            .ok()
            .and_then(|o| o.checked_mul(sizes[k] as u64))
            .and_then(|b| b.checked_add(ptrs[k]))
            .ok_or_else(|| address_overflow(op, layout))?;
    }
    Ok(addrs)
}

fn address_overflow<const N: usize>(op: &'static str, layout: &CollapsedLayout<N>) -> LayoutError {
    LayoutError::SizeOverflow {
        op,
        shape: layout.shape.clone(),
        what: "device address",
    }
}

/// The parameters of an Apply entry point in the order `write_entry` declares them: the
/// operand addresses, `n` (elements, or vectors for the inner-vectorised form) at the
/// plan's index width, the scalars, and the form's `OffsetCalculator` image.
///
/// # Errors
/// [`LayoutError::SizeOverflow`] when `n` does not fit the index width, and the offset
/// calculator's errors.
pub(crate) fn pack_args<'s, const N: usize>(
    op: &'static str,
    layout: &CollapsedLayout<N>,
    p: Plan,
    addrs: [u64; N],
    scalars: impl IntoIterator<Item = &'s [u8]>,
) -> Result<KernelArgs, LayoutError> {
    let mut args = KernelArgs::default();
    for addr in addrs {
        args.push(&addr.to_le_bytes());
    }
    let count = match p.form {
        Form::StridedVec { vec, .. } => layout.numel() / usize::from(vec),
        _ => layout.numel(),
    } as u64;
    match p.index {
        // The plan picked 32 bits only for numel <= i32::MAX.
        IndexWidth::Bits32 => args.push(
            &u32::try_from(count)
                .map_err(|_| address_overflow(op, layout))?
                .to_le_bytes(),
        ),
        IndexWidth::Bits64 => args.push(&count.to_le_bytes()),
    }
    for s in scalars {
        args.push(s);
    }
    match p.form {
        Form::Contiguous { .. } => {}
        Form::Strided { .. } => {
            args.push(&calc_bytes(p.index, &layout.shape, &layout.strides)?);
        }
        Form::Tiled { dim, .. } => {
            let (shape, strides) = tiled_order(layout, usize::from(dim));
            args.push(&calc_bytes(p.index, &shape, &strides)?);
        }
        Form::StridedVec { vec, .. } => {
            // The same walk over vectors: the innermost size divided by `vec`, and each
            // operand moving `vec` elements (or 0, broadcast) per step along it.
            let vec = usize::from(vec);
            let mut shape = layout.shape.clone();
            let mut strides = layout.strides.clone();
            if let Some(inner) = shape.last_mut() {
                *inner /= vec;
            }
            for s in &mut strides {
                if let Some(inner) = s.last_mut() {
                    *inner *= vec as isize;
                }
            }
            args.push(&calc_bytes(p.index, &shape, &strides)?);
        }
    }
    Ok(args)
}

/// The dims of `layout` in the tiled form's order: the batch dims (every dim but `dim` and the
/// last, in collapsed order), then `dim` (the staged inputs' contiguous dim, the tile's rows),
/// then the last dim (the output's contiguous dim, the tile's columns). Reordering dims of an
/// offset calculator changes no offset, only which linear index reaches it; the kernel walks
/// the batch, rows and columns itself.
fn tiled_order<const N: usize>(
    layout: &CollapsedLayout<N>,
    dim: usize,
) -> (Vec<usize>, [Vec<isize>; N]) {
    let last = layout.rank().saturating_sub(1);
    let order: Vec<usize> = (0..layout.rank())
        .filter(|&d| d != dim && d != last)
        .chain([dim, last])
        .collect();
    let shape = order.iter().map(|&d| layout.shape[d]).collect();
    let strides = std::array::from_fn(|k| order.iter().map(|&d| layout.strides[k][d]).collect());
    (shape, strides)
}

/// The byte image of the `OffsetCalculator` over `shape` and `strides` at index width `index`.
fn calc_bytes<const N: usize>(
    index: IndexWidth,
    shape: &[usize],
    strides: &[Vec<isize>; N],
) -> Result<Vec<u8>, LayoutError> {
    let strides: [&[isize]; N] = std::array::from_fn(|k| strides[k].as_slice());
    Ok(match index {
        IndexWidth::Bits32 => OffsetCalculator::<u32, N>::new(shape, strides)?.kernel_param_bytes(),
        IndexWidth::Bits64 => OffsetCalculator::<u64, N>::new(shape, strides)?.kernel_param_bytes(),
    })
}

/// Parameters a launch passes through a `void**` array on the stack; launches with more
/// build it on the heap.
const STACK_PARAMS: usize = 24;

/// The launch, through the driver layer (`driver::launch_kernel`, `cuLaunchKernel`, or
/// `driver::launch_kernel_programmatic`, `cuLaunchKernelEx`, when the image waits for its
/// predecessor, [`super::pdl`]),
/// over borrowed arguments (the plan cache launches its cached ones in place).
///
/// # Safety
/// `args` are the parameters of `kernel`'s entry point, in order and of the declared sizes;
/// the memory they address is valid for the accesses the kernel makes; `kernel` was loaded in
/// `stream`'s context.
pub(crate) unsafe fn launch_kernel(
    stream: &CudaStream,
    kernel: &LoadedKernel,
    grid: u32,
    block: u32,
    args: &mut KernelArgs,
) -> Result<(), Error> {
    let mut on_stack = [std::ptr::null_mut(); STACK_PARAMS];
    let mut on_heap = Vec::new();
    let params: &mut [*mut c_void] = if args.len() <= STACK_PARAMS {
        &mut on_stack[..args.len()]
    } else {
        on_heap.resize(args.len(), std::ptr::null_mut());
        &mut on_heap
    };
    args.write_pointers(params);
    let (grid, block) = ((grid, 1, 1), (block, 1, 1));
    if kernel.pdl {
        // SAFETY: as for the plain launch below; and `kernel.pdl` says the image was compiled
        // for `sm_90` or later, where every pointwise and fused entry point (`write_entry`)
        // starts with `ts_pdl_enter()`: each thread waits for the previous kernel on the
        // stream to complete before its first global memory access.
        unsafe { driver::launch_kernel_programmatic(stream, &kernel.function, grid, block, params) }
    } else {
        // SAFETY: the function's contract gives the parameter list and memory validity;
        // `params` points into `args`, which is borrowed (unmoved, unchanged) until this call
        // returns, and the driver copies the parameter values during the call. Block and
        // grid sizes are within the device limits (`block` is the kernel's own
        // `__launch_bounds__`, 128 or 256 threads; the grid is at most the resident-block
        // count, or for a full grid at most 2^31 - 1 blocks, `launch_grid`).
        unsafe { driver::launch_kernel(stream, &kernel.function, grid, block, params) }
    }
    .map_err(Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element::DType;
    use crate::engine_gpu::offset_calculator::OffsetCalculator;

    fn add_parts() -> OpParts {
        OpParts {
            name: "add_scalar",
            expr: "ts_add(a, p0)",
            scalar: Operand::of::<f32>(),
            scalars: [ScalarBytes::of(2.5f32), ScalarBytes::of(0f32)],
        }
    }

    #[test]
    fn scalars_widen_to_the_compute_type() {
        assert_eq!(ScalarBytes::of(1.5f32).as_bytes(), 1.5f32.to_le_bytes());
        assert_eq!(
            ScalarBytes::of(half::f16::from_f32(-3.25)).as_bytes(),
            (-3.25f32).to_le_bytes()
        );
        assert_eq!(
            ScalarBytes::of(half::bf16::from_f32(0.5)).as_bytes(),
            0.5f32.to_le_bytes()
        );
        assert_eq!(ScalarBytes::of(200u8).as_bytes(), 200u32.to_le_bytes());
        assert_eq!(
            ScalarBytes::of(i64::MIN + 7).as_bytes(),
            (i64::MIN + 7).to_le_bytes()
        );
        assert_eq!(ScalarBytes::of(-9i32).as_bytes(), (-9i32).to_le_bytes());
        assert_eq!(ScalarBytes::of(0.1f64).as_bytes(), 0.1f64.to_le_bytes());
        assert_eq!(ScalarBytes::of(true).as_bytes(), [1]);
    }

    #[test]
    fn args_keep_each_parameter_whole_and_aligned() {
        let mut args = KernelArgs::default();
        args.push(&[1, 2, 3]);
        args.push(&(0x0102_0304_0506_0708u64).to_le_bytes());
        args.push(&[9; 20]);
        assert_eq!(args.len(), 3);
        assert_eq!(args.param(0).unwrap(), [1, 2, 3]);
        assert_eq!(
            args.param(1).unwrap(),
            0x0102_0304_0506_0708u64.to_le_bytes()
        );
        assert_eq!(args.param(2).unwrap(), [9; 20]);
        assert!(args.param(3).is_none());
        let ptrs = args.pointers();
        assert!(ptrs.iter().all(|p| (*p as usize).is_multiple_of(8)));
        // Patching a parameter keeps the others and needs its length.
        assert!(args.set(1, &7u64.to_le_bytes()));
        assert!(!args.set(1, &[1, 2]));
        assert!(!args.set(3, &[1]));
        assert!(args.set(2, &[5; 20]));
        assert_eq!(args.param(0).unwrap(), [1, 2, 3]);
        assert_eq!(args.param(1).unwrap(), 7u64.to_le_bytes());
        assert_eq!(args.param(2).unwrap(), [5; 20]);
    }

    #[test]
    fn contiguous_launch_packs_pointers_count_and_scalars() {
        let out = Layout::contiguous(&[8, 512]).unwrap();
        let a = Layout::new(&[8, 512], &[512, 1], 4).unwrap();
        let c = collapse([&out, &a]);
        let types = [Operand::of::<f32>(); 2];
        let (spec, args) = prepare(&add_parts(), &c, types, [0x1000, 0x8000]).unwrap();
        // `a` starts 4 floats (16 bytes) in: still 16-byte aligned.
        assert_eq!(spec.form, Form::Contiguous { vec: 4 });
        assert_eq!(spec.index, IndexWidth::Bits32);
        assert_eq!(spec.n_inputs, 1);
        assert_eq!(args.len(), 5);
        assert_eq!(args.param(0).unwrap(), 0x1000u64.to_le_bytes());
        assert_eq!(args.param(1).unwrap(), (0x8000u64 + 16).to_le_bytes());
        assert_eq!(args.param(2).unwrap(), 4096u32.to_le_bytes());
        assert_eq!(args.param(3).unwrap(), 2.5f32.to_le_bytes());
        assert_eq!(args.param(4).unwrap(), 0f32.to_le_bytes());
        // The vector form's launch shape, and only that form's.
        assert_eq!((spec.block(), spec.work_per_thread()), (128, 2));
        let (spec, _) = prepare(&add_parts(), &c, types, [0x1004, 0x8000]).unwrap();
        assert_eq!(spec.form, Form::Contiguous { vec: 1 });
        assert_eq!((spec.block(), spec.work_per_thread()), (256, 4));
    }

    #[test]
    fn strided_launch_appends_the_offset_calculator_image() {
        let out = Layout::contiguous(&[6, 10]).unwrap();
        let a = Layout::contiguous(&[10, 6]).unwrap().t();
        let b = Layout::contiguous(&[6, 10]).unwrap().flip(1).unwrap();
        let c = collapse([&out, &a, &b]);
        let types = [Operand::of::<i64>(); 3];
        let parts = OpParts {
            name: "add",
            expr: "ts_add(a, b)",
            scalar: Operand::of::<i64>(),
            scalars: [ScalarBytes::of(0i64); 2],
        };
        let (spec, args) = prepare(&parts, &c, types, [0, 1 << 20, 2 << 20]).unwrap();
        assert_eq!(spec.form, Form::Strided { rank: 2 });
        assert_eq!(spec.out.dtype, DType::I64);
        assert_eq!(args.len(), 7);
        // The flipped input starts at its last column: offset 9 elements.
        assert_eq!(args.param(2).unwrap(), ((2u64 << 20) + 9 * 8).to_le_bytes());
        assert_eq!(args.param(3).unwrap(), 60u32.to_le_bytes());
        let strides: [&[isize]; 3] = std::array::from_fn(|k| c.strides[k].as_slice());
        let calc = OffsetCalculator::<u32, 3>::new(&c.shape, strides).unwrap();
        assert_eq!(args.param(6).unwrap(), calc.kernel_param_bytes());
    }

    #[test]
    fn far_offsets_switch_to_64_bit_count_and_calculator() {
        let big = 1isize << 31;
        let out = Layout::contiguous(&[3, 2]).unwrap();
        let a = Layout::new(&[3, 2], &[big, 1], 0).unwrap();
        let c = collapse([&out, &a]);
        let (spec, args) = prepare(&add_parts(), &c, [Operand::of::<f32>(); 2], [0, 0]).unwrap();
        assert_eq!(spec.index, IndexWidth::Bits64);
        assert_eq!(args.param(2).unwrap(), 6u64.to_le_bytes());
        let strides: [&[isize]; 2] = std::array::from_fn(|k| c.strides[k].as_slice());
        let calc = OffsetCalculator::<u64, 2>::new(&c.shape, strides).unwrap();
        assert_eq!(args.param(5).unwrap(), calc.kernel_param_bytes());
    }

    #[test]
    fn row_broadcast_packs_a_calculator_over_vectors() {
        let out = Layout::contiguous(&[16, 1024]).unwrap();
        let row = Layout::contiguous(&[1, 1024])
            .unwrap()
            .broadcast_to(&[16, 1024])
            .unwrap();
        let c = collapse([&out, &out, &row]);
        let parts = OpParts {
            name: "add",
            expr: "ts_add(a, b)",
            scalar: Operand::of::<f32>(),
            scalars: [ScalarBytes::of(0f32); 2],
        };
        let (spec, args) = prepare(&parts, &c, [Operand::of::<f32>(); 3], [0; 3]).unwrap();
        assert_eq!(
            spec.form,
            Form::StridedVec {
                rank: 2,
                vec: 4,
                bcast: 0
            }
        );
        // n counts vectors.
        assert_eq!(args.param(3).unwrap(), (16u32 * 256).to_le_bytes());
        let calc =
            OffsetCalculator::<u32, 3>::new(&[16, 256], [&[1024, 4], &[1024, 4], &[0, 4]]).unwrap();
        assert_eq!(args.param(6).unwrap(), calc.kernel_param_bytes());
    }

    #[test]
    fn address_overflow_is_an_error() {
        let out = Layout::new(&[4], &[1], 1 << 60).unwrap();
        let c = collapse([&out]);
        let err = prepare(&add_parts(), &c, [Operand::of::<i64>()], [u64::MAX - 8]);
        assert!(matches!(err, Err(LayoutError::SizeOverflow { .. })));
    }
}
