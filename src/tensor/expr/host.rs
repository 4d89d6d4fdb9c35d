//! The host's iteration (issue 29): the order the fused pass ([`super::eval`]) and the CPU
//! engine walk elements in, and when they split the work across rayon's threads.
//!
//! - **Runs in a range**: [`for_each_run_in`] visits the runs (the innermost collapsed dim,
//!   one start offset and stride per operand) covering the output positions `range` of a
//!   [`CollapsedLayout`] in row-major order, so any contiguous slice of a row-major output is
//!   one task, whatever its shape.
//! - **Blocks**: the fused pass evaluates an expression [`BLOCK`] elements at a time, node by
//!   node into small buffers ([`super::node`]'s `eval_run`), numexpr's scheme: each node is
//!   then a tight loop over a buffer in L1 that LLVM vectorises, instead of a walk of the
//!   whole tree per element.
//! - **Threads**: work of at least `2 * GRAIN` elements is split into chunks of at least
//!   [`GRAIN`] ([`split_len`]) over the *current* rayon pool: the global one, or the pool a
//!   caller entered with `pool.install(..)` (so `rayon::ThreadPoolBuilder::new()
//!   .num_threads(1).build()?.install(|| ..)` runs everything on the calling thread, as for
//!   ndarray's `par_azip`). Pointwise results do not depend on the chunks (each element is
//!   computed alone); reductions fold fixed blocks (`engine_cpu/reduce.rs`), so no result
//!   depends on the number of threads.
//! - **Lanes**: the pointwise loops over a run or a block run inside [`vectorized`],
//!   compiled twice, for the baseline x86-64 target (SSE2, 4 `f32` lanes) and for AVX2
//!   (x86-64-v3, 8 lanes), the one the CPU has chosen at run time (reductions stay on the
//!   baseline build, which measured faster for them). The operations and their order are the same in
//!   both (Rust fuses `a * b + c` into an FMA only when asked), so the results are identical
//!   bit for bit; only the width differs.

use std::any::Any;
use std::ops::Range;

use rayon::prelude::*;

use super::inline::InlineList;
use crate::error::Result;
use crate::layout::{collapse, CollapsedLayout, Dims, Layout, MAX_DIMS};

/// Elements a fused node computes per call on the host: 256 `f64`s are 2 KiB, so an
/// expression's buffers stay in L1. Measured on `gelu(a * b + c)` (2^24 f32): 256 and 512
/// are level, 64 is 15% slower, 4096 8% slower.
pub(crate) const BLOCK: usize = 256;

/// Elements below which work stays on the calling thread (PyTorch's `GRAIN_SIZE`, 32768):
/// handing a chunk to another thread costs a few microseconds, what a core spends on about
/// 30k additions.
pub(crate) const GRAIN: usize = 32 * 1024;

/// Outputs then leaves, as [`collapse`] takes them: [`MAX_HOST_OUTPUTS`] + [`MAX_HOST_LEAVES`].
pub(crate) const OPERANDS: usize = MAX_HOST_OUTPUTS + MAX_HOST_LEAVES;
/// The outputs of one pass ([`super::MAX_OUTPUTS`]).
pub(crate) const MAX_HOST_OUTPUTS: usize = super::MAX_OUTPUTS;
/// Leaf reads the blocked pass takes (a leaf read twice counts twice); an expression with
/// more goes element by element.
pub(crate) const MAX_HOST_LEAVES: usize = 16;

/// Runs `f` compiled for the widest vector instructions this CPU has (AVX2 on x86-64 where
/// present; the baseline otherwise): `pulp` compiles the closure, and what it inlines, once
/// per instruction set and picks one (a few cached feature checks per call). For the loop
/// over one run or one block, not per element.
///
/// Pass a closure marked `#[inline(always)]`: only then is its body (the loop) compiled
/// inside the AVX2 function; a closure LLVM keeps out of line stays a baseline call.
/// Measured on 4,096-element `f32` blocks (2-core machine): `tanh` 9.1 ns an element in the
/// baseline build, 7.5 through an out-of-line closure, 1.3 inlined; `ln` 8.9, 4.4, 1.3.
#[inline(always)]
pub(crate) fn vectorized<R>(f: impl FnOnce() -> R) -> R {
    pulp::Arch::new().dispatch(f)
}

/// The chunk length to split `numel` elements into across the current rayon pool, or `None`
/// to stay on this thread (one thread, or less than `2 * GRAIN` elements). About four chunks
/// per thread, so an uneven core is absorbed, each a multiple of [`BLOCK`].
pub(crate) fn split_len(numel: usize) -> Option<usize> {
    let threads = rayon::current_num_threads();
    if threads <= 1 || numel < 2 * GRAIN {
        return None;
    }
    let chunk = numel.div_ceil(threads * 4).max(GRAIN);
    Some(chunk.div_ceil(BLOCK) * BLOCK)
}

/// The fused pass's operands collapsed together: `layouts` holds `n_leaves` leaves (each
/// already broadcast to the outputs' shape) then the outputs; they are collapsed outputs
/// first (operand `k < MAX_HOST_OUTPUTS`: output `k`), then leaves (operand
/// `MAX_HOST_OUTPUTS + l`: leaf `l`), the unused slots repeating the first output, which
/// changes no merge. `None` without an output or with too many operands.
pub(crate) fn collapse_pass<const L: usize>(
    layouts: &InlineList<Layout, L>,
    n_leaves: usize,
) -> Option<CollapsedLayout<OPERANDS>> {
    let n_outs = layouts.len().checked_sub(n_leaves)?;
    if n_outs == 0 || n_outs > MAX_HOST_OUTPUTS || n_leaves > MAX_HOST_LEAVES {
        return None;
    }
    let first = layouts.get(n_leaves)?;
    let all: [&Layout; OPERANDS] = std::array::from_fn(|k| {
        let at = match k.checked_sub(MAX_HOST_OUTPUTS) {
            None => (k < n_outs).then_some(n_leaves + k),
            Some(l) => (l < n_leaves).then_some(l),
        };
        at.and_then(|i| layouts.get(i)).unwrap_or(first)
    });
    Some(collapse(all))
}

/// Runs `task(k, parts[k])` for every part across the current rayon pool and sums what the
/// tasks return. The task comes as a `dyn`, so rayon's machinery (its join closures, jobs and
/// bridges, 20 MB of the test binary's code when every kernel had its own) is compiled once
/// per part type, not once per op and element type; its one indirect call per part is
/// nothing beside a part's [`GRAIN`] or more elements.
pub(crate) fn sum_over_parts<P: Send>(
    parts: Vec<P>,
    task: &(dyn Fn(usize, P) -> usize + Sync),
) -> usize {
    parts
        .into_par_iter()
        .enumerate()
        .map(|(k, p)| task(k, p))
        .sum()
}

/// `(0..n).map(f)` across the current rayon pool, in order, at least `min_len` indices per
/// task; compiled once per result type, for the reason of [`sum_over_parts`].
pub(crate) fn map_indices<R: Send>(
    n: usize,
    min_len: usize,
    f: &(dyn Fn(usize) -> R + Sync),
) -> Vec<R> {
    (0..n)
        .into_par_iter()
        .with_min_len(min_len)
        .map(f)
        .collect()
}

/// A fused pass's nodes shared with rayon's threads.
pub(crate) struct SharedNodes<'a, N>(&'a N);

// SAFETY: `SharedNodes::new`'s contract: the threads that reach the nodes through it only
// call `NodeImpl::eval_run`, which reads immutable state only (its documented contract:
// storage slices, scalars, the target of an `Rc`, never a reference count or a cell). Reads
// of memory nothing writes while the pass runs are no data race, whatever the node types
// (an `Rc` is not `Sync` because of its count, which `eval_run` never touches; the thread
// that owns the expression is inside the pass, so it does not touch it either).
unsafe impl<N> Sync for SharedNodes<'_, N> {}

impl<'a, N> SharedNodes<'a, N> {
    /// Wraps the nodes of one pass.
    ///
    /// # Safety
    /// Through [`SharedNodes::get`], from any thread, only `NodeImpl::eval_run` is called on
    /// the nodes (recursively: what that method calls), until the pass returns.
    pub(crate) unsafe fn new(nodes: &'a N) -> Self {
        SharedNodes(nodes)
    }

    /// The nodes, for `eval_run` only (see [`SharedNodes::new`]).
    pub(crate) fn get(&self) -> &'a N {
        self.0
    }
}

/// Calls `run(offsets, strides, len)` for the runs covering output positions `range`
/// (row-major over `c.shape`, clamped to its element count), in order, each within one row of
/// the innermost dim: element `i` of operand `k` at `offsets[k] + i * strides[k]`.
///
/// Every index produced is one the operands' layouts reach (as for the engine's
/// `for_each_run`), so it lies in the storage their views were checked against.
#[inline(always)]
pub(crate) fn for_each_run_in<const N: usize>(
    c: &CollapsedLayout<N>,
    range: Range<usize>,
    mut run: impl FnMut([usize; N], [isize; N], usize),
) {
    runs_in(c, range, &mut run)
}

/// [`for_each_run_in`]'s walk, compiled once per operand count: the kernel comes as a `dyn`
/// (one indirect call per run), so the walk is not compiled again for every op and element
/// type (it was the largest function family of the test binary, 12 MB of 150 MB of code).
fn runs_in<const N: usize>(
    c: &CollapsedLayout<N>,
    range: Range<usize>,
    run: &mut dyn FnMut([usize; N], [isize; N], usize),
) {
    let end = range.end.min(c.numel());
    let mut pos = range.start;
    if pos >= end {
        return;
    }
    let r = c.rank();
    let len = c.shape[r - 1];
    let inner: [isize; N] = std::array::from_fn(|k| c.strides[k][r - 1]);
    // The multi-index of `pos` over the outer dims, and its offsets.
    let mut idx = [0usize; MAX_DIMS];
    let mut off: [isize; N] = std::array::from_fn(|k| c.offsets[k] as isize);
    let mut row = pos / len;
    let mut j = pos % len;
    for d in (0..r - 1).rev() {
        idx[d] = row % c.shape[d];
        row /= c.shape[d];
        for (o, st) in off.iter_mut().zip(&c.strides) {
            *o = o.wrapping_add(st[d].wrapping_mul(idx[d] as isize));
        }
    }
    loop {
        let n = (len - j).min(end - pos);
        let start: [usize; N] =
            std::array::from_fn(|k| off[k].wrapping_add(j as isize * inner[k]) as usize);
        run(start, inner, n);
        pos += n;
        if pos >= end {
            return;
        }
        j = 0;
        // Odometer step over dims r-2 .. 0; offsets may pass one step beyond a dim's end
        // before being wound back, which wrapping arithmetic keeps harmless.
        let mut d = r - 1;
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

/// [`for_each_run_in`] with every run cut into pieces of at most [`BLOCK`] elements.
#[inline(always)]
pub(crate) fn for_each_block_in<const N: usize>(
    c: &CollapsedLayout<N>,
    range: Range<usize>,
    mut block: impl FnMut(&[usize; N], &[isize; N], usize),
) {
    blocks_in(c, range, &mut block)
}

/// A block's visitor: (start offsets, strides, length) of each operand's block.
type BlockFn<'f, const N: usize> = dyn FnMut(&[usize; N], &[isize; N], usize) + 'f;

/// [`for_each_block_in`], compiled once per operand count (see [`runs_in`]).
fn blocks_in<const N: usize>(
    c: &CollapsedLayout<N>,
    range: Range<usize>,
    block: &mut BlockFn<'_, N>,
) {
    runs_in(c, range, &mut |o, s, n| {
        let mut i = 0;
        while i < n {
            let m = BLOCK.min(n - i);
            let start: [usize; N] =
                std::array::from_fn(|k| (o[k] as isize + i as isize * s[k]) as usize);
            block(&start, &s, m);
            i += m;
        }
    })
}

/// Where a fused node reads on the host, one block at a time: each leaf's start offset and
/// stride for the current block (leaves in the order [`super::node`]'s `build` numbers them),
/// the next leaf to read, and, for an in-place update, each output's current values at the
/// block (a `[T; BLOCK]` per output, as `dyn Any`).
pub struct RunCursor<'c> {
    pub(crate) runs: &'c [(usize, isize)],
    pub(crate) next: usize,
    pub(crate) current: &'c [&'c dyn Any],
}

impl<'c> RunCursor<'c> {
    /// A cursor at the first leaf.
    pub(crate) fn new(runs: &'c [(usize, isize)], current: &'c [&'c dyn Any]) -> Self {
        RunCursor {
            runs,
            next: 0,
            current,
        }
    }

    /// The next leaf's (start, stride).
    pub(crate) fn take(&mut self) -> (usize, isize) {
        let r = self.runs[self.next];
        self.next += 1;
        r
    }
}

/// `out[i] = data[start + i * stride]`: a block of a leaf or of an output's current values.
#[inline]
pub(crate) fn read_run<T: Copy>(data: &[T], start: usize, stride: isize, out: &mut [T]) {
    let n = out.len();
    match stride {
        1 => out.copy_from_slice(&data[start..start + n]),
        0 => out.fill(data[start]),
        _ => {
            for (i, o) in out.iter_mut().enumerate() {
                *o = data[(start as isize + i as isize * stride) as usize];
            }
        }
    }
}

/// `data[start + i * stride] = values[i]`: a block of results into an output.
#[inline]
pub(crate) fn write_run<T: Copy>(data: &mut [T], start: usize, stride: isize, values: &[T]) {
    let n = values.len();
    if stride == 1 {
        data[start..start + n].copy_from_slice(values);
    } else {
        for (i, &v) in values.iter().enumerate() {
            data[(start as isize + i as isize * stride) as usize] = v;
        }
    }
}

/// The element-by-element pass of expressions with more than [`MAX_HOST_LEAVES`] leaf reads:
/// Offsets of each operand (leaves then outputs) along one walk of `shape` in row-major
/// order, calling `f` at every element with the leaves' and the outputs' offsets.
#[inline(always)]
pub(crate) fn walk<const N: usize>(
    shape: &[usize],
    layouts: &InlineList<Layout, N>,
    mut f: impl FnMut(&[usize]) -> Result<()>,
) -> Result<()> {
    walk_dyn(shape, layouts, &mut f)
}

/// [`walk`], compiled once per operand count (see [`runs_in`]).
fn walk_dyn<const N: usize>(
    shape: &[usize],
    layouts: &InlineList<Layout, N>,
    f: &mut dyn FnMut(&[usize]) -> Result<()>,
) -> Result<()> {
    let numel: usize = shape.iter().product();
    if numel == 0 {
        return Ok(());
    }
    let n = layouts.len();
    let rank = shape.len();
    // Inline up to 8 dims and 8 operands (`Dims`): no allocation for ordinary expressions.
    let mut idx: Dims<usize> = shape.iter().map(|_| 0).collect();
    let mut offs: Dims<isize> = layouts.iter().map(|l| l.offset() as isize).collect();
    let mut cur: Dims<usize> = layouts.iter().map(|_| 0).collect();
    let inner = rank.checked_sub(1);
    let inner_len = inner.map_or(1, |d| shape[d]);
    let inner_strides: Dims<isize> = layouts
        .iter()
        .map(|l| inner.map_or(0, |d| l.strides()[d]))
        .collect();
    let rows = numel / inner_len;
    for _ in 0..rows {
        for j in 0..inner_len {
            for k in 0..n {
                // In range: every layout lies within its storage (views' invariant), so the
                // offset of any index of the shape is a valid, non-negative index.
                cur[k] = (offs[k] + j as isize * inner_strides[k]) as usize;
            }
            f(&cur)?;
        }
        // Next row: advance the outer dims (an odometer), updating the offsets.
        let mut d = rank.saturating_sub(1);
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            for (k, l) in layouts.iter().enumerate() {
                offs[k] += l.strides()[d];
            }
            if idx[d] < shape[d] {
                break;
            }
            for (k, l) in layouts.iter().enumerate() {
                offs[k] -= l.strides()[d] * shape[d] as isize;
            }
            idx[d] = 0;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (output, input) pair of a range, in order, against the row-major walk.
    #[test]
    fn runs_in_any_range_visit_the_range_in_order() {
        let out = Layout::contiguous(&[3, 5, 7]).unwrap();
        let inp = Layout::contiguous(&[3, 7, 5])
            .unwrap()
            .transpose(1, 2)
            .unwrap();
        let c = collapse([&out, &inp]);
        let mut all = vec![];
        for_each_run_in(&c, 0..105, |o, s, n| {
            all.extend((0..n).map(|i| {
                (
                    o[0] as isize + i as isize * s[0],
                    o[1] as isize + i as isize * s[1],
                )
            }));
        });
        assert!(all.iter().enumerate().all(|(i, p)| p.0 == i as isize));
        for (a, b) in [
            (0, 0),
            (0, 1),
            (3, 4),
            (6, 8),
            (7, 14),
            (33, 104),
            (50, 200),
        ] {
            let mut part = vec![];
            for_each_block_in(&c, a..b, |o, s, n| {
                assert!(n <= BLOCK);
                part.extend((0..n).map(|i| {
                    (
                        o[0] as isize + i as isize * s[0],
                        o[1] as isize + i as isize * s[1],
                    )
                }));
            });
            let b = b.min(105);
            assert_eq!(part, all[a.min(b)..b]);
        }
    }

    #[test]
    fn split_len_stays_on_this_thread_below_the_grain() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        pool.install(|| {
            assert_eq!(split_len(GRAIN), None);
            let ch = split_len(1 << 24).unwrap();
            assert!(ch >= GRAIN && ch.is_multiple_of(BLOCK));
        });
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        one.install(|| assert_eq!(split_len(1 << 24), None));
    }
}
