//! `any` and `all` against a host reference: random shapes, zero-heavy data with NaN and
//! `-0.0`, every dim of random transposed and flipped views, `keepdim`, and empty inputs
//! (PyTorch: `any` of nothing is false, `all` of nothing is true).

use crate::common::device::{host, test_device, TestDevice};
use crate::common::rng::Rng;
use typestate_tensor::tensor::Tensor;
use typestate_tensor::Cpu;

/// Mostly zeros (so whole rows are all zero or all nonzero often enough), some `-0.0`,
/// NaN, and small values.
fn draw(rng: &mut Rng) -> f32 {
    match rng.below(10) {
        0..=4 => 0.0,
        5 => -0.0,
        6 => f32::NAN,
        _ => rng.below(7) as f32 - 3.0,
    }
}

/// Row-major strides of `shape`.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// The reference: for each output index (row-major over the kept dims), whether any / all
/// of the reduced elements are nonzero (NaN is nonzero, `-0.0` is zero).
fn reference(data: &[f32], shape: &[usize], dims: &[usize], all: bool) -> Vec<bool> {
    let kept: Vec<usize> = (0..shape.len()).filter(|d| !dims.contains(d)).collect();
    let out_shape: Vec<usize> = kept.iter().map(|&d| shape[d]).collect();
    let out_n: usize = out_shape.iter().product();
    let mut out = vec![all; out_n];
    let st = strides(shape);
    let out_st = strides(&out_shape);
    for (flat, &x) in data.iter().enumerate() {
        let mut o = 0;
        for (k, &d) in kept.iter().enumerate() {
            o += (flat / st[d] % shape[d]) * out_st[k];
        }
        let truthy = x != 0.0 || x.is_nan();
        if all {
            out[o] &= truthy;
        } else {
            out[o] |= truthy;
        }
    }
    out
}

test_device!(any_and_all_match_the_reference, any_all_cpu, any_all_gpu);
fn any_and_all_match_the_reference<D: TestDevice>(dev: &D) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for case in 0..40 {
        let rank = 1 + rng.below(4);
        let shape: Vec<usize> = (0..rank).map(|_| 1 + rng.below(5)).collect();
        let n: usize = shape.iter().product();
        let data: Vec<f32> = (0..n).map(|_| draw(&mut rng)).collect();
        let x = dev.upload(&Tensor::<f32, Cpu>::from_vec(&shape, data.clone()).unwrap());
        // A transposed and flipped view of `x` and its row-major data, so the reduction
        // reads a strided layout.
        let view = x.transpose(0, -1).unwrap().flip(0).unwrap();
        let vshape = view.shape().to_vec();
        let vdata = host(&view);

        assert_eq!(
            host(&view.any().unwrap()),
            reference(&vdata, &vshape, &(0..rank).collect::<Vec<_>>(), false),
            "case {case}: any of {vshape:?}"
        );
        assert_eq!(
            host(&view.all().unwrap()),
            reference(&vdata, &vshape, &(0..rank).collect::<Vec<_>>(), true),
            "case {case}: all of {vshape:?}"
        );
        for d in 0..rank {
            let want_any = reference(&vdata, &vshape, &[d], false);
            let want_all = reference(&vdata, &vshape, &[d], true);
            let any = view.any_dim(d, false).unwrap();
            let all = view.all_dim(d as isize - rank as isize, true).unwrap();
            assert_eq!(
                host(&any),
                want_any,
                "case {case}: any_dim({d}) of {vshape:?}"
            );
            assert_eq!(
                host(&all),
                want_all,
                "case {case}: all_dim({d}) of {vshape:?}"
            );
            assert_eq!(all.shape()[d], 1, "keepdim keeps the dim");
        }
        if rank >= 2 {
            let dims = [0, rank - 1];
            assert_eq!(
                host(&view.any_dims(&dims, false).unwrap()),
                reference(&vdata, &vshape, &dims, false),
                "case {case}: any_dims({dims:?}) of {vshape:?}"
            );
            assert_eq!(
                host(&view.all_dims(&dims, false).unwrap()),
                reference(&vdata, &vshape, &dims, true),
                "case {case}: all_dims({dims:?}) of {vshape:?}"
            );
        }
    }
}

test_device!(any_and_all_of_nothing, any_all_empty_cpu, any_all_empty_gpu);
fn any_and_all_of_nothing<D: TestDevice>(dev: &D) {
    let e = dev.upload(&Tensor::<i32, Cpu>::zeros(&[3, 0]).unwrap());
    assert_eq!(host(&e.any().unwrap()), [false]);
    assert_eq!(host(&e.all().unwrap()), [true]);
    // Reducing the empty dim gives one value per row; reducing the other an empty result.
    assert_eq!(host(&e.any_dim(1, false).unwrap()), [false; 3]);
    assert_eq!(host(&e.all_dim(1, false).unwrap()), [true; 3]);
    assert!(host(&e.any_dim(0, false).unwrap()).is_empty());
    // Integer and bool inputs: nonzero is true.
    let i = dev.upload(&Tensor::<i64, Cpu>::from_vec(&[3], vec![0, i64::MIN, 5]).unwrap());
    assert_eq!(host(&i.any().unwrap()), [true]);
    assert_eq!(host(&i.all().unwrap()), [false]);
    let b = dev.upload(&Tensor::<bool, Cpu>::from_vec(&[2], vec![true, true]).unwrap());
    assert_eq!(host(&b.all().unwrap()), [true]);
    let u = dev.upload(&Tensor::<u16, Cpu>::from_vec(&[2], vec![0, 0]).unwrap());
    assert_eq!(host(&u.any().unwrap()), [false]);
}
