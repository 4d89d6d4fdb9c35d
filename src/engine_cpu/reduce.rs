//! Reductions on the CPU: the tensor reductions of [`crate::ops::reduce`] over any view
//! ([`reduce`]), and the full `f64` sums behind Caffe's `asum` /
//! `sumsq` ([`sum_map`]).
//!
//! [`reduce`] walks a [`ReduceGeometry`] (dims dropped, flipped, ordered and merged) in one of
//! two orders, chosen by which side moves faster in memory:
//!
//! - **Rows** (a reduced dim is innermost, e.g. a last-axis or full reduction): one output at
//!   a time, its elements folded run by run along the innermost reduced dim. A contiguous run
//!   is cut into blocks of [`BLOCK`] elements, each folded over [`lanes_for`] independent
//!   accumulators (32 for `f32` sums; LLVM vectorises them), and block results, like run
//!   results, are combined pairwise ([`Cascade`]): a float sum of `n` elements then carries
//!   an error growing with `BLOCK / lanes + log2(n)` rather than `n` (PyTorch's cascade sum).
//! - **Columns** (a kept dim is innermost, e.g. a first- or middle-axis reduction): for each
//!   index of the outer kept dims, one accumulator per element of the innermost kept dim, and
//!   the reduced dims walked outside it, so each step folds one contiguous row into the
//!   accumulators (ndarray's lane-wise `sum_axis`). Each output's fold is then sequential
//!   along the reduced dims.
//!
//! Every combine is associative and commutative (the arg ops compare (value, index) pairs),
//! so both orders give the same result, up to float rounding in sums.

use super::runs::{at, for_each_run, walk};
use crate::element::Element;
use crate::error::Result;
use crate::layout::reduce::ReduceGeometry;
use crate::layout::{collapse, Layout};
use crate::ops::reduce::Reduction;
use crate::tensor::expr::host::{map_indices, split_len, GRAIN};

/// Lanes of independent partial results: lets LLVM vectorise without reassociating any one
/// of them.
const LANES: usize = 8;

/// The most lanes [`fold_lanes`] keeps.
const MAX_LANES: usize = 32;

/// Lanes [`fold_lanes`] keeps for accumulators of type `A`: 128 bytes of them (a power of
/// two from 4 to [`MAX_LANES`]), so an `f32` sum adds into eight independent SSE registers
/// and is bound by memory, not by the latency of one chain of adds (2.6 times the speed of 8
/// lanes on blocks in cache), while a
/// (value, index) pair of the arg reductions keeps 8 and stays in registers.
const fn lanes_for<A>() -> usize {
    let size = if std::mem::size_of::<A>() == 0 {
        1
    } else {
        std::mem::size_of::<A>()
    };
    let mut lanes = 4;
    while lanes * 2 * size <= 128 && lanes * 2 <= MAX_LANES {
        lanes *= 2;
    }
    lanes
}

/// Elements of a contiguous run folded before the pairwise cascade takes over.
const BLOCK: usize = 4096;

/// `Σ f(x)` over the elements of `layout` in `data`, in `f64`.
pub(crate) fn sum_map<T: Element>(data: &[T], layout: &Layout, f: impl Fn(T) -> f64) -> f64 {
    let c = collapse([layout]);
    let mut total = 0.0;
    for_each_run(&c, false, |o, s, n| {
        total += if s[0] == 1 {
            sum_contiguous(&data[o[0]..o[0] + n], &f)
        } else {
            (0..n).map(|i| f(data[at(o[0], s[0], i)])).sum::<f64>()
        };
    });
    total
}

fn sum_contiguous<T: Copy>(xs: &[T], f: &impl Fn(T) -> f64) -> f64 {
    let mut acc = [0.0f64; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            *a += f(x);
        }
    }
    let tail: f64 = rest.iter().map(|&x| f(x)).sum();
    acc.iter().sum::<f64>() + tail
}

/// Writes `op` folded over each output's elements of `src` into `dst`, as `g` maps them.
///
/// Precondition: `g` was made by [`ReduceGeometry::new`] from layouts checked against `src`
/// and `dst` (so every offset it yields indexes them).
pub(crate) fn reduce<T: Element, R: Reduction<T>>(
    op: R,
    src: &[T],
    g: &ReduceGeometry,
    dst: &mut [R::Output],
) -> Result<()> {
    if g.num_out == 0 {
        return Ok(());
    }
    let count = g.red_n;
    if g.red_n == 0 {
        let value = op.project(op.identity(), 0);
        walk(
            &kept_sizes(g),
            &kept_strides(g),
            [0, g.output_offset as isize],
            |[_, o]| {
                dst[o as usize] = value;
            },
        );
        return Ok(());
    }
    let columns = match (g.kept.last(), g.reduced.last()) {
        (Some(k), Some(r)) => k.input < r.input,
        (Some(_), None) => true,
        (None, _) => false,
    };
    if columns {
        return super::columns::reduce_columns(op, src, g, dst, count);
    }
    let base = [g.input_offset as isize, g.output_offset as isize];
    if g.num_out > 1 && split_len(g.num_out.saturating_mul(count)).is_some() {
        // Issue 29: outputs folded on rayon's threads (each output's fold is the serial one,
        // so the result does not depend on the threads), then written here in order.
        let mut at = super::vec_with_capacity::<[isize; 2]>(g.num_out)?;
        walk(&kept_sizes(g), &kept_strides(g), base, |p| at.push(p));
        let values: Vec<R::Output> = map_indices(at.len(), (GRAIN / count).max(1), &|k| {
            op.project(fold_reduced(&op, src, g, at[k][0] as usize), count)
        });
        for (&[_, o], v) in at.iter().zip(values) {
            dst[o as usize] = v;
        }
        return Ok(());
    }
    walk(&kept_sizes(g), &kept_strides(g), base, |[i, o]| {
        let acc = fold_reduced(&op, src, g, i as usize);
        dst[o as usize] = op.project(acc, count);
    });
    Ok(())
}

pub(super) fn kept_sizes(g: &ReduceGeometry) -> Vec<usize> {
    g.kept.iter().map(|d| d.size).collect()
}

pub(super) fn kept_strides(g: &ReduceGeometry) -> Vec<[isize; 2]> {
    g.kept.iter().map(|d| [d.input, d.output]).collect()
}

/// `op` folded over the reduced elements of the output whose first element is at `base`.
fn fold_reduced<T: Element, R: Reduction<T>>(
    op: &R,
    src: &[T],
    g: &ReduceGeometry,
    base: usize,
) -> R::Acc {
    let Some((last, outer)) = g.reduced.split_last() else {
        // Every reduced dim has size 1: one element.
        return op.map(src[base], g.logical_offset);
    };
    let sizes: Vec<usize> = outer.iter().map(|d| d.size).collect();
    let strides: Vec<[isize; 2]> = outer.iter().map(|d| [d.input, d.logical]).collect();
    let mut cascade = Cascade::new();
    walk(
        &sizes,
        &strides,
        [base as isize, g.logical_offset as isize],
        |[r, l]| {
            let run = fold_run(
                op,
                src,
                r as usize,
                last.input,
                last.size,
                l as i64,
                last.logical,
            );
            cascade.push(op, run);
        },
    );
    cascade.finish(op)
}

/// `op` over `n` elements from `start` with `stride`, the first at logical index `l0`.
fn fold_run<T: Element, R: Reduction<T>>(
    op: &R,
    src: &[T],
    start: usize,
    stride: isize,
    n: usize,
    l0: i64,
    ls: isize,
) -> R::Acc {
    let ls = ls as i64;
    // Block `b`: elements `b * BLOCK ..`, at fixed boundaries whatever the threads.
    let block = |b: usize| {
        let (s, e) = (b * BLOCK, ((b + 1) * BLOCK).min(n));
        let lb = l0 + s as i64 * ls;
        if stride == 1 {
            fold_lanes(op, &src[start + s..start + e], lb, ls)
        } else {
            (s..e).fold(op.identity(), |acc, i| {
                op.combine(acc, op.map(src[at(start, stride, i)], l0 + i as i64 * ls))
            })
        }
    };
    let blocks = n.div_ceil(BLOCK);
    let mut cascade = Cascade::new();
    if split_len(n).is_some() {
        // Issue 29: the blocks folded on rayon's threads, then combined here in order: the
        // same values pushed in the same order as below, so the same result bit for bit.
        let partials: Vec<R::Acc> = map_indices(blocks, GRAIN / BLOCK, &block);
        for p in partials {
            cascade.push(op, p);
        }
    } else {
        for b in 0..blocks {
            cascade.push(op, block(b));
        }
    }
    cascade.finish(op)
}

/// `op` over a contiguous block, element `i` at logical index `l0 + i * ls`, in
/// [`lanes_for`] interleaved accumulators. Not run through `host::vectorized`: measured on
/// 4,096-element `f32` blocks in cache, the baseline build's 32 lanes (8 SSE registers)
/// summed at 83 GB/s and the AVX2 build of the same loop at 25 to 33.
#[inline(always)]
fn fold_lanes<T: Element, R: Reduction<T>>(op: &R, xs: &[T], l0: i64, ls: i64) -> R::Acc {
    let lanes = const { lanes_for::<R::Acc>() };
    let mut acc = [op.identity(); MAX_LANES];
    let acc = &mut acc[..lanes];
    let chunks = xs.chunks_exact(lanes);
    let rest = chunks.remainder();
    let tail_at = xs.len() - rest.len();
    for (c, chunk) in chunks.enumerate() {
        for (k, (a, &x)) in acc.iter_mut().zip(chunk).enumerate() {
            *a = op.combine(*a, op.map(x, l0 + (c * lanes + k) as i64 * ls));
        }
    }
    for (k, &x) in rest.iter().enumerate() {
        acc[k] = op.combine(acc[k], op.map(x, l0 + (tail_at + k) as i64 * ls));
    }
    // Pairwise over the lanes.
    let mut width = lanes;
    while width > 1 {
        width /= 2;
        for k in 0..width {
            acc[k] = op.combine(acc[k], acc[k + width]);
        }
    }
    acc[0]
}

/// Pairwise combination of a stream of partial results: a binary counter whose level `k`
/// holds the combination of `2^k` pushed values, so `n` pushes are combined in a tree of depth
/// `log2(n) + 1`.
struct Cascade<A> {
    levels: Vec<A>,
    /// Which levels hold a value (bit `k` for level `k`).
    full: u64,
}

impl<A: Copy> Cascade<A> {
    fn new() -> Self {
        Cascade {
            levels: Vec::new(),
            full: 0,
        }
    }

    fn push<T: Element, R: Reduction<T, Acc = A>>(&mut self, op: &R, mut a: A) {
        let mut k = 0;
        while self.full & (1u64 << k) != 0 {
            a = op.combine(self.levels[k], a);
            self.full &= !(1u64 << k);
            k += 1;
        }
        if self.levels.len() <= k {
            self.levels.resize(k + 1, a);
        }
        self.levels[k] = a;
        self.full |= 1u64 << k;
    }

    fn finish<T: Element, R: Reduction<T, Acc = A>>(self, op: &R) -> A {
        let mut acc = op.identity();
        for (k, &v) in self.levels.iter().enumerate() {
            if self.full & (1u64 << k) != 0 {
                acc = op.combine(v, acc);
            }
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::Sum;

    #[test]
    fn cascade_combines_every_push_once() {
        for n in [0usize, 1, 2, 3, 7, 8, 100, 1025] {
            let mut c = Cascade::new();
            for i in 0..n {
                c.push::<i64, Sum>(&Sum, i as i64);
            }
            assert_eq!(c.finish::<i64, Sum>(&Sum), (0..n as i64).sum::<i64>());
        }
    }
}
