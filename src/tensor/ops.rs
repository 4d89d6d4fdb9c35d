//! Pointwise ops on tensors and views: broadcasting, result allocation, and the public
//! methods, all generic over the device's [`Backend`].
//!
//! Every op of [`crate::ops::table`] has up to three methods, written once on
//! [`Tensor<T, D, S>`](Tensor) for every representation `S` (so on [`TensorView`] and
//! [`TensorViewMut`] too):
//! - `a.exp()`, `a.add(&b)`: out of place, a new row-major [`Tensor`] of the broadcast shape;
//! - `a.exp_into(&mut out)`, `a.add_into(&b, &mut out)`: into any writable view or tensor,
//!   the inputs broadcast to `out`'s shape (NumPy's `out=`);
//! - `a.exp_()`, `a.add_(&b)` (on [`Tensor`] and [`TensorViewMut`] only): in place, the other
//!   operands broadcast to `a`'s shape.
//!
//! Operands are anything implementing [`Operand`]: tensors and views (by reference or by
//! value, mixed freely) and scalars of the element type (`x.gt(0.0)`, `x.clamp(-1.0, 1.0)`),
//! of the same element type and device: mixing types is a compile error, [`Tensor::cast`]
//! converts. (Rust's `>` and `==` return `bool`, so comparisons are methods: `x.gt(0.0)`
//! returns a `Tensor<bool>`.)
//! Shapes that do not broadcast give [`LayoutError::BroadcastMismatch`] naming the op and both
//! shapes; inputs that broadcast to a shape other than the destination's give
//! [`LayoutError::ShapeMismatch`].

use super::operand::{materialize, Held, Operand};
use super::{AsView, AsViewMut, ReadRepr, Tensor, TensorView, TensorViewMut, WriteRepr};
use crate::element::{DType, Element, FloatElement, Numeric, Signed};
// Integer, bitwise, logical and float-predicate ops (issue 26).
use super::backend::full_storage;
use crate::element::{Bitwise, DivRem, Integer};
use crate::error::{LayoutError, Result};
use crate::layout::{broadcast_shapes, Dims, Layout};
use crate::ops::table::{for_each_binary_op, for_each_ternary_op, for_each_unary_op, Identity, *};
use crate::ops::{Backend, BinaryOp, Cast, TernaryOp, UnaryOp};

/// `v` broadcast to `shape` (a cheap clone when it already has it).
fn expand<'a, T: Element, D: Backend>(
    v: &TensorView<'a, T, D>,
    shape: &[usize],
) -> Result<TensorView<'a, T, D>> {
    if v.shape() == shape {
        Ok(v.clone())
    } else {
        v.broadcast_to(shape)
    }
}

/// The shape `inputs` broadcast to, or a mismatch error naming `op` and the first two
/// shapes that disagree.
fn broadcast_inputs(op: &'static str, inputs: &[&[usize]]) -> Result<Dims<usize>> {
    if let Some((first, rest)) = inputs.split_first() {
        if rest.iter().all(|s| s == first) {
            // The common case: no broadcast, and no heap allocation up to the inline rank.
            return Ok(Dims::from_slice(first));
        }
    }
    let mut shape = inputs.first().map_or_else(Vec::new, |s| s.to_vec());
    for s in inputs.iter().skip(1) {
        shape = broadcast_shapes(op, &shape, s).map_err(|e| match e {
            LayoutError::BroadcastMismatch { .. } => LayoutError::BroadcastMismatch {
                op,
                lhs: shape.clone(),
                rhs: s.to_vec(),
            },
            other => other,
        })?;
    }
    Ok(shape.into())
}

/// Checks that `inputs` broadcast to exactly `out` (the destination's shape).
pub(crate) fn fit_to(op: &'static str, out: &[usize], inputs: &[&[usize]]) -> Result<()> {
    if inputs.iter().all(|s| *s == out) {
        // The common case, on every op's hot path: nothing to broadcast.
        return Ok(());
    }
    let mut all = vec![out];
    all.extend_from_slice(inputs);
    let shape = broadcast_inputs(op, &all)?;
    if *shape != *out {
        return Err(LayoutError::ShapeMismatch {
            op,
            expected: out.to_vec(),
            got: broadcast_inputs(op, inputs)?.to_vec(),
        }
        .into());
    }
    Ok(())
}

/// `op(a)` as a new row-major tensor.
pub fn map<T: Element, D: Backend, O: UnaryOp<T>>(
    op: O,
    a: &TensorView<'_, T, D>,
) -> Result<Tensor<O::Output, D>> {
    let device = a.device();
    let layout = Layout::contiguous(a.shape())?;
    let storage = match input_free::<T, O>() {
        Some(value) => full_storage(device, layout.numel(), value)?,
        None => device.unary_new(op, a)?,
    };
    Ok(Tensor::from_contiguous(storage, layout, device.clone()))
}

/// The value `op` takes on every element of type `T` when it does not depend on it (`isinf`
/// and its kin on integers: [`input_free_value`]), so the eager op writes it without
/// reading its input, as PyTorch does.
fn input_free<T: Element, O: UnaryOp<T>>() -> Option<O::Output> {
    let v = input_free_value(O::NAME, T::DTYPE)?;
    (O::Output::DTYPE == DType::Bool).then(|| O::Output::from_f64(if v { 1.0 } else { 0.0 }))
}

/// `op(a, b)` as a new row-major tensor of the broadcast shape.
pub fn zip<T: Element, D: Backend, O: BinaryOp<T>>(
    op: O,
    a: &TensorView<'_, T, D>,
    b: &TensorView<'_, T, D>,
) -> Result<Tensor<O::Output, D>> {
    let shape = broadcast_inputs(O::NAME, &[a.shape(), b.shape()])?;
    let (a, b) = (expand(a, &shape)?, expand(b, &shape)?);
    let device = a.device();
    let storage = device.binary_new(op, &a, &b)?;
    let layout = Layout::contiguous(&shape)?;
    Ok(Tensor::from_contiguous(storage, layout, device.clone()))
}

/// `op(a, b, c)` as a new row-major tensor of the broadcast shape.
pub fn zip3<A: Element, T: Element, D: Backend, O: TernaryOp<A, T>>(
    op: O,
    a: &TensorView<'_, A, D>,
    b: &TensorView<'_, T, D>,
    c: &TensorView<'_, T, D>,
) -> Result<Tensor<O::Output, D>> {
    let shape = broadcast_inputs(O::NAME, &[a.shape(), b.shape(), c.shape()])?;
    let (a, b, c) = (expand(a, &shape)?, expand(b, &shape)?, expand(c, &shape)?);
    let device = b.device();
    let storage = device.ternary_new(op, &a, &b, &c)?;
    let layout = Layout::contiguous(&shape)?;
    Ok(Tensor::from_contiguous(storage, layout, device.clone()))
}

/// `out = op(a)`, `a` broadcast to `out`'s shape.
pub fn map_into<T: Element, D: Backend, O: UnaryOp<T>>(
    op: O,
    a: &TensorView<'_, T, D>,
    out: &mut TensorViewMut<'_, O::Output, D>,
) -> Result<()> {
    fit_to(O::NAME, out.shape(), &[a.shape()])?;
    if let Some(value) = input_free::<T, O>() {
        // Not read, but still an operand: one from another device is refused as before.
        let device = out.device_ref();
        device.check_device(O::NAME, a.storage())?;
        return device.fill(out, value);
    }
    let a = expand(a, out.shape())?;
    out.device_ref().unary(op, &a, out)
}

/// `out = op(a, b)`, inputs broadcast to `out`'s shape.
pub fn zip_into<T: Element, D: Backend, O: BinaryOp<T>>(
    op: O,
    a: &TensorView<'_, T, D>,
    b: &TensorView<'_, T, D>,
    out: &mut TensorViewMut<'_, O::Output, D>,
) -> Result<()> {
    fit_to(O::NAME, out.shape(), &[a.shape(), b.shape()])?;
    let (a, b) = (expand(a, out.shape())?, expand(b, out.shape())?);
    out.device_ref().binary(op, &a, &b, out)
}

/// `out = op(a, b, c)`, inputs broadcast to `out`'s shape.
pub fn zip3_into<A: Element, T: Element, D: Backend, O: TernaryOp<A, T>>(
    op: O,
    a: &TensorView<'_, A, D>,
    b: &TensorView<'_, T, D>,
    c: &TensorView<'_, T, D>,
    out: &mut TensorViewMut<'_, O::Output, D>,
) -> Result<()> {
    fit_to(O::NAME, out.shape(), &[a.shape(), b.shape(), c.shape()])?;
    let shape = Dims::from_slice(out.shape());
    let (a, b, c) = (expand(a, &shape)?, expand(b, &shape)?, expand(c, &shape)?);
    out.device_ref().ternary(op, &a, &b, &c, out)
}

/// `dst = op(dst)`.
pub fn map_inplace<T: Element, D: Backend, O: UnaryOp<T, Output = T>>(
    op: O,
    dst: &mut TensorViewMut<'_, T, D>,
) -> Result<()> {
    dst.device_ref().unary_inplace(op, dst)
}

/// `dst = op(dst, b)`, `b` broadcast to `dst`'s shape.
pub fn zip_inplace<T: Element, D: Backend, O: BinaryOp<T, Output = T>>(
    op: O,
    dst: &mut TensorViewMut<'_, T, D>,
    b: &TensorView<'_, T, D>,
) -> Result<()> {
    fit_to(O::NAME, dst.shape(), &[b.shape()])?;
    let b = expand(b, dst.shape())?;
    dst.device_ref().binary_inplace(op, dst, &b)
}

/// `dst = op(dst, b, c)`, `b` and `c` broadcast to `dst`'s shape.
pub fn zip3_inplace<T: Element, D: Backend, O: TernaryOp<T, T, Output = T>>(
    op: O,
    dst: &mut TensorViewMut<'_, T, D>,
    b: &TensorView<'_, T, D>,
    c: &TensorView<'_, T, D>,
) -> Result<()> {
    fit_to(O::NAME, dst.shape(), &[b.shape(), c.shape()])?;
    let shape = Dims::from_slice(dst.shape());
    let (b, c) = (expand(b, &shape)?, expand(c, &shape)?);
    dst.device_ref().ternary_inplace(op, dst, &b, &c)
}

/// `op(a, b)` with `b` a tensor, view or scalar ([`Operand`]).
pub(crate) fn zip_held<T: Element, D: Backend, O: BinaryOp<T>>(
    op: O,
    a: &TensorView<'_, T, D>,
    b: Held<'_, T, D>,
) -> Result<Tensor<O::Output, D>> {
    let mut slot = None;
    let b = materialize(b, a.device(), &mut slot)?;
    zip(op, a, &b)
}

/// `out = op(a, b)` with `b` a tensor, view or scalar.
pub(crate) fn zip_held_into<T: Element, D: Backend, O: BinaryOp<T>>(
    op: O,
    a: &TensorView<'_, T, D>,
    b: Held<'_, T, D>,
    out: &mut TensorViewMut<'_, O::Output, D>,
) -> Result<()> {
    let mut slot = None;
    let b = materialize(b, out.device_ref(), &mut slot)?;
    zip_into(op, a, &b, out)
}

/// `dst = op(dst, b)` with `b` a tensor, view or scalar.
pub(crate) fn zip_held_inplace<T: Element, D: Backend, O: BinaryOp<T, Output = T>>(
    op: O,
    dst: &mut TensorViewMut<'_, T, D>,
    b: Held<'_, T, D>,
) -> Result<()> {
    let mut slot = None;
    let b = materialize(b, dst.device_ref(), &mut slot)?;
    zip_inplace(op, dst, &b)
}

/// `op(a, b, c)` with `b` and `c` tensors, views or scalars (made on `a`'s device).
fn zip3_held<A: Element, T: Element, D: Backend, O: TernaryOp<A, T>>(
    op: O,
    a: &TensorView<'_, A, D>,
    b: Held<'_, T, D>,
    c: Held<'_, T, D>,
) -> Result<Tensor<O::Output, D>> {
    let (mut sb, mut sc) = (None, None);
    let b = materialize(b, a.device(), &mut sb)?;
    let c = materialize(c, a.device(), &mut sc)?;
    zip3(op, a, &b, &c)
}

/// `out = op(a, b, c)` with `b` and `c` tensors, views or scalars.
fn zip3_held_into<A: Element, T: Element, D: Backend, O: TernaryOp<A, T>>(
    op: O,
    a: &TensorView<'_, A, D>,
    b: Held<'_, T, D>,
    c: Held<'_, T, D>,
    out: &mut TensorViewMut<'_, O::Output, D>,
) -> Result<()> {
    let device = out.device_ref();
    let (mut sb, mut sc) = (None, None);
    let b = materialize(b, device, &mut sb)?;
    let c = materialize(c, device, &mut sc)?;
    zip3_into(op, a, &b, &c, out)
}

/// `dst = op(dst, b, c)` with `b` and `c` tensors, views or scalars.
fn zip3_held_inplace<T: Element, D: Backend, O: TernaryOp<T, T, Output = T>>(
    op: O,
    dst: &mut TensorViewMut<'_, T, D>,
    b: Held<'_, T, D>,
    c: Held<'_, T, D>,
) -> Result<()> {
    let device = dst.device_ref();
    let (mut sb, mut sc) = (None, None);
    let b = materialize(b, device, &mut sb)?;
    let c = materialize(c, device, &mut sc)?;
    zip3_inplace(op, dst, &b, &c)
}

// The op methods are generated from the op table: `for_each_*_op!(m)` (in
// `crate::ops::table`) calls `m! { entries }` with every entry, and the macros below turn each
// entry's method clause (`=> name, name_into[, name_]: "doc"`) into methods. They accept the
// table's whole entry grammar and use only the op type, its scalars or parameter names, its
// bound and output, and the method clause.

/// Out-of-place and `_into` methods of the unary ops (`a.exp()`, `a.add_scalar(s)`, ...).
macro_rules! unary_read {
    ($(
        $(#[$doc:meta])*
        $name:ident $(($($p:ident),+))? : $bound:ident => $out:ty, $opname:literal, $cuda:literal,
            |$a:ident| $body:expr $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
    )*) => {
        $( unary_read!(@one $name [$($($p),+)?] $bound => $out, [$($m $into $d)?]); )*
    };
    (@one $name:ident [$($p:ident),*] $bound:ident => $out:ty, []) => {};
    (@one $name:ident [$($p:ident),*] $bound:ident => $out:ty,
        [$m:ident $into:ident $d:literal]) => {
        #[doc = concat!("`", $d, "` elementwise, as a new row-major tensor.")]
        pub fn $m(&self $(, $p: T)*) -> Result<Tensor<$out, D>>
        where
            T: $bound,
        {
            map(unary_read!(@op $name [$($p),*]), &self.view())
        }

        #[doc = concat!("`", $d, "` elementwise, written into `out` (`self` broadcast to its shape).")]
        pub fn $into(&self $(, $p: T)*, out: &mut impl AsViewMut<$out, D>) -> Result<()>
        where
            T: $bound,
        {
            map_into(unary_read!(@op $name [$($p),*]), &self.view(), &mut out.view_mut())
        }
    };
    (@op $name:ident []) => { $name };
    (@op $name:ident [$($p:ident),+]) => { $name($($p),+) };
}

/// In-place methods of the unary ops (`a.exp_()`, `a.add_scalar_(s)`, ...).
macro_rules! unary_write {
    ($(
        $(#[$doc:meta])*
        $name:ident $(($($p:ident),+))? : $bound:ident => $out:ty, $opname:literal, $cuda:literal,
            |$a:ident| $body:expr $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
    )*) => {
        $( unary_write!(@one $name [$($($p),+)?] $bound [$($($inplace $d)?)?]); )*
    };
    (@one $name:ident [$($p:ident),*] $bound:ident []) => {};
    (@one $name:ident [$($p:ident),*] $bound:ident [$inplace:ident $d:literal]) => {
        #[doc = concat!("`", $d, "` elementwise, in place.")]
        pub fn $inplace(&mut self $(, $p: T)*) -> Result<()>
        where
            T: $bound,
            S: WriteRepr<T, D>,
        {
            map_inplace(unary_read!(@op $name [$($p),*]), &mut self.view_mut())
        }
    };
}

/// Out-of-place and `_into` methods of the binary ops (`a.add(&b)`, `a.lt(&b)`, ...).
macro_rules! binary_read {
    ($(
        $(#[$doc:meta])*
        $name:ident : $bound:ident => $out:ty, $opname:literal, $cuda:literal,
            |$a:ident, $b:ident| $body:expr
            $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
    )*) => {
        $( binary_read!(@one $name $bound => $out, [$($m $into $d)?]); )*
    };
    (@one $name:ident $bound:ident => $out:ty, []) => {};
    (@one $name:ident $bound:ident => $out:ty, [$m:ident $into:ident $d:literal]) => {
        #[doc = concat!("`", $d, "` elementwise, broadcasting, as a new row-major tensor (`rhs`: a tensor, view or scalar, see [`Operand`]).")]
        pub fn $m(&self, rhs: impl Operand<T, D>) -> Result<Tensor<$out, D>>
        where
            T: $bound,
        {
            zip_held($name, &self.view(), rhs.held())
        }

        #[doc = concat!("`", $d, "` elementwise, written into `out` (inputs broadcast to its shape).")]
        pub fn $into(
            &self,
            rhs: impl Operand<T, D>,
            out: &mut impl AsViewMut<$out, D>,
        ) -> Result<()>
        where
            T: $bound,
        {
            zip_held_into($name, &self.view(), rhs.held(), &mut out.view_mut())
        }
    };
}

/// In-place methods of the binary ops whose output is `T` (`a.add_(&b)`, ...).
macro_rules! binary_write {
    ($(
        $(#[$doc:meta])*
        $name:ident : $bound:ident => $out:ty, $opname:literal, $cuda:literal,
            |$a:ident, $b:ident| $body:expr
            $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
    )*) => {
        $( binary_write!(@one $name $bound [$($($inplace $d)?)?]); )*
    };
    (@one $name:ident $bound:ident []) => {};
    (@one $name:ident $bound:ident [$inplace:ident $d:literal]) => {
        #[doc = concat!("`", $d, "` elementwise, in place (`rhs`, a tensor, view or scalar, broadcast to `self`'s shape).")]
        pub fn $inplace(&mut self, rhs: impl Operand<T, D>) -> Result<()>
        where
            T: $bound,
            S: WriteRepr<T, D>,
        {
            zip_held_inplace($name, &mut self.view_mut(), rhs.held())
        }
    };
}

/// Out-of-place and `_into` methods of the ternary ops whose first input is `T`
/// (`a.clamp(&lo, &hi)`, `a.fma(&b, &c)`, ...), named after the entry's closure parameters.
macro_rules! ternary_read {
    ($(
        $(#[$doc:meta])*
        $name:ident $(($($p:ident),+))? : [$first:tt] $bound:ident => $out:ty, $opname:literal,
            $cuda:literal, |$a:ident, $b:ident, $c:ident| $body:expr
            $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
    )*) => {
        $( ternary_read!(@one $name [$($($p),+)?] [$first] $b $c $bound => $out, [$($m $into $d)?]); )*
    };
    (@one $name:ident [$($p:ident),*] [T] $b:ident $c:ident $bound:ident => $out:ty,
        [$m:ident $into:ident $d:literal]) => {
        #[doc = concat!("`", $d, "` elementwise (inputs broadcast; each a tensor, view or scalar), as a new row-major tensor.")]
        pub fn $m(
            &self,
            $b: impl Operand<T, D>,
            $c: impl Operand<T, D>
            $(, $p: T)*
        ) -> Result<Tensor<$out, D>>
        where
            T: $bound,
        {
            zip3_held(unary_read!(@op $name [$($p),*]), &self.view(), $b.held(), $c.held())
        }

        #[doc = concat!("`", $d, "` elementwise, written into `out` (inputs broadcast to its shape).")]
        pub fn $into(
            &self,
            $b: impl Operand<T, D>,
            $c: impl Operand<T, D>,
            $($p: T,)*
            out: &mut impl AsViewMut<$out, D>,
        ) -> Result<()>
        where
            T: $bound,
        {
            zip3_held_into(
                unary_read!(@op $name [$($p),*]),
                &self.view(),
                $b.held(),
                $c.held(),
                &mut out.view_mut(),
            )
        }
    };
    // No methods, or a `bool` first input (see `ternary_mask`).
    (@one $name:ident [$($p:ident),*] [$first:tt] $b:ident $c:ident $bound:ident => $out:ty,
        [$($rest:tt)*]) => {};
}

/// In-place methods of the ternary ops whose first input and output are `T` (`a.clamp_(..)`).
macro_rules! ternary_write {
    ($(
        $(#[$doc:meta])*
        $name:ident $(($($p:ident),+))? : [$first:tt] $bound:ident => $out:ty, $opname:literal,
            $cuda:literal, |$a:ident, $b:ident, $c:ident| $body:expr
            $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
    )*) => {
        $( ternary_write!(@one $name [$($($p),+)?] [$first] $b $c $bound [$($($inplace $d)?)?]); )*
    };
    (@one $name:ident [$($p:ident),*] [T] $b:ident $c:ident $bound:ident
        [$inplace:ident $d:literal]) => {
        #[doc = concat!("`", $d, "` elementwise, in place (the other inputs, tensors, views or scalars, broadcast to `self`'s shape).")]
        pub fn $inplace(
            &mut self,
            $b: impl Operand<T, D>,
            $c: impl Operand<T, D>
            $(, $p: T)*
        ) -> Result<()>
        where
            T: $bound,
            S: WriteRepr<T, D>,
        {
            zip3_held_inplace(
                unary_read!(@op $name [$($p),*]),
                &mut self.view_mut(),
                $b.held(),
                $c.held(),
            )
        }
    };
    (@one $name:ident [$($p:ident),*] [$first:tt] $b:ident $c:ident $bound:ident
        [$($rest:tt)*]) => {};
}

/// Associated functions of the ternary ops whose first input is a `bool` mask
/// (`Tensor::where_cond(&mask, &a, &b)`), on [`Tensor`] only.
macro_rules! ternary_mask {
    ($(
        $(#[$doc:meta])*
        $name:ident $(($($p:ident),+))? : [$first:tt] $bound:ident => $out:ty, $opname:literal,
            $cuda:literal,
            |$a:ident, $b:ident, $c:ident| $body:expr
            $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
    )*) => {
        $( ternary_mask!(@one $name [$first] $a $b $c $bound => $out, [$($m $into $d)?]); )*
    };
    (@one $name:ident [bool] $a:ident $b:ident $c:ident $bound:ident => $out:ty,
        [$m:ident $into:ident $d:literal]) => {
        #[doc = concat!("`", $d, "` elementwise (all three broadcast; the two values tensors, views or scalars), as a new row-major tensor.")]
        pub fn $m(
            $a: &impl AsView<bool, D>,
            $b: impl Operand<T, D>,
            $c: impl Operand<T, D>,
        ) -> Result<Tensor<$out, D>>
        where
            T: $bound,
        {
            zip3_held($name, &$a.view(), $b.held(), $c.held())
        }

        #[doc = concat!("`", $d, "` elementwise, written into `out` (inputs broadcast to its shape).")]
        pub fn $into(
            $a: &impl AsView<bool, D>,
            $b: impl Operand<T, D>,
            $c: impl Operand<T, D>,
            out: &mut impl AsViewMut<$out, D>,
        ) -> Result<()>
        where
            T: $bound,
        {
            zip3_held_into($name, &$a.view(), $b.held(), $c.held(), &mut out.view_mut())
        }
    };
    (@one $name:ident [$first:tt] $a:ident $b:ident $c:ident $bound:ident => $out:ty,
        [$($rest:tt)*]) => {};
}

/// The read-only op methods, written once for every representation (owned or borrowed).
impl<T: Element, D: Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    for_each_unary_op!(unary_read);
    for_each_binary_op!(binary_read);
    for_each_ternary_op!(ternary_read);

    /// Each element converted to `U` with C cast rules ([`crate::ops::cast`]), as a new
    /// row-major tensor: the one explicit way to change element type.
    pub fn cast<U: Element>(&self) -> Result<Tensor<U, D>> {
        map(Cast::<U>::new(), &self.view())
    }

    /// Each element converted to `U`, written into `out`.
    pub fn cast_into<U: Element>(&self, out: &mut impl AsViewMut<U, D>) -> Result<()> {
        map_into(Cast::<U>::new(), &self.view(), &mut out.view_mut())
    }

    /// A row-major copy.
    pub fn contiguous(&self) -> Result<Tensor<T, D>> {
        map(Identity, &self.view())
    }

    /// A row-major copy under a new shape with the same element count (the elements in
    /// row-major order): `reshape` when a view is impossible.
    pub fn reshape_copy(&self, shape: &[usize]) -> Result<Tensor<T, D>> {
        let mut t = self.contiguous()?;
        let layout = t.layout().reshape(shape)?;
        t.set_layout(layout)?;
        Ok(t)
    }
}

/// The in-place methods, written once for every representation with a `where S: WriteRepr`
/// bound on each (owned tensors and [`TensorViewMut`]), so that calling one on a read-only
/// [`TensorView`] is an error that names `view_mut()`.
impl<T: Element, D: Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    for_each_unary_op!(unary_write);
    for_each_binary_op!(binary_write);
    for_each_ternary_op!(ternary_write);

    /// Sets every element to `value`.
    pub fn fill_(&mut self, value: T) -> Result<()>
    where
        S: WriteRepr<T, D>,
    {
        let mut dst = self.view_mut();
        let device = dst.device_ref();
        device.fill(&mut dst, value)
    }

    /// Copies `src` (broadcast to this shape) into these elements.
    pub fn copy_from(&mut self, src: &impl AsView<T, D>) -> Result<()>
    where
        S: WriteRepr<T, D>,
    {
        map_into(Identity, &src.view(), &mut self.view_mut())
    }
}

impl<T: Element, D: Backend> Tensor<T, D> {
    for_each_ternary_op!(ternary_mask);
}
