//! Safe pointwise launches over [`GpuStorage`]: each operand is a storage and a strided view
//! of it, all of one shape (broadcast inputs first with
//! [`Layout::broadcast_to`](crate::layout::Layout::broadcast_to)).
//!
//! The storages make the raw launch's contract hold: each is live device memory of its
//! length on its GPU, freed only in stream order; `GpuStorage::access_read` and
//! `access_write` order the launch stream after the work each storage must wait for (a read
//! after the last write, a write after the last write and the reads since) and record the
//! launch, so any stream may be used (docs/STREAMS.md); and the output
//! is borrowed mutably, so it aliases no input, except in the `_inplace` functions, where it
//! is the first input itself, read and written through one layout (each element is read
//! before it is written, by the same thread).

use crate::element::Element;
use crate::error::Error;
use crate::layout::Layout;
use crate::ops::{BinaryOp, TernaryOp, UnaryOp};
use crate::runtime::{GpuStorage, Stream};

use super::launch::{self, RawOperand};
use super::profile::{Lap, Stage};

fn input<'a, T: Element>(
    op: &'static str,
    stream: &Stream,
    storage: &'a GpuStorage<T>,
    layout: &'a Layout,
) -> Result<RawOperand<'a>, Error> {
    storage.access_read(op, stream)?;
    Ok(RawOperand {
        ptr: storage.device_ptr(),
        len: storage.len(),
        layout,
    })
}

fn output<'a, T: Element>(
    op: &'static str,
    stream: &Stream,
    storage: &'a mut GpuStorage<T>,
    layout: &'a Layout,
) -> Result<RawOperand<'a>, Error> {
    storage.access_write(op, stream)?;
    Ok(RawOperand {
        ptr: storage.device_ptr_mut(),
        len: storage.len(),
        layout,
    })
}

/// Sets every element of `dst`'s view to `value`, on `stream`.
///
/// # Errors
/// [`LayoutError`](crate::error::LayoutError) when the view reaches outside `dst` or has
/// overlapping elements; [`GpuError`](crate::error::GpuError) when `stream` is on another
/// GPU, or the kernel cannot be compiled or launched.
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
    unsafe { launch::launch_fill(stream.cuda(), value, out) }
}

/// `dst[i] = op(a[i])` over views of one shape, on `stream`.
///
/// # Errors
/// As [`fill`], and [`LayoutError::ShapeMismatch`](crate::error::LayoutError::ShapeMismatch)
/// when the views' shapes differ.
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
    // SAFETY: see the module docs; `dst` is borrowed mutably, so no input aliases it.
    unsafe { launch::launch_unary(stream.cuda(), op, out, a) }
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
    // SAFETY: see the module docs; `dst` is borrowed mutably, so no input aliases it.
    unsafe { launch::launch_binary(stream.cuda(), op, out, a, b) }
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
    // SAFETY: see the module docs; `dst` is borrowed mutably, so no input aliases it.
    unsafe { launch::launch_ternary(stream.cuda(), op, out, a, b, c) }
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
    // SAFETY: see the module docs: the input is the output, through the same layout.
    unsafe { launch::launch_unary(stream.cuda(), op, out, out) }
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
    // SAFETY: see the module docs: the first input is the output, through the same layout;
    // `b` is another storage (`dst` is borrowed mutably).
    unsafe { launch::launch_binary(stream.cuda(), op, out, out, b) }
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
    // SAFETY: see the module docs: the first input is the output, through the same layout;
    // `b` and `c` are other storages (`dst` is borrowed mutably).
    unsafe { launch::launch_ternary(stream.cuda(), op, out, out, b, c) }
}
