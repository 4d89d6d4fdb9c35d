//! The integer kernel: packed panels, blocked for the caches, wrapping arithmetic.
//!
//! `b` is packed once per product to a row-major `[k, n]` panel and each thread's block of
//! rows of `a` to `[rows, k]`. The product walks `NC` columns by `KC` depth at a time (a
//! `KC × NC` slab of `b` stays in L2 while every row of the block passes over it), and
//! accumulates `R` rows by `W` columns in registers ([`tile`]): each value of `b` loaded is
//! used `R` times, each of `a` `W` times. Wrapping addition and multiplication are a ring
//! modulo 2^bits, so the result is exact whatever the order: the one PyTorch's CPU gives.

use super::blocks::for_row_blocks;
use super::epilogue::Epilogue;
use super::mat::Product;
use crate::element::Numeric;
use crate::error::Result;
use crate::host_vec::vec_with_capacity;

/// Columns of `b` per slab.
const NC: usize = 512;
/// Depth per slab.
const KC: usize = 256;
/// Rows of a register tile.
const R: usize = 4;
/// Columns of a register tile (16 lanes: two AVX2 registers of `i32`).
const W: usize = 16;

/// `dst = act(alpha·a·b + beta·dst + bias)` for one integer matrix, wrapping.
pub(super) fn matmul<T: Numeric>(
    p: &Product<'_, T>,
    out: &mut [T],
    epi: &Epilogue<'_, T>,
) -> Result<()> {
    let (c, m, k, n) = (p.c, p.m, p.k, p.n);
    let bp = p.b.pack(p.b_data, 0..k, n, |x| x)?;
    for_row_blocks(out, c, m, n, |blk, old, res| {
        let rows = blk.rows();
        let ap = p.a.pack(p.a_data, blk.start..blk.end, k, |x| x)?;
        let mut acc = vec_with_capacity(rows * n)?;
        acc.resize(rows * n, T::ZERO);
        for j0 in (0..n).step_by(NC) {
            let j1 = (j0 + NC).min(n);
            for p0 in (0..k).step_by(KC) {
                let p1 = (p0 + KC).min(k);
                slab(&ap, &bp, &mut acc, (rows, k, n), (p0, p1), (j0, j1));
            }
        }
        for (r, row) in acc.chunks_exact(n).enumerate() {
            let i = blk.start + r;
            res.extend(
                row.iter()
                    .enumerate()
                    .map(|(j, &v)| epi.finish(v, || old[c.at(i, j)], j)),
            );
        }
        Ok(())
    })
}

/// `acc[.., j0..j1] += ap[.., p0..p1] · bp[p0..p1, j0..j1]`: whole `R × W` tiles in
/// registers, the edges row by row.
fn slab<T: Numeric>(
    ap: &[T],
    bp: &[T],
    acc: &mut [T],
    (rows, k, n): (usize, usize, usize),
    (p0, p1): (usize, usize),
    (j0, j1): (usize, usize),
) {
    let full_j = j0 + (j1 - j0) / W * W;
    let mut r = 0;
    while r + R <= rows {
        let mut j = j0;
        while j < full_j {
            tile(ap, bp, acc, (r, j), (k, n), (p0, p1));
            j += W;
        }
        for rr in r..r + R {
            edge(ap, bp, acc, rr, (k, n), (p0, p1), (full_j, j1));
        }
        r += R;
    }
    for rr in r..rows {
        edge(ap, bp, acc, rr, (k, n), (p0, p1), (j0, j1));
    }
}

/// One `R × W` tile at row `r`, column `j`, accumulated over `p0..p1` in locals the compiler
/// keeps in vector registers.
#[inline(always)]
fn tile<T: Numeric>(
    ap: &[T],
    bp: &[T],
    acc: &mut [T],
    (r, j): (usize, usize),
    (k, n): (usize, usize),
    (p0, p1): (usize, usize),
) {
    let mut t = [[T::ZERO; W]; R];
    for p in p0..p1 {
        // One bounds check here; the fixed length lets the loop below run without any.
        let bw = &bp[p * n + j..][..W];
        for (rr, trow) in t.iter_mut().enumerate() {
            let x = ap[(r + rr) * k + p];
            for w in 0..W {
                trow[w] = trow[w].add(x.mul(bw[w]));
            }
        }
    }
    for (rr, trow) in t.iter().enumerate() {
        let row = &mut acc[(r + rr) * n + j..(r + rr) * n + j + W];
        for (cv, &tv) in row.iter_mut().zip(trow) {
            *cv = cv.add(tv);
        }
    }
}

/// Row `r`, columns `j0..j1`, over `p0..p1`, one column vector at a time.
fn edge<T: Numeric>(
    ap: &[T],
    bp: &[T],
    acc: &mut [T],
    r: usize,
    (k, n): (usize, usize),
    (p0, p1): (usize, usize),
    (j0, j1): (usize, usize),
) {
    if j0 >= j1 {
        return;
    }
    let crow = &mut acc[r * n + j0..r * n + j1];
    for p in p0..p1 {
        let x = ap[r * k + p];
        let brow = &bp[p * n + j0..p * n + j1];
        for (cv, &bv) in crow.iter_mut().zip(brow) {
            *cv = cv.add(x.mul(bv));
        }
    }
}
