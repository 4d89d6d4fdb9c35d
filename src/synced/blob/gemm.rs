//! Caffe's `caffe_cpu_gemm` / `caffe_gpu_gemm` (`C = alpha·op(A)·op(B) + beta·C`, row-major,
//! with CBLAS's transpose flags and explicit `M`, `N`, `K`), on tensor views of either device
//! and on a blob's data or diff.
//!
//! Caffe hands its gemm raw pointers to the start of blob memory: a bottom blob of shape
//! `[N, C, H, W]` is an `N × (C·H·W)` matrix. Here the operands are views, read as the
//! row-major matrix their first elements hold in logical order, so the same call takes a
//! blob's view whatever its rank; the product runs through [`Tensor::matmul_with`] (cuBLASLt on
//! the GPU), so `op(A)` is a transposed view, never a copy.
//!
//! The blob methods take the side's device from its state: the CPU-side forms need a
//! `HeadAtCpu` data or diff and CPU operands, the GPU-side forms a `HeadAtGpu` one and GPU
//! operands, so a product of operands on the wrong device does not compile.

use super::base::Blob;
use super::math::BlobElement;
use super::side::{BlobSide, OwnedSide};
use crate::device::Cpu;
use crate::error::{Error, LayoutError};
use crate::runtime::Gpu;
use crate::synced::state::{CpuWritable, GpuWritable};
use crate::tensor::matmul::MatmulBackend;
use crate::tensor::{Tensor, TensorView, TensorViewMut};

/// CBLAS's `CBLAS_TRANSPOSE` as Caffe passes it: whether an operand enters the product as
/// stored (`CblasNoTrans`) or transposed (`CblasTrans`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transpose {
    /// `CblasNoTrans`: the operand as stored.
    No,
    /// `CblasTrans`: its transpose.
    Yes,
}

/// The row-major `rows × cols` matrix held by the first `rows·cols` elements of `v` in
/// logical order (a view, no copy, for the contiguous views blobs lend).
fn matrix<'a, T: BlobElement, D: MatmulBackend<T>>(
    what: &'static str,
    v: &TensorView<'a, T, D>,
    rows: usize,
    cols: usize,
) -> Result<TensorView<'a, T, D>, Error> {
    let need = rows.checked_mul(cols).ok_or(LayoutError::MatmulMismatch {
        op: "gemm",
        lhs: vec![rows, cols],
        rhs: v.shape().to_vec(),
        reason: "the matrix's element count overflows usize",
    })?;
    if v.numel() < need {
        return Err(LayoutError::MatmulMismatch {
            op: "gemm",
            lhs: vec![rows, cols],
            rhs: v.shape().to_vec(),
            reason: match what {
                "A" => "A holds fewer elements than its M × K (or K × M) matrix",
                "B" => "B holds fewer elements than its K × N (or N × K) matrix",
                _ => "C holds fewer elements than its M × N matrix",
            },
        }
        .into());
    }
    let flat = v.reshape(&[v.numel()])?;
    flat.narrow(0, 0, need)?.reshape(&[rows, cols])
}

/// Caffe's `caffe_cpu_gemm` / `caffe_gpu_gemm`: `C = alpha·op(A)·op(B) + beta·C`, with `op(A)`
/// `M × K`, `op(B)` `K × N` and `C` `M × N`, each the row-major matrix of its view's first
/// elements (Caffe's pointers), on the views' device. `beta == 0` does not read `C`.
///
/// ```
/// use typestate_tensor::synced::blob::{caffe_gemm, Transpose};
/// use typestate_tensor::tensor::Tensor;
///
/// // C (2 × 2) = A (2 × 3) · Bᵀ, B stored as 2 × 3.
/// let a = Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
/// let b = Tensor::from_vec(&[2, 3], vec![1.0f32, 0.0, 0.0, 0.0, 1.0, 0.0])?;
/// let mut c = Tensor::<f32>::zeros(&[2, 2])?;
/// caffe_gemm(Transpose::No, Transpose::Yes, 2, 2, 3, 1.0, &a.view(), &b.view(), 0.0, &mut c.view_mut())?;
/// assert_eq!(c.to_vec(), vec![1.0, 2.0, 4.0, 5.0]);
/// # Ok::<(), typestate_tensor::Error>(())
/// ```
///
/// # Errors
/// [`LayoutError::MatmulMismatch`] when a view holds fewer elements than its matrix, the
/// device's errors.
#[allow(clippy::too_many_arguments)] // Caffe's signature
pub fn caffe_gemm<T: BlobElement, D: MatmulBackend<T>>(
    trans_a: Transpose,
    trans_b: Transpose,
    m: usize,
    n: usize,
    k: usize,
    alpha: T,
    a: &TensorView<'_, T, D>,
    b: &TensorView<'_, T, D>,
    beta: T,
    c: &mut TensorViewMut<'_, T, D>,
) -> Result<(), Error> {
    let a = match trans_a {
        Transpose::No => matrix("A", a, m, k)?,
        Transpose::Yes => matrix("A", a, k, m)?.t(),
    };
    let b = match trans_b {
        Transpose::No => matrix("B", b, k, n)?,
        Transpose::Yes => matrix("B", b, n, k)?.t(),
    };
    let need = m.checked_mul(n).filter(|&x| x <= c.numel());
    if need.is_none() {
        return Err(LayoutError::MatmulMismatch {
            op: "gemm",
            lhs: vec![m, n],
            rhs: c.shape().to_vec(),
            reason: "C holds fewer elements than its M × N matrix",
        }
        .into());
    }
    let numel = c.numel();
    let mut out = c
        .reborrow()
        .reshape(&[numel])?
        .narrow(0, 0, m * n)?
        .reshape(&[m, n])?;
    Tensor::matmul_with(&a, &b)
        .alpha(alpha)
        .accumulate_into(beta, &mut out)
}

macro_rules! blob_gemm {
    ($(#[$doc:meta])* $name:ident, $side:ident, $view_mut:ident, $writable:ident, $dev:ty) => {
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)] // Caffe's signature
        pub fn $name(
            &mut self,
            trans_a: Transpose,
            trans_b: Transpose,
            m: usize,
            n: usize,
            k: usize,
            alpha: T,
            a: &TensorView<'_, T, $dev>,
            b: &TensorView<'_, T, $dev>,
            beta: T,
        ) -> Result<(), Error>
        where
            $side: OwnedSide,
            $side::Base: $writable,
        {
            let mut c = self.$view_mut()?;
            caffe_gemm(trans_a, trans_b, m, n, k, alpha, a, b, beta, &mut c)
        }
    };
}

impl<T: BlobElement, D: BlobSide, G: BlobSide> Blob<T, D, G> {
    blob_gemm!(
        /// [`caffe_gemm`] into the data on the CPU (`HeadAtCpu`): `data = alpha·op(A)·op(B) +
        /// beta·data`, the data read as the row-major `M × N` matrix of its first elements
        /// (Caffe's `caffe_cpu_gemm(.., mutable_cpu_data())`).
        cpu_gemm_data, D, cpu_data_view_mut, CpuWritable, Cpu
    );
    blob_gemm!(
        /// [`caffe_gemm`] into the diff on the CPU (`HeadAtCpu`), e.g. a weight's gradient
        /// `dW = dyᵀ·x` in an inner-product layer's backward pass.
        cpu_gemm_diff, G, cpu_diff_view_mut, CpuWritable, Cpu
    );
    blob_gemm!(
        /// [`caffe_gemm`] into the data on the GPU (`HeadAtGpu`), on the blob's stream
        /// (Caffe's `caffe_gpu_gemm(.., mutable_gpu_data())`).
        gpu_gemm_data, D, gpu_data_view_mut, GpuWritable, Gpu
    );
    blob_gemm!(
        /// [`caffe_gemm`] into the diff on the GPU (`HeadAtGpu`), on the blob's stream.
        gpu_gemm_diff, G, gpu_diff_view_mut, GpuWritable, Gpu
    );
}
