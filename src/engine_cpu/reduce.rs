//! Full reductions on the CPU (Caffe's `asum`, `sumsq`, and a plain sum), accumulated in
//! `f64`.

use super::runs::{at, for_each_run};
use crate::element::Element;
use crate::layout::{collapse, Layout};

/// Lanes of independent partial sums: lets LLVM vectorise without reassociating any one sum.
const LANES: usize = 8;

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
