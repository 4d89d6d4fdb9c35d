//! The float paths: `f32`, `f64` straight through the `gemm` crate; `f16`, `bf16` through
//! `f32` panels.

use std::any::TypeId;

use gemm::Parallelism;

use super::blocks::{for_row_blocks, Block};
use super::epilogue::Epilogue;
use super::mat::Mat;
use crate::element::Numeric;
use crate::error::Result;
use crate::host_vec::vec_with_capacity;

/// Whether `gemm::gemm::<T>` takes `T` (it panics on any other type).
fn gemm_takes<T: 'static>() -> bool {
    let t = TypeId::of::<T>();
    t == TypeId::of::<f32>() || t == TypeId::of::<f64>()
}

/// `c = alpha·a·b + beta·c` by `gemm` on the strided matrices as they are, into `out`.
///
/// `T` must be one `gemm` takes (checked: otherwise nothing is written and `false` returns).
/// `c` must not be read when `read_dst` is false.
#[allow(clippy::too_many_arguments)]
fn gemm_raw<T: Numeric>(
    a_data: &[T],
    a: Mat,
    b_data: &[T],
    b: Mat,
    out: &mut [T],
    c: Mat,
    (m, k, n): (usize, usize, usize),
    alpha: T,
    beta: T,
    par: Parallelism,
) -> bool {
    if !gemm_takes::<T>() || m == 0 || n == 0 || k == 0 {
        return false;
    }
    let read_dst = beta != T::ZERO;
    // SAFETY: `gemm` reads `a[i, p]` at `a_ptr + i·a.rs + p·a.cs` for `i < m`, `p < k`, and
    // likewise `b` (`k × n`), and reads (when `read_dst`) and writes `c` (`m × n`): by
    // `Mat`'s invariant (the views' layouts, checked when they were made, and `dims`' shape
    // checks) each of those indices is inside its slice, and `a.off`, `b.off`, `c.off`
    // (element `[0, 0]`, which exists as m, n, k > 0) are too, so the base pointers are in
    // bounds. `out` is borrowed exclusively, so it aliases neither operand, and the
    // destination view's layout is non-overlapping, so no element is written twice by
    // different threads of `gemm`. `T` is `f32` or `f64` (checked above), types `gemm` dispatches
    // on. With `read_dst == false`, `gemm`
    // zeroes its `alpha` and never loads the destination (gemm-common's `gemm_basic_generic`).
    // Argument order: `gemm`'s `alpha` scales `dst`, its `beta` the product.
    unsafe {
        gemm::gemm::<T>(
            m,
            n,
            k,
            out.as_mut_ptr().offset(c.off),
            c.cs,
            c.rs,
            read_dst,
            a_data.as_ptr().offset(a.off),
            a.cs,
            a.rs,
            b_data.as_ptr().offset(b.off),
            b.cs,
            b.rs,
            beta,
            alpha,
            false,
            false,
            false,
            par,
        );
    }
    true
}

/// `f32`, `f64`: `gemm` with `alpha` and `beta`, every thread, then the bias and
/// activation over the stored matrix. Falls back to the `f32` panels for any other type.
#[allow(clippy::too_many_arguments)]
pub(super) fn gemm_native<T: Numeric>(
    a_data: &[T],
    a: Mat,
    b_data: &[T],
    b: Mat,
    out: &mut [T],
    c: Mat,
    sizes: (usize, usize, usize),
    epi: &Epilogue<'_, T>,
) -> Result<()> {
    let (m, _, n) = sizes;
    let par = Parallelism::Rayon(0);
    if !gemm_raw(
        a_data, a, b_data, b, out, c, sizes, epi.alpha, epi.beta, par,
    ) {
        return via_f32(a_data, a, b_data, b, out, c, sizes, epi);
    }
    epi.apply_in_place(out, c, m, n);
    Ok(())
}

/// Any float type through `f32` (`f16`, `bf16`): `b` widened once to a contiguous `[k, n]` panel,
/// each block of rows of `a` widened to `[rows, k]`, multiplied by `gemm` in `f32` (one
/// thread per block, blocks in parallel), the epilogue on the `f32` accumulator, rounded once.
#[allow(clippy::too_many_arguments)]
pub(super) fn via_f32<T: Numeric>(
    a_data: &[T],
    a: Mat,
    b_data: &[T],
    b: Mat,
    out: &mut [T],
    c: Mat,
    (m, k, n): (usize, usize, usize),
    epi: &Epilogue<'_, T>,
) -> Result<()> {
    let mut bf = vec_with_capacity::<f32>(k * n)?;
    for p in 0..k {
        bf.extend((0..n).map(|j| b_data[b.at(p, j)].to_f64() as f32));
    }
    let packed_b = Mat {
        off: 0,
        rs: n as isize,
        cs: 1,
    };
    for_row_blocks(out, c, m, n, |blk: Block, old: &[T], res: &mut Vec<T>| {
        let rows = blk.rows();
        let mut af = vec_with_capacity::<f32>(rows * k)?;
        for i in blk.start..blk.end {
            af.extend((0..k).map(|p| a_data[a.at(i, p)].to_f64() as f32));
        }
        let mut acc = vec_with_capacity::<f32>(rows * n)?;
        acc.resize(rows * n, 0.0);
        let packed_a = Mat {
            off: 0,
            rs: k as isize,
            cs: 1,
        };
        let packed_c = Mat {
            off: 0,
            rs: n as isize,
            cs: 1,
        };
        gemm_raw(
            &af,
            packed_a,
            &bf,
            packed_b,
            &mut acc,
            packed_c,
            (rows, k, n),
            1.0,
            0.0,
            Parallelism::None,
        );
        for r in 0..rows {
            for j in 0..n {
                let v = epi.finish_f32(acc[r * n + j], || old[c.at(blk.start + r, j)], j);
                res.push(v);
            }
        }
        Ok(())
    })
}

/// Many small `f32` / `f64` products (each below `gemm`'s threading threshold, which
/// would run them one after another on one thread): the batch indices in parallel, each
/// product into a private row-major `[m, n]` buffer (`beta·dst` gathered into it first),
/// then one sequential pass stores every buffer through the destination's layout.
#[allow(clippy::too_many_arguments)]
pub(super) fn batch_parallel<T: Numeric>(
    a_data: &[T],
    b_data: &[T],
    out: &mut [T],
    mats: &[[Mat; 3]],
    (m, k, n): (usize, usize, usize),
    epi: &Epilogue<'_, T>,
) -> Result<()> {
    use rayon::prelude::*;
    let old: &[T] = out;
    let tile = Mat {
        off: 0,
        rs: n as isize,
        cs: 1,
    };
    let results: Vec<Result<Vec<T>>> = mats
        .par_iter()
        .map(|&[a, b, c]| {
            let mut buf = vec_with_capacity::<T>(m * n)?;
            if epi.read_dst() {
                for i in 0..m {
                    buf.extend((0..n).map(|j| old[c.at(i, j)]));
                }
            } else {
                buf.resize(m * n, T::ZERO);
            }
            let sizes = (m, k, n);
            let par = Parallelism::None;
            if gemm_raw(
                a_data, a, b_data, b, &mut buf, tile, sizes, epi.alpha, epi.beta, par,
            ) {
                epi.apply_in_place(&mut buf, tile, m, n);
            }
            Ok(buf)
        })
        .collect();
    for (&[_, _, c], buf) in mats.iter().zip(results) {
        let buf = buf?;
        for (i, row) in buf.chunks_exact(n).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                out[c.at(i, j)] = v;
            }
        }
    }
    Ok(())
}
