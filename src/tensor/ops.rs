//! Pointwise ops on tensors and views: broadcasting, result allocation, and the public
//! methods, all generic over the device's [`Backend`].
//!
//! Every op of [`crate::ops::table`] has up to three methods on [`Tensor`], [`TensorView`] and
//! [`TensorViewMut`]:
//! - `a.exp()`, `a.add(&b)`: out of place, a new row-major [`Tensor`] of the broadcast shape;
//! - `a.exp_into(&mut out)`, `a.add_into(&b, &mut out)`: into any writable view or tensor,
//!   the inputs broadcast to `out`'s shape (NumPy's `out=`);
//! - `a.exp_()`, `a.add_(&b)` (on [`Tensor`] and [`TensorViewMut`] only): in place, the other
//!   operands broadcast to `a`'s shape.
//!
//! Operands are anything implementing [`AsView`] (tensors and views, mixed freely), of the
//! same element type and device: mixing types is a compile error, [`Tensor::cast`] converts.
//! Shapes that do not broadcast give [`LayoutError::BroadcastMismatch`] naming the op and both
//! shapes; inputs that broadcast to a shape other than the destination's give
//! [`LayoutError::ShapeMismatch`].

use super::{AsView, AsViewMut, Tensor, TensorView, TensorViewMut};
use crate::element::{Element, FloatElement, Numeric, Signed};
use crate::error::{LayoutError, Result};
use crate::layout::{broadcast_shapes, Layout};
use crate::ops::table::*;
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
fn broadcast_inputs(op: &'static str, inputs: &[&[usize]]) -> Result<Vec<usize>> {
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
    Ok(shape)
}

/// Checks that `inputs` broadcast to exactly `out` (the destination's shape).
fn fit_to(op: &'static str, out: &[usize], inputs: &[&[usize]]) -> Result<()> {
    let mut all = vec![out];
    all.extend_from_slice(inputs);
    let shape = broadcast_inputs(op, &all)?;
    if shape != out {
        return Err(LayoutError::ShapeMismatch {
            op,
            expected: out.to_vec(),
            got: broadcast_inputs(op, inputs)?,
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
    let storage = device.unary_new(op, a)?;
    let layout = Layout::contiguous(a.shape())?;
    Ok(Tensor::from_contiguous(storage, layout, device.clone()))
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
    let a = expand(a, out.shape())?;
    out.device().unary(op, &a, out)
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
    out.device().binary(op, &a, &b, out)
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
    let shape = out.shape().to_vec();
    let (a, b, c) = (expand(a, &shape)?, expand(b, &shape)?, expand(c, &shape)?);
    out.device().ternary(op, &a, &b, &c, out)
}

/// `dst = op(dst)`.
pub fn map_inplace<T: Element, D: Backend, O: UnaryOp<T, Output = T>>(
    op: O,
    dst: &mut TensorViewMut<'_, T, D>,
) -> Result<()> {
    dst.device().unary_inplace(op, dst)
}

/// `dst = op(dst, b)`, `b` broadcast to `dst`'s shape.
pub fn zip_inplace<T: Element, D: Backend, O: BinaryOp<T, Output = T>>(
    op: O,
    dst: &mut TensorViewMut<'_, T, D>,
    b: &TensorView<'_, T, D>,
) -> Result<()> {
    fit_to(O::NAME, dst.shape(), &[b.shape()])?;
    let b = expand(b, dst.shape())?;
    dst.device().binary_inplace(op, dst, &b)
}

/// `dst = op(dst, b, c)`, `b` and `c` broadcast to `dst`'s shape.
pub fn zip3_inplace<T: Element, D: Backend, O: TernaryOp<T, T, Output = T>>(
    op: O,
    dst: &mut TensorViewMut<'_, T, D>,
    b: &TensorView<'_, T, D>,
    c: &TensorView<'_, T, D>,
) -> Result<()> {
    fit_to(O::NAME, dst.shape(), &[b.shape(), c.shape()])?;
    let shape = dst.shape().to_vec();
    let (b, c) = (expand(b, &shape)?, expand(c, &shape)?);
    dst.device().ternary_inplace(op, dst, &b, &c)
}

/// Out-of-place and `_into` methods of unary ops.
macro_rules! unary_read {
    ($($name:ident, $into:ident: $op:expr, $bound:ident, $doc:literal;)*) => {$(
        #[doc = concat!("`", $doc, "` elementwise, as a new row-major tensor.")]
        pub fn $name(&self) -> Result<Tensor<T, D>>
        where
            T: $bound,
        {
            map($op, &self.view())
        }

        #[doc = concat!("`", $doc, "` elementwise, written into `out` (`self` broadcast to its shape).")]
        pub fn $into(&self, out: &mut impl AsViewMut<T, D>) -> Result<()>
        where
            T: $bound,
        {
            map_into($op, &self.view(), &mut out.view_mut())
        }
    )*};
}

/// Out-of-place and `_into` methods of binary ops.
macro_rules! binary_read {
    ($($name:ident, $into:ident: $op:expr, $bound:ident => $out:ty, $doc:literal;)*) => {$(
        #[doc = concat!("`", $doc, "` elementwise, broadcasting, as a new row-major tensor.")]
        pub fn $name(&self, rhs: &impl AsView<T, D>) -> Result<Tensor<$out, D>>
        where
            T: $bound,
        {
            zip($op, &self.view(), &rhs.view())
        }

        #[doc = concat!("`", $doc, "` elementwise, written into `out` (inputs broadcast to its shape).")]
        pub fn $into(
            &self,
            rhs: &impl AsView<T, D>,
            out: &mut impl AsViewMut<$out, D>,
        ) -> Result<()>
        where
            T: $bound,
        {
            zip_into($op, &self.view(), &rhs.view(), &mut out.view_mut())
        }
    )*};
}

/// In-place methods of unary ops.
macro_rules! unary_write {
    ($($name:ident: $op:expr, $bound:ident, $doc:literal;)*) => {$(
        #[doc = concat!("`", $doc, "` elementwise, in place.")]
        pub fn $name(&mut self) -> Result<()>
        where
            T: $bound,
        {
            map_inplace($op, &mut self.view_mut())
        }
    )*};
}

/// In-place methods of binary ops.
macro_rules! binary_write {
    ($($name:ident: $op:expr, $bound:ident, $doc:literal;)*) => {$(
        #[doc = concat!("`", $doc, "` elementwise, in place (`rhs` broadcast to `self`'s shape).")]
        pub fn $name(&mut self, rhs: &impl AsView<T, D>) -> Result<()>
        where
            T: $bound,
        {
            zip_inplace($op, &mut self.view_mut(), &rhs.view())
        }
    )*};
}

/// The read-only op methods, for a type with `view(&self) -> TensorView`.
macro_rules! read_ops {
    (impl[$($g:tt)*] $ty:ty) => {
        impl<$($g)*> $ty {
            unary_read! {
                neg, neg_into: Neg, Signed, "-a";
                abs, abs_into: Abs, Numeric, "|a|";
                sign, sign_into: Sign, Numeric, "sign(a)";
                square, square_into: Square, Numeric, "a * a";
                relu, relu_into: Relu, Numeric, "max(a, 0)";
                exp, exp_into: Exp, FloatElement, "e^a";
                log, log_into: Log, FloatElement, "ln(a)";
                sqrt, sqrt_into: Sqrt, FloatElement, "sqrt(a)";
                rsqrt, rsqrt_into: Rsqrt, FloatElement, "1 / sqrt(a)";
                sin, sin_into: Sin, FloatElement, "sin(a)";
                cos, cos_into: Cos, FloatElement, "cos(a)";
                tanh, tanh_into: Tanh, FloatElement, "tanh(a)";
                sigmoid, sigmoid_into: Sigmoid, FloatElement, "1 / (1 + e^-a)";
                gelu, gelu_into: Gelu, FloatElement, "gelu(a)";
                silu, silu_into: Silu, FloatElement, "a * sigmoid(a)";
                recip, recip_into: Recip, FloatElement, "1 / a";
                floor, floor_into: Floor, FloatElement, "floor(a)";
                ceil, ceil_into: Ceil, FloatElement, "ceil(a)";
                round, round_into: Round, FloatElement, "round_half_even(a)";
            }

            binary_read! {
                add, add_into: Add, Numeric => T, "a + b";
                sub, sub_into: Sub, Numeric => T, "a - b";
                mul, mul_into: Mul, Numeric => T, "a * b";
                div, div_into: Div, Numeric => T, "a / b";
                maximum, maximum_into: Maximum, Numeric => T, "max(a, b)";
                minimum, minimum_into: Minimum, Numeric => T, "min(a, b)";
                pow, pow_into: Pow, FloatElement => T, "a ^ b";
                eq, eq_into: Eq, Element => bool, "a == b";
                ne, ne_into: Ne, Element => bool, "a != b";
                lt, lt_into: Lt, Element => bool, "a < b";
                le, le_into: Le, Element => bool, "a <= b";
                gt, gt_into: Gt, Element => bool, "a > b";
                ge, ge_into: Ge, Element => bool, "a >= b";
            }

            /// `a + s` elementwise, as a new row-major tensor.
            pub fn add_scalar(&self, s: T) -> Result<Tensor<T, D>>
            where
                T: Numeric,
            {
                map(AddScalar(s), &self.view())
            }

            /// `a + s` elementwise, written into `out`.
            pub fn add_scalar_into(&self, s: T, out: &mut impl AsViewMut<T, D>) -> Result<()>
            where
                T: Numeric,
            {
                map_into(AddScalar(s), &self.view(), &mut out.view_mut())
            }

            /// `a * s` elementwise, as a new row-major tensor.
            pub fn mul_scalar(&self, s: T) -> Result<Tensor<T, D>>
            where
                T: Numeric,
            {
                map(MulScalar(s), &self.view())
            }

            /// `a * s` elementwise, written into `out`.
            pub fn mul_scalar_into(&self, s: T, out: &mut impl AsViewMut<T, D>) -> Result<()>
            where
                T: Numeric,
            {
                map_into(MulScalar(s), &self.view(), &mut out.view_mut())
            }

            /// `min(max(a, lo), hi)` elementwise with scalar bounds, as a new tensor.
            pub fn clamp_scalar(&self, lo: T, hi: T) -> Result<Tensor<T, D>>
            where
                T: Numeric,
            {
                map(ClampScalar(lo, hi), &self.view())
            }

            /// `min(max(a, lo), hi)` elementwise with scalar bounds, written into `out`.
            pub fn clamp_scalar_into(
                &self,
                lo: T,
                hi: T,
                out: &mut impl AsViewMut<T, D>,
            ) -> Result<()>
            where
                T: Numeric,
            {
                map_into(ClampScalar(lo, hi), &self.view(), &mut out.view_mut())
            }

            /// `min(max(a, lo), hi)` elementwise (bounds broadcast; NaN propagates), as a new
            /// tensor.
            pub fn clamp(
                &self,
                lo: &impl AsView<T, D>,
                hi: &impl AsView<T, D>,
            ) -> Result<Tensor<T, D>>
            where
                T: Numeric,
            {
                zip3(Clamp, &self.view(), &lo.view(), &hi.view())
            }

            /// `min(max(a, lo), hi)` elementwise, written into `out`.
            pub fn clamp_into(
                &self,
                lo: &impl AsView<T, D>,
                hi: &impl AsView<T, D>,
                out: &mut impl AsViewMut<T, D>,
            ) -> Result<()>
            where
                T: Numeric,
            {
                zip3_into(Clamp, &self.view(), &lo.view(), &hi.view(), &mut out.view_mut())
            }

            /// `a * b + c` elementwise with one rounding, as a new tensor.
            pub fn fma(&self, b: &impl AsView<T, D>, c: &impl AsView<T, D>) -> Result<Tensor<T, D>>
            where
                T: FloatElement,
            {
                zip3(Fma, &self.view(), &b.view(), &c.view())
            }

            /// `a * b + c` elementwise with one rounding, written into `out`.
            pub fn fma_into(
                &self,
                b: &impl AsView<T, D>,
                c: &impl AsView<T, D>,
                out: &mut impl AsViewMut<T, D>,
            ) -> Result<()>
            where
                T: FloatElement,
            {
                zip3_into(Fma, &self.view(), &b.view(), &c.view(), &mut out.view_mut())
            }

            /// `a + w * (b - a)` elementwise, as a new tensor.
            pub fn lerp(&self, b: &impl AsView<T, D>, w: &impl AsView<T, D>) -> Result<Tensor<T, D>>
            where
                T: FloatElement,
            {
                zip3(Lerp, &self.view(), &b.view(), &w.view())
            }

            /// `a + w * (b - a)` elementwise, written into `out`.
            pub fn lerp_into(
                &self,
                b: &impl AsView<T, D>,
                w: &impl AsView<T, D>,
                out: &mut impl AsViewMut<T, D>,
            ) -> Result<()>
            where
                T: FloatElement,
            {
                zip3_into(Lerp, &self.view(), &b.view(), &w.view(), &mut out.view_mut())
            }

            /// Each element converted to `U` with C cast rules ([`crate::ops::cast`]), as a
            /// new row-major tensor: the one explicit way to change element type.
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

            /// A row-major copy under a new shape with the same element count (the
            /// elements in row-major order): `reshape` when a view is impossible.
            pub fn reshape_copy(&self, shape: &[usize]) -> Result<Tensor<T, D>> {
                let mut t = self.contiguous()?;
                let layout = t.layout().reshape(shape)?;
                t.set_layout(layout)?;
                Ok(t)
            }
        }
    };
}

read_ops!(impl[T: Element, D: Backend] Tensor<T, D>);
read_ops!(impl['a, T: Element, D: Backend] TensorView<'a, T, D>);
read_ops!(impl['a, T: Element, D: Backend] TensorViewMut<'a, T, D>);

/// The in-place methods, for a type with `view_mut(&mut self) -> TensorViewMut`.
macro_rules! write_ops {
    (impl[$($g:tt)*] $ty:ty) => {
        impl<$($g)*> $ty {
            unary_write! {
                neg_: Neg, Signed, "-a";
                abs_: Abs, Numeric, "|a|";
                sign_: Sign, Numeric, "sign(a)";
                square_: Square, Numeric, "a * a";
                relu_: Relu, Numeric, "max(a, 0)";
                exp_: Exp, FloatElement, "e^a";
                log_: Log, FloatElement, "ln(a)";
                sqrt_: Sqrt, FloatElement, "sqrt(a)";
                rsqrt_: Rsqrt, FloatElement, "1 / sqrt(a)";
                sin_: Sin, FloatElement, "sin(a)";
                cos_: Cos, FloatElement, "cos(a)";
                tanh_: Tanh, FloatElement, "tanh(a)";
                sigmoid_: Sigmoid, FloatElement, "1 / (1 + e^-a)";
                gelu_: Gelu, FloatElement, "gelu(a)";
                silu_: Silu, FloatElement, "a * sigmoid(a)";
                recip_: Recip, FloatElement, "1 / a";
                floor_: Floor, FloatElement, "floor(a)";
                ceil_: Ceil, FloatElement, "ceil(a)";
                round_: Round, FloatElement, "round_half_even(a)";
            }

            binary_write! {
                add_: Add, Numeric, "a + b";
                sub_: Sub, Numeric, "a - b";
                mul_: Mul, Numeric, "a * b";
                div_: Div, Numeric, "a / b";
                maximum_: Maximum, Numeric, "max(a, b)";
                minimum_: Minimum, Numeric, "min(a, b)";
                pow_: Pow, FloatElement, "a ^ b";
            }

            /// `a + s` elementwise, in place.
            pub fn add_scalar_(&mut self, s: T) -> Result<()>
            where
                T: Numeric,
            {
                map_inplace(AddScalar(s), &mut self.view_mut())
            }

            /// `a * s` elementwise, in place.
            pub fn mul_scalar_(&mut self, s: T) -> Result<()>
            where
                T: Numeric,
            {
                map_inplace(MulScalar(s), &mut self.view_mut())
            }

            /// `min(max(a, lo), hi)` with scalar bounds, in place.
            pub fn clamp_scalar_(&mut self, lo: T, hi: T) -> Result<()>
            where
                T: Numeric,
            {
                map_inplace(ClampScalar(lo, hi), &mut self.view_mut())
            }

            /// `min(max(a, lo), hi)` elementwise, in place (bounds broadcast).
            pub fn clamp_(&mut self, lo: &impl AsView<T, D>, hi: &impl AsView<T, D>) -> Result<()>
            where
                T: Numeric,
            {
                zip3_inplace(Clamp, &mut self.view_mut(), &lo.view(), &hi.view())
            }

            /// `a * b + c` with one rounding, in place.
            pub fn fma_(&mut self, b: &impl AsView<T, D>, c: &impl AsView<T, D>) -> Result<()>
            where
                T: FloatElement,
            {
                zip3_inplace(Fma, &mut self.view_mut(), &b.view(), &c.view())
            }

            /// `a + w * (b - a)`, in place.
            pub fn lerp_(&mut self, b: &impl AsView<T, D>, w: &impl AsView<T, D>) -> Result<()>
            where
                T: FloatElement,
            {
                zip3_inplace(Lerp, &mut self.view_mut(), &b.view(), &w.view())
            }

            /// Sets every element to `value`.
            pub fn fill_(&mut self, value: T) -> Result<()> {
                let mut dst = self.view_mut();
                dst.device().fill(&mut dst, value)
            }

            /// Copies `src` (broadcast to this shape) into these elements.
            pub fn copy_from(&mut self, src: &impl AsView<T, D>) -> Result<()> {
                map_into(Identity, &src.view(), &mut self.view_mut())
            }
        }
    };
}

write_ops!(impl[T: Element, D: Backend] Tensor<T, D>);
write_ops!(impl['a, T: Element, D: Backend] TensorViewMut<'a, T, D>);

impl<T: Element, D: Backend> Tensor<T, D> {
    /// `mask ? a : b` elementwise (all three broadcast), as a new row-major tensor.
    pub fn where_(
        mask: &impl AsView<bool, D>,
        a: &impl AsView<T, D>,
        b: &impl AsView<T, D>,
    ) -> Result<Self> {
        zip3(Where, &mask.view(), &a.view(), &b.view())
    }

    /// `mask ? a : b` elementwise, written into `out` (inputs broadcast to its shape).
    pub fn where_into(
        mask: &impl AsView<bool, D>,
        a: &impl AsView<T, D>,
        b: &impl AsView<T, D>,
        out: &mut impl AsViewMut<T, D>,
    ) -> Result<()> {
        zip3_into(
            Where,
            &mask.view(),
            &a.view(),
            &b.view(),
            &mut out.view_mut(),
        )
    }
}
