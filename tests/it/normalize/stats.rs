//! `logsumexp`, `var`, `std`, `var_mean`, `std_mean` and `norm` over random dims.

use super::*;

fn random_dims(rng: &mut Rng, rank: usize) -> Vec<isize> {
    let mut dims: Vec<isize> = (0..rank as isize).filter(|_| rng.below(2) == 0).collect();
    for d in dims.iter_mut() {
        if rng.below(2) == 0 {
            *d -= rank as isize;
        }
    }
    dims.reverse();
    dims
}

fn stats_case<T: FloatElement, D: NormDev + NormalizeBackend<T>>(dev: &D, rng: &mut Rng) {
    let (u, a) = roundoff::<T>();
    let shape = random_shape(rng, 4000);
    let scale = [1.0, 30.0][rng.below(2)];
    let x = Input::<T, D>::new(dev, rng, &shape, scale);
    let rank = shape.len();
    let all = rng.below(5) == 0;
    let dims = if all {
        (0..rank as isize).collect()
    } else {
        random_dims(rng, rank)
    };
    let chosen: Vec<usize> = dims
        .iter()
        .map(|d| d.rem_euclid(rank.max(1) as isize) as usize)
        .collect();
    let keepdim = rng.below(2) == 0;
    let correction = [0.0, 1.0, 2.0][rng.below(3)];
    let n: usize = chosen.iter().map(|&d| shape[d]).product();
    let lines = reference::lines(&shape, &chosen);
    let rows: Vec<Vec<f64>> = lines
        .iter()
        .map(|l| l.iter().map(|&i| x.values[i]).collect())
        .collect();
    let kept_shape: Vec<usize> = (0..rank)
        .filter(|d| !chosen.contains(d) || keepdim)
        .map(|d| if chosen.contains(&d) { 1 } else { shape[d] })
        .collect();
    let nf = n as f64;
    let v = x.view();
    for kind in ["lse", "var", "std", "l1", "l2", "inf"] {
        let what = format!(
            "{:?} {kind} shape {shape:?} dims {dims:?} keepdim {keepdim} c {correction}",
            T::DTYPE
        );
        if kind == "inf" && n == 0 && !lines.is_empty() {
            let e = v.norm_dims(NormOrd::Inf, &dims, keepdim).unwrap_err();
            assert!(
                matches!(e, Error::Layout(LayoutError::EmptyReduction { .. })),
                "{what}"
            );
            continue;
        }
        let got = match kind {
            "lse" => v.logsumexp_dims(&dims, keepdim),
            "var" => v.var_dims(&dims, correction, keepdim),
            "std" => v.std_dims(&dims, correction, keepdim),
            "l1" => v.norm_dims(NormOrd::L1, &dims, keepdim),
            "l2" => v.norm_dims(NormOrd::L2, &dims, keepdim),
            _ => v.norm_dims(NormOrd::Inf, &dims, keepdim),
        }
        .unwrap();
        assert_eq!(got.shape(), &kept_shape[..], "{what}");
        let want: Vec<(f64, f64)> = rows
            .iter()
            .map(|r| reference::stat(kind, r, correction))
            .collect();
        let wv: Vec<f64> = want.iter().map(|w| w.0).collect();
        let tol = |i: usize| {
            let r = &rows[i];
            let big = r.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let g = 4.0 * a * (nf + 8.0);
            match kind {
                "lse" => wv[i].abs() * u + g * (big + wv[i].abs() + 1.0),
                // Σ (x − mean)² in the accumulator: γ(n)·Σ(|x| + |mean|)² / divisor, and the
                // mean's own error `γ(n)·max|x|` entering each square.
                "var" => {
                    wv[i].abs() * (u + g)
                        + g * (2.0 * big) * (2.0 * big) * nf / (nf - correction).max(1.0)
                }
                "std" => {
                    wv[i].abs() * (u + g)
                        + (g * 4.0 * big * big * nf / (nf - correction).max(1.0)).sqrt()
                }
                "inf" => wv[i].abs() * u,
                _ => wv[i].abs() * (u + g),
            }
        };
        close(&what, &to_f64(host(&got)), &wv, tol);
        if kind == "var" || kind == "std" {
            let (val, mean) = if kind == "var" {
                v.var_mean_dims(&dims, correction, keepdim).unwrap()
            } else {
                v.std_mean_dims(&dims, correction, keepdim).unwrap()
            };
            close(&format!("{what} (_mean)"), &to_f64(host(&val)), &wv, tol);
            let wm: Vec<f64> = want.iter().map(|w| w.1).collect();
            let tol_m = |i: usize| {
                let big = rows[i].iter().fold(0.0f64, |m, v| m.max(v.abs()));
                wm[i].abs() * u + 4.0 * a * (nf + 8.0) * big
            };
            close(&format!("{what} mean"), &to_f64(host(&mean)), &wm, tol_m);
        }
    }
    // The all-dims forms are 0-d.
    if rng.below(4) == 0 {
        assert_eq!(v.var(1.0).unwrap().shape(), &[] as &[usize]);
        assert_eq!(v.logsumexp().unwrap().shape(), &[] as &[usize]);
    }
}

test_device!(
    statistics_match_reference,
    statistics_match_reference_cpu,
    statistics_match_reference_gpu
);
fn statistics_match_reference<D: NormDev>(dev: &D) {
    let mut rng = Rng(0x5EED_0028_0002);
    for _ in 0..20 {
        stats_case::<f32, D>(dev, &mut rng);
        stats_case::<f64, D>(dev, &mut rng);
        stats_case::<f16, D>(dev, &mut rng);
        stats_case::<bf16, D>(dev, &mut rng);
    }
}

test_device!(
    special_values_follow_pytorch,
    special_values_follow_pytorch_cpu,
    special_values_follow_pytorch_gpu
);
fn special_values_follow_pytorch<D: NormDev>(dev: &D) {
    let inf = f32::INFINITY;
    let rows = Tensor::from_vec(
        &[5, 2],
        vec![
            inf,
            1.0,
            -inf,
            -inf,
            -inf,
            0.0,
            f32::NAN,
            1.0,
            10000.0,
            9999.0,
        ],
    )
    .unwrap();
    let x = dev.upload(&rows);
    let s = host(&x.softmax(-1).unwrap());
    assert!(
        s[..4].iter().all(|v| v.is_nan()),
        "+inf and all -inf rows: {s:?}"
    );
    assert_eq!(&s[4..6], &[0.0, 1.0]);
    assert!(s[6].is_nan() && s[7].is_nan());
    assert!(
        (s[8] - 0.731_058_6).abs() < 1e-6 && (s[9] - 0.268_941_4).abs() < 1e-6,
        "{s:?}"
    );
    let l = host(&x.logsumexp_dim(1, false).unwrap());
    assert_eq!(l[0], inf);
    assert_eq!(l[1], -inf);
    assert_eq!(l[2], 0.0);
    assert!(l[3].is_nan());
    assert!((l[4] - 10_000.313).abs() < 2e-3, "{l:?}");
    // Variance of one element: NaN with Bessel's correction, 0 without; of none: NaN.
    let one = dev.upload(&Tensor::from_vec(&[1], vec![3.0f64]).unwrap());
    assert!(one.var(1.0).unwrap().item().unwrap().is_nan());
    assert_eq!(one.var(0.0).unwrap().item().unwrap(), 0.0);
    let empty = dev.upload(&Tensor::<f64>::zeros(&[3, 0]).unwrap());
    let (v, m) = empty.var_mean_dim(1, 1.0, false).unwrap();
    assert!(host(&v).iter().chain(&host(&m)).all(|x| x.is_nan()));
    assert_eq!(
        host(&empty.logsumexp_dim(1, false).unwrap()),
        vec![f64::NEG_INFINITY; 3]
    );
    assert_eq!(
        host(&empty.norm_dim(NormOrd::L2, 1, false).unwrap()),
        vec![0.0; 3]
    );
    assert_eq!(empty.softmax(1).unwrap().shape(), &[3, 0]);
    assert_eq!(empty.softmax(0).unwrap().shape(), &[3, 0]);
    assert!(matches!(
        empty.norm_dim(NormOrd::Inf, 1, false),
        Err(Error::Layout(LayoutError::EmptyReduction { .. }))
    ));
    // NaN propagates through the norms and layer norm.
    let nan = dev.upload(&Tensor::from_vec(&[3], vec![1.0f32, f32::NAN, -2.0]).unwrap());
    assert!(nan.norm(NormOrd::Inf).unwrap().item().unwrap().is_nan());
    assert!(nan.norm(NormOrd::L1).unwrap().item().unwrap().is_nan());
    assert!(host(&nan.layer_norm(&[3], None, None, 1e-5).unwrap())
        .iter()
        .all(|v| v.is_nan()));
    // A 0-d input: softmax is 1, log_softmax 0.
    let s0 = dev.upload(&Tensor::scalar(4.0f32));
    assert_eq!(s0.softmax(0).unwrap().item().unwrap(), 1.0);
    assert_eq!(s0.log_softmax(-1).unwrap().item().unwrap(), 0.0);
    let _ = Cpu;
}
