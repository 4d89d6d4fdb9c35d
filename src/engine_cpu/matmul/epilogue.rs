//! The epilogue of a product, `act(alpha·acc + beta·dst + bias)`, element by element.
//!
//! The activations are the op table's CPU closures ([`Relu`], [`Gelu`], [`GeluTanh`]), called
//! in the compute type the pointwise ops use: `f64` for `f64`, `f32` for `f32` and the half
//! types (rounded once at the store, as `in_compute!` does). Integers add the bias wrapping;
//! `Relu` is exact, the GELUs go through `f64` and back (truncated, saturating:
//! [`Element::from_f64`](crate::element::Element::from_f64)); PyTorch has no integer GELU.

use super::mat::Mat;
use crate::element::{DType, Numeric};
use crate::ops::op::UnaryOp;
use crate::ops::table::{Gelu, GeluTanh, Relu};
use crate::tensor::matmul::Activation;

/// `alpha`, `beta`, the bias gathered to `n` contiguous values, and the activation.
pub(crate) struct Epilogue<'b, T> {
    pub(crate) alpha: T,
    pub(crate) beta: T,
    bias: Option<&'b [T]>,
    act: Option<Activation>,
}

/// `act(x)` in `f32`.
#[inline(always)]
fn act_f32(act: Option<Activation>, x: f32) -> f32 {
    match act {
        None => x,
        Some(Activation::Relu) => UnaryOp::<f32>::cpu(&Relu, x),
        Some(Activation::Gelu) => UnaryOp::<f32>::cpu(&Gelu, x),
        Some(Activation::GeluTanh) => UnaryOp::<f32>::cpu(&GeluTanh, x),
    }
}

/// `act(x)` in `f64`.
#[inline(always)]
fn act_f64(act: Option<Activation>, x: f64) -> f64 {
    match act {
        None => x,
        Some(Activation::Relu) => UnaryOp::<f64>::cpu(&Relu, x),
        Some(Activation::Gelu) => UnaryOp::<f64>::cpu(&Gelu, x),
        Some(Activation::GeluTanh) => UnaryOp::<f64>::cpu(&GeluTanh, x),
    }
}

impl<'b, T: Numeric> Epilogue<'b, T> {
    pub(crate) fn new(alpha: T, beta: T, bias: Option<&'b [T]>, act: Option<Activation>) -> Self {
        Epilogue {
            alpha,
            beta,
            bias,
            act,
        }
    }

    /// Whether the destination is read: `beta == 0` never reads it (it may be uninitialised
    /// garbage, even NaN, which `0·dst` would carry into the result).
    #[inline(always)]
    pub(crate) fn read_dst(&self) -> bool {
        self.beta != T::ZERO
    }

    /// Whether anything is left to do after a product that already applied `alpha` and `beta`.
    pub(crate) fn has_tail(&self) -> bool {
        self.bias.is_some() || self.act.is_some()
    }

    /// The bias of column `j` (zero without one).
    #[inline(always)]
    fn bias_at(&self, j: usize) -> T {
        match self.bias {
            Some(b) => b[j],
            None => T::ZERO,
        }
    }

    /// `act(x + bias[j])` for an `x` that already holds `alpha·acc + beta·dst`.
    #[inline(always)]
    pub(crate) fn tail(&self, x: T, j: usize) -> T {
        let b = self.bias_at(j);
        match T::DTYPE {
            DType::F64 => T::from_f64(act_f64(self.act, x.to_f64() + b.to_f64())),
            // Exact widenings: every f32, f16 and bf16 is an f32.
            DType::F32 | DType::F16 | DType::BF16 => {
                T::from_f32(act_f32(self.act, x.to_f64() as f32 + b.to_f64() as f32))
            }
            _ => {
                let v = x.add(b);
                match self.act {
                    None => v,
                    Some(Activation::Relu) => UnaryOp::<T>::cpu(&Relu, v),
                    Some(a) => T::from_f64(act_f64(Some(a), v.to_f64())),
                }
            }
        }
    }

    /// The whole epilogue on an `f32` accumulator, rounded once: `act(alpha·acc + beta·old +
    /// bias[j])` (`old` is read only when `beta != 0`).
    #[inline(always)]
    pub(crate) fn finish_f32(&self, acc: f32, old: impl FnOnce() -> T, j: usize) -> T {
        let mut v = self.alpha.to_f64() as f32 * acc;
        if self.read_dst() {
            v += self.beta.to_f64() as f32 * old().to_f64() as f32;
        }
        v += self.bias_at(j).to_f64() as f32;
        T::from_f32(act_f32(self.act, v))
    }

    /// The whole epilogue on a `T` accumulator (integers, wrapping).
    #[inline(always)]
    pub(crate) fn finish(&self, acc: T, old: impl FnOnce() -> T, j: usize) -> T {
        let mut v = self.alpha.mul(acc);
        if self.read_dst() {
            v = v.add(self.beta.mul(old()));
        }
        if self.has_tail() {
            v = self.tail(v, j);
        }
        v
    }

    /// `k == 0`: `dst = act(beta·dst + bias)`.
    pub(crate) fn k_zero(&self, out: &mut [T], c: Mat, m: usize, n: usize) {
        for i in 0..m {
            for j in 0..n {
                let at = c.at(i, j);
                let v = if self.read_dst() {
                    self.beta.mul(out[at])
                } else {
                    T::ZERO
                };
                out[at] = if self.has_tail() { self.tail(v, j) } else { v };
            }
        }
    }

    /// The bias and activation over a stored product, in the order of `c`'s smaller stride.
    pub(crate) fn apply_in_place(&self, out: &mut [T], c: Mat, m: usize, n: usize) {
        if !self.has_tail() {
            return;
        }
        if c.cs.unsigned_abs() <= c.rs.unsigned_abs() {
            for i in 0..m {
                for j in 0..n {
                    let at = c.at(i, j);
                    out[at] = self.tail(out[at], j);
                }
            }
        } else {
            for j in 0..n {
                for i in 0..m {
                    let at = c.at(i, j);
                    out[at] = self.tail(out[at], j);
                }
            }
        }
    }
}
