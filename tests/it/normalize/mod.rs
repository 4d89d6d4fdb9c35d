//! Statistics and normalisations (issue 28) on every engine against the `f64` host reference
//! of `reference.rs`: random shapes (0 and 1 included), random dims (negative ones), inputs
//! viewed through permutations and flips, weight and bias present or absent, inputs of large
//! magnitude (softmax's stability), rows long enough for every GPU kernel form, the special
//! values of PyTorch's semantics (inf, NaN, empty) and the typed errors.
//!
//! # Tolerances
//!
//! With `u` the unit roundoff of the element type (`2^-24` f32, `2^-53` f64, `2^-11` f16,
//! `2^-8` bf16) and `a` that of the accumulator (`2^-24`, `f64`'s `2^-53`): the input is the
//! same rounded `T` on both sides, so the errors are the engine's arithmetic and one final
//! rounding (`u·|ref|`). A sum of `n` terms in any order is within `γ(n)·Σ|terms|`,
//! `γ(n) ≈ n·a` (Higham §4.2); `exp`, `log` and `rsqrt` add a few ulps (CUDA ≤ 2, the CPU
//! computes in `f64`); `x − max` is rounded once, an error of `a·|x − max|` in the exponent,
//! that is a relative `a·|x − max|` of `exp`. Each bound below adds these terms with a
//! factor 4 of slack; none is tight enough to hide a wrong formula (a wrong divisor, a
//! missing `eps`, a wrong row is off by orders of magnitude more).

mod reference;

use half::{bf16, f16};
use typestate_tensor::element::{DType, Element, FloatElement};
use typestate_tensor::error::{Error, LayoutError};
use typestate_tensor::tensor::normalize::{NormOrd, NormalizeBackend};
use typestate_tensor::tensor::{Tensor, TensorView};
use typestate_tensor::Cpu;

use crate::common::device::{host, test_device, TestDevice};
use crate::common::rng::Rng;

/// A device that normalises the four float types.
trait NormDev:
    TestDevice
    + NormalizeBackend<f32>
    + NormalizeBackend<f64>
    + NormalizeBackend<f16>
    + NormalizeBackend<bf16>
{
}
impl<D> NormDev for D where
    D: TestDevice
        + NormalizeBackend<f32>
        + NormalizeBackend<f64>
        + NormalizeBackend<f16>
        + NormalizeBackend<bf16>
{
}

/// `(u, a)`: the element type's and the accumulator's unit roundoff.
fn roundoff<T: Element>() -> (f64, f64) {
    match T::DTYPE {
        DType::F64 => (2f64.powi(-53), 2f64.powi(-53)),
        DType::F16 => (2f64.powi(-11), 2f64.powi(-24)),
        DType::BF16 => (2f64.powi(-8), 2f64.powi(-24)),
        _ => (2f64.powi(-24), 2f64.powi(-24)),
    }
}

/// Equal within `tol(i)`, or both NaN, or the same infinity.
fn close(what: &str, got: &[f64], want: &[f64], tol: impl Fn(usize) -> f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= tol(i);
        assert!(
            ok,
            "{what}: element {i}: got {g}, want {w} (tol {})",
            tol(i)
        );
    }
}

fn to_f64<T: Element>(v: Vec<T>) -> Vec<f64> {
    v.into_iter().map(Element::to_f64).collect()
}

/// A random shape of rank 0 to 4 (sizes 0 to 9, rarely 0), at most `cap` elements.
fn random_shape(rng: &mut Rng, cap: usize) -> Vec<usize> {
    loop {
        let rank = rng.below(5);
        let shape: Vec<usize> = (0..rank)
            .map(|_| match rng.below(12) {
                0 => 0,
                1 => 1,
                2 => 17 + rng.below(40),
                _ => 2 + rng.below(8),
            })
            .collect();
        if shape.iter().product::<usize>() <= cap {
            return shape;
        }
    }
}

/// A random input of logical `shape` on `dev`, stored permuted (and flipped) so that the view
/// is strided, and its values (after rounding to `T`) in row-major order. `scale` sets the
/// magnitude.
struct Input<T: Element, D: TestDevice> {
    base: Tensor<T, D>,
    inv: Vec<usize>,
    flip: Option<usize>,
    values: Vec<f64>,
}

impl<T: FloatElement, D: TestDevice> Input<T, D> {
    fn new(dev: &D, rng: &mut Rng, shape: &[usize], scale: f64) -> Self {
        let rank = shape.len();
        let mut perm: Vec<usize> = (0..rank).collect();
        for i in (1..rank).rev() {
            perm.swap(i, rng.below(i + 1));
        }
        let mut inv = vec![0; rank];
        for (i, &p) in perm.iter().enumerate() {
            inv[p] = i;
        }
        let stored: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        let n: usize = stored.iter().product();
        let data: Vec<T> = (0..n).map(|_| T::from_f64(scale * rng.unit())).collect();
        let host_base = Tensor::from_vec(&stored, data).unwrap();
        let flip = (rank > 0 && rng.below(3) == 0).then(|| rng.below(rank));
        let mut v = host_base.permute(&inv).unwrap();
        if let Some(d) = flip {
            v = v.flip(d).unwrap();
        }
        let values = to_f64(v.to_vec());
        Input {
            base: dev.upload(&host_base),
            inv,
            flip,
            values,
        }
    }

    fn view(&self) -> TensorView<'_, T, D> {
        let mut v = self.base.permute(&self.inv).unwrap();
        if let Some(d) = self.flip {
            v = v.flip(d).unwrap();
        }
        v
    }
}

/// A dim of rank `rank`, negative half of the time (0 for rank 0).
fn random_dim(rng: &mut Rng, rank: usize) -> isize {
    if rank == 0 {
        return 0;
    }
    let d = rng.below(rank) as isize;
    if rng.below(2) == 0 {
        d - rank as isize
    } else {
        d
    }
}

fn softmax_case<T: FloatElement, D: NormDev + NormalizeBackend<T>>(dev: &D, rng: &mut Rng) {
    let (u, a) = roundoff::<T>();
    let shape = random_shape(rng, 4000);
    let scale = [1.0, 8.0, 1000.0][rng.below(3)];
    let x = Input::<T, D>::new(dev, rng, &shape, scale);
    let dim = random_dim(rng, shape.len());
    let d = if shape.is_empty() {
        vec![]
    } else {
        vec![dim.rem_euclid(shape.len() as isize) as usize]
    };
    let what = format!(
        "{:?} softmax shape {shape:?} dim {dim} scale {scale}",
        T::DTYPE
    );
    let mut want = vec![0.0; x.values.len()];
    let mut want_log = vec![0.0; x.values.len()];
    let mut tol = vec![0.0; x.values.len()];
    let mut tol_log = vec![0.0; x.values.len()];
    for line in reference::lines(&shape, &d) {
        let xs: Vec<f64> = line.iter().map(|&i| x.values[i]).collect();
        let n = xs.len() as f64;
        let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s = reference::softmax(&xs, false);
        let l = reference::softmax(&xs, true);
        let lse: f64 = xs.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
        for (k, &i) in line.iter().enumerate() {
            want[i] = s[k];
            want_log[i] = l[k];
            tol[i] = s[k] * (u + 4.0 * a * (n + 8.0 + (xs[k] - m).abs())) + a;
            tol_log[i] = l[k].abs() * u + 4.0 * a * (xs[k].abs() + m.abs() + lse.abs() + n + 8.0);
        }
    }
    let got = to_f64(host(&x.view().softmax(dim).unwrap()));
    close(&what, &got, &want, |i| tol[i]);
    let got = to_f64(host(&x.view().log_softmax(dim).unwrap()));
    close(&format!("log_{what}"), &got, &want_log, |i| tol_log[i]);
    if shape.len() >= 2 {
        // Into a transposed destination.
        let mut t_shape = shape.clone();
        t_shape.swap(0, 1);
        let mut out = Tensor::<T, D>::zeros_on(&t_shape, dev).unwrap();
        let mut ov = out.view_mut().transpose(0, 1).unwrap();
        x.view().softmax_into(dim, &mut ov).unwrap();
        let got = to_f64(host(&out.transpose(0, 1).unwrap()));
        close(&format!("{what} into"), &got, &want, |i| tol[i]);
    }
}

test_device!(
    softmax_matches_reference,
    softmax_matches_reference_cpu,
    softmax_matches_reference_gpu
);
fn softmax_matches_reference<D: NormDev>(dev: &D) {
    let mut rng = Rng(0x5EED_0028_0001);
    for _ in 0..24 {
        softmax_case::<f32, D>(dev, &mut rng);
        softmax_case::<f64, D>(dev, &mut rng);
        softmax_case::<f16, D>(dev, &mut rng);
        softmax_case::<bf16, D>(dev, &mut rng);
    }
}

mod norms;
mod stages;
mod stats;
