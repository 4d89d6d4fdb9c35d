//! Row stages inside fused expressions (issue 28's reduction nodes): `softmax`,
//! `log_softmax`, `layer_norm`, `rms_norm` and the row statistics broadcast back, with ops
//! below the stage (its argument) and above it (its consumers), against the `f64` host
//! reference with every rounding to `T` the expression makes emulated. On the GPU these run
//! as one row kernel; on the CPU each stage is evaluated apart.
//!
//! Tolerances: the stage's bound as in `norms.rs` / `stats.rs` / `mod.rs` (the same
//! arithmetic), then each later op adds one rounding, `u·|value|`, and carries the stage's
//! error times its factor (`|y|` for a product, 1 for a sum).

use super::*;
use typestate_tensor::tensor::expr;

#[derive(Clone, Copy, Debug)]
enum Stage {
    Softmax,
    LogSoftmax,
    Layer,
    Rms,
    Lse,
    Mean,
    Var,
    Std,
}

const STAGES: [Stage; 8] = [
    Stage::Softmax,
    Stage::LogSoftmax,
    Stage::Layer,
    Stage::Rms,
    Stage::Lse,
    Stage::Mean,
    Stage::Var,
    Stage::Std,
];

fn round<T: Element>(v: f64) -> f64 {
    T::from_f64(v).to_f64()
}

/// The stage's value at each element of one line `xs` and its error bound (before the
/// stage's own rounding to `T`).
fn stage_line(stage: Stage, xs: &[f64], eps: f64, u: f64, a: f64) -> (Vec<f64>, Vec<f64>) {
    let n = xs.len() as f64;
    let g = 4.0 * a * (n + 8.0);
    let big = xs.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let each = |v: f64, t: f64| (vec![v; xs.len()], vec![t; xs.len()]);
    match stage {
        Stage::Softmax | Stage::LogSoftmax => {
            let log = matches!(stage, Stage::LogSoftmax);
            let s = reference::softmax(xs, log);
            let lse: f64 = xs.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
            let tol = xs
                .iter()
                .zip(&s)
                .map(|(x, p)| {
                    if log {
                        p.abs() * u + 4.0 * a * (x.abs() + m.abs() + lse.abs() + n + 8.0)
                    } else {
                        p * (u + 4.0 * a * (n + 8.0 + (x - m).abs())) + a
                    }
                })
                .collect();
            (s, tol)
        }
        Stage::Layer | Stage::Rms => {
            let rms = matches!(stage, Stage::Rms);
            let y = reference::norm_line(xs, None, None, eps, rms);
            let mean = if rms { 0.0 } else { xs.iter().sum::<f64>() / n };
            let rstd = 1.0 / (xs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n + eps).sqrt();
            let tol = y
                .iter()
                .map(|v| v.abs() * (u + g) + g * big * rstd * (1.0 + 4.0 * big * big * rstd * rstd))
                .collect();
            (y, tol)
        }
        Stage::Lse => {
            let (v, _) = reference::stat("lse", xs, 0.0);
            each(v, v.abs() * u + g * (big + v.abs() + 1.0))
        }
        Stage::Mean => {
            let (_, mean) = reference::stat("var", xs, 0.0);
            each(mean, mean.abs() * u + g * big)
        }
        Stage::Var => {
            let (v, _) = reference::stat("var", xs, 1.0);
            each(
                v,
                v.abs() * (u + g) + g * 4.0 * big * big * n / (n - 1.0).max(1.0),
            )
        }
        Stage::Std => {
            let (v, _) = reference::stat("std", xs, 1.0);
            each(
                v,
                v.abs() * (u + g) + (g * 4.0 * big * big * n / (n - 1.0).max(1.0)).sqrt(),
            )
        }
    }
}

/// One random case of `stage`: the stage over `x * c` (c a scalar), then `* y + z` for the
/// normalising stages or `x - stat` for the statistics; `y` full-shaped and strided (or a
/// row vector `[n]` for the norms), `z` a row vector.
fn stage_case<T: FloatElement, D: NormDev + NormalizeBackend<T>>(
    dev: &D,
    rng: &mut Rng,
    stage: Stage,
    long: bool,
) {
    let (u, a) = roundoff::<T>();
    let mut shape = if long {
        vec![1 + rng.below(3), [1500, 3000, 9000][rng.below(3)]]
    } else {
        random_shape(rng, 4000)
    };
    if shape.is_empty() {
        shape.push(1 + rng.below(5));
    }
    let rank = shape.len();
    let last_only = matches!(stage, Stage::Layer | Stage::Rms);
    let dim = if last_only || long {
        -1
    } else {
        random_dim(rng, rank)
    };
    let d = dim.rem_euclid(rank as isize) as usize;
    let scale = [1.0, 8.0][rng.below(2)];
    let x = Input::<T, D>::new(dev, rng, &shape, scale);
    let y = Input::<T, D>::new(dev, rng, &shape, 1.0);
    let n_last = shape[rank - 1];
    let zs: Vec<T> = (0..n_last).map(|_| T::from_f64(rng.unit())).collect();
    let z = dev.upload(&Tensor::from_vec(&[n_last], zs.clone()).unwrap());
    let zv = to_f64(zs);
    let c = T::from_f64([1.0, 0.5, 3.0][rng.below(3)]);
    let cv = c.to_f64();
    let eps = 1e-5;
    let what = format!("{:?} {stage:?} shape {shape:?} dim {dim}", T::DTYPE);
    let xv = x.view();
    let arg = xv.lazy() * expr::scalar(c);
    let normalising = matches!(
        stage,
        Stage::Softmax | Stage::LogSoftmax | Stage::Layer | Stage::Rms
    );
    let got = match stage {
        Stage::Softmax => (arg.softmax(dim) * &y.view() + &z).eval(),
        Stage::LogSoftmax => (arg.log_softmax(dim) * &y.view() + &z).eval(),
        Stage::Layer => (arg.layer_norm(eps) * &y.view() + &z).eval(),
        Stage::Rms => (arg.rms_norm(Some(eps)) * &y.view() + &z).eval(),
        Stage::Lse => (xv.lazy() - arg.logsumexp_keepdim(dim)).eval(),
        Stage::Mean => (xv.lazy() - arg.mean_keepdim(dim)).eval(),
        Stage::Var => (xv.lazy() - arg.var_keepdim(dim, 1.0)).eval(),
        Stage::Std => (xv.lazy() - arg.std_keepdim(dim, 1.0)).eval(),
    }
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(got.shape(), &shape[..], "{what}");
    let mut want = vec![0.0; x.values.len()];
    let mut tol = vec![0.0; x.values.len()];
    for line in reference::lines(&shape, &[d]) {
        let args: Vec<f64> = line.iter().map(|&i| round::<T>(x.values[i] * cv)).collect();
        let (s, st) = stage_line(stage, &args, eps, u, a);
        for (k, &i) in line.iter().enumerate() {
            let sv = round::<T>(s[k]);
            // The stage's error, its rounding, then each later op's rounding.
            let se = st[k] + u * s[k].abs();
            let j = i % n_last;
            let (w, e) = if normalising {
                let p = round::<T>(sv * y.values[i]);
                let w = round::<T>(p + zv[j]);
                let e = se * y.values[i].abs() + u * p.abs() + u * w.abs();
                (w, e)
            } else {
                let w = round::<T>(x.values[i] - sv);
                (w, se + u * w.abs())
            };
            want[i] = w;
            tol[i] = 2.0 * e + f64::MIN_POSITIVE;
        }
    }
    close(&what, &to_f64(host(&got)), &want, |i| tol[i]);
}

test_device!(
    row_stages_in_expressions_match_reference,
    row_stages_in_expressions_match_reference_cpu,
    row_stages_in_expressions_match_reference_gpu
);
fn row_stages_in_expressions_match_reference<D: NormDev>(dev: &D) {
    let mut rng = Rng(0x5EED_0028_0051);
    for round in 0..6 {
        for stage in STAGES {
            stage_case::<f32, D>(dev, &mut rng, stage, round == 0);
            stage_case::<f64, D>(dev, &mut rng, stage, false);
            stage_case::<f16, D>(dev, &mut rng, stage, round == 1);
            stage_case::<bf16, D>(dev, &mut rng, stage, false);
        }
    }
}

test_device!(
    row_stages_that_cannot_share_a_kernel_still_evaluate,
    row_stages_that_cannot_share_a_kernel_still_evaluate_cpu,
    row_stages_that_cannot_share_a_kernel_still_evaluate_gpu
);
/// Two stages in one expression, a stage inside another's argument, a stage broadcast along
/// its reduced dim, several outputs, an update: each against the eager ops (tested against
/// the reference above and in `mod.rs`) within a few roundings.
fn row_stages_that_cannot_share_a_kernel_still_evaluate<D: NormDev>(dev: &D) {
    let mut rng = Rng(0x5EED_0028_0052);
    let x = Input::<f64, D>::new(dev, &mut rng, &[3, 5, 7], 2.0);
    let xv = x.view();
    let near = |what: &str, got: &Tensor<f64, D>, want: &Tensor<f64, D>| {
        assert_eq!(got.shape(), want.shape(), "{what}");
        close(what, &to_f64(host(got)), &to_f64(host(want)), |_| 1e-12);
    };
    // (x - mean) / std: two statistics of one row.
    let got = ((xv.lazy() - xv.lazy().mean_keepdim(-1)) / xv.lazy().std_keepdim(-1, 0.0))
        .eval()
        .unwrap();
    let mean = xv.mean_dim(-1, true).unwrap();
    let std = xv.std_dim(-1, 0.0, true).unwrap();
    let want = xv.sub(&mean).unwrap().div(&std).unwrap();
    near("standardised rows", &got, &want);
    // A stage inside another's argument: log(softmax(softmax(x))).
    let got = xv.lazy().softmax(1).softmax(1).log().eval().unwrap();
    let want = xv.softmax(1).unwrap().softmax(1).unwrap().log().unwrap();
    near("nested softmax", &got, &want);
    // A stage of a [3, 1, 7] argument broadcast along its reduced dim 1 to [3, 5, 7]: the
    // softmax of a row of one is 1, repeated, not a softmax over 5 elements.
    let col = xv.narrow(1, 0, 1).unwrap();
    let got = (col.lazy().softmax(1) * &xv).eval().unwrap();
    near(
        "broadcast along the reduced dim",
        &got,
        &xv.contiguous().unwrap(),
    );
    // Two outputs of one pass: the stage's and a pointwise one.
    let mut p = Tensor::<f64, D>::zeros_on(&[3, 5, 7], dev).unwrap();
    let mut q = Tensor::<f64, D>::zeros_on(&[3, 5, 7], dev).unwrap();
    expr::eval_into(
        (xv.lazy().log_softmax(0), xv.lazy().exp()),
        (&mut p, &mut q),
    )
    .unwrap();
    near("two outputs: log_softmax", &p, &xv.log_softmax(0).unwrap());
    near("two outputs: exp", &q, &xv.exp().unwrap());
    // A stage over an update's current value is refused, and the tensor is unchanged.
    let mut t = xv.contiguous().unwrap();
    let before = host(&t);
    let err = t.update(|c| c.softmax(-1)).unwrap_err();
    assert!(
        matches!(err, Error::Layout(LayoutError::UnboundCurrent { .. })),
        "{err:?}"
    );
    assert_eq!(host(&t), before);
    // A dim out of range is a typed error at evaluation.
    let err = xv.lazy().softmax(3).eval().unwrap_err();
    assert!(
        matches!(err, Error::Layout(LayoutError::DimOutOfRange { .. })),
        "{err:?}"
    );
}
