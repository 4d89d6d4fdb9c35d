//! Matrix multiply on the CPU (issue 27): [`MatmulEngine`] for [`Cpu`].
//!
//! Each batch index of the job is one product `dst = act(alpha·a·b + beta·dst + bias)`,
//! handed to a path chosen by the element type:
//! - `f32`, `f64`: the `gemm` crate (candle's), which takes each operand's row and column
//!   strides as they are (any sign, zero included): **no layout is copied**.
//! - `f16`, `bf16`: the operands are widened to contiguous `f32` panels (a copy of `b` per
//!   batch index and of `a` per row block), multiplied by `gemm` in `f32`, and the whole
//!   epilogue (`alpha`, `beta`, bias, activation) runs on the `f32` accumulator, rounded once
//!   at the store: PyTorch's CPU accumulates half products in `f32` too. (`gemm`'s own `f16`
//!   path was measured less accurate: 0.63 ulp off on a 16-term dot product, more than one
//!   rounding of an `f32` sum.)
//! - the integers: a blocked kernel of our own ([`int`]) over packed panels, in wrapping
//!   arithmetic (PyTorch's CPU integer matmul wraps; the result is exact modulo 2^bits,
//!   whatever the summation order).
//!
//! Threads: rayon's global pool, by default one thread per logical core, as PyTorch uses
//! every core (`RAYON_NUM_THREADS` overrides it; a call inside `ThreadPool::install` uses
//! that pool). `gemm` splits one large product across the threads; a batch of products too
//! small for that (below `gemm`'s threading threshold, 48·48·256 multiply-adds) runs one
//! product per thread, each into a private row-major buffer stored through the destination's
//! layout afterwards; the `bf16` and integer paths split the rows of `a` into one block per
//! thread. The epilogue runs right after each product, on the matrix just computed.
//! `allow_tf32` means nothing on the CPU and is ignored.
//!
//! Which layouts copy: none for `f32` / `f64` (the small-batch path copies only the result,
//! `m·n` per product); `f16`, `bf16` and the integers pack their operands (widened or not)
//! into contiguous panels whatever the layout, as a blocked kernel packs anyway.
//!
//! Only the `gemm` calls are `unsafe`; every other access indexes the storage slices, at
//! offsets the views' layout invariant keeps in bounds.

mod blocks;
mod epilogue;
mod float;
mod int;
mod mat;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_tensor;
#[cfg(test)]
mod tests_types;

use crate::device::Cpu;
use crate::element::{DType, Numeric};
use crate::error::{LayoutError, Result};
use crate::tensor::matmul::{MatmulEngine, MatmulJob};
use crate::tensor::TensorViewMut;

pub(crate) use epilogue::Epilogue;
pub(crate) use mat::{Mat, Product};

/// The job's sizes, checked against [`MatmulJob`]'s rules.
struct Dims {
    m: usize,
    k: usize,
    n: usize,
    /// The batch dims (shared by the three views).
    batch: Vec<usize>,
}

fn mismatch(expected: &[usize], got: &[usize]) -> crate::error::Error {
    LayoutError::ShapeMismatch {
        op: "matmul",
        expected: expected.to_vec(),
        got: got.to_vec(),
    }
    .into()
}

/// Checks the rules of [`MatmulJob`] the engine relies on (the tensor layer has checked them
/// already; a broken job is an error here, never a wrong index).
fn dims<T: Numeric>(job: &MatmulJob<'_, T, Cpu>, dst: &TensorViewMut<'_, T, Cpu>) -> Result<Dims> {
    let (a, b, c) = (job.a.shape(), job.b.shape(), dst.shape());
    let r = c.len();
    if r < 2 {
        return Err(mismatch(&[0, 0], c));
    }
    let (m, n) = (c[r - 2], c[r - 1]);
    let k = if a.len() == r { a[r - 1] } else { 0 };
    let batch = &c[..r - 2];
    let want_a: Vec<usize> = batch.iter().copied().chain([m, k]).collect();
    let want_b: Vec<usize> = batch.iter().copied().chain([k, n]).collect();
    if a != want_a.as_slice() {
        return Err(mismatch(&want_a, a));
    }
    if b != want_b.as_slice() {
        return Err(mismatch(&want_b, b));
    }
    if let Some(bias) = &job.bias {
        if bias.shape() != [n] {
            return Err(mismatch(&[n], bias.shape()));
        }
    }
    Ok(Dims {
        m,
        k,
        n,
        batch: batch.to_vec(),
    })
}

/// The matrix at batch position `idx` (row-major over `batch`) of a view with `strides`.
fn mat_at(batch: &[usize], idx: usize, offset: usize, strides: &[isize]) -> Mat {
    let r = strides.len();
    let mut off = offset as isize;
    let mut rest = idx;
    for d in (0..batch.len()).rev() {
        off += (rest % batch[d]) as isize * strides[d];
        rest /= batch[d];
    }
    Mat {
        off,
        rs: strides[r - 2],
        cs: strides[r - 1],
    }
}

/// Whether a batch of `gemm` products runs one product per thread: several threads, several
/// products, each too small for `gemm` to split (its threading threshold, in multiply-adds).
fn batch_in_parallel<T: Numeric>(count: usize, (m, k, n): (usize, usize, usize)) -> bool {
    matches!(T::DTYPE, DType::F32 | DType::F64)
        && count > 1
        && rayon::current_num_threads() > 1
        && m.saturating_mul(n).saturating_mul(k) < gemm::get_threading_threshold()
}

// SAFETY: `matmul` writes every element of `dst`'s layout once per batch index (each path
// writes the `m × n` matrix it is handed, and the batch positions cover `dst`'s layout
// exactly) with a value computed from valid values, and reads `dst` only when `beta != 0`
// (`Epilogue::read_dst`); it writes only through `dst`'s layout. A failed call (an
// allocation of a panel) returns after whole matrices or row blocks were stored, every one
// of them valid.
unsafe impl<T: Numeric> MatmulEngine<T> for Cpu {
    fn matmul(
        &self,
        job: &MatmulJob<'_, T, Cpu>,
        dst: &mut TensorViewMut<'_, T, Cpu>,
    ) -> Result<()> {
        let d = dims(job, dst)?;
        let count: usize = d.batch.iter().product();
        if d.m == 0 || d.n == 0 || count == 0 {
            return Ok(());
        }
        let (a_data, b_data) = (job.a.storage(), job.b.storage());
        let (a_off, b_off, c_off) = (
            job.a.layout().offset(),
            job.b.layout().offset(),
            dst.layout().offset(),
        );
        let (a_st, b_st) = (job.a.strides().to_vec(), job.b.strides().to_vec());
        let c_st = dst.strides().to_vec();
        let bias: Option<Vec<T>> = job.bias.as_ref().map(|v| {
            let s = v.storage();
            let o = v.layout().offset() as isize;
            let st = v.strides()[0];
            (0..d.n)
                .map(|j| s[(o + j as isize * st) as usize])
                .collect()
        });
        let epi = Epilogue::new(job.alpha, job.beta, bias.as_deref(), job.activation);
        let out = dst.slice_mut();
        let sizes = (d.m, d.k, d.n);
        let product = |[a, b, c]: [Mat; 3]| Product {
            a_data,
            a,
            b_data,
            b,
            c,
            m: d.m,
            k: d.k,
            n: d.n,
        };
        let mats = |idx| {
            [
                mat_at(&d.batch, idx, a_off, &a_st),
                mat_at(&d.batch, idx, b_off, &b_st),
                mat_at(&d.batch, idx, c_off, &c_st),
            ]
        };
        if d.k > 0 && batch_in_parallel::<T>(count, sizes) {
            let all: Vec<[Mat; 3]> = (0..count).map(mats).collect();
            return float::batch_parallel(&product(all[0]), out, &all, &epi);
        }
        for idx in 0..count {
            let p = product(mats(idx));
            if d.k == 0 {
                epi.k_zero(out, p.c, d.m, d.n);
                continue;
            }
            match T::DTYPE {
                DType::F32 | DType::F64 => float::gemm_native(&p, out, &epi)?,
                DType::F16 | DType::BF16 => float::via_f32(&p, out, &epi)?,
                _ => int::matmul(&p, out, &epi)?,
            }
        }
        Ok(())
    }
}
