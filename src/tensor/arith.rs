//! `std::ops` on tensors: `+ - * /` and unary `-` between any mix of [`Tensor`],
//! [`TensorView`] and [`TensorViewMut`] (by reference or by value) and scalars of the element
//! type, on every device, and the compound assignments `+= -= *= /=`.
//!
//! Operators cannot fail in Rust's signatures, so (as in candle) they return a `Result`:
//! write `(&a + &b)?`. Broadcasting follows NumPy.
//!
//! | form | result | on error |
//! | --- | --- | --- |
//! | `&a + &b`, `&a + 2.0`, `2.0 * &a`, `a.t() + &b` | a new row-major tensor | [`Error`] |
//! | `&a + b` (`b` by value) | a new row-major tensor | [`Handback`] of `b` |
//! | `a + &b`, `a + 2.0` (`a` owned) | `a`, updated in place when the other operand broadcasts to its shape (it keeps its layout); else a new row-major tensor | [`Handback`] of `a` |
//! | `a + b` (both by value) | as `a + &b` | [`Handback`] of `(a, b)` |
//! | `a += &b`, `a += 2.0` (owned or [`TensorViewMut`]) | `a` updated in place | **panics** (see below) |
//!
//! `?` turns a [`Handback`] into the crate's [`Error`]; match on it to get the consumed
//! operands back (unchanged unless the device failed part way through an in-place update).
//!
//! # Compound assignment panics
//!
//! `AddAssign::add_assign` returns `()`, so `a += &b` cannot return an error: like ndarray's
//! and slices' operators, it **panics** when `b` does not broadcast to `a`'s shape or the
//! device fails. The methods `add_`, `sub_`, `mul_`, `div_` do the same in place and return
//! the error instead. With a scalar (`a *= 2.0`) on the CPU nothing can fail.
//!
//! # Scalars
//!
//! `a + s` and `a * s` run the op table's [`AddScalar`](table::AddScalar) and
//! [`MulScalar`](table::MulScalar) (the scalar is a kernel parameter); `-`, `/` and a scalar
//! on the left of `-` or `/` use the tensor ops with the scalar as a broadcast rank-0 tensor
//! (on a GPU, one element of device memory). A scalar has the tensor's element type:
//! `&x * 2.0` for `f32` and `f64`, `&x * 2` for integers, `2.0 * &x` on the left.
//!
//! Bool tensors have no arithmetic (`&mask + &mask` does not compile and says so); masks
//! combine through `where_cond`, comparisons and casts.

use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

use super::operand::{materialize, Held};
use super::ops::{fit_to, map, map_inplace, zip, zip_held_inplace};
use super::{AsView, ReadRepr, Repr, Tensor, TensorView, TensorViewMut, WriteRepr};
use crate::device::Device;
use crate::element::{Element, Numeric, Signed};
use crate::error::{Error, Handback, Result};
use crate::ops::{table, Backend};

pub use private::ArithOperand;

mod private {
    use super::super::operand::Held;
    use super::super::{AsView, Tensor, TensorViewMut};
    use crate::element::Element;
    use crate::error::{Error, Result};
    use crate::ops::Backend;

    /// The four arithmetic operators.
    #[derive(Clone, Copy, Debug)]
    pub enum Arith {
        /// `+`
        Add,
        /// `-`
        Sub,
        /// `*`
        Mul,
        /// `/`
        Div,
    }

    /// A tensor that can be the other operand of `+ - * /` on tensors of `T` on `D`: a
    /// tensor or view of a [`Numeric`](crate::element::Numeric) `T` on `D`.
    ///
    /// The operators are bounded by this trait rather than by `T: Numeric` so that a
    /// mismatch reaches the compiler's error as this trait (or `Numeric`) unmet, with the
    /// crate's message, instead of std's "cannot add". Implemented for tensors and views
    /// only; its methods are the crate's.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is not a tensor of `{T}` on `{D}`",
        label = "expected a tensor or view of `{T}` on `{D}`",
        note = "the operands of one op share their element type and device: convert the element type with `.cast::<{T}>()`, move between devices with `.to_cpu()` or `.to_gpu(&gpu)`"
    )]
    pub trait ArithOperand<T: Element, D: Backend>: AsView<T, D> {
        /// `a op b` as a new row-major tensor.
        #[doc(hidden)]
        fn arith(
            op: Arith,
            a: Held<'_, T, D>,
            b: Held<'_, T, D>,
            device: &D,
        ) -> Result<Tensor<T, D>>;

        /// `dst = dst op b`.
        #[doc(hidden)]
        fn arith_inplace(
            op: Arith,
            dst: &mut TensorViewMut<'_, T, D>,
            b: Held<'_, T, D>,
        ) -> Result<()>;

        /// `a op b`, reusing `a`'s storage when `b` broadcasts to its shape; `a` back on
        /// error.
        #[doc(hidden)]
        #[allow(clippy::result_large_err)]
        fn arith_owned(
            op: Arith,
            a: Tensor<T, D>,
            b: Held<'_, T, D>,
        ) -> std::result::Result<Tensor<T, D>, (Tensor<T, D>, Error)>;
    }
}

use private::Arith;

/// `a op b` for a numeric element type, with the scalar fast paths.
fn arith<T: Numeric, D: Backend>(
    op: Arith,
    a: Held<'_, T, D>,
    b: Held<'_, T, D>,
    device: &D,
) -> Result<Tensor<T, D>> {
    match (op, a, b) {
        (Arith::Add, Held::View(v), Held::Scalar(s))
        | (Arith::Add, Held::Scalar(s), Held::View(v)) => map(table::AddScalar(s), &v),
        (Arith::Mul, Held::View(v), Held::Scalar(s))
        | (Arith::Mul, Held::Scalar(s), Held::View(v)) => map(table::MulScalar(s), &v),
        (op, a, b) => {
            let (mut sa, mut sb) = (None, None);
            let a = materialize(a, device, &mut sa)?;
            let b = materialize(b, device, &mut sb)?;
            match op {
                Arith::Add => zip(table::Add, &a, &b),
                Arith::Sub => zip(table::Sub, &a, &b),
                Arith::Mul => zip(table::Mul, &a, &b),
                Arith::Div => zip(table::Div, &a, &b),
            }
        }
    }
}

/// `dst = dst op b` for a numeric element type.
fn arith_inplace<T: Numeric, D: Backend>(
    op: Arith,
    dst: &mut TensorViewMut<'_, T, D>,
    b: Held<'_, T, D>,
) -> Result<()> {
    match (op, b) {
        (Arith::Add, Held::Scalar(s)) => map_inplace(table::AddScalar(s), dst),
        (Arith::Mul, Held::Scalar(s)) => map_inplace(table::MulScalar(s), dst),
        (Arith::Add, b) => zip_held_inplace(table::Add, dst, b),
        (Arith::Sub, b) => zip_held_inplace(table::Sub, dst, b),
        (Arith::Mul, b) => zip_held_inplace(table::Mul, dst, b),
        (Arith::Div, b) => zip_held_inplace(table::Div, dst, b),
    }
}

/// `a op b`, in `a`'s storage when `b` broadcasts to `a`'s shape.
#[allow(clippy::result_large_err)]
fn arith_owned<T: Numeric, D: Backend>(
    op: Arith,
    mut a: Tensor<T, D>,
    b: Held<'_, T, D>,
) -> std::result::Result<Tensor<T, D>, (Tensor<T, D>, Error)> {
    let fits = match &b {
        Held::Scalar(_) => true,
        // No allocation when the shapes are equal, the common case.
        Held::View(v) => fit_to("arith", a.shape(), &[v.shape()]).is_ok(),
    };
    if fits {
        match arith_inplace(op, &mut a.view_mut(), b) {
            Ok(()) => Ok(a),
            Err(e) => Err((a, e)),
        }
    } else {
        match arith(op, Held::View(a.view()), b, a.device()) {
            Ok(t) => Ok(t),
            Err(e) => Err((a, e)),
        }
    }
}

impl<T: Numeric, D: Backend, S: ReadRepr<T, D>> ArithOperand<T, D> for Tensor<T, D, S> {
    fn arith(op: Arith, a: Held<'_, T, D>, b: Held<'_, T, D>, device: &D) -> Result<Tensor<T, D>> {
        arith(op, a, b, device)
    }

    fn arith_inplace(
        op: Arith,
        dst: &mut TensorViewMut<'_, T, D>,
        b: Held<'_, T, D>,
    ) -> Result<()> {
        arith_inplace(op, dst, b)
    }

    fn arith_owned(
        op: Arith,
        a: Tensor<T, D>,
        b: Held<'_, T, D>,
    ) -> std::result::Result<Tensor<T, D>, (Tensor<T, D>, Error)> {
        arith_owned(op, a, b)
    }
}

/// The panic of a failed compound assignment (see the module docs).
#[track_caller]
fn assign_failed(sym: &str, method: &str, e: Error) -> ! {
    panic!("`{sym}=` on a tensor failed: {e} (`{method}` returns this error instead of panicking)")
}

/// The forms of one arithmetic op with a scalar of each numeric element type.
macro_rules! scalar_operator {
    ($tr:ident, $method:ident, $atr:ident, $amethod:ident, $op:ident, $sym:literal, $inplace:literal;
        $($t:ty),*) => {$(
        impl<'x, D: Backend, S: ReadRepr<$t, D>> $tr<$t> for &'x Tensor<$t, D, S> {
            type Output = Result<Tensor<$t, D>>;
            fn $method(self, rhs: $t) -> Self::Output {
                arith(Arith::$op, Held::View(self.view()), Held::Scalar(rhs), self.device())
            }
        }

        impl<D: Backend> $tr<$t> for Tensor<$t, D> {
            type Output = Result<Tensor<$t, D>, Handback<Tensor<$t, D>>>;
            fn $method(self, rhs: $t) -> Self::Output {
                arith_owned(Arith::$op, self, Held::Scalar(rhs)).map_err(|(a, e)| Handback::new(a, e))
            }
        }

        impl<'a, D: Backend> $tr<$t> for TensorView<'a, $t, D> {
            type Output = Result<Tensor<$t, D>>;
            fn $method(self, rhs: $t) -> Self::Output {
                $tr::$method(&self, rhs)
            }
        }

        impl<'a, D: Backend> $tr<$t> for TensorViewMut<'a, $t, D> {
            type Output = Result<Tensor<$t, D>>;
            fn $method(self, rhs: $t) -> Self::Output {
                $tr::$method(&self, rhs)
            }
        }

        impl<'y, D: Backend, S: ReadRepr<$t, D>> $tr<&'y Tensor<$t, D, S>> for $t {
            type Output = Result<Tensor<$t, D>>;
            fn $method(self, rhs: &'y Tensor<$t, D, S>) -> Self::Output {
                arith(Arith::$op, Held::Scalar(self), Held::View(rhs.view()), rhs.device())
            }
        }

        impl<D: Backend, S: ReadRepr<$t, D>> $tr<Tensor<$t, D, S>> for $t {
            type Output = Result<Tensor<$t, D>, Handback<Tensor<$t, D, S>>>;
            fn $method(self, rhs: Tensor<$t, D, S>) -> Self::Output {
                let r = arith(Arith::$op, Held::Scalar(self), Held::View(rhs.view()), rhs.device());
                r.map_err(|e| Handback::new(rhs, e))
            }
        }

        impl<D: Backend, S: WriteRepr<$t, D>> $atr<$t> for Tensor<$t, D, S> {
            #[doc = concat!("`a ", $sym, "= s` in place. **Panics** if the device fails (never on the CPU); `", $inplace, "` returns the error instead.")]
            #[track_caller]
            fn $amethod(&mut self, rhs: $t) {
                if let Err(e) = arith_inplace(Arith::$op, &mut self.view_mut(), Held::Scalar(rhs)) {
                    assign_failed($sym, $inplace, e);
                }
            }
        }
    )*};
}

/// Every operator form of one arithmetic op between tensors (see the module docs).
macro_rules! tensor_operator {
    ($tr:ident, $method:ident, $atr:ident, $amethod:ident, $op:ident, $sym:literal, $inplace:literal) => {
        impl<'x, 'y, T, D, S, X> $tr<&'y X> for &'x Tensor<T, D, S>
        where
            T: Element,
            D: Backend,
            S: ReadRepr<T, D>,
            X: ArithOperand<T, D> + ?Sized,
        {
            type Output = Result<Tensor<T, D>>;
            fn $method(self, rhs: &'y X) -> Self::Output {
                let b = Held::View(AsView::<T, D>::view(rhs));
                X::arith(Arith::$op, Held::View(self.view()), b, self.device())
            }
        }

        impl<'x, T, D, S, U, D2, S2> $tr<Tensor<U, D2, S2>> for &'x Tensor<T, D, S>
        where
            T: Element,
            D: Backend,
            S: ReadRepr<T, D>,
            U: Element,
            D2: Device,
            S2: Repr<U, D2>,
            Tensor<U, D2, S2>: ArithOperand<T, D>,
        {
            type Output = Result<Tensor<T, D>, Handback<Tensor<U, D2, S2>>>;
            fn $method(self, rhs: Tensor<U, D2, S2>) -> Self::Output {
                let b = Held::View(AsView::<T, D>::view(&rhs));
                let r = <Tensor<U, D2, S2> as ArithOperand<T, D>>::arith(
                    Arith::$op,
                    Held::View(self.view()),
                    b,
                    self.device(),
                );
                r.map_err(|e| Handback::new(rhs, e))
            }
        }

        impl<'y, T, D, X> $tr<&'y X> for Tensor<T, D>
        where
            T: Element,
            D: Backend,
            X: ArithOperand<T, D> + ?Sized,
        {
            type Output = Result<Tensor<T, D>, Handback<Tensor<T, D>>>;
            fn $method(self, rhs: &'y X) -> Self::Output {
                let b = Held::View(AsView::<T, D>::view(rhs));
                X::arith_owned(Arith::$op, self, b).map_err(|(a, e)| Handback::new(a, e))
            }
        }

        impl<T, D, U, D2, S2> $tr<Tensor<U, D2, S2>> for Tensor<T, D>
        where
            T: Element,
            D: Backend,
            U: Element,
            D2: Device,
            S2: Repr<U, D2>,
            Tensor<U, D2, S2>: ArithOperand<T, D>,
        {
            type Output = Result<Tensor<T, D>, Handback<(Tensor<T, D>, Tensor<U, D2, S2>)>>;
            fn $method(self, rhs: Tensor<U, D2, S2>) -> Self::Output {
                let b = Held::View(AsView::<T, D>::view(&rhs));
                let r = <Tensor<U, D2, S2> as ArithOperand<T, D>>::arith_owned(Arith::$op, self, b);
                r.map_err(|(a, e)| Handback::new((a, rhs), e))
            }
        }

        tensor_operator!(@view $tr, $method, [TensorView<'a, T, D>]);
        tensor_operator!(@view $tr, $method, [TensorViewMut<'a, T, D>]);

        impl<'y, T, D, S, X> $atr<&'y X> for Tensor<T, D, S>
        where
            T: Element,
            D: Backend,
            S: WriteRepr<T, D>,
            X: ArithOperand<T, D> + ?Sized,
        {
            #[doc = concat!("`a ", $sym, "= &b` in place. **Panics** if `b` does not broadcast to `a`'s shape or the device fails; `", $inplace, "` returns the error instead.")]
            #[track_caller]
            fn $amethod(&mut self, rhs: &'y X) {
                let b = Held::View(AsView::<T, D>::view(rhs));
                if let Err(e) = X::arith_inplace(Arith::$op, &mut self.view_mut(), b) {
                    assign_failed($sym, $inplace, e);
                }
            }
        }

        impl<T, D, S, U, D2, S2> $atr<Tensor<U, D2, S2>> for Tensor<T, D, S>
        where
            T: Element,
            D: Backend,
            S: WriteRepr<T, D>,
            U: Element,
            D2: Device,
            S2: Repr<U, D2>,
            Tensor<U, D2, S2>: ArithOperand<T, D>,
        {
            #[doc = concat!("`a ", $sym, "= b` in place. **Panics** if `b` does not broadcast to `a`'s shape or the device fails; `", $inplace, "` returns the error instead.")]
            #[track_caller]
            fn $amethod(&mut self, rhs: Tensor<U, D2, S2>) {
                let b = Held::View(AsView::<T, D>::view(&rhs));
                let r = <Tensor<U, D2, S2> as ArithOperand<T, D>>::arith_inplace(
                    Arith::$op,
                    &mut self.view_mut(),
                    b,
                );
                if let Err(e) = r {
                    assign_failed($sym, $inplace, e);
                }
            }
        }

        scalar_operator!($tr, $method, $atr, $amethod, $op, $sym, $inplace;
            f32, f64, half::f16, half::bf16, i32, i64, u8, i8, i16, u16, u32, u64);
    };
    // A view by value on the left: as its reference (nothing is lost by consuming a view).
    (@view $tr:ident, $method:ident, [$lhs:ty]) => {
        impl<'a, 'y, T, D, X> $tr<&'y X> for $lhs
        where
            T: Element,
            D: Backend,
            X: ArithOperand<T, D> + ?Sized,
        {
            type Output = Result<Tensor<T, D>>;
            fn $method(self, rhs: &'y X) -> Self::Output {
                $tr::$method(&self, rhs)
            }
        }

        impl<'a, T, D, U, D2, S2> $tr<Tensor<U, D2, S2>> for $lhs
        where
            T: Element,
            D: Backend,
            U: Element,
            D2: Device,
            S2: Repr<U, D2>,
            Tensor<U, D2, S2>: ArithOperand<T, D>,
        {
            type Output = Result<Tensor<T, D>, Handback<Tensor<U, D2, S2>>>;
            fn $method(self, rhs: Tensor<U, D2, S2>) -> Self::Output {
                $tr::$method(&self, rhs)
            }
        }
    };
}

tensor_operator!(Add, add, AddAssign, add_assign, Add, "+", "add_");
tensor_operator!(Sub, sub, SubAssign, sub_assign, Sub, "-", "sub_");
tensor_operator!(Mul, mul, MulAssign, mul_assign, Mul, "*", "mul_");
tensor_operator!(Div, div, DivAssign, div_assign, Div, "/", "div_");

impl<T: Signed, D: Backend, S: ReadRepr<T, D>> Neg for &Tensor<T, D, S> {
    type Output = Result<Tensor<T, D>>;
    fn neg(self) -> Self::Output {
        map(table::Neg, &self.view())
    }
}

impl<T: Signed, D: Backend> Neg for Tensor<T, D> {
    type Output = Result<Tensor<T, D>, Handback<Tensor<T, D>>>;
    /// `-a` in `a`'s storage (it keeps its layout).
    fn neg(mut self) -> Self::Output {
        match map_inplace(table::Neg, &mut self.view_mut()) {
            Ok(()) => Ok(self),
            Err(e) => Err(Handback::new(self, e)),
        }
    }
}

impl<T: Signed, D: Backend> Neg for TensorView<'_, T, D> {
    type Output = Result<Tensor<T, D>>;
    fn neg(self) -> Self::Output {
        -&self
    }
}

impl<T: Signed, D: Backend> Neg for TensorViewMut<'_, T, D> {
    type Output = Result<Tensor<T, D>>;
    fn neg(self) -> Self::Output {
        -&self
    }
}
