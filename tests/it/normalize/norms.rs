//! `layer_norm`, `rms_norm`, `group_norm`, rows long enough for every GPU kernel form, and
//! the typed errors.

use super::*;

/// A random `[len]` parameter on `dev` (stored with stride 2 half of the time) and its values.
fn param<T: FloatElement, D: TestDevice>(
    dev: &D,
    rng: &mut Rng,
    shape: &[usize],
) -> (Tensor<T, D>, Vec<f64>) {
    let n: usize = shape.iter().product();
    let data: Vec<T> = (0..n).map(|_| T::from_f64(1.0 + rng.unit())).collect();
    let values = to_f64(data.clone());
    (dev.upload(&Tensor::from_vec(shape, data).unwrap()), values)
}

/// Layer norm's bound: the mean and variance sums (`γ(n)` of `Σ|x|` and of `Σ(|x| + |mean|)²`)
/// scaled by `rstd·|w|`, `rsqrt`'s few ulps, the weight and bias products and one rounding.
#[allow(clippy::too_many_arguments)] // the terms of one bound, named
fn norm_tol(u: f64, a: f64, n: f64, big: f64, rstd: f64, w: f64, b: f64, want: f64) -> f64 {
    let g = 4.0 * a * (n + 8.0);
    want.abs() * (u + g) + g * (big * rstd * w * (1.0 + 4.0 * big * big * rstd * rstd) + b)
}

fn layer_case<T: FloatElement, D: NormDev + NormalizeBackend<T>>(
    dev: &D,
    rng: &mut Rng,
    rms: bool,
) {
    let (u, a) = roundoff::<T>();
    let mut shape = random_shape(rng, 4000);
    if shape.is_empty() {
        shape.push(3);
    }
    let k = 1 + rng.below(shape.len().min(2));
    let ns = shape[shape.len() - k..].to_vec();
    let scale = [1.0, 50.0][rng.below(2)];
    let x = Input::<T, D>::new(dev, rng, &shape, scale);
    let (w, wv) = param::<T, D>(dev, rng, &ns);
    let (b, bv) = param::<T, D>(dev, rng, &ns);
    let (use_w, use_b) = (rng.below(2) == 0, rng.below(2) == 0 && !rms);
    let eps = 1e-5;
    let what = format!(
        "{:?} {} shape {shape:?} over {ns:?} w {use_w} b {use_b}",
        T::DTYPE,
        if rms { "rms_norm" } else { "layer_norm" }
    );
    let got = if rms {
        x.view().rms_norm(&ns, use_w.then(|| w.view()), Some(eps))
    } else {
        x.view()
            .layer_norm(&ns, use_w.then(|| w.view()), use_b.then(|| b.view()), eps)
    }
    .unwrap();
    let chosen: Vec<usize> = (shape.len() - k..shape.len()).collect();
    let mut want = vec![0.0; x.values.len()];
    let mut tol = vec![0.0; x.values.len()];
    for line in reference::lines(&shape, &chosen) {
        let xs: Vec<f64> = line.iter().map(|&i| x.values[i]).collect();
        let y = reference::norm_line(
            &xs,
            use_w.then_some(&wv[..]),
            use_b.then_some(&bv[..]),
            eps,
            rms,
        );
        let n = xs.len() as f64;
        let mean = if rms { 0.0 } else { xs.iter().sum::<f64>() / n };
        let rstd = 1.0 / (xs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n + eps).sqrt();
        let big = xs.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (j, &i) in line.iter().enumerate() {
            want[i] = y[j];
            tol[i] = norm_tol(
                u,
                a,
                n,
                big,
                rstd,
                if use_w { wv[j] } else { 1.0 },
                if use_b { bv[j] } else { 0.0 },
                y[j],
            );
        }
    }
    close(&what, &to_f64(host(&got)), &want, |i| tol[i]);
}

fn group_case<T: FloatElement, D: NormDev + NormalizeBackend<T>>(dev: &D, rng: &mut Rng) {
    let (u, a) = roundoff::<T>();
    let groups = 1 + rng.below(3);
    let c = groups * (1 + rng.below(3));
    let mut shape = vec![rng.below(4), c];
    for _ in 0..rng.below(3) {
        shape.push(1 + rng.below(5));
    }
    let x = Input::<T, D>::new(dev, rng, &shape, 4.0);
    let (w, wv) = param::<T, D>(dev, rng, &[c]);
    let (b, bv) = param::<T, D>(dev, rng, &[c]);
    let use_wb = rng.below(2) == 0;
    let got = x
        .view()
        .group_norm(
            groups,
            use_wb.then(|| w.view()),
            use_wb.then(|| b.view()),
            1e-5,
        )
        .unwrap();
    let what = format!(
        "{:?} group_norm shape {shape:?} groups {groups} affine {use_wb}",
        T::DTYPE
    );
    let per_channel: usize = shape[2..].iter().product();
    let group_len = per_channel * (c / groups);
    let mut want = vec![0.0; x.values.len()];
    let mut tol = vec![0.0; x.values.len()];
    // Row-major `[N, C, *]`: each (sample, group) is a contiguous run of `group_len`.
    for (g, xs) in x.values.chunks(group_len.max(1)).enumerate() {
        let y = reference::norm_line(xs, None, None, 1e-5, false);
        let n = xs.len() as f64;
        for (j, &yj) in y.iter().enumerate() {
            let ch = (g % groups) * (c / groups) + j / per_channel.max(1);
            let (wj, bj) = if use_wb { (wv[ch], bv[ch]) } else { (1.0, 0.0) };
            let i = g * group_len + j;
            want[i] = yj * wj + bj;
            // The normalised value's bound, then two more roundings (`· w`, `+ b` in `T`).
            tol[i] = norm_tol(u, a, n, 4.0, 4.0, wj, 0.0, yj * wj)
                + 2.0 * u * (yj.abs() * wj + bj.abs());
        }
    }
    close(&what, &to_f64(host(&got)), &want, |i| tol[i]);
}

test_device!(
    normalisations_match_reference,
    normalisations_match_reference_cpu,
    normalisations_match_reference_gpu
);
fn normalisations_match_reference<D: NormDev>(dev: &D) {
    let mut rng = Rng(0x5EED_0028_0003);
    for i in 0..16 {
        let rms = i % 2 == 1;
        layer_case::<f32, D>(dev, &mut rng, rms);
        layer_case::<f64, D>(dev, &mut rng, rms);
        layer_case::<f16, D>(dev, &mut rng, rms);
        layer_case::<bf16, D>(dev, &mut rng, rms);
        group_case::<f32, D>(dev, &mut rng);
        group_case::<bf16, D>(dev, &mut rng);
    }
}

/// Rows across the GPU's forms: a warp (≤ 1024 f32), a block (≤ 8192 f32) and the
/// re-reading form beyond, contiguous and transposed, lengths off the vector width.
fn long_rows<T: FloatElement, D: NormDev + NormalizeBackend<T>>(dev: &D, rng: &mut Rng) {
    let (u, a) = roundoff::<T>();
    for n in [1usize, 31, 33, 1000, 1024, 1026, 4096, 5000, 9000, 20000] {
        for transposed in [false, true] {
            let shape = if transposed { [n, 3] } else { [3, n] };
            let data: Vec<T> = (0..3 * n).map(|_| T::from_f64(3.0 * rng.unit())).collect();
            let xs = to_f64(data.clone());
            let t = dev.upload(&Tensor::from_vec(&shape, data).unwrap());
            let x = if transposed { t.t() } else { t.view() };
            let rows: Vec<Vec<f64>> = (0..3)
                .map(|r| {
                    (0..n)
                        .map(|j| {
                            if transposed {
                                xs[j * 3 + r]
                            } else {
                                xs[r * n + j]
                            }
                        })
                        .collect()
                })
                .collect();
            let nf = n as f64;
            let what = format!("{:?} n {n} transposed {transposed}", T::DTYPE);
            let want: Vec<f64> = rows
                .iter()
                .flat_map(|r| reference::softmax(r, false))
                .collect();
            let tol = |v: f64| v * (u + 4.0 * a * (nf + 16.0)) + a;
            close(
                &format!("softmax {what}"),
                &to_f64(host(&x.softmax(1).unwrap())),
                &want,
                |i| tol(want[i]),
            );
            let want: Vec<f64> = rows
                .iter()
                .flat_map(|r| reference::norm_line(r, None, None, 1e-5, false))
                .collect();
            let got = to_f64(host(&x.layer_norm(&[n], None, None, 1e-5).unwrap()));
            close(&format!("layer_norm {what}"), &got, &want, |i| {
                norm_tol(
                    u,
                    a,
                    nf,
                    3.0,
                    if n == 1 { 316.3 } else { 2.0 },
                    1.0,
                    0.0,
                    want[i],
                )
            });
            let want: Vec<f64> = rows
                .iter()
                .map(|r| reference::stat("var", r, 1.0).0)
                .collect();
            let got = to_f64(host(&x.var_dim(1, 1.0, false).unwrap()));
            close(&format!("var {what}"), &got, &want, |i| {
                want[i].abs() * (u + 4.0 * a * (nf + 8.0)) + 4.0 * a * (nf + 8.0) * 36.0
            });
        }
    }
}

test_device!(
    long_rows_take_every_form,
    long_rows_take_every_form_cpu,
    long_rows_take_every_form_gpu
);
fn long_rows_take_every_form<D: NormDev>(dev: &D) {
    let mut rng = Rng(0x5EED_0028_0004);
    long_rows::<f32, D>(dev, &mut rng);
    long_rows::<f64, D>(dev, &mut rng);
    long_rows::<f16, D>(dev, &mut rng);
    long_rows::<bf16, D>(dev, &mut rng);
}

test_device!(
    bad_arguments_are_typed_errors,
    bad_arguments_are_typed_errors_cpu,
    bad_arguments_are_typed_errors_gpu
);
fn bad_arguments_are_typed_errors<D: NormDev>(dev: &D) {
    let x = dev.upload(&Tensor::<f32>::ones(&[2, 3, 4]).unwrap());
    let w = dev.upload(&Tensor::<f32>::ones(&[3]).unwrap());
    let is = |e: Error, f: fn(&LayoutError) -> bool| match e {
        Error::Layout(l) => assert!(f(&l), "{l}"),
        other => panic!("{other}"),
    };
    is(x.softmax(3).unwrap_err(), |e| {
        matches!(e, LayoutError::DimOutOfRange { .. })
    });
    is(x.log_softmax(-4).unwrap_err(), |e| {
        matches!(e, LayoutError::DimOutOfRange { .. })
    });
    is(x.var_dims(&[0, -3], 1.0, false).unwrap_err(), |e| {
        matches!(e, LayoutError::DuplicateDim { .. })
    });
    is(
        x.layer_norm(&[3], None, None, 1e-5).unwrap_err(),
        |e| matches!(e, LayoutError::NormalizedShapeMismatch { normalized_shape, .. } if normalized_shape == &[3]),
    );
    is(x.layer_norm(&[], None, None, 1e-5).unwrap_err(), |e| {
        matches!(e, LayoutError::NormalizedShapeMismatch { .. })
    });
    is(
        x.rms_norm(&[4], Some(w.view()), None).unwrap_err(),
        |e| matches!(e, LayoutError::NormParamShape { param: "weight", expected, got, .. } if expected == &[4] && got == &[3]),
    );
    is(
        x.layer_norm(&[4], None, Some(w.view()), 1e-5).unwrap_err(),
        |e| matches!(e, LayoutError::NormParamShape { param: "bias", .. }),
    );
    is(x.group_norm(2, None, None, 1e-5).unwrap_err(), |e| {
        matches!(e, LayoutError::GroupNormGroups { num_groups: 2, .. })
    });
    is(x.group_norm(0, None, None, 1e-5).unwrap_err(), |e| {
        matches!(e, LayoutError::GroupNormGroups { .. })
    });
    is(
        x.group_norm(3, Some(w.view()), Some(x.view()), 1e-5)
            .unwrap_err(),
        |e| matches!(e, LayoutError::NormParamShape { param: "bias", .. }),
    );
    let mut out = Tensor::<f32, D>::zeros_on(&[2, 3], dev).unwrap();
    is(x.softmax_into(-1, &mut out).unwrap_err(), |e| {
        matches!(e, LayoutError::ShapeMismatch { .. })
    });
    // rms_norm's default eps is the type's machine epsilon.
    let r = dev
        .upload(&Tensor::from_vec(&[2], vec![bf16::from_f32(0.0), bf16::from_f32(0.0)]).unwrap());
    assert_eq!(
        host(&r.rms_norm(&[2], None, None).unwrap()),
        vec![bf16::from_f32(0.0); 2]
    );
}
