//! Matrix multiplication (issue 27): [`Tensor::matmul`] with PyTorch's shape rules,
//! [`Tensor::mm`], [`Tensor::bmm`], [`Tensor::linear`], the `_into` forms, and the fused bias
//! and activation epilogue through the [`Matmul`] builder.
//!
//! # Design
//!
//! - **PyTorch's shapes** (`torch.matmul`): 1-D · 1-D is a dot product, a 1-D left operand is
//!   a row and a 1-D right operand a column (their dim dropped from the result), and operands
//!   of rank ≥ 3 are stacks of matrices whose batch dims broadcast. A misfit is a
//!   [`LayoutError::MatmulMismatch`] naming both shapes and what does not fit.
//! - **Any view is an operand.** Transposed, stepped, flipped and broadcast views go to the
//!   engine as they are; each engine maps them onto its library's calls and copies only what
//!   no call can express (the engines' docs say which layouts copy).
//! - **Element types and devices are checked by the compiler**: both operands, the bias and
//!   the destination share `T` and `D`, and `D: MatmulBackend<T>` says which device
//!   multiplies which types (the GPU: the four floats; the CPU: every numeric type), so
//!   `Tensor<i32, Gpu>::matmul` does not compile. TF32 is a method only on `f32` products
//!   ([`Matmul::allow_tf32`]), off by default as in PyTorch.
//! - **The epilogue is one call**: `x.matmul_with(&w).bias(&b).gelu().eval()` computes
//!   `gelu(x·w + b)` in the product's own pass where the engine can (cuBLASLt's epilogues on
//!   the GPU, a pass over each finished block on the CPU), without a temporary for the
//!   product.

mod engine;
mod shape;

#[allow(unused_imports)] // implemented by the engines
pub(crate) use engine::sealed::MatmulEngine;
pub(crate) use engine::MatmulJob;
pub use engine::{Activation, MatmulBackend};
pub(crate) use shape::MatmulShapes;

use super::repr::ReadRepr;
use super::{AsView, AsViewMut, Tensor, TensorView, TensorViewMut};
use crate::element::Element;
use crate::error::{LayoutError, Result};
use crate::layout::Layout;
use crate::tensor::Backend;

/// A matrix product with its options, run by [`Matmul::eval`], [`Matmul::eval_into`] or
/// [`Matmul::accumulate_into`]: `act(alpha · a·b + bias)`. Made by [`Tensor::matmul_with`].
///
/// ```
/// use typestate_tensor::tensor::Tensor;
///
/// let x = Tensor::from_vec(&[2, 2], vec![1.0f32, -2.0, 3.0, 4.0])?;
/// let w = Tensor::from_vec(&[2, 2], vec![1.0f32, 0.0, 0.0, 1.0])?;
/// let b = Tensor::from_vec(&[2], vec![0.5f32, -10.0])?;
/// // relu(x·w + b), the bias and the activation fused into the product's pass.
/// let y = x.matmul_with(&w).bias(&b).relu().eval()?;
/// assert_eq!(y.to_vec(), vec![1.5, 0.0, 3.5, 0.0]);
/// # Ok::<(), typestate_tensor::Error>(())
/// ```
#[must_use = "a Matmul does nothing until `eval`, `eval_into` or `accumulate_into`"]
pub struct Matmul<'v, T: Element, D: Backend> {
    op: &'static str,
    a: TensorView<'v, T, D>,
    b: TensorView<'v, T, D>,
    alpha: T,
    bias: Option<TensorView<'v, T, D>>,
    activation: Option<Activation>,
    tf32: bool,
}

impl<'v, T: Element, D: MatmulBackend<T>> Matmul<'v, T, D> {
    /// Adds `bias` (shape `[n]`, the product's last dim) to every row of the product, before
    /// the activation (`F.linear`'s bias).
    pub fn bias(mut self, bias: &'v impl AsView<T, D>) -> Self {
        self.bias = Some(bias.view());
        self
    }

    /// Scales the product by `alpha` (BLAS's and Caffe's `alpha`; 1 by default), before the
    /// bias.
    pub fn alpha(mut self, alpha: T) -> Self {
        self.alpha = alpha;
        self
    }

    /// Applies `activation` last.
    pub fn activation(mut self, activation: Activation) -> Self {
        self.activation = Some(activation);
        self
    }

    /// Applies `relu` last ([`Activation::Relu`]).
    pub fn relu(self) -> Self {
        self.activation(Activation::Relu)
    }

    /// Applies the exact `gelu` last ([`Activation::Gelu`], `F.gelu(x)`).
    pub fn gelu(self) -> Self {
        self.activation(Activation::Gelu)
    }

    /// Applies the tanh approximation of `gelu` last ([`Activation::GeluTanh`],
    /// `F.gelu(x, approximate="tanh")`).
    pub fn gelu_tanh(self) -> Self {
        self.activation(Activation::GeluTanh)
    }

    /// The result as a new row-major tensor.
    ///
    /// # Errors
    /// [`LayoutError::MatmulMismatch`] for operands that do not multiply,
    /// [`LayoutError::ShapeMismatch`] for a bias that is not `[n]`, the device's errors.
    pub fn eval(self) -> Result<Tensor<T, D>> {
        let shapes = MatmulShapes::resolve(self.op, self.a.shape(), self.b.shape())?;
        let device = self.a.device().clone();
        let full = Layout::contiguous(&shapes.full_out())?;
        // SAFETY: `MatmulEngine::matmul` returning `Ok` with `beta == 0` has written every
        // element of `dst`'s layout without reading it (the trait's safety contract); that
        // layout is row-major over the whole storage. On error the storage is dropped unread.
        let mut storage = unsafe { device.alloc_uninit::<T>(full.numel())? };
        {
            let mut dst = TensorViewMut::new(D::slice_mut(&mut storage), full, &device)?;
            self.run(&shapes, T::ZERO, &mut dst)?;
        }
        Ok(Tensor::from_contiguous(
            storage,
            Layout::contiguous(&shapes.out())?,
            device,
        ))
    }

    /// Writes the result into `out` (any writable view of the result's shape).
    ///
    /// # Errors
    /// As [`Matmul::eval`], and [`LayoutError::ShapeMismatch`] for an `out` of another shape.
    pub fn eval_into(self, out: &mut impl AsViewMut<T, D>) -> Result<()> {
        self.accumulate_into(T::ZERO, out)
    }

    /// `out = act(beta · out + alpha · a·b + bias)`: PyTorch's `addmm_` / BLAS's `beta`
    /// (with `beta == 0`, `out`'s current values are not read, so NaN in it does not spread).
    ///
    /// # Errors
    /// As [`Matmul::eval_into`].
    pub fn accumulate_into(self, beta: T, out: &mut impl AsViewMut<T, D>) -> Result<()> {
        let shapes = MatmulShapes::resolve(self.op, self.a.shape(), self.b.shape())?;
        let mut out = out.view_mut();
        let expected = shapes.out();
        if out.shape() != expected.as_slice() {
            return Err(LayoutError::ShapeMismatch {
                op: self.op,
                expected,
                got: out.shape().to_vec(),
            }
            .into());
        }
        // The dims the result drops for 1-D operands, put back as size-1 dims.
        let mut full = out.reborrow();
        if shapes.a_vector {
            full = full.unsqueeze(shapes.batch.len())?;
        }
        if shapes.b_vector {
            let rank = full.rank();
            full = full.unsqueeze(rank)?;
        }
        self.run(&shapes, beta, &mut full)
    }

    /// Checks the operands against `shapes` and hands the engine the job.
    fn run(self, shapes: &MatmulShapes, beta: T, dst: &mut TensorViewMut<'_, T, D>) -> Result<()> {
        // The borrow of the device for `'v`, not of `self.a`, which moves below.
        let device: &'v D = self.a.repr.device;
        device.check_device(self.op, self.b.storage())?;
        device.check_device(self.op, dst.storage())?;
        if let Some(bias) = &self.bias {
            device.check_device(self.op, bias.storage())?;
            if bias.shape() != [shapes.n] {
                return Err(LayoutError::ShapeMismatch {
                    op: self.op,
                    expected: vec![shapes.n],
                    got: bias.shape().to_vec(),
                }
                .into());
            }
        }
        let a = if shapes.a_vector {
            self.a.unsqueeze(0)?
        } else {
            self.a
        };
        let b = if shapes.b_vector {
            self.b.unsqueeze(1)?
        } else {
            self.b
        };
        let job = MatmulJob {
            a: a.broadcast_to(&shapes.full_a())?,
            b: b.broadcast_to(&shapes.full_b())?,
            alpha: self.alpha,
            beta,
            bias: self.bias,
            activation: self.activation,
            allow_tf32: self.tf32,
        };
        device.matmul(&job, dst)
    }
}

impl<'v, D: MatmulBackend<f32>> Matmul<'v, f32, D> {
    /// Lets an `f32` product use TF32 tensor cores on the GPU (inputs rounded to a 10-bit
    /// mantissa, about 1e-3 relative error; about 8× the speed of `f32` on an H100): PyTorch's
    /// `torch.backends.cuda.matmul.allow_tf32 = True`, off by default as there. The CPU
    /// ignores it. Only `f32` products have this method.
    pub fn allow_tf32(mut self) -> Self {
        self.tf32 = true;
        self
    }
}

impl<T: Element, D: Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    fn matmul_builder<'v>(
        &'v self,
        op: &'static str,
        other: &'v impl AsView<T, D>,
    ) -> Matmul<'v, T, D> {
        Matmul {
            op,
            a: self.view(),
            b: other.view(),
            alpha: T::ONE,
            bias: None,
            activation: None,
            tf32: false,
        }
    }

    /// The matrix product `self · other` with `torch.matmul`'s rules: 1-D · 1-D is a dot
    /// product (0-d), a 1-D operand is a row (left) or a column (right) whose dim the result
    /// drops, and stacks of matrices (rank ≥ 3) multiply batch by batch with their batch dims
    /// broadcast. Any layout multiplies (transposed, stepped, flipped, broadcast views).
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// let a = Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
    /// let b = Tensor::from_vec(&[3], vec![1.0f32, 0.0, 1.0])?;
    /// assert_eq!(a.matmul(&b)?.to_vec(), vec![4.0, 10.0]); // [2, 3] · [3] = [2]
    /// assert_eq!(a.matmul(&a.t())?.shape(), &[2, 2]); // a · aᵀ, no copy of the transpose
    /// assert!(a.matmul(&a).is_err()); // [2, 3] · [2, 3]: 3 ≠ 2, a typed error
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`LayoutError::MatmulMismatch`] naming both shapes, the device's errors.
    pub fn matmul(&self, other: &impl AsView<T, D>) -> Result<Tensor<T, D>>
    where
        D: MatmulBackend<T>,
    {
        self.matmul_builder("matmul", other).eval()
    }

    /// [`Tensor::matmul`] into `out`, any writable view of the product's shape.
    ///
    /// # Errors
    /// As [`Tensor::matmul`], and [`LayoutError::ShapeMismatch`] for an `out` of another shape.
    pub fn matmul_into(
        &self,
        other: &impl AsView<T, D>,
        out: &mut impl AsViewMut<T, D>,
    ) -> Result<()>
    where
        D: MatmulBackend<T>,
    {
        self.matmul_builder("matmul", other).eval_into(out)
    }

    /// A matrix product with options (bias, activation, `alpha`, TF32) fused into one call:
    /// see [`Matmul`].
    pub fn matmul_with<'v>(&'v self, other: &'v impl AsView<T, D>) -> Matmul<'v, T, D>
    where
        D: MatmulBackend<T>,
    {
        self.matmul_builder("matmul", other)
    }

    /// The product of two matrices (`torch.mm`): both operands 2-D.
    ///
    /// # Errors
    /// [`LayoutError::MatmulMismatch`] unless both are 2-D and the inner dims agree.
    pub fn mm(&self, other: &impl AsView<T, D>) -> Result<Tensor<T, D>>
    where
        D: MatmulBackend<T>,
    {
        let b = other.view();
        if self.rank() != 2 || b.rank() != 2 {
            return Err(rank_error(
                "mm",
                self.shape(),
                b.shape(),
                "both operands must be 2-D",
            ));
        }
        self.matmul_builder("mm", &b).eval()
    }

    /// The batched product of two stacks of matrices (`torch.bmm`): `[b, m, k] · [b, k, n]`,
    /// one batch size, no broadcasting (use [`Tensor::matmul`] for that).
    ///
    /// # Errors
    /// [`LayoutError::MatmulMismatch`] unless both are 3-D with one batch size and the inner
    /// dims agree.
    pub fn bmm(&self, other: &impl AsView<T, D>) -> Result<Tensor<T, D>>
    where
        D: MatmulBackend<T>,
    {
        let b = other.view();
        if self.rank() != 3 || b.rank() != 3 {
            return Err(rank_error(
                "bmm",
                self.shape(),
                b.shape(),
                "both operands must be 3-D",
            ));
        }
        if self.shape()[0] != b.shape()[0] {
            return Err(rank_error(
                "bmm",
                self.shape(),
                b.shape(),
                "the batch sizes differ",
            ));
        }
        self.matmul_builder("bmm", &b).eval()
    }

    /// `self · weightᵀ + bias` (`torch.nn.functional.linear`): `self` is `[.., in]`, `weight`
    /// `[out, in]` (read through its transpose, no copy), `bias` `[out]`; the bias is fused
    /// into the product. With an activation: `x.matmul_with(&w.t()).bias(&b).relu().eval()`.
    ///
    /// # Errors
    /// [`LayoutError::MatmulMismatch`] for a `weight` that is not 2-D or does not fit,
    /// [`LayoutError::ShapeMismatch`] for a bias that is not `[out]`.
    pub fn linear(
        &self,
        weight: &impl AsView<T, D>,
        bias: Option<&TensorView<'_, T, D>>,
    ) -> Result<Tensor<T, D>>
    where
        D: MatmulBackend<T>,
    {
        let w = weight.view();
        if w.rank() != 2 {
            return Err(rank_error(
                "linear",
                self.shape(),
                w.shape(),
                "the weight must be 2-D [out, in]",
            ));
        }
        let wt = w.t();
        let builder = self.matmul_builder("linear", &wt);
        match bias {
            Some(bias) => builder.bias(bias).eval(),
            None => builder.eval(),
        }
    }
}

fn rank_error(op: &'static str, a: &[usize], b: &[usize], reason: &'static str) -> crate::Error {
    LayoutError::MatmulMismatch {
        op,
        lhs: a.to_vec(),
        rhs: b.to_vec(),
        reason,
    }
    .into()
}
