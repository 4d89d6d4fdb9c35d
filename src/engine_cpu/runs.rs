//! The order the CPU engine visits elements in: runs along the innermost collapsed dim.
//!
//! After [`crate::layout::collapse`] (output first, so the output's innermost dim has its
//! smallest stride), an op is a set of *runs*: for each index of the outer dims, `len`
//! elements along the innermost dim, at a start offset and a stride per operand. The kernels
//! turn each run into a tight loop (plain slices when the strides are 1). The outer dims are
//! walked with an index counter and running offsets, so no division happens per element.
//!
//! When an input walks the two innermost dims in the opposite order to the output (a
//! transposed input), visiting runs row by row reads that input a column at a time, one
//! cache line (and often one page) per element. [`wants_tiles`] detects this and
//! [`for_each_run`] then visits the two innermost dims in [`TILE_ROWS`] x [`TILE_COLS`] tiles,
//! so the lines of the transposed input that a tile touches stay in L1 while they are used.
//!
//! [`walk`] is the plain row-major walk of a reduction's kept dims (two offsets per index),
//! shared by the row-order and column-order reductions (`reduce.rs`, `columns.rs`).

use std::ops::Range;

use crate::layout::CollapsedLayout;
pub(crate) use crate::tensor::expr::host::for_each_run_in;

/// Which runs of a collapsed op a kernel visits (issue 29): all of them, or one thread's
/// share of a split op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Walk {
    /// Every run, tiled or not ([`for_each_run`]).
    Whole { tiled: bool },
    /// The runs covering these output positions, untiled ([`for_each_run_in`]).
    Span(Range<usize>),
    /// The tiles of these rows (indices over every dim but the innermost, row-major), for a
    /// transposed input ([`for_each_tile_run_in`]).
    TileRows(Range<usize>),
}

impl Walk {
    /// Calls `run` for each run of `c` this walk covers (see [`for_each_run`]).
    #[inline(always)]
    pub(crate) fn runs<const N: usize>(
        &self,
        c: &CollapsedLayout<N>,
        run: impl FnMut([usize; N], [isize; N], usize),
    ) {
        match self {
            Walk::Whole { tiled } => for_each_run(c, *tiled, run),
            Walk::Span(r) => for_each_run_in(c, r.clone(), run),
            Walk::TileRows(r) => for_each_tile_run_in(c, r.clone(), run),
        }
    }
}

/// Rows (outer of the two tiled dims) per tile: the transposed input is contiguous along
/// them, so each of its columns in a tile is one run of 64 elements (two or more cache lines).
pub(crate) const TILE_ROWS: usize = 64;
/// Columns (innermost dim) per tile, the length of each run: a tile touches this many
/// columns of the transposed input, often one page each, so 32 keeps them within the L1 TLB
/// and its 8 KiB (f32) within L1. Measured on 2048² and 4096² f32: 64x32 and 128x32 were
/// fastest among 16..256 x 16..512.
pub(crate) const TILE_COLS: usize = 32;

/// Whether some input is transposed relative to the output in the two innermost dims.
pub(crate) fn wants_tiles<const N: usize>(c: &CollapsedLayout<N>) -> bool {
    let r = c.rank();
    r >= 2
        && (1..N).any(|k| {
            let inner = c.strides[k][r - 1].unsigned_abs();
            let outer = c.strides[k][r - 2].unsigned_abs();
            outer != 0 && inner > outer
        })
}

/// Calls `run(offsets, strides, len)` for every run of `c`: `len` elements, element `i` of
/// operand `k` at storage index `offsets[k] + i * strides[k]`. Every element tuple of `c` is
/// in exactly one run. Without tiling, runs come in increasing order of the output's
/// position (row-major over `c.shape`), which the append-only sink relies on.
///
/// Every index produced is one the operands' layouts reach, so it lies in the storage their
/// views were checked against.
#[inline(always)]
pub(crate) fn for_each_run<const N: usize>(
    c: &CollapsedLayout<N>,
    tiled: bool,
    mut run: impl FnMut([usize; N], [isize; N], usize),
) {
    runs(c, tiled, &mut run)
}

/// [`for_each_run`]'s walk, compiled once per operand count: the kernel comes as a `dyn`
/// (one indirect call per run), so the walk is not compiled again for every op and element
/// type (it was 7 MB of the test binary's 150 MB of code).
fn runs<const N: usize>(
    c: &CollapsedLayout<N>,
    tiled: bool,
    run: &mut dyn FnMut([usize; N], [isize; N], usize),
) {
    if c.numel() == 0 {
        return;
    }
    let r = c.rank();
    let len = c.shape[r - 1];
    let inner: [isize; N] = std::array::from_fn(|k| c.strides[k][r - 1]);
    let base: [isize; N] = std::array::from_fn(|k| c.offsets[k] as isize);
    if !tiled {
        for_each_outer(c, r - 1, base, |off| run(to_index(off), inner, len));
        return;
    }
    let rows = c.shape[r - 2];
    let row: [isize; N] = std::array::from_fn(|k| c.strides[k][r - 2]);
    for_each_outer(c, r - 2, base, |off| {
        for i0 in (0..rows).step_by(TILE_ROWS) {
            for j0 in (0..len).step_by(TILE_COLS) {
                let cols = TILE_COLS.min(len - j0);
                for i in i0..(i0 + TILE_ROWS).min(rows) {
                    let start: [isize; N] = std::array::from_fn(|k| {
                        off[k] + i as isize * row[k] + j0 as isize * inner[k]
                    });
                    run(to_index(start), inner, cols);
                }
            }
        }
    });
}

/// The tiled walk of [`for_each_run`] restricted to `rows` (row `R` is the index over every
/// dim but the innermost, row-major; the output positions `R * len ..` with `len` the
/// innermost size): tiles of up to [`TILE_ROWS`] rows start at `rows.start` and never span
/// two matrices. For rank 1 (never tiled) it is the untiled walk of those rows.
#[inline(always)]
pub(crate) fn for_each_tile_run_in<const N: usize>(
    c: &CollapsedLayout<N>,
    rows: Range<usize>,
    mut run: impl FnMut([usize; N], [isize; N], usize),
) {
    tile_runs_in(c, rows, &mut run)
}

/// [`for_each_tile_run_in`]'s walk, compiled once per operand count (see [`runs`]).
fn tile_runs_in<const N: usize>(
    c: &CollapsedLayout<N>,
    rows: Range<usize>,
    run: &mut dyn FnMut([usize; N], [isize; N], usize),
) {
    let r = c.rank();
    let len = c.shape[r - 1];
    if c.numel() == 0 {
        return;
    }
    if r < 2 {
        return for_each_run_in(c, rows.start * len..rows.end * len, run);
    }
    let height = c.shape[r - 2];
    let inner: [isize; N] = std::array::from_fn(|k| c.strides[k][r - 1]);
    let row: [isize; N] = std::array::from_fn(|k| c.strides[k][r - 2]);
    let end = rows.end.min(c.numel() / len);
    let mut at_row = rows.start;
    while at_row < end {
        let (m, i) = (at_row / height, at_row % height);
        let stop = end.min(at_row - i + height).min(at_row + TILE_ROWS);
        // The offsets of matrix `m` (its index over the outer dims).
        let mut off: [isize; N] = std::array::from_fn(|k| c.offsets[k] as isize);
        let mut rem = m;
        for d in (0..r - 2).rev() {
            let x = (rem % c.shape[d]) as isize;
            rem /= c.shape[d];
            for (o, st) in off.iter_mut().zip(&c.strides) {
                *o += x * st[d];
            }
        }
        for j0 in (0..len).step_by(TILE_COLS) {
            let cols = TILE_COLS.min(len - j0);
            for ii in i..i + (stop - at_row) {
                let start: [isize; N] =
                    std::array::from_fn(|k| off[k] + ii as isize * row[k] + j0 as isize * inner[k]);
                run(to_index(start), inner, cols);
            }
        }
        at_row = stop;
    }
}

/// Calls `f` with the start offsets of every index of the first `outer` dims, row-major.
fn for_each_outer<const N: usize>(
    c: &CollapsedLayout<N>,
    outer: usize,
    base: [isize; N],
    mut f: impl FnMut([isize; N]),
) {
    let mut idx = [0usize; crate::layout::MAX_DIMS];
    let mut off = base;
    loop {
        f(off);
        // Odometer step over dims outer-1 .. 0. Offsets may pass one step beyond a dim's end
        // before being wound back; wrapping arithmetic keeps that transient value harmless.
        let mut d = outer;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            for (o, st) in off.iter_mut().zip(&c.strides) {
                *o = o.wrapping_add(st[d]);
            }
            if idx[d] < c.shape[d] {
                break;
            }
            for (o, st) in off.iter_mut().zip(&c.strides) {
                *o = o.wrapping_sub(st[d].wrapping_mul(c.shape[d] as isize));
            }
            idx[d] = 0;
        }
    }
}

/// Offsets of reachable elements are non-negative (Layout invariant 3).
#[inline(always)]
fn to_index<const N: usize>(off: [isize; N]) -> [usize; N] {
    off.map(|o| o as usize)
}

/// Storage index of element `i` of a run starting at `start` with `stride`.
#[inline(always)]
pub(crate) fn at(start: usize, stride: isize, i: usize) -> usize {
    (start as isize + stride * i as isize) as usize
}

/// Calls `f` with the two offsets of every index of `sizes` (row-major), starting at `base`
/// and moving `strides[d]` along dim `d`. No dims: one call with `base`. Offsets may step one
/// past a dim's end before being wound back; wrapping arithmetic keeps that harmless, and
/// every value passed to `f` is a reachable one.
#[inline(always)]
pub(super) fn walk(
    sizes: &[usize],
    strides: &[[isize; 2]],
    base: [isize; 2],
    mut f: impl FnMut([isize; 2]),
) {
    walk_dyn(sizes, strides, base, &mut f)
}

/// [`walk`], compiled once (one indirect call per index, which then folds a whole reduction).
fn walk_dyn(
    sizes: &[usize],
    strides: &[[isize; 2]],
    base: [isize; 2],
    f: &mut dyn FnMut([isize; 2]),
) {
    if sizes.contains(&0) {
        return;
    }
    let mut idx = [0usize; crate::layout::MAX_DIMS];
    let mut off = base;
    loop {
        f(off);
        let mut d = sizes.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            for (o, s) in off.iter_mut().zip(strides[d]) {
                *o = o.wrapping_add(s);
            }
            if idx[d] < sizes[d] {
                break;
            }
            for (o, s) in off.iter_mut().zip(strides[d]) {
                *o = o.wrapping_sub(s.wrapping_mul(sizes[d] as isize));
            }
            idx[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{collapse, Layout};

    /// Output offsets visited, in order.
    fn visits(c: &CollapsedLayout<2>, tiled: bool) -> Vec<(usize, usize)> {
        let mut out = vec![];
        for_each_run(c, tiled, |o, s, n| {
            for i in 0..n {
                out.push((at(o[0], s[0], i), at(o[1], s[1], i)));
            }
        });
        out
    }

    #[test]
    fn tiled_and_plain_visit_the_same_pairs() {
        let shape = [3, 70, 45];
        let out = Layout::contiguous(&shape).unwrap();
        let inp = Layout::contiguous(&[3, 45, 70])
            .unwrap()
            .transpose(1, 2)
            .unwrap();
        let c = collapse([&out, &inp]);
        assert!(wants_tiles(&c));
        let plain = visits(&c, false);
        let mut tiled = visits(&c, true);
        assert_eq!(plain.len(), 3 * 70 * 45);
        // Plain order is the output's row-major order.
        assert!(plain.iter().enumerate().all(|(i, p)| p.0 == i));
        tiled.sort_unstable();
        assert_eq!(tiled, plain);
    }

    #[test]
    fn tile_rows_of_any_range_visit_those_rows() {
        let out = Layout::contiguous(&[3, 70, 45]).unwrap();
        let inp = Layout::contiguous(&[3, 45, 70])
            .unwrap()
            .transpose(1, 2)
            .unwrap();
        let c = collapse([&out, &inp]);
        let all = visits(&c, false);
        for (a, b) in [(0, 210), (0, 1), (5, 69), (65, 141), (139, 210), (200, 500)] {
            let mut got = vec![];
            for_each_tile_run_in(&c, a..b, |o, s, n| {
                got.extend((0..n).map(|i| (at(o[0], s[0], i), at(o[1], s[1], i))));
            });
            got.sort_unstable();
            let b = b.min(210);
            assert_eq!(got, all[a * 45..b * 45]);
        }
    }

    #[test]
    fn contiguous_ops_are_one_run() {
        let l = Layout::contiguous(&[4, 5, 6]).unwrap();
        let c = collapse([&l, &l]);
        assert!(!wants_tiles(&c));
        let mut runs = 0;
        for_each_run(&c, false, |o, s, n| {
            runs += 1;
            assert_eq!((o, s, n), ([0, 0], [1, 1], 120));
        });
        assert_eq!(runs, 1);
    }

    #[test]
    fn walk_visits_row_major() {
        let mut seen = vec![];
        walk(&[2, 3], &[[10, 1], [1, 100]], [5, 0], |o| seen.push(o));
        assert_eq!(
            seen,
            [[5, 0], [6, 100], [7, 200], [15, 1], [16, 101], [17, 201]]
        );
        let mut n = 0;
        walk(&[], &[], [3, 4], |o| {
            assert_eq!(o, [3, 4]);
            n += 1;
        });
        assert_eq!(n, 1);
    }
}
