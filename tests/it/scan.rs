//! Scans (`cumsum`, `cumprod`, `cummax`, `cummin`, `logcumsumexp`) on every engine against
//! host references: random shapes (rank 0 to 3, empty dims, one long dim now and then),
//! random dims (negative half the time), transposed, stepped and flipped inputs, every
//! element type, many ties, NaN, ±0, ±inf and the integer bounds.
//!
//! # References and tolerances
//!
//! - `cumsum` / `cumprod` of integers and bool: `i128` folds truncated to `i64` (the
//!   wrapping sum modulo 2^64), exact.
//! - `cumsum` of floats: integer data in [-8, 8] (no specials), so every partial sum is an
//!   integer below `8 · 3000 < 2^24`, exact in the `f32` / `f64` accumulator; the one
//!   rounding to the element type is the reference's (`from_f64` of the exact sum): exact.
//! - `cumprod` of floats: factors in {±1, ±2, ±0.5}, rows of at most 40, so every partial
//!   product is a power of two within `2^±40`, exact in `f32`; exact.
//! - `cummax` / `cummin`: exact (PyTorch's rule in the reference: a NaN, or a value `>=`
//!   (`<=`) the running one while it is not NaN, takes over).
//! - `logcumsumexp`: data in [-8, 8] with ±inf and NaN; the reference folds PyTorch's
//!   `log_add_exp` in `f64`; each step of the device's fold (in `f32` for `f32`, `f16`,
//!   `bf16`) adds at most a few `f32` ulps of the running value, so the bound is
//!   `8 · n · 2^-24 · (|ref| + 1)` for the `f32` accumulation (`2^-53` for `f64`), plus half
//!   an ulp of the element type (`2^-11` `f16`, `2^-8` `bf16`) of `|ref|`; infinities and NaN
//!   exactly where the reference has them.

use crate::common::device::{host, test_device, TestDevice};
use crate::common::rng::Rng;
use crate::order_cases::{as_i128, dim, each_type, is_float, lanes, same, Case, OrderDevice};
use typestate_tensor::element::{DType, Element, FloatElement};
use typestate_tensor::ops::reduce::ReduceElement;
use typestate_tensor::tensor::order::ScanBackend;

const CASES: usize = 24;

fn cum_case<T: ReduceElement, D: TestDevice + ScanBackend<T>>(dev: &D, seed: u64) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ seed);
    for case in 0..CASES {
        let float = is_float::<T>();
        let prod = case % 2 == 1;
        let long = if prod { 40 } else { 3000 };
        let c: Case<T, D> = if prod && float {
            // Factors in {±1, ±2, ±0.5}.
            let mut c = Case::new(dev, &mut rng, long, 2, false);
            let vals: Vec<T> = c
                .host
                .to_vec()
                .into_iter()
                .map(|v: T| {
                    let x: f64 = v.to_f64();
                    let f: f64 = match x {
                        0.0 => 0.5,
                        -2.0 => -0.5,
                        _ => x,
                    };
                    T::from_f64(f)
                })
                .collect();
            c.host = typestate_tensor::Tensor::from_vec(c.host.shape(), vals).unwrap();
            c.dev = dev.upload(&c.host);
            c
        } else {
            let specials = !float && rng.below(2) == 0;
            Case::new(dev, &mut rng, long, 8, specials)
        };
        let shape = c.shape();
        let (d, dd) = dim(&mut rng, shape.len());
        let x = c.values();
        let view = c.of(&c.dev);
        let got = if prod {
            view.cumprod(d)
        } else {
            view.cumsum(d)
        }
        .expect("scan");
        assert_eq!(got.shape(), &shape[..], "{} shape", T::NAME);
        let got = host(&got);
        for lane in lanes(&shape, dd.min(shape.len().saturating_sub(1))) {
            let mut acc_f = if prod { 1.0 } else { 0.0 };
            let mut acc_i: i128 = if prod { 1 } else { 0 };
            for &p in &lane {
                let ok = if float {
                    let v = x[p].to_f64();
                    acc_f = if prod { acc_f * v } else { acc_f + v };
                    same(got[p], <T::Sum as Element>::from_f64(acc_f))
                } else {
                    // The wrapping i64 fold: reduce to 64 bits each step.
                    let v = as_i128(x[p]) as i64 as i128;
                    acc_i = if prod {
                        acc_i.wrapping_mul(v) as i64 as i128
                    } else {
                        (acc_i + v) as i64 as i128
                    };
                    as_i128(got[p]) == acc_i
                };
                assert!(
                    ok,
                    "{} {} case {case} shape {shape:?} dim {d} view {}: at {p} got {:?} (float ref {acc_f}, int ref {acc_i})",
                    T::NAME,
                    if prod { "cumprod" } else { "cumsum" },
                    c.view,
                    got[p]
                );
            }
        }
    }
}

fn cum_all<D: OrderDevice>(dev: &D) {
    each_type!(cum_case, dev);
}
test_device!(
    cum_all,
    cumsum_cumprod_match_reference_cpu,
    cumsum_cumprod_match_reference_gpu
);

fn extreme_case<T: ReduceElement, D: TestDevice + ScanBackend<T>>(dev: &D, seed: u64) {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03 ^ seed);
    for case in 0..CASES {
        let c: Case<T, D> = Case::new(dev, &mut rng, 3000, 3, true);
        let shape = c.shape();
        let (d, dd) = dim(&mut rng, shape.len());
        let x = c.values();
        let view = c.of(&c.dev);
        let max = case % 2 == 0;
        let (v, i) = if max { view.cummax(d) } else { view.cummin(d) }.expect("scan");
        assert_eq!(v.shape(), &shape[..]);
        assert_eq!(i.shape(), &shape[..]);
        let (v, i) = (host(&v), host(&i));
        for lane in lanes(&shape, dd.min(shape.len().saturating_sub(1))) {
            let nan = |t: T| is_float::<T>() && t.to_f64().is_nan();
            let mut best: Option<(T, usize)> = None;
            for (j, &p) in lane.iter().enumerate() {
                let cur = x[p];
                let takes = match best {
                    None => true,
                    Some((b, _)) => {
                        let ord = crate::order_cases::ref_cmp(cur, b);
                        nan(cur) || (!nan(b) && if max { ord.is_ge() } else { ord.is_le() })
                    }
                };
                if takes {
                    best = Some((cur, j));
                }
                let (bv, bj) = best.expect("set");
                assert!(
                    same(v[p], bv) && i[p] == bj as i64,
                    "{} {} case {case} shape {shape:?} dim {d} view {}: at {p} got ({:?}, {}) want ({bv:?}, {bj})",
                    T::NAME, if max { "cummax" } else { "cummin" }, c.view, v[p], i[p]
                );
            }
        }
    }
}

fn extreme_all<D: OrderDevice>(dev: &D) {
    each_type!(extreme_case, dev);
}
test_device!(
    extreme_all,
    cummax_cummin_match_reference_cpu,
    cummax_cummin_match_reference_gpu
);

fn lcse_case<T: ReduceElement + FloatElement, D: TestDevice + ScanBackend<T>>(dev: &D, seed: u64) {
    let mut rng = Rng(0xA076_1D64_78BD_642F ^ seed);
    let (unit, half_ulp) = match T::DTYPE {
        DType::F64 => (2f64.powi(-53), 0.0),
        DType::F16 => (2f64.powi(-24), 2f64.powi(-11)),
        DType::BF16 => (2f64.powi(-24), 2f64.powi(-8)),
        _ => (2f64.powi(-24), 0.0),
    };
    for case in 0..CASES {
        let specials = case % 3 == 0;
        let c: Case<T, D> = Case::new(dev, &mut rng, 3000, 8, specials);
        let shape = c.shape();
        let (d, dd) = dim(&mut rng, shape.len());
        let x = c.values();
        let got = host(&c.of(&c.dev).logcumsumexp(d).expect("logcumsumexp"));
        for lane in lanes(&shape, dd.min(shape.len().saturating_sub(1))) {
            let mut acc = f64::NEG_INFINITY;
            for (j, &p) in lane.iter().enumerate() {
                acc = log_add_exp(x[p].to_f64(), acc);
                let g = got[p].to_f64();
                let ok = if acc.is_nan() || acc.is_infinite() {
                    same(g, acc)
                } else {
                    let tol =
                        8.0 * (j + 1) as f64 * unit * (acc.abs() + 1.0) + half_ulp * acc.abs();
                    (g - acc).abs() <= tol
                };
                assert!(ok, "{} logcumsumexp case {case} shape {shape:?} dim {d}: at {p} got {g} want {acc}", T::NAME);
            }
        }
    }
}

/// PyTorch's `_log_add_exp_helper` in `f64`.
fn log_add_exp(x: f64, y: f64) -> f64 {
    let (min, max) = if y.is_nan() {
        (y, y)
    } else {
        (if y < x { y } else { x }, if x < y { y } else { x })
    };
    if min != max || min.is_finite() {
        (min - max).exp().ln_1p() + max
    } else {
        x
    }
}

fn lcse_all<D: OrderDevice>(dev: &D) {
    lcse_case::<f32, D>(dev, 1);
    lcse_case::<f64, D>(dev, 2);
    lcse_case::<half::f16, D>(dev, 3);
    lcse_case::<half::bf16, D>(dev, 4);
}
test_device!(
    lcse_all,
    logcumsumexp_matches_reference_cpu,
    logcumsumexp_matches_reference_gpu
);

/// The `_into` forms write through any view (a transposed destination included), and 0-d
/// inputs give 0-d results.
fn into_forms<D: OrderDevice>(dev: &D) {
    let x = dev
        .upload(&typestate_tensor::Tensor::from_vec(&[2, 3], vec![1i32, 2, 3, 4, 5, 6]).unwrap());
    let mut out = dev.upload(&typestate_tensor::Tensor::from_vec(&[3, 2], vec![0i64; 6]).unwrap());
    x.cumsum_into(0, &mut out.view_mut().t())
        .expect("cumsum_into");
    assert_eq!(host(&out), [1, 5, 2, 7, 3, 9]);
    let mut v = dev.upload(&typestate_tensor::Tensor::from_vec(&[2, 3], vec![0i32; 6]).unwrap());
    let mut i = dev.upload(&typestate_tensor::Tensor::from_vec(&[2, 3], vec![0i64; 6]).unwrap());
    x.flip(1)
        .unwrap()
        .cummin_into(-1, &mut v, &mut i)
        .expect("cummin_into");
    assert_eq!(host(&v), [3, 2, 1, 6, 5, 4]);
    assert_eq!(host(&i), [0, 1, 2, 0, 1, 2]);
    let s = dev.upload(&typestate_tensor::Tensor::from_vec(&[], vec![2.5f32]).unwrap());
    let r = s.cumsum(-1).expect("0-d cumsum");
    assert_eq!(r.shape(), &[] as &[usize]);
    assert_eq!(host(&r), [2.5]);
    assert!(x.cumsum(2).is_err());
    assert!(x.cumsum(-3).is_err());
    let mut bad = dev.upload(&typestate_tensor::Tensor::from_vec(&[3, 2], vec![0i64; 6]).unwrap());
    assert!(x.cumsum_into(0, &mut bad).is_err());
}
test_device!(
    into_forms,
    scan_into_forms_and_edges_cpu,
    scan_into_forms_and_edges_gpu
);

/// Few long rows, which the GPU scans in tiles with decoupled look-back (rows over 4096
/// elements, fewer rows than resident blocks): 1 and 3 rows of lengths that leave a partial
/// last tile, up to 74 tiles a row (more than one 32-tile look-back window), and one row of
/// 2^22. Exact references: `f32` sums of integers in [-8, 8] stay below 2^24 in magnitude
/// (exact in any grouping), `i64` sums and `i32` products wrap as the `i128` fold truncated,
/// `cummax` / `cummin` over values with many ties (the later index wins), `logcumsumexp` within
/// the module's bound.
fn long_rows<D: OrderDevice>(dev: &D) {
    let mut rng = Rng(0x1357_9bdf_2468_ace1);
    let shapes: [&[usize]; 5] = [
        &[1, 4097],
        &[3, 65_549],
        &[1, 300_001],
        &[2, 8192],
        &[1, 1 << 22],
    ];
    for shape in shapes {
        let (rows, n) = (shape[0], shape[1]);
        let small: Vec<i64> = (0..rows * n).map(|_| rng.below(17) as i64 - 8).collect();
        let lanes = |v: &[i64]| v.chunks(n).map(<[i64]>::to_vec).collect::<Vec<_>>();
        // i64 cumsum (every shape) and i32 cumprod (wrapping), exact.
        let x = dev.upload(&typestate_tensor::Tensor::from_vec(shape, small.clone()).unwrap());
        let got = host(&x.cumsum(-1).expect("cumsum i64"));
        for (r, lane) in lanes(&small).iter().enumerate() {
            let mut acc: i64 = 0;
            for (j, &v) in lane.iter().enumerate() {
                acc = acc.wrapping_add(v);
                assert_eq!(got[r * n + j], acc, "i64 cumsum {shape:?} at [{r}, {j}]");
            }
        }
        if n > 300_001 {
            continue;
        }
        let ints: Vec<i32> = small.iter().map(|&v| v as i32 | 1).collect();
        let x = dev.upload(&typestate_tensor::Tensor::from_vec(shape, ints.clone()).unwrap());
        let got = host(&x.cumprod(-1).expect("cumprod i32"));
        for r in 0..rows {
            let mut acc: i64 = 1;
            for j in 0..n {
                acc = acc.wrapping_mul(i64::from(ints[r * n + j]));
                assert_eq!(got[r * n + j], acc, "i32 cumprod {shape:?} at [{r}, {j}]");
            }
        }
        let floats: Vec<f32> = small.iter().map(|&v| v as f32).collect();
        let x = dev.upload(&typestate_tensor::Tensor::from_vec(shape, floats.clone()).unwrap());
        let got = host(&x.cumsum(-1).expect("cumsum f32"));
        let (vmax, imax) = x.cummax(-1).expect("cummax");
        let (vmin, imin) = x.cummin(-1).expect("cummin");
        let (vmax, imax, vmin, imin) = (host(&vmax), host(&imax), host(&vmin), host(&imin));
        let lcse = host(&x.logcumsumexp(-1).expect("logcumsumexp"));
        for r in 0..rows {
            let (mut sum, mut hi, mut lo) =
                (0f64, (f64::NEG_INFINITY, 0i64), (f64::INFINITY, 0i64));
            let mut lse = f64::NEG_INFINITY;
            for j in 0..n {
                let p = r * n + j;
                let v = f64::from(floats[p]);
                sum += v;
                if v >= hi.0 {
                    hi = (v, j as i64);
                }
                if v <= lo.0 {
                    lo = (v, j as i64);
                }
                lse = log_add_exp(v, lse);
                assert_eq!(f64::from(got[p]), sum, "f32 cumsum {shape:?} at [{r}, {j}]");
                assert_eq!(
                    (f64::from(vmax[p]), imax[p]),
                    hi,
                    "cummax {shape:?} at [{r}, {j}]"
                );
                assert_eq!(
                    (f64::from(vmin[p]), imin[p]),
                    lo,
                    "cummin {shape:?} at [{r}, {j}]"
                );
                let bound = 8.0 * (j + 1) as f64 * f64::from(f32::EPSILON) * (lse.abs() + 1.0);
                let err = (f64::from(lcse[p]) - lse).abs();
                assert!(
                    err <= bound,
                    "logcumsumexp {shape:?} at [{r}, {j}]: {} vs {lse}",
                    lcse[p]
                );
            }
        }
    }
}
test_device!(
    long_rows,
    long_rows_scan_in_tiles_cpu,
    long_rows_scan_in_tiles_gpu
);
