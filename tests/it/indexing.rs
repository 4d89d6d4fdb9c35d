//! Indexing ops (issue 28) on every engine against plain host references: `gather`,
//! `index_select`, `take`, `embedding`, `scatter*`, `index_add` / `index_copy` /
//! `index_fill`, the masked ops, `nonzero`, `one_hot` and `bincount`, over random shapes
//! (empty dims included), random dims (negative ones too), transposed sources, index tensors
//! with duplicates; and out-of-range / negative indices, which must give
//! `LayoutError::IndexOutOfRange` with nothing written, not even around the destination.
//!
//! Tolerances: every float value is an integer in [-8, 8], so sums of up to a few hundred of
//! them, and products of up to 3, are exact in `f32` in any order (partial results stay far
//! below 2^24): GPU atomics, whose order varies, must still match exactly.

use crate::common::device::{host, test_device, TestDevice};
use crate::common::rng::Rng;
use typestate_tensor::error::LayoutError;
use typestate_tensor::tensor::indexing::{embedding, IndexBackend, ScatterBackend, ScatterReduce};
use typestate_tensor::tensor::Tensor;
use typestate_tensor::{Cpu, Error};

/// Row-major strides of `shape`.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// The coordinates of row-major position `i` of `shape`.
fn coords(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let st = strides(shape);
    st.iter()
        .map(|&s| {
            let c = i / s;
            i %= s;
            c
        })
        .collect()
}

fn flat(c: &[usize], shape: &[usize]) -> usize {
    c.iter().zip(strides(shape)).map(|(a, s)| a * s).sum()
}

/// A random shape of rank 1..=4 with dims 0..=4 (mostly non-empty).
fn shape(rng: &mut Rng) -> Vec<usize> {
    let rank = 1 + rng.below(4);
    (0..rank)
        .map(|_| {
            if rng.below(12) == 0 {
                0
            } else {
                1 + rng.below(4)
            }
        })
        .collect()
}

/// Integer-valued floats in [-8, 8], never all zero.
fn values(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| (rng.below(17) as f32) - 8.0).collect()
}

fn is_oob(e: &Error) -> bool {
    matches!(e, Error::Layout(LayoutError::IndexOutOfRange { .. }))
}

fn gather_random<D: TestDevice + IndexBackend<f32>>(dev: &D) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..200 {
        let s = shape(&mut rng);
        let rank = s.len();
        let dim = rng.below(rank);
        let mut is = s.clone();
        for d in 0..rank {
            if d != dim {
                is[d] = rng.below(s[d] + 1);
            }
        }
        is[dim] = rng.below(5);
        let n: usize = s.iter().product();
        let ni: usize = is.iter().product();
        let data = values(&mut rng, n);
        let idx: Vec<i64> = (0..ni)
            .map(|_| {
                if s[dim] == 0 {
                    0
                } else {
                    rng.below(s[dim]) as i64
                }
            })
            .collect();
        if s[dim] == 0 && ni > 0 {
            continue;
        }
        let x = dev.upload(&Tensor::from_vec(&s, data.clone()).unwrap());
        let i = dev.upload(&Tensor::from_vec(&is, idx.clone()).unwrap());
        let sdim = if rng.below(2) == 0 {
            dim as isize
        } else {
            dim as isize - rank as isize
        };
        let got = x.gather(sdim, &i).unwrap();
        assert_eq!(got.shape(), is.as_slice(), "case {case}");
        let want: Vec<f32> = (0..ni)
            .map(|p| {
                let mut c = coords(p, &is);
                c[dim] = idx[p] as usize;
                data[flat(&c, &s)]
            })
            .collect();
        assert_eq!(
            host(&got),
            want,
            "case {case}: gather {s:?} dim {dim} index {is:?}"
        );
        // The i32 index gives the same.
        let i32s: Vec<i32> = idx.iter().map(|&v| v as i32).collect();
        let i2 = dev.upload(&Tensor::from_vec(&is, i32s).unwrap());
        assert_eq!(host(&x.gather(dim, &i2).unwrap()), want);
    }
}
test_device!(gather_random, gather_random_cpu, gather_random_gpu);

fn index_select_random<D: TestDevice + IndexBackend<f32> + IndexBackend<i64>>(dev: &D) {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for case in 0..200 {
        let s = shape(&mut rng);
        let rank = s.len();
        let dim = rng.below(rank);
        if s[dim] == 0 {
            continue;
        }
        let n: usize = s.iter().product();
        let data = values(&mut rng, n);
        let k = rng.below(6);
        let idx: Vec<i64> = (0..k).map(|_| rng.below(s[dim]) as i64).collect();
        let x0 = dev.upload(&Tensor::from_vec(&s, data.clone()).unwrap());
        let i = dev.upload(&Tensor::from_vec(&[k], idx.clone()).unwrap());
        // A transposed source: the same logical tensor read through permuted strides.
        let transposed = rank >= 2 && rng.below(2) == 0;
        let xt;
        let got = if transposed {
            let mut st = s.clone();
            st.swap(0, rank - 1);
            let mut td = vec![0f32; n];
            for (p, v) in td.iter_mut().enumerate() {
                let mut c = coords(p, &st);
                c.swap(0, rank - 1);
                *v = data[flat(&c, &s)];
            }
            xt = dev.upload(&Tensor::from_vec(&st, td).unwrap());
            xt.transpose(0, -1).unwrap().index_select(dim, &i).unwrap()
        } else {
            x0.index_select(dim as isize - rank as isize, &i).unwrap()
        };
        let mut os = s.clone();
        os[dim] = k;
        assert_eq!(got.shape(), os.as_slice());
        let want: Vec<f32> = (0..os.iter().product())
            .map(|p| {
                let mut c = coords(p, &os);
                c[dim] = idx[c[dim]] as usize;
                data[flat(&c, &s)]
            })
            .collect();
        assert_eq!(
            host(&got),
            want,
            "case {case}: {s:?} dim {dim} transposed {transposed}"
        );
    }
    // embedding: rows of a [5, 3] table at a [2, 2] index with repeats; free function too.
    let w: Vec<f32> = (0..15).map(|v| v as f32).collect();
    let w = dev.upload(&Tensor::from_vec(&[5, 3], w).unwrap());
    let i = dev.upload(&Tensor::from_vec(&[2, 2], vec![4i64, 0, 4, 2]).unwrap());
    let e = i.embedding(&w).unwrap();
    assert_eq!(e.shape(), &[2, 2, 3]);
    assert_eq!(
        host(&e),
        [12., 13., 14., 0., 1., 2., 12., 13., 14., 6., 7., 8.]
    );
    assert_eq!(host(&embedding(&i, &w).unwrap()), host(&e));
    // take: negatives count from the end; the source is read in row-major order.
    let x = dev.upload(&Tensor::from_vec(&[2, 3], vec![1i64, 2, 3, 4, 5, 6]).unwrap());
    let t = dev.upload(&Tensor::from_vec(&[2, 2], vec![0i64, -1, 5, -6]).unwrap());
    let got = x.take(&t).unwrap();
    assert_eq!(got.shape(), &[2, 2]);
    assert_eq!(host(&got), [1, 6, 6, 1]);
    let xt = x.t().take(&t).unwrap();
    assert_eq!(host(&xt), [1, 6, 6, 1]);
}
test_device!(
    index_select_random,
    index_select_random_cpu,
    index_select_random_gpu
);

fn scatter_add_random<D: TestDevice + ScatterBackend<f32> + ScatterBackend<i64>>(dev: &D) {
    let mut rng = Rng(0x0bad_5eed_1234_5678);
    for case in 0..150 {
        let s = shape(&mut rng);
        let rank = s.len();
        let dim = rng.below(rank);
        if s[dim] == 0 {
            continue;
        }
        let mut is = s.clone();
        for d in 0..rank {
            is[d] = rng.below(s[d] + 1);
        }
        is[dim] = rng.below(7);
        let mut ss = is.clone();
        ss[rank - 1] += rng.below(2); // a source larger than the index is allowed
        let n: usize = s.iter().product();
        let ni: usize = is.iter().product();
        let nsrc: usize = ss.iter().product();
        let base = values(&mut rng, n);
        let src = values(&mut rng, nsrc);
        let idx: Vec<i64> = (0..ni).map(|_| rng.below(s[dim]) as i64).collect();
        let x = dev.upload(&Tensor::from_vec(&s, base.clone()).unwrap());
        let i = dev.upload(&Tensor::from_vec(&is, idx.clone()).unwrap());
        let sr = dev.upload(&Tensor::from_vec(&ss, src.clone()).unwrap());
        for mode in [
            ScatterReduce::Sum,
            ScatterReduce::Prod,
            ScatterReduce::Amax,
            ScatterReduce::Amin,
            ScatterReduce::Mean,
        ] {
            for include_self in [true, false] {
                // The reference: the values landing on each element, in order.
                let mut acc: Vec<Vec<f64>> = base
                    .iter()
                    .map(|&v| if include_self { vec![v as f64] } else { vec![] })
                    .collect();
                for (p, &ix) in idx.iter().enumerate() {
                    let c = coords(p, &is);
                    let mut t = c.clone();
                    t[dim] = ix as usize;
                    acc[flat(&t, &s)].push(src[flat(&c, &ss)] as f64);
                }
                let want: Vec<f32> = acc
                    .iter()
                    .enumerate()
                    .map(|(k, v)| {
                        if v.is_empty() {
                            return base[k];
                        }
                        (match mode {
                            ScatterReduce::Sum => v.iter().sum(),
                            ScatterReduce::Prod => v.iter().product(),
                            ScatterReduce::Amax => v.iter().cloned().fold(f64::MIN, f64::max),
                            ScatterReduce::Amin => v.iter().cloned().fold(f64::MAX, f64::min),
                            _ => v.iter().sum::<f64>() / v.len() as f64,
                        }) as f32
                    })
                    .collect();
                let got = x.scatter_reduce(dim, &i, &sr, mode, include_self).unwrap();
                let g = host(&got);
                for (k, (a, b)) in g.iter().zip(&want).enumerate() {
                    let tol = if mode == ScatterReduce::Mean {
                        1e-6 * b.abs().max(1.0)
                    } else {
                        0.0
                    };
                    assert!(
                        (a - b).abs() <= tol,
                        "case {case} {mode:?} self {include_self}: element {k}: {a} vs {b}"
                    );
                }
                if mode == ScatterReduce::Sum && include_self {
                    assert_eq!(
                        host(
                            &x.scatter_add(dim as isize - rank as isize, &i, &sr)
                                .unwrap()
                        ),
                        g
                    );
                }
            }
        }
    }
    // index_add with alpha, duplicates accumulate; i64.
    let x = dev.upload(&Tensor::from_vec(&[3, 2], vec![1i64, 1, 1, 1, 1, 1]).unwrap());
    let i = dev.upload(&Tensor::from_vec(&[4], vec![0i64, 2, 0, 0]).unwrap());
    let s = dev.upload(&Tensor::from_vec(&[4, 2], vec![1i64, 2, 3, 4, 5, 6, 7, 8]).unwrap());
    let got = x.index_add(0, &i, &s, 2).unwrap();
    assert_eq!(host(&got), [27, 33, 1, 1, 7, 9]);
    // index_add along dim 1 of f32, in place.
    let mut y = dev.upload(&Tensor::from_vec(&[2, 3], vec![0f32; 6]).unwrap());
    let i = dev.upload(&Tensor::from_vec(&[2], vec![2i64, 2]).unwrap());
    let s = dev.upload(&Tensor::from_vec(&[2, 2], vec![1f32, 2., 3., 4.]).unwrap());
    y.index_add_(-1, &i, &s, 1.0).unwrap();
    assert_eq!(host(&y), [0., 0., 3., 0., 0., 7.]);
    // bincount, weighted and not; one_hot.
    let v = dev.upload(&Tensor::from_vec(&[6], vec![1i64, 3, 1, 0, 3, 3]).unwrap());
    assert_eq!(host(&v.bincount(0).unwrap()), [1, 2, 0, 3]);
    assert_eq!(host(&v.bincount(6).unwrap()), [1, 2, 0, 3, 0, 0]);
    let w = dev.upload(&Tensor::from_vec(&[6], vec![0.5f32, 1., 2., 4., 8., 16.]).unwrap());
    assert_eq!(
        host(&v.bincount_weighted(&w, 0).unwrap()),
        [4., 2.5, 0., 25.]
    );
    let oh = v.one_hot(None).unwrap();
    assert_eq!(oh.shape(), &[6, 4]);
    assert_eq!(&host(&oh)[..8], [0, 1, 0, 0, 0, 0, 0, 1]);
    assert_eq!(v.one_hot(Some(5)).unwrap().shape(), &[6, 5]);
    let e = v.one_hot(Some(3)).unwrap_err();
    assert!(is_oob(&e), "{e}");
}
test_device!(
    scatter_add_random,
    scatter_add_random_cpu,
    scatter_add_random_gpu
);

fn scatter_assign_and_fill<D: TestDevice + IndexBackend<f32> + IndexBackend<bool>>(dev: &D) {
    // scatter with distinct targets per column (a permutation), so the result is unique.
    let x = dev.upload(&Tensor::from_vec(&[3, 2], vec![0f32; 6]).unwrap());
    let i = dev.upload(&Tensor::from_vec(&[3, 2], vec![2i64, 0, 0, 2, 1, 1]).unwrap());
    let s =
        dev.upload(&Tensor::from_vec(&[3, 3], vec![1f32, 2., 9., 3., 4., 9., 5., 6., 9.]).unwrap());
    assert_eq!(
        host(&x.scatter(0, &i, &s).unwrap()),
        [3., 2., 5., 6., 1., 4.]
    );
    assert_eq!(
        host(
            &x.scatter_value(0, &i.narrow(0, 0, 1).unwrap(), 7.0)
                .unwrap()
        ),
        [0., 7., 0., 0., 7., 0.]
    );
    // index_copy / index_fill (negative indices count from the end for index_fill only).
    let src = dev.upload(&Tensor::from_vec(&[3, 2], vec![1f32, 2., 3., 4., 5., 6.]).unwrap());
    let i = dev.upload(&Tensor::from_vec(&[2], vec![2i64, 0]).unwrap());
    let s = dev.upload(&Tensor::from_vec(&[2, 2], vec![9f32, 8., 7., 6.]).unwrap());
    assert_eq!(
        host(&src.index_copy(0, &i, &s).unwrap()),
        [7., 6., 3., 4., 9., 8.]
    );
    let neg = dev.upload(&Tensor::from_vec(&[1], vec![-1i64]).unwrap());
    assert_eq!(
        host(&src.index_fill(1, &neg, -1.0).unwrap()),
        [1., -1., 3., -1., 5., -1.]
    );
    assert!(is_oob(
        &src.index_copy(0, &neg, &s.narrow(0, 0, 1).unwrap())
            .unwrap_err()
    ));
    // bool tensors gather and scatter too.
    let b = dev.upload(&Tensor::from_vec(&[3], vec![true, false, true]).unwrap());
    let i = dev.upload(&Tensor::from_vec(&[4], vec![1i64, 1, 0, 2]).unwrap());
    assert_eq!(
        host(&b.index_select(0, &i).unwrap()),
        [false, false, true, true]
    );
    // masked ops, with a broadcast mask.
    let x = dev.upload(&Tensor::from_vec(&[2, 3], vec![1f32, 2., 3., 4., 5., 6.]).unwrap());
    let m = dev.upload(&Tensor::from_vec(&[3], vec![true, false, true]).unwrap());
    assert_eq!(
        host(&x.masked_fill(&m, 0.0).unwrap()),
        [0., 2., 0., 0., 5., 0.]
    );
    let mut y = x.contiguous().unwrap();
    y.masked_fill_(&m, -1.0).unwrap();
    assert_eq!(host(&y), [-1., 2., -1., -1., 5., -1.]);
    let sel = x.masked_select(&m).unwrap();
    assert_eq!(host(&sel), [1., 3., 4., 6.]);
    let src = dev.upload(&Tensor::from_vec(&[5], vec![10f32, 20., 30., 40., 50.]).unwrap());
    assert_eq!(
        host(&x.masked_scatter(&m, &src).unwrap()),
        [10., 2., 20., 30., 5., 40.]
    );
    let short = src.narrow(0, 0, 3).unwrap();
    assert!(x.masked_scatter(&m, &short).is_err());
    let nz = x.masked_fill(&m, 0.0).unwrap().nonzero().unwrap();
    assert_eq!(nz.shape(), &[2, 2]);
    assert_eq!(host(&nz), [0, 1, 1, 1]);
    // Empty tensors: nothing to gather, nothing to scatter.
    let e = dev.upload(&Tensor::from_vec(&[0, 3], Vec::<f32>::new()).unwrap());
    let ei = dev.upload(&Tensor::from_vec(&[0, 3], Vec::<i64>::new()).unwrap());
    assert_eq!(e.gather(1, &ei).unwrap().shape(), &[0, 3]);
    let none = dev.upload(&Tensor::from_vec(&[0], Vec::<i64>::new()).unwrap());
    assert_eq!(x.index_select(1, &none).unwrap().shape(), &[2, 0]);
    assert_eq!(
        host(&x.scatter(0, &ei.narrow(1, 0, 0).unwrap(), &x).unwrap()),
        host(&x)
    );
}
test_device!(
    scatter_assign_and_fill,
    scatter_assign_and_fill_cpu,
    scatter_assign_and_fill_gpu
);

/// `Mean` on integers rounds toward negative infinity, as PyTorch's `scatter_reduce` does
/// (`div_(count, rounding_mode="floor")`): by hand, then on random sums of both signs against
/// an `i128` reference.
fn scatter_mean_of_integers_floors<D: TestDevice + ScatterBackend<i64>>(dev: &D) {
    let x = dev.upload(&Tensor::from_vec(&[3], vec![10i64, 7, -1]).unwrap());
    let i = dev.upload(&Tensor::from_vec(&[4], vec![0i64, 0, 1, 2]).unwrap());
    let s = dev.upload(&Tensor::from_vec(&[4], vec![-3i64, -4, 5, -2]).unwrap());
    // With self: 3 / 3, 12 / 2, -3 / 2 = -1.5 (floor -2, where truncation gives -1).
    let with = x
        .scatter_reduce(0, &i, &s, ScatterReduce::Mean, true)
        .unwrap();
    assert_eq!(host(&with), vec![1, 6, -2]);
    // Without: -7 / 2 = -3.5 (floor -4), 5, -2.
    let without = x
        .scatter_reduce(0, &i, &s, ScatterReduce::Mean, false)
        .unwrap();
    assert_eq!(host(&without), vec![-4, 5, -2]);

    let mut rng = Rng(0x3ea7_0f1c_0a55_0001);
    for case in 0..40 {
        let n = 1 + rng.below(9);
        let m = rng.below(30);
        let base: Vec<i64> = (0..n).map(|_| rng.below(2001) as i64 - 1000).collect();
        let idx: Vec<i64> = (0..m).map(|_| rng.below(n) as i64).collect();
        let src: Vec<i64> = (0..m).map(|_| rng.below(2001) as i64 - 1000).collect();
        let x = dev.upload(&Tensor::from_vec(&[n], base.clone()).unwrap());
        let i = dev.upload(&Tensor::from_vec(&[m], idx.clone()).unwrap());
        let s = dev.upload(&Tensor::from_vec(&[m], src.clone()).unwrap());
        for include_self in [true, false] {
            let want: Vec<i64> = (0..n)
                .map(|k| {
                    let landed: Vec<i128> = idx
                        .iter()
                        .zip(&src)
                        .filter(|(&ix, _)| ix as usize == k)
                        .map(|(_, &v)| i128::from(v))
                        .collect();
                    if landed.is_empty() {
                        return base[k];
                    }
                    let own = if include_self {
                        vec![i128::from(base[k])]
                    } else {
                        vec![]
                    };
                    let all: Vec<i128> = own.into_iter().chain(landed).collect();
                    let sum: i128 = all.iter().sum();
                    sum.div_euclid(all.len() as i128) as i64
                })
                .collect();
            let got = x
                .scatter_reduce(0, &i, &s, ScatterReduce::Mean, include_self)
                .unwrap();
            assert_eq!(host(&got), want, "case {case}, include_self {include_self}");
        }
    }
}
test_device!(
    scatter_mean_of_integers_floors,
    scatter_mean_of_integers_floors_cpu,
    scatter_mean_of_integers_floors_gpu
);

/// Out-of-range and negative indices: the typed error, nothing written, the guard region
/// around the destination untouched.
fn out_of_range<D: TestDevice + ScatterBackend<f32> + ScatterBackend<i64>>(dev: &D) {
    let mut rng = Rng(0x5151_5151_aaaa_0001);
    let x = dev.upload(&Tensor::from_vec(&[3, 4], values(&mut rng, 12)).unwrap());
    for bad in [3i64, -1, 4, i64::MAX, i64::MIN, -4] {
        let i = dev.upload(&Tensor::from_vec(&[2, 2], vec![0i64, bad, 1, 2]).unwrap());
        let e = x.gather(0, &i).unwrap_err();
        match &e {
            Error::Layout(LayoutError::IndexOutOfRange {
                op,
                index,
                dim,
                size,
            }) => {
                assert_eq!((*op, *index, *dim, *size), ("gather", bad, 0, 3));
            }
            other => panic!("{other}"),
        }
        let i1 = dev.upload(&Tensor::from_vec(&[2], vec![0i64, bad]).unwrap());
        assert!(is_oob(&x.index_select(0, &i1).unwrap_err()));
        // In place into the middle of a larger tensor: nothing inside or around changes.
        let guard = values(&mut rng, 5 * 6);
        let mut big = dev.upload(&Tensor::from_vec(&[5, 6], guard.clone()).unwrap());
        {
            let mut inner = big
                .view_mut()
                .narrow(0, 1, 3)
                .unwrap()
                .narrow(1, 1, 4)
                .unwrap();
            let src = x.view();
            assert!(is_oob(&inner.scatter_add_(0, &i, &src).unwrap_err()));
            assert!(is_oob(&inner.scatter_(0, &i, &src).unwrap_err()));
            assert!(is_oob(
                &inner
                    .index_add_(0, &i1, &src.narrow(0, 0, 2).unwrap(), 1.0)
                    .unwrap_err()
            ));
            let e = inner
                .scatter_reduce_(0, &i, &src, ScatterReduce::Mean, false)
                .unwrap_err();
            assert!(is_oob(&e));
        }
        assert_eq!(host(&big), guard, "index {bad}: written despite the error");
        // Out of place: the op's own copy is dropped (on the GPU the scatter kernel itself
        // finds the index), `x` is untouched, and the error names the value.
        let before = host(&x);
        let src = x.view();
        let two = src.narrow(0, 0, 2).unwrap();
        let mut errors = vec![
            ("scatter_add", x.scatter_add(0, &i, &src).unwrap_err()),
            ("scatter", x.scatter(0, &i, &src).unwrap_err()),
            ("index_add", x.index_add(0, &i1, &two, 2.0).unwrap_err()),
            (
                "scatter_reduce",
                x.scatter_reduce(0, &i, &src, ScatterReduce::Amax, true)
                    .unwrap_err(),
            ),
            (
                "scatter_reduce",
                x.scatter_reduce(0, &i, &src, ScatterReduce::Mean, false)
                    .unwrap_err(),
            ),
        ];
        if bad != -1 {
            // index_fill wraps negatives: -1 is the last row.
            errors.push(("index_fill", x.index_fill(0, &i1, 1.0).unwrap_err()));
        }
        for (name, e) in errors {
            match &e {
                Error::Layout(LayoutError::IndexOutOfRange {
                    op,
                    index,
                    dim,
                    size,
                }) => assert_eq!((*op, *index, *dim, *size), (name, bad, 0, 3)),
                other => panic!("{name}: {other}"),
            }
        }
        assert_eq!(
            host(&x),
            before,
            "index {bad}: an out-of-place op wrote its input"
        );
    }
    // take wraps negatives down to -numel, no further.
    let t = dev.upload(&Tensor::from_vec(&[1], vec![-13i64]).unwrap());
    assert!(is_oob(&x.take(&t).unwrap_err()));
    let t = dev.upload(&Tensor::from_vec(&[1], vec![12i64]).unwrap());
    assert!(is_oob(&x.take(&t).unwrap_err()));
    let v = dev.upload(&Tensor::from_vec(&[2], vec![1i64, -2]).unwrap());
    assert!(is_oob(&v.bincount(0).unwrap_err()));
    assert!(is_oob(&v.one_hot(Some(4)).unwrap_err()));
    let w = dev.upload(&Tensor::from_vec(&[2, 2], vec![1f32, 2., 3., 4.]).unwrap());
    assert!(is_oob(&v.embedding(&w).unwrap_err()));
}
test_device!(out_of_range, out_of_range_cpu, out_of_range_gpu);

/// The CPU engine's own check, past the tensor layer's: a job with a bad index never
/// reaches memory (checked through the public ops on a CPU-only path: `i32` indices).
#[test]
fn i32_indices_out_of_range_cpu() {
    let x = Tensor::from_vec(&[4], vec![1f32, 2., 3., 4.]).unwrap();
    let i = Tensor::from_vec(&[2], vec![1i32, 4]).unwrap();
    assert!(is_oob(&x.index_select(0, &i).unwrap_err()));
    let _ = Cpu;
}

/// `index_select` and `embedding` over rows of every width that the GPU may move as 4-, 8- or
/// 16-byte words (`engine_gpu/indexing/launch.rs`, `Words::widen`), and over sources shifted
/// by one element so that those words are misaligned and the element-wise path must run:
/// 1-, 2-, 4- and 8-byte element types, against a host copy of the rows.
fn index_select_rows<T, D>(dev: &D, make: fn(usize) -> T)
where
    T: typestate_tensor::element::Element + PartialEq + std::fmt::Debug,
    D: TestDevice + IndexBackend<T>,
{
    let mut rng = Rng(0x005e_ed0f_5e1e_c7ed);
    for inner in [1usize, 2, 3, 4, 5, 8, 12, 16, 24, 33, 64] {
        for shift in [0usize, 1] {
            let (outer, rows) = (1 + rng.below(3), 1 + rng.below(9));
            let width = inner + shift;
            let data: Vec<T> = (0..outer * rows * width).map(|v| make(v * 7 + 3)).collect();
            let x = dev.upload(&Tensor::from_vec(&[outer, rows, width], data.clone()).unwrap());
            let src = x.narrow(2, shift, inner).unwrap();
            let k = 1 + rng.below(2 * rows);
            let idx: Vec<i64> = (0..k).map(|_| rng.below(rows) as i64).collect();
            let i = dev.upload(&Tensor::from_vec(&[k], idx.clone()).unwrap());
            let got = src.index_select(1, &i).unwrap();
            assert_eq!(got.shape(), &[outer, k, inner]);
            let mut want = Vec::with_capacity(outer * k * inner);
            for o in 0..outer {
                for &r in &idx {
                    let row = (o * rows + r as usize) * width + shift;
                    want.extend_from_slice(&data[row..row + inner]);
                }
            }
            assert_eq!(
                host(&got),
                want,
                "{} rows of {inner} shifted by {shift}",
                T::DTYPE.name()
            );
            // embedding: the same rows of the first table, for a 2-D index.
            let table = src.select(0, 0).unwrap();
            let ids = dev.upload(&Tensor::from_vec(&[1, k], idx.clone()).unwrap());
            let e = ids.embedding(&table).unwrap();
            assert_eq!(e.shape(), &[1, k, inner]);
            assert_eq!(host(&e), want[..k * inner].to_vec());
        }
    }
}

/// `gather` along the last dim (`torch.gather(x, -1, i)`, the NLL-loss and top-k pattern):
/// widths that are and are not multiples of 4 and 16-byte words, an index view shifted by one
/// element, a transposed and shifted source, `i32` and `i64` indices, 1- to 8-byte elements,
/// against a host copy; and one bad index among good ones (the typed error naming it).
fn gather_last_dim<T, D>(dev: &D, make: fn(usize) -> T)
where
    T: typestate_tensor::element::Element + PartialEq + std::fmt::Debug,
    D: TestDevice + IndexBackend<T>,
{
    let mut rng = Rng(0x0a11_9e44_c0de_0004);
    for width in [4usize, 6, 8, 12, 64, 100, 1028] {
        for (shift, transposed) in [(0usize, false), (1, false), (0, true), (1, true)] {
            let (rows, cols) = (1 + rng.below(6), 1 + rng.below(40));
            let data: Vec<T> = (0..rows * (cols + 1)).map(|v| make(v * 5 + 1)).collect();
            // The source: [rows, cols], row-major or the transpose of a [cols, rows] table,
            // a column in from the edge when shifted.
            let table = if transposed {
                dev.upload(&Tensor::from_vec(&[cols + 1, rows], data.clone()).unwrap())
            } else {
                dev.upload(&Tensor::from_vec(&[rows, cols + 1], data.clone()).unwrap())
            };
            let full = if transposed { table.t() } else { table.view() };
            let src = full.narrow(1, shift, cols).unwrap();
            let host_src = host(&src.contiguous().unwrap());
            let idx: Vec<i64> = (0..rows * (width + shift))
                .map(|_| rng.below(cols) as i64)
                .collect();
            let i_full =
                dev.upload(&Tensor::from_vec(&[rows, width + shift], idx.clone()).unwrap());
            let i = i_full.narrow(1, shift, width).unwrap();
            let want: Vec<T> = (0..rows * width)
                .map(|p| {
                    let (r, c) = (p / width, p % width);
                    host_src[r * cols + idx[r * (width + shift) + shift + c] as usize]
                })
                .collect();
            let name = T::DTYPE.name();
            let got = src.gather(-1, &i).unwrap();
            assert_eq!(
                host(&got),
                want,
                "{name} width {width} shift {shift} transposed {transposed}"
            );
            let idx32: Vec<i32> = idx.iter().map(|&v| v as i32).collect();
            let i32_full = dev.upload(&Tensor::from_vec(&[rows, width + shift], idx32).unwrap());
            let got = src
                .gather(1, &i32_full.narrow(1, shift, width).unwrap())
                .unwrap();
            assert_eq!(host(&got), want, "{name} i32 width {width} shift {shift}");
        }
        // One bad value among good ones.
        let src = dev.upload(&Tensor::from_vec(&[2, 3], (0..6).map(make).collect()).unwrap());
        let mut idx = vec![0i64; 2 * width];
        idx[width + 2] = 3;
        let i = dev.upload(&Tensor::from_vec(&[2, width], idx).unwrap());
        match src.gather(1, &i).unwrap_err() {
            Error::Layout(LayoutError::IndexOutOfRange {
                op,
                index,
                dim,
                size,
            }) => assert_eq!((op, index, dim, size), ("gather", 3, 1, 3)),
            other => panic!("{other}"),
        }
    }
}

/// Runs `$case(dev, make)` for 1-, 2-, 4- and 8-byte element types (`u8`, `f16`, `f32`,
/// `f64`), each made from a position by its own formula.
macro_rules! every_width {
    ($case:ident, $dev:expr) => {{
        $case($dev, |v| (v % 251) as u8);
        $case($dev, |v| half::f16::from_f32((v % 1000) as f32 - 500.0));
        $case($dev, |v| v as f32 * 0.5 - 100.0);
        $case($dev, |v| v as f64 * -0.25 + 7.0);
    }};
}

/// The element types of [`every_width`].
trait WidthsDevice:
    TestDevice + IndexBackend<u8> + IndexBackend<half::f16> + IndexBackend<f32> + IndexBackend<f64>
{
}
impl<D> WidthsDevice for D where
    D: TestDevice
        + IndexBackend<u8>
        + IndexBackend<half::f16>
        + IndexBackend<f32>
        + IndexBackend<f64>
{
}

fn gather_last_dim_of_every_width<D: WidthsDevice>(dev: &D) {
    every_width!(gather_last_dim, dev);
}
test_device!(
    gather_last_dim_of_every_width,
    gather_last_dim_of_every_width_cpu,
    gather_last_dim_of_every_width_gpu
);

fn index_select_rows_of_every_width<D: WidthsDevice>(dev: &D) {
    every_width!(index_select_rows, dev);
}
test_device!(
    index_select_rows_of_every_width,
    index_select_rows_of_every_width_cpu,
    index_select_rows_of_every_width_gpu
);
