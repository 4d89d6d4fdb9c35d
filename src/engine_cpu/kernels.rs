//! Element loops of the CPU engine, one per arity, over the runs of [`super::runs`].
//!
//! Each run is specialised on its strides: when every input has stride 1 the loop is a zip
//! of plain slices, which LLVM vectorises; a stride-0 input (broadcast along the run) is
//! hoisted out as a scalar; anything else indexes with the strides. All indexing is safe
//! slice indexing: the bounds checks cost one compare per element on the strided path (which
//! is bound by memory latency anyway) and nothing on the slice paths.

use std::iter::repeat_n;

use super::runs::{at, for_each_run};
use crate::layout::CollapsedLayout;

/// Where a kernel writes a run of results.
pub(crate) trait Sink<U> {
    /// Writes `values` (exactly `len` of them) to elements `start + i * stride`.
    fn put(&mut self, start: usize, stride: isize, len: usize, values: impl Iterator<Item = U>);
}

/// Writes into a destination slice through its (non-overlapping) layout.
pub(crate) struct SliceSink<'s, U>(pub &'s mut [U]);

impl<U> Sink<U> for SliceSink<'_, U> {
    #[inline(always)]
    fn put(&mut self, start: usize, stride: isize, len: usize, values: impl Iterator<Item = U>) {
        if stride == 1 {
            for (d, v) in self.0[start..start + len].iter_mut().zip(values) {
                *d = v;
            }
        } else {
            for (i, v) in values.enumerate() {
                self.0[at(start, stride, i)] = v;
            }
        }
    }
}

/// Appends to a new row-major output. Used only when runs arrive in output order with
/// output stride 1 (untiled iteration of a contiguous output), so appending is writing.
pub(crate) struct VecSink<U>(pub Vec<U>);

impl<U> Sink<U> for VecSink<U> {
    #[inline(always)]
    fn put(&mut self, start: usize, stride: isize, len: usize, values: impl Iterator<Item = U>) {
        debug_assert!(start == self.0.len() && (stride == 1 || len <= 1));
        self.0.extend(values);
    }
}

/// `out = f(a)` over the runs of `c` (operands: output, a).
#[inline(always)]
pub(crate) fn unary<T: Copy, U: Copy>(
    f: impl Fn(T) -> U,
    a: &[T],
    c: &CollapsedLayout<2>,
    tiled: bool,
    out: &mut impl Sink<U>,
) {
    for_each_run(c, tiled, |o, s, n| match s[1] {
        1 => out.put(o[0], s[0], n, a[o[1]..o[1] + n].iter().map(|&x| f(x))),
        0 => out.put(o[0], s[0], n, repeat_n(f(a[o[1]]), n)),
        sa => out.put(o[0], s[0], n, (0..n).map(|i| f(a[at(o[1], sa, i)]))),
    });
}

/// `out = f(a, b)` over the runs of `c` (operands: output, a, b).
#[inline(always)]
pub(crate) fn binary<T: Copy, U: Copy>(
    f: impl Fn(T, T) -> U,
    a: &[T],
    b: &[T],
    c: &CollapsedLayout<3>,
    tiled: bool,
    out: &mut impl Sink<U>,
) {
    for_each_run(c, tiled, |o, s, n| match (s[1], s[2]) {
        (1, 1) => {
            let (a, b) = (&a[o[1]..o[1] + n], &b[o[2]..o[2] + n]);
            out.put(o[0], s[0], n, a.iter().zip(b).map(|(&x, &y)| f(x, y)))
        }
        (1, 0) => {
            let y = b[o[2]];
            out.put(o[0], s[0], n, a[o[1]..o[1] + n].iter().map(|&x| f(x, y)))
        }
        (0, 1) => {
            let x = a[o[1]];
            out.put(o[0], s[0], n, b[o[2]..o[2] + n].iter().map(|&y| f(x, y)))
        }
        (sa, sb) => out.put(
            o[0],
            s[0],
            n,
            (0..n).map(|i| f(a[at(o[1], sa, i)], b[at(o[2], sb, i)])),
        ),
    });
}

/// `out = f(a, b, c)` over the runs of `c3` (operands: output, a, b, c).
#[inline(always)]
pub(crate) fn ternary<A: Copy, T: Copy, U: Copy>(
    f: impl Fn(A, T, T) -> U,
    a: &[A],
    b: &[T],
    c: &[T],
    c3: &CollapsedLayout<4>,
    tiled: bool,
    out: &mut impl Sink<U>,
) {
    for_each_run(c3, tiled, |o, s, n| match (s[1], s[2], s[3]) {
        (1, 1, 1) => {
            let (a, b, c) = (&a[o[1]..o[1] + n], &b[o[2]..o[2] + n], &c[o[3]..o[3] + n]);
            let values = a.iter().zip(b).zip(c).map(|((&x, &y), &z)| f(x, y, z));
            out.put(o[0], s[0], n, values)
        }
        (sa, sb, sc) => out.put(
            o[0],
            s[0],
            n,
            (0..n).map(|i| f(a[at(o[1], sa, i)], b[at(o[2], sb, i)], c[at(o[3], sc, i)])),
        ),
    });
}

/// `dst = value` over the runs of `c`.
pub(crate) fn fill<T: Copy>(dst: &mut [T], value: T, c: &CollapsedLayout<1>) {
    for_each_run(c, false, |o, s, n| {
        if s[0] == 1 {
            dst[o[0]..o[0] + n].fill(value);
        } else {
            for i in 0..n {
                dst[at(o[0], s[0], i)] = value;
            }
        }
    });
}

/// `dst = f(dst)` over the runs of `c`.
#[inline(always)]
pub(crate) fn unary_inplace<T: Copy>(f: impl Fn(T) -> T, dst: &mut [T], c: &CollapsedLayout<1>) {
    for_each_run(c, false, |o, s, n| {
        if s[0] == 1 {
            for x in &mut dst[o[0]..o[0] + n] {
                *x = f(*x);
            }
        } else {
            for i in 0..n {
                let j = at(o[0], s[0], i);
                dst[j] = f(dst[j]);
            }
        }
    });
}

/// `dst = f(dst, b)` over the runs of `c` (operands: dst, b).
#[inline(always)]
pub(crate) fn binary_inplace<T: Copy>(
    f: impl Fn(T, T) -> T,
    dst: &mut [T],
    b: &[T],
    c: &CollapsedLayout<2>,
    tiled: bool,
) {
    for_each_run(c, tiled, |o, s, n| match (s[0], s[1]) {
        (1, 1) => {
            for (x, &y) in dst[o[0]..o[0] + n].iter_mut().zip(&b[o[1]..o[1] + n]) {
                *x = f(*x, y);
            }
        }
        (1, 0) => {
            let y = b[o[1]];
            for x in &mut dst[o[0]..o[0] + n] {
                *x = f(*x, y);
            }
        }
        (sd, sb) => {
            for i in 0..n {
                let j = at(o[0], sd, i);
                dst[j] = f(dst[j], b[at(o[1], sb, i)]);
            }
        }
    });
}

/// `dst = f(dst, b, c)` over the runs of `c3` (operands: dst, b, c).
#[inline(always)]
pub(crate) fn ternary_inplace<T: Copy>(
    f: impl Fn(T, T, T) -> T,
    dst: &mut [T],
    b: &[T],
    c: &[T],
    c3: &CollapsedLayout<3>,
    tiled: bool,
) {
    for_each_run(c3, tiled, |o, s, n| match (s[0], s[1], s[2]) {
        (1, 1, 1) => {
            let (b, c) = (&b[o[1]..o[1] + n], &c[o[2]..o[2] + n]);
            for ((x, &y), &z) in dst[o[0]..o[0] + n].iter_mut().zip(b).zip(c) {
                *x = f(*x, y, z);
            }
        }
        (sd, sb, sc) => {
            for i in 0..n {
                let j = at(o[0], sd, i);
                dst[j] = f(dst[j], b[at(o[1], sb, i)], c[at(o[2], sc, i)]);
            }
        }
    });
}
