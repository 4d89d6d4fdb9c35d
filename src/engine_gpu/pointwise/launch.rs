//! Pointwise launches over [`GpuStorage`]: each operand is a storage and a strided view of
//! it, all of one shape (broadcast inputs first with
//! [`Layout::broadcast_to`](crate::layout::Layout::broadcast_to)). The entry of every eager
//! op ([`Backend`](crate::tensor::Backend) for `Gpu` calls these), and the module's
//! `unsafe`: the launch, argued from the checks here.
//!
//! A launch: stream order for each storage; each input's shape the output's; then the plan
//! this thread keeps for the launch's [`Signature`] ([`launch_cached`]: patch addresses and
//! scalars, check each buffer's length, launch), or on a miss every view checked within its
//! buffer, the output writable, a complete plan made ([`super::plan::plan_launch`]),
//! launched and kept ([`launch_and_keep`]).
//!
//! The storages make the launch's contract hold: each is live device memory of its length
//! on its GPU, freed only in stream order; `GpuStorage::access_read` and `access_write` order
//! the launch stream after the work each storage must wait for (a read after the last write,
//! a write after the last write and the reads since) and record the launch, so any stream
//! may be used (docs/STREAMS.md); and the output is borrowed mutably, so it aliases no input,
//! except in the `_inplace` functions, where it is the first input itself, read and written
//! through one layout (each element is read before it is written, by the same thread).

use cudarc::driver::CudaStream;

use crate::element::Element;
use crate::engine_gpu::kernel::args::ScalarBytes;
use crate::engine_gpu::kernel::launch::{launch_and_keep, launch_cached};
use crate::engine_gpu::kernel::profile::{Lap, Stage};
use crate::engine_gpu::kernel::source::Operand;
use crate::error::{Error, LayoutError};
use crate::layout::Layout;
use crate::ops::{BinaryOp, TernaryOp, UnaryOp};
use crate::runtime::{GpuStorage, Stream};

use super::plan::{plan_launch, OpParts, RawOperand};
use super::signature::Signature;

fn input<'a, T: Element>(
    op: &'static str,
    stream: &Stream,
    storage: &'a GpuStorage<T>,
    layout: &'a Layout,
) -> Result<(Operand, RawOperand<'a>), Error> {
    storage.access_read(op, stream)?;
    Ok((
        Operand::of::<T>(),
        RawOperand {
            ptr: storage.device_ptr(),
            len: storage.len(),
            layout,
        },
    ))
}

fn output<'a, T: Element>(
    op: &'static str,
    stream: &Stream,
    storage: &'a mut GpuStorage<T>,
    layout: &'a Layout,
) -> Result<(Operand, RawOperand<'a>), Error> {
    storage.access_write(op, stream)?;
    Ok((
        Operand::of::<T>(),
        RawOperand {
            ptr: storage.device_ptr_mut(),
            len: storage.len(),
            layout,
        },
    ))
}

/// The parts of op `O` over element type `T` with scalars `s`.
fn parts<T: Element>(name: &'static str, expr: &'static str, s: [T; 2]) -> OpParts {
    OpParts {
        name,
        expr,
        scalar: Operand::of::<T>(),
        scalars: [ScalarBytes::of(s[0]), ScalarBytes::of(s[1])],
    }
}

/// Sets every element of `dst`'s view to `value`, on `stream`.
///
/// # Errors
/// [`LayoutError`] when the view reaches outside `dst` or has overlapping elements;
/// [`GpuError`](crate::error::GpuError) when `stream` is on another GPU, or the kernel cannot
/// be compiled or launched.
pub fn fill<T: Element>(
    stream: &Stream,
    value: T,
    dst: &mut GpuStorage<T>,
    dst_layout: &Layout,
) -> Result<(), Error> {
    let mut lap = Lap::start();
    let out = output("fill", stream, dst, dst_layout)?;
    lap.lap(Stage::Order);
    // SAFETY: see the module docs; `out` comes from a live storage borrowed mutably.
    unsafe {
        launch(
            stream.cuda(),
            parts("fill", "p0", [value, T::ZERO]),
            [out],
            lap,
        )
    }
}

/// `dst[i] = op(a[i])` over views of one shape, on `stream`.
///
/// # Errors
/// As [`fill`], and [`LayoutError::ShapeMismatch`] when the views' shapes differ.
pub fn unary<T: Element, O: UnaryOp<T>>(
    stream: &Stream,
    op: &O,
    a: &GpuStorage<T>,
    a_layout: &Layout,
    dst: &mut GpuStorage<O::Output>,
    dst_layout: &Layout,
) -> Result<(), Error> {
    let mut lap = Lap::start();
    let a = input(O::NAME, stream, a, a_layout)?;
    let out = output(O::NAME, stream, dst, dst_layout)?;
    lap.lap(Stage::Order);
    let parts = parts::<T>(O::NAME, O::CUDA, op.scalars());
    // SAFETY: see the module docs; `dst` is borrowed mutably, so no input aliases it.
    unsafe { launch(stream.cuda(), parts, [out, a], lap) }
}

/// `dst[i] = op(a[i], b[i])` over views of one shape, on `stream`.
///
/// # Errors
/// As [`unary`].
pub fn binary<T: Element, O: BinaryOp<T>>(
    stream: &Stream,
    op: &O,
    a: (&GpuStorage<T>, &Layout),
    b: (&GpuStorage<T>, &Layout),
    dst: &mut GpuStorage<O::Output>,
    dst_layout: &Layout,
) -> Result<(), Error> {
    let mut lap = Lap::start();
    let a = input(O::NAME, stream, a.0, a.1)?;
    let b = input(O::NAME, stream, b.0, b.1)?;
    let out = output(O::NAME, stream, dst, dst_layout)?;
    lap.lap(Stage::Order);
    let parts = parts::<T>(O::NAME, O::CUDA, op.scalars());
    // SAFETY: see the module docs; `dst` is borrowed mutably, so no input aliases it.
    unsafe { launch(stream.cuda(), parts, [out, a, b], lap) }
}

/// `dst[i] = op(a[i], b[i], c[i])` over views of one shape, on `stream`.
///
/// # Errors
/// As [`unary`].
pub fn ternary<A: Element, T: Element, O: TernaryOp<A, T>>(
    stream: &Stream,
    op: &O,
    a: (&GpuStorage<A>, &Layout),
    b: (&GpuStorage<T>, &Layout),
    c: (&GpuStorage<T>, &Layout),
    dst: &mut GpuStorage<O::Output>,
    dst_layout: &Layout,
) -> Result<(), Error> {
    let mut lap = Lap::start();
    let a = input(O::NAME, stream, a.0, a.1)?;
    let b = input(O::NAME, stream, b.0, b.1)?;
    let c = input(O::NAME, stream, c.0, c.1)?;
    let out = output(O::NAME, stream, dst, dst_layout)?;
    lap.lap(Stage::Order);
    let parts = parts::<T>(O::NAME, O::CUDA, op.scalars());
    // SAFETY: see the module docs; `dst` is borrowed mutably, so no input aliases it.
    unsafe { launch(stream.cuda(), parts, [out, a, b, c], lap) }
}

/// `dst[i] = op(dst[i])` in place, on `stream`.
///
/// # Errors
/// As [`fill`].
pub fn unary_inplace<T: Element, O: UnaryOp<T, Output = T>>(
    stream: &Stream,
    op: &O,
    dst: &mut GpuStorage<T>,
    layout: &Layout,
) -> Result<(), Error> {
    let mut lap = Lap::start();
    let out = output(O::NAME, stream, dst, layout)?;
    lap.lap(Stage::Order);
    let parts = parts::<T>(O::NAME, O::CUDA, op.scalars());
    // SAFETY: see the module docs: the input is the output, through the same layout.
    unsafe { launch(stream.cuda(), parts, [out, out], lap) }
}

/// `dst[i] = op(dst[i], b[i])` in place, on `stream`.
///
/// # Errors
/// As [`unary`].
pub fn binary_inplace<T: Element, O: BinaryOp<T, Output = T>>(
    stream: &Stream,
    op: &O,
    dst: &mut GpuStorage<T>,
    layout: &Layout,
    b: (&GpuStorage<T>, &Layout),
) -> Result<(), Error> {
    let mut lap = Lap::start();
    let b = input(O::NAME, stream, b.0, b.1)?;
    let out = output(O::NAME, stream, dst, layout)?;
    lap.lap(Stage::Order);
    let parts = parts::<T>(O::NAME, O::CUDA, op.scalars());
    // SAFETY: see the module docs: the first input is the output, through the same layout;
    // `b` is another storage (`dst` is borrowed mutably).
    unsafe { launch(stream.cuda(), parts, [out, out, b], lap) }
}

/// `dst[i] = op(dst[i], b[i], c[i])` in place, on `stream`.
///
/// # Errors
/// As [`unary`].
pub fn ternary_inplace<T: Element, O: TernaryOp<T, T, Output = T>>(
    stream: &Stream,
    op: &O,
    dst: &mut GpuStorage<T>,
    layout: &Layout,
    b: (&GpuStorage<T>, &Layout),
    c: (&GpuStorage<T>, &Layout),
) -> Result<(), Error> {
    let mut lap = Lap::start();
    let b = input(O::NAME, stream, b.0, b.1)?;
    let c = input(O::NAME, stream, c.0, c.1)?;
    let out = output(O::NAME, stream, dst, layout)?;
    lap.lap(Stage::Order);
    let parts = parts::<T>(O::NAME, O::CUDA, op.scalars());
    // SAFETY: see the module docs: the first input is the output, through the same layout;
    // `b` and `c` are other storages (`dst` is borrowed mutably).
    unsafe { launch(stream.cuda(), parts, [out, out, b, c], lap) }
}

/// Launches one pointwise kernel over `N` operands (output first): the cached plan of its
/// [`Signature`] when this thread has one, else checked, planned, launched and cached.
///
/// # Safety
/// For every operand, `ptr` is the address of a device allocation of at least `len`
/// elements of the operand's type, made in `stream`'s context, that stays allocated until the
/// kernel has finished (stream order). No other work writes an input, or reads or writes the
/// output, while the kernel runs. The output's elements do not alias an input's elements,
/// except element for element (the same view of the same buffer: an in-place op). `op`'s
/// scalars are of its `scalar` type's compute type.
unsafe fn launch<const N: usize>(
    stream: &CudaStream,
    op: OpParts,
    operands: [(Operand, RawOperand<'_>); N],
    mut lap: Lap,
) -> Result<(), Error> {
    let out = operands[0].1.layout;
    for (_, operand) in &operands[1..] {
        if operand.layout.shape() != out.shape() {
            return Err(LayoutError::ShapeMismatch {
                op: op.name,
                expected: out.shape().to_vec(),
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
    lap.lap(Stage::Validate);
    if let Some(signature) = &signature {
        let ptrs = operands.map(|(_, o)| o.ptr);
        let lens = operands.map(|(_, o)| o.len);
        // SAFETY: the views are those in the signature (every input has the output's shape,
        // checked above; the signature holds the output's shape and every view's offset and
        // strides), each buffer's address and length are `ptrs` and `lens`, and the caller
        // keeps the buffers alive and unaliased as the uncached launch requires (this
        // function's contract); the scalars are this op's, of the signature's types.
        let hit = unsafe {
            launch_cached(
                stream,
                signature.key(),
                &ptrs,
                &lens,
                op.scalars.map(|s| s.word()),
                &mut lap,
            )
        };
        if let Some(launched) = hit {
            return launched;
        }
    }
    for (_, operand) in &operands {
        operand.layout.check_within(op.name, operand.len)?;
    }
    out.check_writable(op.name)?;
    if out.numel() == 0 {
        return Ok(());
    }
    lap.lap(Stage::Validate);
    let mut plan = plan_launch(stream.context(), &op, &operands, &mut lap)?;
    // Why the launch is sound: the plan's arguments are the parameters of its kernel's entry
    // point in declaration order (`prepare`); the pointers in them address the operands'
    // first elements, and the offset calculator (or the contiguous form) only reaches
    // elements of the checked views, which lie inside the buffers (`check_within` above)
    // that the caller keeps alive; the kernel was loaded in the stream's context; the grid
    // is `launch_grid`'s and the block the kernel's `__launch_bounds__`.
    match &signature {
        // SAFETY: as argued above; and any later launch with this signature has the same
        // views over buffers of the same alignment, so the plan kept is its plan.
        Some(signature) => unsafe { launch_and_keep(stream, signature.key(), plan) },
        // SAFETY: as argued above.
        None => unsafe { plan.launch(stream) },
    }?;
    lap.lap(Stage::Driver);
    Ok(())
}
