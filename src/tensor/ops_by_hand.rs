//! The methods of the two ops whose signatures the op table's grammar cannot write:
//! `nextafter` (its kernel reads constants of the element type, see
//! [`NextAfter`](crate::ops::table::NextAfter)) and `nan_to_num` (three optional scalars, two
//! table ops fused into one pass). Eager forms on every tensor type and expression forms,
//! like the generated ones (`src/tensor/ops.rs`, `src/tensor/expr/ops.rs`).

use super::expr::node::{Binary, Node, Unary};
use super::expr::{Expr, IntoExpr};
use super::operand::Operand;
use super::ops::{zip_held, zip_held_inplace, zip_held_into};
use super::{AsViewMut, ReadRepr, Tensor, WriteRepr};
use crate::element::FloatElement;
use crate::error::Result;
use crate::ops::table::{NanToNumInf, NanToNumNan, NextAfter};
use crate::ops::Backend;

/// The node of [`Expr::nan_to_num`]: `NanToNumNan` over `NanToNumInf` over `N`.
pub type NanToNumNode<T, N> = Unary<NanToNumNan<T>, Unary<NanToNumInf<T>, N>>;

/// PyTorch's defaults for `nan_to_num`'s `None`s: 0, the largest finite value, the lowest.
fn nan_to_num_ops<T: FloatElement>(
    nan: Option<T>,
    posinf: Option<T>,
    neginf: Option<T>,
) -> (NanToNumNan<T>, NanToNumInf<T>) {
    (
        NanToNumNan(nan.unwrap_or(T::ZERO)),
        NanToNumInf(
            posinf.unwrap_or_else(T::max_value),
            neginf.unwrap_or_else(T::min_value),
        ),
    )
}

impl<T: FloatElement, D: Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// The next representable value of `T` after each element toward `rhs` (PyTorch's
    /// `nextafter`), broadcasting, as a new row-major tensor (`rhs`: a tensor, view or scalar).
    /// `f16` and `bf16` step in their own representation; see
    /// [`NextAfter`](crate::ops::table::NextAfter) for the special values.
    pub fn nextafter(&self, rhs: impl Operand<T, D>) -> Result<Tensor<T, D>> {
        zip_held(NextAfter, &self.view(), rhs.held())
    }

    /// `nextafter(a, b)` elementwise, written into `out` (inputs broadcast to its shape).
    pub fn nextafter_into(
        &self,
        rhs: impl Operand<T, D>,
        out: &mut impl AsViewMut<T, D>,
    ) -> Result<()> {
        zip_held_into(NextAfter, &self.view(), rhs.held(), &mut out.view_mut())
    }

    /// `nextafter(a, b)` elementwise, in place (`rhs` broadcast to `self`'s shape).
    pub fn nextafter_(&mut self, rhs: impl Operand<T, D>) -> Result<()>
    where
        S: WriteRepr<T, D>,
    {
        zip_held_inplace(NextAfter, &mut self.view_mut(), rhs.held())
    }

    /// NaN replaced by `nan`, `+inf` by `posinf` and `-inf` by `neginf` (PyTorch's
    /// `nan_to_num`), as a new row-major tensor, in one pass. `None` takes PyTorch's default:
    /// 0, the largest finite value of `T`, the lowest finite value of `T` (`f16`: ±65504).
    ///
    /// The three arguments are `Option`s, PyTorch's keyword defaults written out
    /// (`x.nan_to_num(None, None, None)` is `torch.nan_to_num(x)`,
    /// `x.nan_to_num(Some(0.0), Some(1e4), None)` sets two), rather than a plain form and a
    /// full form: one method covers every call PyTorch allows, and a default never has to be
    /// spelled as the type's bound by hand.
    ///
    /// ```
    /// # use typestate_tensor::tensor::Tensor;
    /// let x = Tensor::from_vec(&[4], vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.5])?;
    /// assert_eq!(
    ///     x.nan_to_num(None, None, None)?.to_vec(),
    ///     [0.0, f32::MAX, f32::MIN, 1.5]
    /// );
    /// assert_eq!(x.nan_to_num(Some(-1.0), Some(9.0), None)?.to_vec(), [-1.0, 9.0, f32::MIN, 1.5]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    pub fn nan_to_num(
        &self,
        nan: Option<T>,
        posinf: Option<T>,
        neginf: Option<T>,
    ) -> Result<Tensor<T, D>> {
        self.lazy().nan_to_num(nan, posinf, neginf).eval()
    }

    /// [`nan_to_num`](Tensor::nan_to_num) written into `out` (`self` broadcast to its shape).
    pub fn nan_to_num_into(
        &self,
        nan: Option<T>,
        posinf: Option<T>,
        neginf: Option<T>,
        out: &mut impl AsViewMut<T, D>,
    ) -> Result<()> {
        self.lazy().nan_to_num(nan, posinf, neginf).eval_into(out)
    }

    /// [`nan_to_num`](Tensor::nan_to_num) in place.
    pub fn nan_to_num_(
        &mut self,
        nan: Option<T>,
        posinf: Option<T>,
        neginf: Option<T>,
    ) -> Result<()>
    where
        S: WriteRepr<T, D>,
    {
        self.update(|x| x.nan_to_num(nan, posinf, neginf))
    }
}

impl<T: FloatElement, D: Backend, N: Node<D, Out = T>> Expr<T, D, N> {
    /// `nextafter(a, b)` elementwise (broadcasting), fused into the expression; see
    /// [`Tensor::nextafter`].
    pub fn nextafter<R: IntoExpr<T, D>>(self, rhs: R) -> Expr<T, D, Binary<NextAfter, N, R::Node>> {
        Expr::new(Binary {
            op: NextAfter,
            a: self.node,
            b: rhs.into_expr().node,
        })
    }

    /// NaN, `+inf` and `-inf` replaced (PyTorch's `nan_to_num`), fused into the expression;
    /// see [`Tensor::nan_to_num`] for the defaults.
    pub fn nan_to_num(
        self,
        nan: Option<T>,
        posinf: Option<T>,
        neginf: Option<T>,
    ) -> Expr<T, D, NanToNumNode<T, N>> {
        let (nan, inf) = nan_to_num_ops(nan, posinf, neginf);
        Expr::new(Unary {
            op: nan,
            a: Unary {
                op: inf,
                a: self.node,
            },
        })
    }
}
