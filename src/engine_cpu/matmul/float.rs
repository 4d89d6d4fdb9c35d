//! The float paths: `f32`, `f64` straight through the `gemm` crate; `f16`, `bf16` through
//! `f32` panels.

use std::any::TypeId;

use gemm::Parallelism;

use super::blocks::{for_row_blocks, Block};
use super::epilogue::Epilogue;
use super::mat::{Mat, Product};
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
fn gemm_raw<T: Numeric>(
    p: &Product<'_, T>,
    out: &mut [T],
    alpha: T,
    beta: T,
    par: Parallelism,
) -> bool {
    let (a_data, a, b_data, b, c) = (p.a_data, p.a, p.b_data, p.b, p.c);
    let (m, k, n) = (p.m, p.k, p.n);
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
pub(super) fn gemm_native<T: Numeric>(
    p: &Product<'_, T>,
    out: &mut [T],
    epi: &Epilogue<'_, T>,
) -> Result<()> {
    if !gemm_raw(p, out, epi.alpha, epi.beta, Parallelism::Rayon(0)) {
        return via_f32(p, out, epi);
    }
    epi.apply_in_place(out, p.c, p.m, p.n);
    Ok(())
}

/// Any float type through `f32` (`f16`, `bf16`): `b` widened once to a contiguous `[k, n]` panel,
/// each block of rows of `a` widened to `[rows, k]`, multiplied by `gemm` in `f32` (one
/// thread per block, blocks in parallel), the epilogue on the `f32` accumulator, rounded once.
pub(super) fn via_f32<T: Numeric>(
    p: &Product<'_, T>,
    out: &mut [T],
    epi: &Epilogue<'_, T>,
) -> Result<()> {
    let (c, m, k, n) = (p.c, p.m, p.k, p.n);
    let widen = |x: T| x.to_f64() as f32;
    let bf = p.b.pack(p.b_data, 0..k, n, widen)?;
    for_row_blocks(out, c, m, n, |blk: Block, old: &[T], res: &mut Vec<T>| {
        let rows = blk.rows();
        let af = p.a.pack(p.a_data, blk.start..blk.end, k, widen)?;
        let mut acc = vec_with_capacity::<f32>(rows * n)?;
        acc.resize(rows * n, 0.0);
        let panel = Product {
            a_data: &af,
            a: Mat::row_major(k),
            b_data: &bf,
            b: Mat::row_major(n),
            c: Mat::row_major(n),
            m: rows,
            k,
            n,
        };
        gemm_raw(&panel, &mut acc, 1.0, 0.0, Parallelism::None);
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
pub(super) fn batch_parallel<T: Numeric>(
    first: &Product<'_, T>,
    out: &mut [T],
    mats: &[[Mat; 3]],
    epi: &Epilogue<'_, T>,
) -> Result<()> {
    use rayon::prelude::*;
    let (m, n) = (first.m, first.n);
    let old: &[T] = out;
    let tile = Mat::row_major(n);
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
            let p = Product {
                a,
                b,
                c: tile,
                ..*first
            };
            if gemm_raw(&p, &mut buf, epi.alpha, epi.beta, Parallelism::None) {
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
