//! Operands of the binary and ternary op methods: a tensor or view (by reference) or a scalar
//! of the element type, so `x.gt(0.0)`, `x.maximum(&y)`, `x.clamp(-1.0, &hi)` and
//! `Tensor::where_cond(&mask, &x, 0.0)` all work on every device.
//!
//! A scalar operand is a rank-0 tensor broadcast to the other operands' shape. On the CPU
//! that is one element on the heap; on a GPU one element of device memory, filled by a kernel
//! (no host copy). The operators `+` and `*` with a scalar, and `add_` / `mul_` with one, use
//! the op table's scalar ops ([`crate::ops::table::AddScalar`], `MulScalar`) instead: one
//! kernel, the scalar a kernel parameter.

use super::{AsView, Tensor, TensorView};
use crate::element::Element;
use crate::error::Result;
use crate::tensor::Backend;

pub(crate) use private::Held;

mod private {
    use crate::element::Element;
    use crate::tensor::{Backend, TensorView};

    /// What an operand lends an op: a view of its elements, or a scalar.
    pub enum Held<'a, T: Element, D: Backend> {
        /// A tensor or view.
        View(TensorView<'a, T, D>),
        /// A scalar, broadcast to the other operands' shape.
        Scalar(T),
    }
}

/// What can be an operand of an op method on tensors of `T` on `D`: a reference to a tensor
/// or view (`&x`, `&x.t()`, `&mut x`), or a scalar of the element type (`0.0`, `2i64`).
/// (The operators `+ - * /` also take tensors and views by value.)
///
/// Implemented by the crate for those types only (the method lending the operand is
/// hidden).
///
/// ```
/// use typestate_tensor::tensor::Tensor;
///
/// let x = Tensor::from_vec(&[3], vec![-1.0f32, 0.5, 2.0])?;
/// assert_eq!(x.gt(0.0)?.to_vec(), [false, true, true]); // a scalar
/// assert_eq!(x.maximum(&x.flip(0)?)?.to_vec(), [2.0, 0.5, 2.0]); // a view
/// assert_eq!(x.clamp(-0.5, 1.0)?.to_vec(), [-0.5, 0.5, 1.0]);
/// # Ok::<(), typestate_tensor::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an operand of an op on `{T}` tensors on `{D}`",
    label = "not a tensor, view or scalar of `{T}` on `{D}`",
    note = "the operands of one op share their element type and device: convert a tensor with `.cast::<{T}>()`, move it with `.to_cpu()` or `.to_gpu(&gpu)`, and write a scalar in the element type (`2.0f32`, `2i64`)"
)]
pub trait Operand<T: Element, D: Backend> {
    /// The operand's view or scalar (crate-internal).
    #[doc(hidden)]
    fn held(&self) -> Held<'_, T, D>;
}

impl<T: Element, D: Backend, X: AsView<T, D> + ?Sized> Operand<T, D> for &X {
    fn held(&self) -> Held<'_, T, D> {
        Held::View((**self).view())
    }
}

impl<T: Element, D: Backend, X: AsView<T, D> + ?Sized> Operand<T, D> for &mut X {
    fn held(&self) -> Held<'_, T, D> {
        Held::View((**self).view())
    }
}

macro_rules! scalar_operand {
    ($($t:ty),*) => {$(
        impl<D: Backend> Operand<$t, D> for $t {
            fn held(&self) -> Held<'_, $t, D> {
                Held::Scalar(*self)
            }
        }
    )*};
}

scalar_operand!(f32, f64, half::f16, half::bf16, i32, i64, u8, bool);
scalar_operand!(i8, i16, u16, u32, u64);

/// A view of `held` on `device`: the view itself, or the scalar as a new rank-0 tensor
/// (kept alive in `slot`).
pub(crate) fn materialize<'a, T: Element, D: Backend>(
    held: Held<'a, T, D>,
    device: &D,
    slot: &'a mut Option<Tensor<T, D>>,
) -> Result<TensorView<'a, T, D>> {
    match held {
        Held::View(v) => Ok(v),
        Held::Scalar(s) => Ok(slot.insert(Tensor::full_on(&[], s, device)?).view()),
    }
}
