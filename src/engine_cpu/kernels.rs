//! Element loops of the CPU engine, one per arity, over the runs of [`super::runs`].
//!
//! Each run is specialised on its strides: when every input has stride 1 the loop is a zip
//! of plain slices, which LLVM vectorises; a stride-0 input (broadcast along the run) is
//! hoisted out as a scalar; anything else indexes with the strides. All indexing is safe
//! slice indexing: the bounds checks cost one compare per element on the strided path (which
//! is bound by memory latency anyway) and nothing on the slice paths.
//!
//! Each kernel visits the runs of a [`Walk`]: the whole op, or one thread's share of it
//! (issue 29); an in-place kernel's `dst` then holds that share only, its first element at
//! storage index `base`.

use std::iter::repeat_n;
use std::mem::MaybeUninit;
use std::ops::Range;

use super::runs::{at, Walk};
use crate::layout::CollapsedLayout;
use crate::tensor::expr::host::vectorized;

/// Where a kernel writes its runs of results.
pub(crate) enum Out<'s, U> {
    /// Appends to uninitialised memory: the runs arrive in output order with stride 1 (an
    /// untiled walk of a new row-major output), so appending is writing. `filled` counts
    /// the elements written, all of them in `buf[..filled]`.
    Append {
        buf: &'s mut [MaybeUninit<U>],
        filled: usize,
    },
    /// Writes element `start + i * stride` of a run at `buf[start + i * stride - base]`.
    Write { buf: &'s mut [U], base: usize },
}

impl<U> Out<'_, U> {
    /// Writes `values` (`len` of them) to output elements `start + i * stride`.
    #[inline(always)]
    pub(crate) fn put(
        &mut self,
        start: usize,
        stride: isize,
        len: usize,
        values: impl Iterator<Item = U>,
    ) {
        match self {
            Out::Append { buf, filled } => {
                debug_assert!(stride == 1 || len <= 1);
                // At most `len` values, in the slots after the ones written: `filled` stays
                // the count of initialised slots at the front of `buf`.
                let end = (*filled + len).min(buf.len());
                let mut k = 0;
                for (d, v) in buf[*filled..end].iter_mut().zip(values) {
                    d.write(v);
                    k += 1;
                }
                *filled += k;
            }
            Out::Write { buf, base } => {
                let start = start - *base;
                if stride == 1 {
                    for (d, v) in buf[start..start + len].iter_mut().zip(values) {
                        *d = v;
                    }
                } else {
                    for (i, v) in values.enumerate() {
                        buf[at(start, stride, i)] = v;
                    }
                }
            }
        }
    }
}

/// Elements of a contiguous run computed per step into a stack buffer ([`stepped`]).
const STEP: usize = 256;

/// A contiguous run of `n` results, computed [`STEP`] at a time into a stack buffer by
/// `compute(buf, range)` (elements `range` of the run into `buf`), each step then put to the
/// output. `compute` is a zip of plain slices, which LLVM inlines and vectorises whatever the
/// op costs: written as one iterator chain into [`Out::put`], a large op (`gelu`'s `erf`)
/// left the chain's `Zip::next` out of line, one call an element out of the AVX2 loop
/// (`gelu` at 0.7 GB/s, half of its time in that call, by `perf`).
#[inline(always)]
fn stepped<U: Copy + Default>(
    out: &mut Out<'_, U>,
    start: usize,
    stride: isize,
    n: usize,
    mut compute: impl FnMut(&mut [U], Range<usize>),
) {
    let mut buf = [U::default(); STEP];
    let mut i = 0;
    while i < n {
        let m = STEP.min(n - i);
        compute(&mut buf[..m], i..i + m);
        out.put(at(start, stride, i), stride, m, buf[..m].iter().copied());
        i += m;
    }
}

/// `out = f(a)` over the runs of `c` (operands: output, a).
#[inline(always)]
pub(crate) fn unary<T: Copy, U: Copy + Default>(
    f: impl Fn(T) -> U,
    a: &[T],
    c: &CollapsedLayout<2>,
    walk: &Walk,
    out: &mut Out<'_, U>,
) {
    walk.runs(c, |o, s, n| {
        vectorized(
            #[inline(always)]
            || match s[1] {
                1 => {
                    let a = &a[o[1]..o[1] + n];
                    stepped(
                        out,
                        o[0],
                        s[0],
                        n,
                        #[inline(always)]
                        |t, r| {
                            for (d, &x) in t.iter_mut().zip(&a[r]) {
                                *d = f(x);
                            }
                        },
                    )
                }
                0 => out.put(o[0], s[0], n, repeat_n(f(a[o[1]]), n)),
                sa => out.put(o[0], s[0], n, (0..n).map(|i| f(a[at(o[1], sa, i)]))),
            },
        )
    });
}

/// `out = f(a, b)` over the runs of `c` (operands: output, a, b).
#[inline(always)]
pub(crate) fn binary<T: Copy, U: Copy + Default>(
    f: impl Fn(T, T) -> U,
    a: &[T],
    b: &[T],
    c: &CollapsedLayout<3>,
    walk: &Walk,
    out: &mut Out<'_, U>,
) {
    walk.runs(c, |o, s, n| {
        vectorized(
            #[inline(always)]
            || match (s[1], s[2]) {
                (1, 1) => {
                    let (a, b) = (&a[o[1]..o[1] + n], &b[o[2]..o[2] + n]);
                    stepped(
                        out,
                        o[0],
                        s[0],
                        n,
                        #[inline(always)]
                        |t, r| {
                            for ((d, &x), &y) in t.iter_mut().zip(&a[r.clone()]).zip(&b[r]) {
                                *d = f(x, y);
                            }
                        },
                    )
                }
                (1, 0) => {
                    let (a, y) = (&a[o[1]..o[1] + n], b[o[2]]);
                    stepped(
                        out,
                        o[0],
                        s[0],
                        n,
                        #[inline(always)]
                        |t, r| {
                            for (d, &x) in t.iter_mut().zip(&a[r]) {
                                *d = f(x, y);
                            }
                        },
                    )
                }
                (0, 1) => {
                    let (x, b) = (a[o[1]], &b[o[2]..o[2] + n]);
                    stepped(
                        out,
                        o[0],
                        s[0],
                        n,
                        #[inline(always)]
                        |t, r| {
                            for (d, &y) in t.iter_mut().zip(&b[r]) {
                                *d = f(x, y);
                            }
                        },
                    )
                }
                (sa, sb) => out.put(
                    o[0],
                    s[0],
                    n,
                    (0..n).map(|i| f(a[at(o[1], sa, i)], b[at(o[2], sb, i)])),
                ),
            },
        )
    });
}

/// `out = f(a, b, c)` over the runs of `c3` (operands: output, a, b, c).
#[inline(always)]
pub(crate) fn ternary<A: Copy, T: Copy, U: Copy + Default>(
    f: impl Fn(A, T, T) -> U,
    a: &[A],
    b: &[T],
    c: &[T],
    c3: &CollapsedLayout<4>,
    walk: &Walk,
    out: &mut Out<'_, U>,
) {
    walk.runs(c3, |o, s, n| {
        vectorized(
            #[inline(always)]
            || match (s[1], s[2], s[3]) {
                (1, 1, 1) => {
                    let (a, b, c) = (&a[o[1]..o[1] + n], &b[o[2]..o[2] + n], &c[o[3]..o[3] + n]);
                    stepped(
                        out,
                        o[0],
                        s[0],
                        n,
                        #[inline(always)]
                        |t, r| {
                            let abc = a[r.clone()].iter().zip(&b[r.clone()]).zip(&c[r]);
                            for (d, ((&x, &y), &z)) in t.iter_mut().zip(abc) {
                                *d = f(x, y, z);
                            }
                        },
                    )
                }
                (sa, sb, sc) => out.put(
                    o[0],
                    s[0],
                    n,
                    (0..n).map(|i| f(a[at(o[1], sa, i)], b[at(o[2], sb, i)], c[at(o[3], sc, i)])),
                ),
            },
        )
    });
}

/// `dst = value` over the runs of `c` (`dst` from storage index `base`).
pub(crate) fn fill<T: Copy>(
    dst: &mut [T],
    base: usize,
    value: T,
    c: &CollapsedLayout<1>,
    walk: &Walk,
) {
    walk.runs(c, |o, s, n| {
        let o = o[0] - base;
        if s[0] == 1 {
            dst[o..o + n].fill(value);
        } else {
            for i in 0..n {
                dst[at(o, s[0], i)] = value;
            }
        }
    });
}

/// `dst = f(dst)` over the runs of `c` (`dst` from storage index `base`).
#[inline(always)]
pub(crate) fn unary_inplace<T: Copy>(
    f: impl Fn(T) -> T,
    dst: &mut [T],
    base: usize,
    c: &CollapsedLayout<1>,
    walk: &Walk,
) {
    walk.runs(c, |o, s, n| {
        let o = o[0] - base;
        vectorized(
            #[inline(always)]
            || {
                if s[0] == 1 {
                    for x in &mut dst[o..o + n] {
                        *x = f(*x);
                    }
                } else {
                    for i in 0..n {
                        let j = at(o, s[0], i);
                        dst[j] = f(dst[j]);
                    }
                }
            },
        )
    });
}

/// `dst = f(dst, b)` over the runs of `c` (operands: dst from storage index `base`, b).
#[inline(always)]
pub(crate) fn binary_inplace<T: Copy>(
    f: impl Fn(T, T) -> T,
    dst: &mut [T],
    base: usize,
    b: &[T],
    c: &CollapsedLayout<2>,
    walk: &Walk,
) {
    walk.runs(c, |o, s, n| {
        let o = [o[0] - base, o[1]];
        vectorized(
            #[inline(always)]
            || match (s[0], s[1]) {
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
            },
        )
    });
}

/// `dst = f(dst, b, c)` over the runs of `c3` (operands: dst from storage index `base`, b,
/// c).
#[inline(always)]
pub(crate) fn ternary_inplace<T: Copy>(
    f: impl Fn(T, T, T) -> T,
    dst: &mut [T],
    base: usize,
    b: &[T],
    c: &[T],
    c3: &CollapsedLayout<3>,
    walk: &Walk,
) {
    walk.runs(c3, |o, s, n| {
        let o = [o[0] - base, o[1], o[2]];
        vectorized(
            #[inline(always)]
            || match (s[0], s[1], s[2]) {
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
            },
        )
    });
}
