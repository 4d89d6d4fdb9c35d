//! ndarray interop: borrowing ndarray views without copying (negative and zero strides
//! included), handing out ndarray views with our strides, and copies both ways. With the
//! `ndarray` feature (on by default).
#![cfg(feature = "ndarray")]

use ndarray::{s, Array, Array2, Array3, ArrayD, Axis, IxDyn};
use proptest::prelude::*;
use typestate_tensor::error::{Error, LayoutError};
use typestate_tensor::tensor::{Tensor, TensorView, TensorViewMut};

/// Whether `inner` points into `outer`'s memory.
fn within<T>(outer: &[T], inner: &[T]) -> bool {
    let r = outer.as_ptr_range();
    inner.is_empty() || (r.start <= inner.as_ptr() && inner.as_ptr_range().end <= r.end)
}

fn arange3(a: usize, b: usize, c: usize) -> Array3<i32> {
    Array::from_shape_fn((a, b, c), |(i, j, k)| (100 * i + 10 * j + k) as i32)
}

#[test]
fn borrows_dense_views_without_copying_and_keeps_strides() {
    let base = arange3(3, 4, 5);
    let mem = base.as_slice().unwrap();
    let mut flipped = base.view();
    flipped.invert_axis(Axis(1));
    let cases = [
        base.view(),
        base.view().reversed_axes(),
        base.view().permuted_axes([2, 0, 1]),
        flipped,
        flipped.permuted_axes([1, 2, 0]),
    ];
    for nd in cases {
        let t = TensorView::from_ndarray(nd.view()).unwrap();
        assert!(
            within(mem, t.storage()),
            "no copy for strides {:?}",
            nd.strides()
        );
        assert_eq!(t.strides(), nd.strides());
        assert_eq!(t.shape(), nd.shape());
        assert_eq!(t.to_vec(), nd.iter().copied().collect::<Vec<_>>());
        // Ops run on the borrowed view directly.
        let doubled = (&t + &t).unwrap();
        assert_eq!(
            doubled.to_vec(),
            nd.iter().map(|x| 2 * x).collect::<Vec<_>>()
        );
    }
}

#[test]
fn borrows_broadcast_views_as_zero_strides() {
    let row = Array::from_vec(vec![1.5f32, -2.0, 3.25]);
    let b = row.broadcast((4, 3)).unwrap();
    let t = TensorView::from_ndarray(b.view()).unwrap();
    assert_eq!(t.strides(), &[0, 1]);
    assert!(within(row.as_slice().unwrap(), t.storage()));
    assert_eq!(t.to_vec(), b.iter().copied().collect::<Vec<_>>());
    // A broadcast view is readable but never writable.
    let m = Array2::from_shape_vec((4, 3), (0..12).map(|x| x as f32).collect()).unwrap();
    let sum = (&TensorView::from_ndarray(m.view()).unwrap() + &t).unwrap();
    assert_eq!(sum.to_ndarray().unwrap(), (&m + &b).into_dyn());
}

#[test]
fn stepped_views_are_refused_and_copied_instead() {
    let base = arange3(4, 4, 6);
    let stepped = base.slice(s![..;2, .., 1..;-2]);
    let err = TensorView::from_ndarray(stepped.view()).unwrap_err();
    assert!(
        matches!(&err, Error::Layout(LayoutError::NotDense { shape, strides, .. })
            if shape == stepped.shape() && strides == stepped.strides()),
        "{err}"
    );
    let copy = Tensor::from_ndarray(&stepped).unwrap();
    assert_eq!(copy.to_vec(), stepped.iter().copied().collect::<Vec<_>>());
    assert_eq!(copy.shape(), stepped.shape());
}

#[test]
fn writes_through_a_borrowed_mutable_view_reach_the_array() {
    let mut base = arange3(2, 3, 4);
    let want = {
        let mut w = base.clone();
        w.slice_mut(s![.., ..;-1, ..]).mapv_inplace(|x| x * 3 + 1);
        w
    };
    {
        let mut v = base.view_mut();
        v.invert_axis(Axis(1));
        let mut t = TensorViewMut::from_ndarray(v).unwrap();
        assert_eq!(t.strides(), &[12, -4, 1]);
        t.mul_scalar_(3).unwrap();
        t.add_scalar_(1).unwrap();
    }
    assert_eq!(base, want);
    // A stepped mutable view has gaps: refused.
    let mut other = arange3(2, 3, 4);
    let err = TensorViewMut::from_ndarray(other.slice_mut(s![.., .., ..;2])).unwrap_err();
    assert!(matches!(err, Error::Layout(LayoutError::NotDense { .. })));
}

#[test]
fn hands_out_ndarray_views_with_the_same_strides() {
    let t = Tensor::from_fn(&[3, 4, 2], |i| (i[0] * 8 + i[1] * 2 + i[2]) as i64).unwrap();
    let reference = ArrayD::from_shape_vec(IxDyn(&[3, 4, 2]), t.to_vec()).unwrap();
    let v = t
        .permute(&[1, 2, 0])
        .unwrap()
        .flip(0)
        .unwrap()
        .slice(2, 0, 3, 2)
        .unwrap();
    let nd = v.as_ndarray().unwrap();
    assert_eq!(nd.strides(), v.strides());
    assert!(nd.strides().iter().any(|&s| s < 0));
    let mut want = reference.view().permuted_axes(IxDyn(&[1, 2, 0]));
    want.invert_axis(Axis(0));
    let want = want.slice_axis(Axis(2), ndarray::Slice::new(0, Some(3), 2));
    assert_eq!(nd, want);
    // The same memory, not a copy.
    assert!(t.as_slice().unwrap().as_ptr_range().contains(&nd.as_ptr()));
    // Broadcast views become zero-stride ndarray views.
    let b = t.narrow(0, 0, 1).unwrap().broadcast_to(&[5, 4, 2]).unwrap();
    let nb = b.as_ndarray().unwrap();
    assert_eq!(nb.strides(), &[0, 2, 1]);
    assert_eq!(
        nb,
        reference
            .slice(s![0..1, .., ..])
            .broadcast(IxDyn(&[5, 4, 2]))
            .unwrap()
    );
    // Writable: changes through the ndarray view land in the tensor.
    let mut w = t.clone();
    {
        let mut m = w.view_mut().flip(1).unwrap();
        let mut nm = m.as_ndarray_mut().unwrap();
        assert_eq!(nm.strides(), &[8, -2, 1]);
        nm[[0, 0, 0]] = -1; // logical [0, 0, 0] is storage index 6
    }
    assert_eq!(w.get(&[0, 3, 0]).unwrap(), -1);
    w.as_ndarray_mut().unwrap()[[2, 3, 1]] = -2;
    assert_eq!(w.as_slice().unwrap()[23], -2);
    assert_eq!(t.as_ndarray().unwrap(), reference);
}

#[test]
fn copies_round_trip() {
    let a = Array2::from_shape_fn((3, 5), |(i, j)| {
        half::bf16::from_f32((i * 5 + j) as f32 / 4.0)
    });
    let t = Tensor::from_ndarray(&a.t()).unwrap();
    assert_eq!(t.shape(), &[5, 3]);
    assert_eq!(t.to_ndarray().unwrap(), a.t().into_dyn());
    assert_eq!(t.t().to_ndarray().unwrap(), a.clone().into_dyn());
    let e = Tensor::<u8>::zeros(&[0, 3]).unwrap();
    assert_eq!(e.to_ndarray().unwrap().shape(), &[0, 3]);
    assert_eq!(e.as_ndarray().unwrap().shape(), &[0, 3]);
    let s = Tensor::scalar(true);
    assert!(s.to_ndarray().unwrap()[IxDyn(&[])]);
    let empty = ndarray::Array2::<f64>::zeros((2, 0));
    let ev = TensorView::from_ndarray(empty.view()).unwrap();
    assert_eq!(ev.shape(), &[2, 0]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Random dense views (permuted, flipped, broadcast) borrow without copying, and
    /// handing them back to ndarray gives the same array.
    #[test]
    fn dense_views_round_trip(
        shape in prop::collection::vec(1usize..5, 1..=4),
        seed in any::<u64>(),
        bcast in 0usize..3,
    ) {
        let n: usize = shape.iter().product();
        let base = ArrayD::from_shape_vec(IxDyn(&shape), (0..n as i64).map(|x| x * 7 - 11).collect()).unwrap();
        let mut v = base.view();
        let rank = shape.len();
        let mut perm: Vec<usize> = (0..rank).collect();
        let mut s = seed;
        for i in (1..rank).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            perm.swap(i, (s >> 33) as usize % (i + 1));
        }
        v = v.permuted_axes(IxDyn(&perm));
        for ax in 0..rank {
            if (seed >> ax) & 1 == 1 {
                v.invert_axis(Axis(ax));
            }
        }
        let mut target = vec![bcast + 1];
        target.extend_from_slice(v.shape());
        let vb = v.broadcast(IxDyn(&target)).unwrap();
        let t = TensorView::from_ndarray(vb.view()).unwrap();
        prop_assert!(within(base.as_slice().unwrap(), t.storage()));
        prop_assert_eq!(t.strides(), vb.strides());
        prop_assert_eq!(t.to_vec(), vb.iter().copied().collect::<Vec<_>>());
        let back = t.as_ndarray().unwrap();
        prop_assert_eq!(back.strides(), vb.strides());
        prop_assert_eq!(&back, &vb);
        prop_assert_eq!(t.neg().unwrap().to_ndarray().unwrap(), vb.mapv(|x| -x));
    }
}

#[test]
fn the_reexported_ndarray_is_the_one_tensors_convert_with() {
    let a: typestate_tensor::ndarray::ArrayD<f32> =
        typestate_tensor::ndarray::ArrayD::from_shape_vec(
            IxDyn(&[2, 3]),
            vec![1.0, -2.0, 3.5, 0.0, 5.0, -6.25],
        )
        .unwrap();
    let t = Tensor::from_ndarray(&a).unwrap();
    assert_eq!(t.to_ndarray().unwrap(), a);
}
