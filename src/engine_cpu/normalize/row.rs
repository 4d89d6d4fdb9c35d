//! One row of a normalisation job on the host, in `f64`: gathered from any strides, then
//! transformed in place ([`apply`]) or folded to a statistic ([`stat`]), with PyTorch's rules
//! for infinities, NaN and empty rows.

use crate::device::Cpu;
use crate::element::{Element, FloatElement};
use crate::tensor::normalize::{NormOrd, RowOp, RowStat};
use crate::tensor::TensorView;

/// A `[rows, n]` source: its storage, first element and strides.
pub(super) struct Src<'a, T> {
    data: &'a [T],
    offset: isize,
    rs: isize,
    cs: isize,
}

impl<'a, T: FloatElement> Src<'a, T> {
    pub(super) fn of(v: &TensorView<'a, T, Cpu>) -> Self {
        let st = v.strides();
        Src {
            data: v.storage(),
            // A valid layout's offset fits `isize`.
            offset: v.layout().offset() as isize,
            rs: st[0],
            cs: st[1],
        }
    }

    /// Row `r` as `f64`s into `buf` (whose length is the row's).
    pub(super) fn gather(&self, r: usize, buf: &mut [f64]) {
        if buf.is_empty() {
            // An empty row reads nothing, and an empty layout's offset is arbitrary.
            return;
        }
        // Offsets of a layout checked within its storage are non-negative and in bounds.
        let base = self.offset + r as isize * self.rs;
        if self.cs == 1 {
            let s = &self.data[base as usize..base as usize + buf.len()];
            for (b, v) in buf.iter_mut().zip(s) {
                *b = Element::to_f64(*v);
            }
        } else {
            for (j, b) in buf.iter_mut().enumerate() {
                *b = Element::to_f64(self.data[(base + j as isize * self.cs) as usize]);
            }
        }
    }
}

/// The largest element, NaN if any is NaN (`−inf` for none).
fn max_nan(x: &[f64]) -> f64 {
    x.iter().fold(
        f64::NEG_INFINITY,
        |m, &v| if v.is_nan() || v > m { v } else { m },
    )
}

/// `op` of the row `x`, in place.
pub(super) fn apply(op: RowOp, x: &mut [f64], w: Option<&[f64]>, b: Option<&[f64]>) {
    let n = x.len() as f64;
    match op {
        RowOp::Softmax | RowOp::LogSoftmax => {
            // `x − max` is NaN for the `+inf` of a row holding one, and for every element
            // of an all `−inf` row: the whole row is then NaN, as PyTorch's.
            let m = max_nan(x);
            let s: f64 = x.iter().map(|&v| (v - m).exp()).sum();
            if op == RowOp::Softmax {
                let inv = 1.0 / s;
                x.iter_mut().for_each(|v| *v = (*v - m).exp() * inv);
            } else {
                let shift = m + s.ln();
                x.iter_mut().for_each(|v| *v -= shift);
            }
        }
        RowOp::LayerNorm { eps } => {
            let mean = x.iter().sum::<f64>() / n;
            let var = x.iter().map(|&v| (v - mean) * (v - mean)).sum::<f64>() / n;
            let rstd = 1.0 / (var + eps).sqrt();
            x.iter_mut().for_each(|v| *v = (*v - mean) * rstd);
            affine(x, w, b);
        }
        RowOp::RmsNorm { eps } => {
            let ms = x.iter().map(|&v| v * v).sum::<f64>() / n;
            let r = 1.0 / (ms + eps).sqrt();
            x.iter_mut().for_each(|v| *v *= r);
            affine(x, w, None);
        }
    }
}

fn affine(x: &mut [f64], w: Option<&[f64]>, b: Option<&[f64]>) {
    if let Some(w) = w {
        x.iter_mut().zip(w).for_each(|(v, w)| *v *= w);
    }
    if let Some(b) = b {
        x.iter_mut().zip(b).for_each(|(v, b)| *v += b);
    }
}

/// `stat` of the row `x`, and its mean (NaN where the stat has none).
pub(super) fn stat(stat: RowStat, x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    match stat {
        RowStat::LogSumExp => {
            // PyTorch: an infinite max is replaced by 0, so `+inf` gives `+inf` and an all
            // `−inf` (or empty) row `−inf`, not NaN.
            let m = max_nan(x);
            let m = if m.is_infinite() { 0.0 } else { m };
            let s: f64 = x.iter().map(|&v| (v - m).exp()).sum();
            (s.ln() + m, f64::NAN)
        }
        RowStat::Var { correction, sqrt } => {
            let mean = x.iter().sum::<f64>() / n;
            let ss: f64 = x.iter().map(|&v| (v - mean) * (v - mean)).sum();
            let var = ss / (n - correction).max(0.0);
            (if sqrt { var.sqrt() } else { var }, mean)
        }
        RowStat::Norm(NormOrd::L1) => (x.iter().map(|v| v.abs()).sum(), f64::NAN),
        RowStat::Norm(NormOrd::L2) => (x.iter().map(|v| v * v).sum::<f64>().sqrt(), f64::NAN),
        RowStat::Norm(NormOrd::Inf) => {
            let m = x.iter().fold(0.0f64, |m, &v| {
                if v.is_nan() || v.abs() > m {
                    v.abs()
                } else {
                    m
                }
            });
            (m, f64::NAN)
        }
    }
}
