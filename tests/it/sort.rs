//! Sorting (`sort`, `argsort`, `topk`, `kthvalue`, `unique`, `searchsorted`) on every engine
//! against host references: random shapes (rank 0 to 3, empty dims, one long dim now and
//! then, long enough for the GPU's global path), random dims, transposed, stepped and
//! flipped inputs, every element type, many ties, NaN, ±0, ±inf and the integer bounds.
//!
//! The reference is a stable sort of `(value, index)` under [`ref_cmp`] (numbers by value,
//! `-0.0 == 0.0`, NaN last; integers as `i128`), written without the crate's keys. Every
//! comparison is exact: sorting moves elements, so the values are the input's bits at the
//! returned indices, and the engines promise a stable order (ties by index, in `topk` too).

use std::cmp::Ordering;

use crate::common::device::{host, test_device, TestDevice};
use crate::common::rng::Rng;
use crate::order_cases::{dim, each_type, lanes, ref_cmp, ref_key, same, Case, OrderDevice};
use typestate_tensor::element::Element;
use typestate_tensor::error::{Error, LayoutError};
use typestate_tensor::tensor::order::{SortBackend, SortElement};
use typestate_tensor::Tensor;

const CASES: usize = 24;

/// The stable reference order of a lane's positions (descending: reversed comparison, ties
/// still by position).
fn ref_sort<T: Element>(x: &[T], lane: &[usize], descending: bool) -> Vec<usize> {
    // Keys computed once per element (the integers' go through their decimal form).
    let keys: Vec<(u8, f64, i128)> = lane.iter().map(|&p| ref_key(x[p])).collect();
    let mut order: Vec<usize> = (0..lane.len()).collect();
    order.sort_by(|&a, &b| {
        let o = keys[a].partial_cmp(&keys[b]).unwrap_or(Ordering::Equal);
        if descending {
            o.reverse()
        } else {
            o
        }
    });
    order
}

fn sort_case<T: SortElement, D: TestDevice + SortBackend<T>>(dev: &D, seed: u64) {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D ^ seed);
    for case in 0..CASES {
        // Now and then a row longer than one GPU block sorts (the global path).
        let long = if case % 6 == 5 { 20_000 } else { 3000 };
        let c: Case<T, D> = Case::new(dev, &mut rng, long, 3, true);
        let shape = c.shape();
        let (d, dd) = dim(&mut rng, shape.len());
        let x = c.values();
        let descending = rng.below(2) == 0;
        let (v, i) = c.of(&c.dev).sort(d, descending, true).expect("sort");
        assert_eq!(v.shape(), &shape[..]);
        assert_eq!(i.shape(), &shape[..]);
        let (v, i) = (host(&v), host(&i));
        for lane in lanes(&shape, dd.min(shape.len().saturating_sub(1))) {
            let want = ref_sort(&x, &lane, descending);
            for (j, &p) in lane.iter().enumerate() {
                assert!(
                    i[p] == want[j] as i64 && same(v[p], x[lane[want[j]]]),
                    "{} sort case {case} shape {shape:?} dim {d} desc {descending} view {}: at {j} got ({:?}, {}) want ({:?}, {})",
                    T::NAME, c.view, v[p], i[p], x[lane[want[j]]], want[j]
                );
            }
        }
        // argsort is sort's indices.
        let a = host(&c.of(&c.dev).argsort(d, descending, false).expect("argsort"));
        assert_eq!(a, i, "{} argsort", T::NAME);
    }
}

fn sort_all<D: OrderDevice>(dev: &D) {
    each_type!(sort_case, dev);
}
test_device!(
    sort_all,
    sort_matches_stable_reference_cpu,
    sort_matches_stable_reference_gpu
);

fn topk_case<T: SortElement, D: TestDevice + SortBackend<T>>(dev: &D, seed: u64) {
    let mut rng = Rng(0x94D0_49BB_1331_11EB ^ seed);
    for case in 0..CASES {
        let c: Case<T, D> = Case::new(dev, &mut rng, 3000, 3, true);
        let shape = c.shape();
        let (d, dd) = dim(&mut rng, shape.len());
        let n = if shape.is_empty() { 1 } else { shape[dd] };
        let x = c.values();
        let largest = rng.below(2) == 0;
        let k = [0, 1, n / 2, n, rng.below(n + 1)][rng.below(5)]
            .min(64.max(n / 3))
            .min(n);
        let (v, i) = c.of(&c.dev).topk(k, d, largest, true).expect("topk");
        let mut oshape = shape.clone();
        if oshape.is_empty() {
            // A 0-d input is one row of one element: k = 1 keeps it 0-d, k = 0 gives [0].
            if k != 1 {
                oshape = vec![k];
            }
        } else {
            oshape[dd] = k;
        }
        assert_eq!(v.shape(), &oshape[..], "{} topk shape", T::NAME);
        let (v, i) = (host(&v), host(&i));
        let olanes = lanes(&oshape, dd.min(shape.len().saturating_sub(1)));
        for (lane, olane) in lanes(&shape, dd.min(shape.len().saturating_sub(1)))
            .iter()
            .zip(&olanes)
        {
            let want = ref_sort(&x, lane, largest);
            for (j, &p) in olane.iter().enumerate() {
                assert!(
                    i[p] == want[j] as i64 && same(v[p], x[lane[want[j]]]),
                    "{} topk k {k} case {case} shape {shape:?} dim {d} largest {largest}: at {j} got ({:?}, {}) want ({:?}, {})",
                    T::NAME, v[p], i[p], x[lane[want[j]]], want[j]
                );
            }
        }
        // kthvalue: the k-th of the ascending order, keepdim or not.
        if n > 0 {
            let k = 1 + rng.below(n);
            let keep = rng.below(2) == 0;
            let (kv, ki) = c.of(&c.dev).kthvalue(k, d, keep).expect("kthvalue");
            let kv = host(&kv);
            let ki = host(&ki);
            for (r, lane) in lanes(&shape, dd.min(shape.len().saturating_sub(1)))
                .iter()
                .enumerate()
            {
                let want = ref_sort(&x, lane, false)[k - 1];
                assert!(
                    same(kv[r], x[lane[want]]),
                    "{} kthvalue k {k} case {case} shape {shape:?} dim {d}: row {r} got {:?} want {:?}",
                    T::NAME, kv[r], x[lane[want]]
                );
                assert!(
                    same(x[lane[ki[r] as usize]], kv[r]),
                    "{} kthvalue index",
                    T::NAME
                );
            }
        }
    }
}

fn topk_all<D: OrderDevice>(dev: &D) {
    each_type!(topk_case, dev);
}
test_device!(
    topk_all,
    topk_kthvalue_match_reference_cpu,
    topk_kthvalue_match_reference_gpu
);

fn unique_case<T: SortElement, D: TestDevice + SortBackend<T>>(dev: &D, seed: u64) {
    let mut rng = Rng(0xBF58_476D_1CE4_E5B9 ^ seed);
    for case in 0..CASES / 2 {
        let c: Case<T, D> = Case::new(dev, &mut rng, 3000, 3, true);
        let x = c.values();
        let u = c.of(&c.dev).unique(true, true, true).expect("unique");
        let (vals, inv, counts) = (
            host(&u.values),
            host(&u.inverse.expect("asked")),
            host(&u.counts.expect("asked")),
        );
        // Reference: the stable sorted order, runs of equal values (NaN never equal).
        let all: Vec<usize> = (0..x.len()).collect();
        let order = ref_sort(&x, &all, false);
        let mut rv: Vec<T> = Vec::new();
        let mut rc: Vec<i64> = Vec::new();
        let mut ri = vec![0i64; x.len()];
        for &o in &order {
            let v = x[o];
            let nan = v.partial_cmp(&v).is_none();
            let new = match rv.last() {
                None => true,
                Some(&l) => nan || ref_cmp(l, v) != Ordering::Equal,
            };
            if new {
                rv.push(v);
                rc.push(0);
            }
            *rc.last_mut().expect("pushed") += 1;
            ri[o] = rv.len() as i64 - 1;
        }
        assert_eq!(vals.len(), rv.len(), "{} unique case {case} count", T::NAME);
        assert!(
            vals.iter().zip(&rv).all(|(&a, &b)| same(a, b)),
            "{} unique values {vals:?} want {rv:?}",
            T::NAME
        );
        assert_eq!(counts, rc, "{} unique counts", T::NAME);
        assert_eq!(inv, ri, "{} unique inverse", T::NAME);
    }
}

fn unique_all<D: OrderDevice>(dev: &D) {
    each_type!(unique_case, dev);
}
test_device!(
    unique_all,
    unique_matches_reference_cpu,
    unique_matches_reference_gpu
);

/// PyTorch's binary search, on the reference order's comparisons of `f64` / `i128`.
fn ref_bound<T: Element>(seq: &[T], v: T, right: bool) -> i64 {
    let (mut lo, mut hi) = (0, seq.len());
    let float = crate::order_cases::is_float::<T>();
    // `a >= b` / `a > b` as PyTorch evaluates them (false with a NaN).
    let ge = |a: T, b: T| {
        if float {
            a.to_f64() >= b.to_f64()
        } else {
            ref_cmp(a, b).is_ge()
        }
    };
    let gt = |a: T, b: T| {
        if float {
            a.to_f64() > b.to_f64()
        } else {
            ref_cmp(a, b).is_gt()
        }
    };
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let go = if right {
            !gt(seq[mid], v)
        } else {
            !ge(seq[mid], v)
        };
        if go {
            lo = mid + 1
        } else {
            hi = mid
        }
    }
    lo as i64
}

fn search_case<T: SortElement, D: TestDevice + SortBackend<T>>(dev: &D, seed: u64) {
    let mut rng = Rng(0xE703_7ED1_A0B4_28DB ^ seed);
    for case in 0..CASES / 2 {
        let m = rng.below(if case % 4 == 3 { 5000 } else { 40 });
        let mut seq: Vec<T> = (0..m)
            .map(|_| crate::order_cases::element::<T>(&mut rng, 20, true))
            .collect();
        seq.sort_by(|&a, &b| ref_cmp(a, b));
        let c: Case<T, D> = Case::new(dev, &mut rng, 300, 25, true);
        let vals = c.values();
        let s = dev.upload(&Tensor::from_vec(&[m], seq.clone()).unwrap());
        for right in [false, true] {
            let got = s.searchsorted(&c.of(&c.dev), right).expect("searchsorted");
            assert_eq!(got.shape(), &c.shape()[..]);
            let got = host(&got);
            for (j, &v) in vals.iter().enumerate() {
                assert_eq!(
                    got[j],
                    ref_bound(&seq, v, right),
                    "{} searchsorted right {right} case {case} v {v:?}",
                    T::NAME
                );
            }
        }
    }
}

fn search_all<D: OrderDevice>(dev: &D) {
    each_type!(search_case, dev);
}
test_device!(
    search_all,
    searchsorted_matches_reference_cpu,
    searchsorted_matches_reference_gpu
);

/// Stability on many ties in a long row, descending; `-0.0` and `0.0` tie; typed errors.
fn edges<D: OrderDevice>(dev: &D) {
    let xs = vec![0.0f32, -0.0, 1.0, f32::NAN, -0.0, 0.0, 1.0, f32::NAN];
    let x = dev.upload(&Tensor::from_vec(&[8], xs).unwrap());
    let (_, i) = x.sort(0, false, true).unwrap();
    assert_eq!(host(&i), [0, 1, 4, 5, 2, 6, 3, 7]);
    let (_, i) = x.sort(0, true, true).unwrap();
    assert_eq!(host(&i), [3, 7, 2, 6, 0, 1, 4, 5]);
    let (v, i) = x.topk(3, 0, true, true).unwrap();
    assert_eq!(host(&i), [3, 7, 2]);
    assert!(host(&v)[0].is_nan());
    let u = x.unique(true, false, true).unwrap();
    assert_eq!(host(&u.counts.unwrap()), [4, 2, 1, 1]);
    let big: Vec<i32> = (0..5000).map(|j: i32| j * 7919 % 5).collect();
    let b = dev.upload(&Tensor::from_vec(&[5000], big.clone()).unwrap());
    let (_, i) = b.sort(-1, true, true).unwrap();
    let i = host(&i);
    for w in i.windows(2) {
        let (a, c) = (big[w[0] as usize], big[w[1] as usize]);
        assert!(a > c || (a == c && w[0] < w[1]), "stable descending");
    }
    let m = dev.upload(&Tensor::from_vec(&[2, 3], vec![1i32, 2, 3, 4, 5, 6]).unwrap());
    let k_err = |e: Error| matches!(e, Error::Layout(LayoutError::KOutOfRange { .. }));
    assert!(k_err(m.topk(4, 1, true, true).unwrap_err()));
    assert!(k_err(m.kthvalue(0, 1, false).unwrap_err()));
    assert!(k_err(m.kthvalue(3, 0, false).unwrap_err()));
    assert!(matches!(
        m.sort(2, false, false).unwrap_err(),
        Error::Layout(LayoutError::DimOutOfRange { .. })
    ));
    assert!(matches!(
        m.searchsorted(&m, false).unwrap_err(),
        Error::Layout(LayoutError::SortedSequenceShape { .. })
    ));
    let (kv, ki) = m.kthvalue(2, 0, true).unwrap();
    assert_eq!(kv.shape(), &[1, 3]);
    assert_eq!(host(&kv), [4, 5, 6]);
    assert_eq!(host(&ki), [1, 1, 1]);
    let (e, _) = dev
        .upload(&Tensor::<f32>::from_vec(&[0, 3], vec![]).unwrap())
        .sort(0, false, false)
        .unwrap();
    assert_eq!(e.shape(), &[0, 3]);
}
test_device!(edges, sort_edges_and_errors_cpu, sort_edges_and_errors_gpu);

/// Every plan of the GPU's sort (`engine_gpu/sort/launch.rs`) on rows past 256: one block's
/// radix sort (rows up to 4096, 2048 for 8-byte keys), the radix select (`topk` of few keys, many rows or rows up to 2^17), the LSD radix sort of all
/// rows at once (a sort of several long rows: key and row-number passes; `topk` with `k`
/// past one block; `topk` of few keys in a few rows past 2^17), in `f32` with many ties or
/// mostly distinct values and the special values, and in `i64` and `f16`, each against the
/// stable reference.
fn long_rows<D: OrderDevice>(dev: &D) {
    fn check<T: SortElement, D: TestDevice + SortBackend<T>>(
        dev: &D,
        rows: usize,
        n: usize,
        k: Option<usize>,
        largest: bool,
        seed: u64,
    ) {
        let mut rng = Rng(0x51ED_2701_A5A5_0001 ^ seed);
        // Even seeds: many ties (values in [-40, 40]) and the special values; odd: mostly
        // distinct values, so that the k-th key is seldom tied (the radix select's unordered
        // collection).
        let (spread, specials) = if seed.is_multiple_of(2) {
            (40, true)
        } else {
            (1 << 22, false)
        };
        let x: Vec<T> = (0..rows * n)
            .map(|_| crate::order_cases::element(&mut rng, spread, specials))
            .collect();
        let t = dev.upload(&Tensor::from_vec(&[rows, n], x.clone()).unwrap());
        let (v, i) = match k {
            Some(k) => t.topk(k, 1, largest, true).unwrap(),
            None => t.sort(1, largest, true).unwrap(),
        };
        let m = k.unwrap_or(n);
        assert_eq!(v.shape(), &[rows, m]);
        let (v, i) = (host(&v), host(&i));
        for r in 0..rows {
            let lane: Vec<usize> = (r * n..(r + 1) * n).collect();
            let want = ref_sort(&x, &lane, largest);
            for j in 0..m {
                let p = r * m + j;
                assert!(
                    i[p] == want[j] as i64 && same(v[p], x[lane[want[j]]]),
                    "{} [{rows}, {n}] k {k:?} largest {largest}: row {r} at {j} got ({:?}, {}) want ({:?}, {})",
                    T::NAME, v[p], i[p], x[lane[want[j]]], want[j]
                );
            }
        }
    }
    check::<f32, D>(dev, 3, 9000, None, false, 1);
    check::<f32, D>(dev, 300, 2500, None, true, 2);
    check::<f32, D>(dev, 300, 5000, None, false, 11);
    check::<f32, D>(dev, 130, 5000, Some(7), true, 3);
    check::<f32, D>(dev, 2, 40_000, Some(2048), false, 4);
    check::<f32, D>(dev, 3, 5000, Some(3000), true, 5);
    check::<f32, D>(dev, 2, 140_000, Some(5), false, 6);
    check::<i64, D>(dev, 2, 9000, None, true, 7);
    check::<i64, D>(dev, 200, 3000, Some(64), false, 8);
    check::<half::f16, D>(dev, 4, 7000, None, false, 9);
    check::<half::f16, D>(dev, 1, 70_000, Some(100), true, 10);
    check::<f32, D>(dev, 140, 6000, Some(1), true, 13);
    check::<f32, D>(dev, 140, 6000, Some(64), false, 15);
    check::<f32, D>(dev, 3, 50_000, Some(2000), true, 17);
}
test_device!(
    long_rows,
    sort_and_topk_of_long_rows_cpu,
    sort_and_topk_of_long_rows_gpu
);
