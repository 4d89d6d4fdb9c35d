//! The shape basics of issue 28 (`tril`, `triu`, `pad`, `repeat`, `tile`, `roll`, `chunk`,
//! `split`, `split_sizes`, `unbind`, `select`, `slice_range`, `flatten`, `unflatten`) on both
//! engines, against a host reference written with index arithmetic over the input's
//! row-major values: random shapes (empty and size-1 dims included), inputs permuted and
//! flipped (so strides are not row-major), and the typed errors.

use crate::common::device::{host, test_device, TestDevice};
use crate::common::rng::Rng;
use typestate_tensor::error::{Error, LayoutError};
use typestate_tensor::tensor::pad::PadMode;
use typestate_tensor::tensor::{Tensor, TensorView};
use typestate_tensor::Cpu;

/// Row-major coordinates of flat index `i` in `shape`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut c = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        c[d] = i % shape[d];
        i /= shape[d];
    }
    c
}

/// The flat row-major index of `c` in `shape`.
fn ravel(c: &[usize], shape: &[usize]) -> usize {
    c.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i)
}

/// A random input of `shape` on `dev` whose strides are not row-major (a permuted, flipped
/// view of a stored tensor), with its values in logical row-major order. Values are small
/// distinct nonzero numbers, exact in `f32`.
fn input<'a, D: TestDevice>(
    rng: &mut Rng,
    stored: &'a mut Option<Tensor<f32, D>>,
    shape: &[usize],
    dev: &D,
) -> (TensorView<'a, f32, D>, Vec<f32>) {
    let rank = shape.len();
    // Store under a reversed shape, then view it transposed and flipped back to `shape`.
    let mut perm: Vec<usize> = (0..rank).rev().collect();
    if rank > 1 && rng.below(2) == 0 {
        perm.swap(0, 1);
    }
    let stored_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n)
        .map(|i| (i as f32 + 1.0) * if i % 3 == 0 { -1.0 } else { 1.0 })
        .collect();
    let cpu = Tensor::<f32, Cpu>::from_vec(&stored_shape, data).unwrap();
    *stored = Some(dev.upload(&cpu));
    let mut inverse = vec![0; rank];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p] = i;
    }
    let mut v = stored.as_ref().unwrap().permute(&inverse).unwrap();
    if rank > 0 && rng.below(2) == 0 {
        v = v.flip(0).unwrap();
    }
    assert_eq!(v.shape(), shape);
    let values = host(&v);
    (v, values)
}

fn random_shape(rng: &mut Rng, min_rank: usize) -> Vec<usize> {
    let rank = min_rank + rng.below(4 - min_rank.min(3));
    (0..rank).map(|_| rng.below(5)).collect()
}

/// The reference of `op` over `values` of `shape`: each output coordinate's source
/// coordinate (or `None` for a constant).
fn reference(
    values: &[f32],
    shape: &[usize],
    out_shape: &[usize],
    source: impl Fn(&[usize]) -> Option<Vec<usize>>,
    constant: f32,
) -> Vec<f32> {
    let n: usize = out_shape.iter().product();
    (0..n)
        .map(|i| match source(&unravel(i, out_shape)) {
            Some(c) => values[ravel(&c, shape)],
            None => constant,
        })
        .collect()
}

fn triangles<D: TestDevice>(dev: &D) {
    let mut rng = Rng(0x7121);
    for _ in 0..24 {
        let shape = random_shape(&mut rng, 2);
        let mut stored = None;
        let (x, values) = input(&mut rng, &mut stored, &shape, dev);
        let k = rng.below(7) as isize - 3;
        let r = shape.len();
        let keep_lower = |c: &[usize]| (c[r - 1] as isize - c[r - 2] as isize) <= k;
        let lower = reference(
            &values,
            &shape,
            &shape,
            |c| keep_lower(c).then(|| c.to_vec()),
            0.0,
        );
        let upper = reference(
            &values,
            &shape,
            &shape,
            |c| ((c[r - 1] as isize - c[r - 2] as isize) >= k).then(|| c.to_vec()),
            0.0,
        );
        assert_eq!(host(&x.tril(k).unwrap()), lower, "tril({k}) of {shape:?}");
        assert_eq!(host(&x.triu(k).unwrap()), upper, "triu({k}) of {shape:?}");
    }
    let v = dev.upload(&Tensor::<f32, Cpu>::from_vec(&[3], vec![1.0, 2.0, 3.0]).unwrap());
    assert!(matches!(
        v.tril(0),
        Err(Error::Layout(LayoutError::RankTooSmall {
            op: "tril",
            rank: 1,
            min: 2
        }))
    ));
}
test_device!(triangles, triangles_cpu, triangles_gpu);

fn pads<D: TestDevice>(dev: &D) {
    let mut rng = Rng(0x9ad);
    let modes = [
        PadMode::Constant(7.5),
        PadMode::Reflect,
        PadMode::Replicate,
        PadMode::Circular,
    ];
    for case in 0..48 {
        let mode = modes[case % 4];
        let shape: Vec<usize> = random_shape(&mut rng, 1).iter().map(|&n| n + 1).collect();
        let r = shape.len();
        let pairs = 1 + rng.below(r);
        let mut pads = Vec::new();
        for i in 0..pairs {
            let n = shape[r - 1 - i];
            let limit = match mode {
                PadMode::Reflect => n - 1,
                PadMode::Circular => n,
                _ => 3,
            };
            pads.push(rng.below(limit + 1));
            pads.push(rng.below(limit + 1));
        }
        let mut before = vec![0; r];
        let mut out_shape = shape.clone();
        for i in 0..pairs {
            before[r - 1 - i] = pads[2 * i];
            out_shape[r - 1 - i] += pads[2 * i] + pads[2 * i + 1];
        }
        let mut stored = None;
        let (x, values) = input(&mut rng, &mut stored, &shape, dev);
        let want = reference(
            &values,
            &shape,
            &out_shape,
            |c| {
                let mut src = Vec::with_capacity(r);
                for d in 0..r {
                    let (n, i) = (shape[d] as isize, c[d] as isize - before[d] as isize);
                    let j = match mode {
                        _ if (0..n).contains(&i) => i,
                        PadMode::Constant(_) => return None,
                        PadMode::Reflect if i < 0 => -i,
                        PadMode::Reflect => 2 * (n - 1) - i,
                        PadMode::Replicate => i.clamp(0, n - 1),
                        _ => i.rem_euclid(n),
                    };
                    src.push(j as usize);
                }
                Some(src)
            },
            7.5,
        );
        let got = x.pad(&pads, mode).unwrap();
        assert_eq!(got.shape(), out_shape.as_slice());
        assert_eq!(host(&got), want, "pad {pads:?} {mode:?} of {shape:?}");
    }
    let v = dev.upload(&Tensor::<f32, Cpu>::from_vec(&[2, 3], vec![1.0; 6]).unwrap());
    assert!(matches!(
        v.pad(&[3, 0], PadMode::Reflect),
        Err(Error::Layout(LayoutError::PadTooWide {
            mode: "reflect",
            dim: 1,
            pad: 3,
            size: 3,
            ..
        }))
    ));
    assert!(matches!(
        v.pad(&[1, 1, 1], PadMode::Replicate),
        Err(Error::Layout(LayoutError::PadLength {
            got: 3,
            rank: 2,
            ..
        }))
    ));
    assert!(matches!(
        v.pad(&[1; 6], PadMode::Constant(0.0)),
        Err(Error::Layout(LayoutError::PadLength {
            got: 6,
            rank: 2,
            ..
        }))
    ));
}
test_device!(pads, pads_cpu, pads_gpu);

fn repeats_and_rolls<D: TestDevice>(dev: &D) {
    let mut rng = Rng(0x5e1);
    for _ in 0..32 {
        let shape = random_shape(&mut rng, 1);
        let r = shape.len();
        let mut stored = None;
        let (x, values) = input(&mut rng, &mut stored, &shape, dev);
        // repeat: one count per dim plus up to two leading ones.
        let lead = rng.below(3);
        let reps: Vec<usize> = (0..r + lead).map(|_| rng.below(4)).collect();
        let out_shape: Vec<usize> = (0..r + lead)
            .map(|i| reps[i] * if i < lead { 1 } else { shape[i - lead] })
            .collect();
        let want = reference(
            &values,
            &shape,
            &out_shape,
            |c| Some((0..r).map(|d| c[lead + d] % shape[d]).collect()),
            0.0,
        );
        let got = x.repeat(&reps).unwrap();
        assert_eq!(got.shape(), out_shape.as_slice());
        assert_eq!(host(&got), want, "repeat {reps:?} of {shape:?}");
        // tile with fewer counts than dims pads them with ones.
        let tiles: Vec<usize> = (0..r.saturating_sub(1).max(1))
            .map(|_| 1 + rng.below(3))
            .collect();
        let full: Vec<usize> = std::iter::repeat_n(1, r - tiles.len())
            .chain(tiles.iter().copied())
            .collect();
        assert_eq!(
            host(&x.tile(&tiles).unwrap()),
            host(&x.repeat(&full).unwrap())
        );
        // roll over a random set of dims (one named twice sometimes), negative shifts too.
        let k = 1 + rng.below(r);
        let dims: Vec<isize> = (0..k)
            .map(|_| rng.below(r) as isize - if rng.below(2) == 0 { r as isize } else { 0 })
            .collect();
        let shifts: Vec<isize> = (0..k).map(|_| rng.below(13) as isize - 6).collect();
        let mut net = vec![0isize; r];
        for (&s, &d) in shifts.iter().zip(&dims) {
            net[d.rem_euclid(r as isize) as usize] += s;
        }
        let want = reference(
            &values,
            &shape,
            &shape,
            |c| {
                Some(
                    (0..r)
                        .map(|d| {
                            (c[d] as isize - net[d]).rem_euclid(shape[d].max(1) as isize) as usize
                        })
                        .collect(),
                )
            },
            0.0,
        );
        assert_eq!(
            host(&x.roll(&shifts, &dims).unwrap()),
            want,
            "roll {shifts:?} {dims:?} of {shape:?}"
        );
        // roll with no dims: the flattened tensor.
        let s = rng.below(9) as isize - 4;
        let n = values.len() as isize;
        let flat: Vec<f32> = (0..n)
            .map(|i| values[(i - s).rem_euclid(n.max(1)) as usize])
            .collect();
        assert_eq!(host(&x.roll::<i32>(&[s], &[]).unwrap()), flat);
    }
    let v = dev.upload(&Tensor::<f32, Cpu>::from_vec(&[2, 3], vec![1.0; 6]).unwrap());
    assert!(matches!(
        v.repeat(&[2]),
        Err(Error::Layout(LayoutError::ArgumentCount {
            what: "repeat counts",
            got: 1,
            ..
        }))
    ));
    assert!(matches!(
        v.roll(&[1, 2], &[0]),
        Err(Error::Layout(LayoutError::ArgumentCount {
            what: "shifts",
            got: 2,
            ..
        }))
    ));
}
test_device!(
    repeats_and_rolls,
    repeats_and_rolls_cpu,
    repeats_and_rolls_gpu
);

fn splits_and_selects<D: TestDevice>(dev: &D) {
    let mut rng = Rng(0x51c);
    for _ in 0..32 {
        let shape = random_shape(&mut rng, 1);
        let r = shape.len();
        let mut stored = None;
        let (x, values) = input(&mut rng, &mut stored, &shape, dev);
        let d = rng.below(r);
        let n = shape[d];
        let part = |start: usize, len: usize| {
            let mut s = shape.clone();
            s[d] = len;
            reference(
                &values,
                &shape,
                &s,
                |c| {
                    let mut c = c.to_vec();
                    c[d] += start;
                    Some(c)
                },
                0.0,
            )
        };
        // chunk: ceil(n / chunks) each.
        let chunks = 1 + rng.below(4);
        let pieces = x.chunk(chunks, d).unwrap();
        let step = if n == 0 { 0 } else { n.div_ceil(chunks) };
        let expected = if n == 0 { chunks } else { n.div_ceil(step) };
        assert_eq!(pieces.len(), expected, "chunk({chunks}) of {n}");
        for (i, p) in pieces.iter().enumerate() {
            let len = if n == 0 { 0 } else { step.min(n - i * step) };
            assert_eq!(host(p), part(i * step, len));
        }
        // split by size, and by a list of sizes.
        let size = 1 + rng.below(3);
        for (i, p) in x
            .split(size, d as isize - r as isize)
            .unwrap()
            .iter()
            .enumerate()
        {
            assert_eq!(host(p), part(i * size, size.min(n - i * size)));
        }
        let first = rng.below(n + 1);
        let parts = x.split_sizes(&[first, n - first], d).unwrap();
        assert_eq!(host(&parts[0]), part(0, first));
        assert_eq!(host(&parts[1]), part(first, n - first));
        // select, unbind, slice_range with negative bounds.
        if n > 0 {
            let i = rng.below(n);
            let neg = i as isize - n as isize;
            let mut s = shape.clone();
            s.remove(d);
            let want = reference(
                &values,
                &shape,
                &s,
                |c| {
                    let mut c = c.to_vec();
                    c.insert(d, i);
                    Some(c)
                },
                0.0,
            );
            assert_eq!(host(&x.select(d, neg).unwrap()), want);
            assert_eq!(host(&x.unbind(d).unwrap()[i]), want);
        }
        let a = rng.below(2 * n + 3) as isize - n as isize - 1;
        let b = rng.below(2 * n + 3) as isize - n as isize - 1;
        let clamp = |v: isize| {
            if v < 0 {
                (v + n as isize).max(0) as usize
            } else {
                (v as usize).min(n)
            }
        };
        let (lo, hi) = (clamp(a), clamp(b).max(clamp(a)));
        assert_eq!(
            host(&x.slice_range(d, a..b, 1).unwrap()),
            part(lo, hi - lo),
            "{a}..{b} of {n}"
        );
        assert_eq!(host(&x.slice_range(d, a.., 1).unwrap()), part(lo, n - lo));
        // flatten needs row-major strides: flatten the contiguous copy; unflatten any view.
        let c = x.contiguous().unwrap();
        let e = d + rng.below(r - d);
        let flat = c.flatten(d, e).unwrap();
        let merged: usize = shape[d..=e].iter().product();
        assert_eq!(flat.shape()[d], merged);
        assert_eq!(host(&flat), values);
        if n > 0 && n.is_multiple_of(2) {
            let u = x.unflatten(d, &[2, n / 2]).unwrap();
            assert_eq!(u.shape()[d..d + 2], [2, n / 2]);
            assert_eq!(host(&u), values);
        }
    }
    let v = dev.upload(&Tensor::<f32, Cpu>::from_vec(&[2, 3], vec![1.0; 6]).unwrap());
    assert!(matches!(
        v.select(1, -4),
        Err(Error::Layout(LayoutError::IndexOutOfRange {
            op: "select",
            index: -4,
            dim: 1,
            size: 3
        }))
    ));
    assert!(matches!(
        v.chunk(0, 0),
        Err(Error::Layout(LayoutError::InvalidSplit { op: "chunk", .. }))
    ));
    assert!(matches!(
        v.split_sizes(&[1, 1], 1),
        Err(Error::Layout(LayoutError::InvalidSplit {
            op: "split_sizes",
            dim: 1,
            size: 3,
            ..
        }))
    ));
    assert!(matches!(
        v.t().flatten(0, 1),
        Err(Error::Layout(LayoutError::ReshapeNeedsCopy {
            op: "flatten",
            ..
        }))
    ));
    assert!(matches!(
        v.flatten(1, 0),
        Err(Error::Layout(LayoutError::DimOrder {
            op: "flatten",
            start: 1,
            end: 0
        }))
    ));
    assert!(matches!(
        v.unflatten(1, &[2, 2]),
        Err(Error::Layout(LayoutError::DimSize {
            op: "unflatten",
            dim: 1,
            size: 3,
            expected: 4
        }))
    ));
}
test_device!(
    splits_and_selects,
    splits_and_selects_cpu,
    splits_and_selects_gpu
);
