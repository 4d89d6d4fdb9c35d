//! Tensor and view API: constructors, layout views against ndarray's, element access,
//! copies, operators on mixed operand kinds, and the errors of each.
//!
//! Each test that means the same on every device is written once, generic over
//! [`TestDevice`], and instantiated by `test_device!` as `<name>_cpu` and `<name>_gpu`; the
//! GPU instance prints `<name>_gpu: skipped, no CUDA driver or GPU on this machine` without
//! a GPU. Inputs are made on the host and uploaded, results read back to the host; the
//! references (ndarray, plain loops) never touch the device. The tests at the end are
//! CPU-only by nature (host memory: `get`, `as_slice`, `into_vec`, `Display`, host
//! constructors), each with the reason.

use crate::common::device::{host, test_device, TestDevice};
use ndarray::{ArrayD, Axis, Dimension, IxDyn, Slice};
use proptest::prelude::*;
use typestate_tensor::error::{Error, LayoutError};
use typestate_tensor::layout::Layout;
use typestate_tensor::tensor::{AsView, Tensor, TensorView, TensorViewMut};

/// A random-valued tensor of `shape` and the same values as an ndarray.
fn pair(shape: &[usize], seed: u64) -> (Tensor<i64>, ArrayD<i64>) {
    let mut s = seed | 1;
    let t = Tensor::from_fn(shape, |_| {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 40) as i64 - (1 << 23)
    })
    .unwrap();
    let a = ArrayD::from_shape_vec(IxDyn(shape), t.to_vec()).unwrap();
    (t, a)
}

fn same<D: TestDevice>(ours: &TensorView<'_, i64, D>, reference: ndarray::ArrayViewD<'_, i64>) {
    assert_eq!(ours.shape(), reference.shape());
    assert_eq!(host(ours), reference.iter().copied().collect::<Vec<_>>());
}

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..5, 0..=5)
}

// ---- on every device -------------------------------------------------------------------

test_device!(
    constructors_fill_row_major,
    constructors_fill_row_major_cpu,
    constructors_fill_row_major_gpu
);
fn constructors_fill_row_major<D: TestDevice>(dev: &D) {
    let t = dev.upload(&Tensor::from_fn(&[2, 3], |i| (10 * i[0] + i[1]) as i32).unwrap());
    assert_eq!(host(&t), vec![0, 1, 2, 10, 11, 12]);
    assert_eq!(t.strides(), &[3, 1]);
    assert_eq!(
        host(&Tensor::<f32, D>::zeros_on(&[2, 2], dev).unwrap()),
        vec![0.0; 4]
    );
    assert_eq!(
        host(&Tensor::full_on(&[3], 2.5f64, dev).unwrap()),
        vec![2.5; 3]
    );
    assert_eq!(
        host(&dev.upload(&Tensor::<u8>::arange(4).unwrap())),
        vec![0, 1, 2, 3]
    );
    let s = dev.upload(&Tensor::scalar(7i64));
    assert_eq!((s.rank(), s.numel(), D::element(&s.view(), &[])), (0, 1, 7));
    let e = Tensor::<f32, D>::zeros_on(&[3, 0, 2], dev).unwrap();
    assert_eq!((e.numel(), host(&e)), (0, vec![]));
    let g = Tensor::full_on(&[2], true, dev).unwrap();
    assert_eq!(host(&g), vec![true, true]);
}

test_device!(
    view_methods_match_ndarray,
    view_methods_match_ndarray_cpu,
    view_methods_match_ndarray_gpu
);
fn view_methods_match_ndarray<D: TestDevice>(dev: &D) {
    proptest!(ProptestConfig::with_cases(96), |(shape in shape_strategy(), seed in any::<u64>(), d in 0usize..6, k in 0usize..6, step in -3isize..4)| {
        let (t, a) = pair(&shape, seed);
        let t = dev.upload(&t);
        let rank = shape.len();
        // t() and permute
        same(&t.t(), a.view().reversed_axes());
        let mut perm: Vec<usize> = (0..rank).collect();
        perm.rotate_left(if rank > 0 { k % rank } else { 0 });
        same(&t.permute(&perm).unwrap(), a.view().permuted_axes(IxDyn(&perm)));
        // Views of views, and the same on the owned tensor and a writable view.
        let v = t.view();
        if rank > 0 {
            let d = d % rank;
            let n = shape[d];
            let (lo, hi) = ((k % (n + 1)).min(seed as usize % (n + 1)), (k % (n + 1)).max(seed as usize % (n + 1)));
            let step = if step == 0 { 1 } else { step };
            let want = a.slice_axis(Axis(d), Slice::new(lo as isize, Some(hi as isize), step));
            same(&v.slice(d as isize, lo, hi, step).unwrap(), want.view());
            same(&t.slice(d as isize, lo, hi, step).unwrap(), want.view());
            let mut tm = t.try_clone().unwrap();
            same(&tm.view_mut().slice(d as isize, lo, hi, step).unwrap().view(), want.view());
            same(&v.narrow(d as isize, lo, hi - lo).unwrap(), a.slice_axis(Axis(d), Slice::from(lo..hi)));
            let mut flipped = a.view();
            flipped.invert_axis(Axis(d));
            same(&v.flip(d as isize).unwrap(), flipped.view());
            same(&v.flip(d as isize - rank as isize).unwrap(), flipped);
            let e = (d + k) % rank;
            let mut sw = a.view();
            sw.swap_axes(d, e);
            same(&t.transpose(d as isize, e as isize).unwrap(), sw);
        }
        // unsqueeze / squeeze
        let u = t.unsqueeze(-1).unwrap();
        same(&u, a.view().insert_axis(Axis(rank)));
        same(&u.squeeze(-1).unwrap(), a.view());
        let squeezed: Vec<usize> = shape.iter().copied().filter(|&n| n != 1).collect();
        same(&u.squeeze_all(), a.view().into_shape_with_order(IxDyn(&squeezed)).unwrap());
        // broadcast to extra leading dims and grown size-1 dims
        let mut target = vec![2];
        target.extend(shape.iter().map(|&n| if n == 1 { 3 } else { n }));
        same(&t.broadcast_to(&target).unwrap(), a.broadcast(IxDyn(&target)).unwrap());
        same(&v.expand(&target).unwrap(), a.broadcast(IxDyn(&target)).unwrap());
    });
}

test_device!(
    reshape_views_or_asks_for_a_copy,
    reshape_views_or_asks_for_a_copy_cpu,
    reshape_views_or_asks_for_a_copy_gpu
);
fn reshape_views_or_asks_for_a_copy<D: TestDevice>(dev: &D) {
    proptest!(ProptestConfig::with_cases(96), |(shape in shape_strategy(), seed in any::<u64>())| {
        let (t, a) = pair(&shape, seed);
        let t = dev.upload(&t);
        let n = t.numel();
        let flat = t.reshape(&[n]).unwrap();
        same(&flat, a.view().into_shape_with_order(IxDyn(&[n])).unwrap());
        // The transpose of a matrix-like tensor cannot be flattened as a view.
        let tt = t.t();
        let contiguous_anyway = tt.layout().is_contiguous();
        match tt.reshape(&[n]) {
            Ok(v) => {
                prop_assert!(contiguous_anyway || n <= 1 || v.layout().is_contiguous() || shape.iter().filter(|&&d| d > 1).count() <= 1);
                prop_assert_eq!(host(&v), a.t().iter().copied().collect::<Vec<_>>());
            }
            Err(e) => prop_assert!(matches!(e, Error::Layout(LayoutError::ReshapeNeedsCopy { .. })), "{}", e),
        }
        let copied = tt.reshape_copy(&[n]).unwrap();
        prop_assert_eq!(host(&copied), a.t().iter().copied().collect::<Vec<_>>());
        prop_assert!(copied.layout().is_contiguous());
    });
}

test_device!(
    writes_through_views_land_in_the_tensor,
    writes_through_views_land_in_the_tensor_cpu,
    writes_through_views_land_in_the_tensor_gpu
);
fn writes_through_views_land_in_the_tensor<D: TestDevice>(dev: &D) {
    let mut t = dev.upload(&Tensor::from_fn(&[3, 4], |i| (i[0] * 4 + i[1]) as i32).unwrap());
    // Column 1, rows reversed, written through a transposed, flipped, narrowed view.
    {
        let mut col = t.view_mut().t().narrow(0, 1, 1).unwrap().flip(1).unwrap();
        assert_eq!(col.shape(), &[1, 3]);
        col.copy_from(&dev.upload(&Tensor::from_vec(&[3], vec![-1, -2, -3]).unwrap()))
            .unwrap();
    }
    assert_eq!(host(&t), vec![0, -3, 2, 3, 4, -2, 6, 7, 8, -1, 10, 11]);
    // reborrow keeps the handle; into_view gives up writing.
    let mut v = t.view_mut();
    v.reborrow().narrow(1, 3, 1).unwrap().fill_(9).unwrap();
    let r = v.into_view();
    assert_eq!(D::element(&r, &[2, 3]), 9);
    assert_eq!(D::element(&t.view(), &[0, 3]), 9);
}

test_device!(
    set_layout_relayouts_an_owned_tensor_without_copying,
    set_layout_relayouts_an_owned_tensor_without_copying_cpu,
    set_layout_relayouts_an_owned_tensor_without_copying_gpu
);
fn set_layout_relayouts_an_owned_tensor_without_copying<D: TestDevice>(dev: &D) {
    let mut t = dev.upload(&Tensor::from_fn(&[2, 3], |i| (i[0] * 3 + i[1]) as f32).unwrap());
    let key = D::storage_key(t.storage());
    let l = t.layout().t();
    t.set_layout(l).unwrap();
    assert_eq!(t.shape(), &[3, 2]);
    assert_eq!(host(&t), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    assert_eq!(D::storage_key(t.storage()), key);
    // A layout beyond the storage is refused and nothing changes.
    let far = Layout::new(&[7], &[1], 0).unwrap();
    assert!(matches!(
        t.set_layout(far),
        Err(Error::Layout(LayoutError::OutOfStorage { .. }))
    ));
    assert_eq!(t.shape(), &[3, 2]);
    let c = t.contiguous().unwrap();
    assert_eq!(c.strides(), &[2, 1]);
    assert_eq!(host(&c.try_clone().unwrap()), host(&t));
    // from_parts checks like set_layout.
    let (storage, layout, device) = t.into_parts();
    assert_eq!(layout.strides(), &[1, 3]);
    let bad = Layout::new(&[2, 2], &[0, 1], 0).unwrap();
    let kept = (D::storage_key(&storage), D::storage_to_host(&storage));
    // A failure hands every part back: the same allocation, unchanged.
    let back = Tensor::<f32, D>::from_parts(storage, bad.clone(), device).unwrap_err();
    assert!(matches!(
        back.error(),
        Error::Layout(LayoutError::OverlappingOutput { .. })
    ));
    let (storage, bad_back, device) = back.into_inner();
    assert_eq!(
        (
            D::storage_key(&storage),
            D::storage_to_host(&storage),
            &bad_back
        ),
        (kept.0.clone(), kept.1.clone(), &bad)
    );
    let outside = Layout::new(&[7], &[1], 0).unwrap();
    let back = Tensor::<f32, D>::from_parts(storage, outside, device).unwrap_err();
    assert!(matches!(
        back.error(),
        Error::Layout(LayoutError::OutOfStorage { .. })
    ));
    let (storage, _, device) = back.into_inner();
    assert_eq!(
        (D::storage_key(&storage), D::storage_to_host(&storage)),
        kept
    );
    assert!(Tensor::<f32, D>::from_parts(storage, layout, device).is_ok());
}

test_device!(
    operators_mix_tensors_and_views,
    operators_mix_tensors_and_views_cpu,
    operators_mix_tensors_and_views_gpu
);
fn operators_mix_tensors_and_views<D: TestDevice>(dev: &D) {
    let (a, na) = pair(&[3, 4], 1);
    let (b, nb) = pair(&[4], 2);
    let (c, nc) = pair(&[4, 3], 3);
    let (a, b, mut c) = (dev.upload(&a), dev.upload(&b), dev.upload(&c));
    let want = &na + &nb;
    assert_eq!(
        host(&(&a + &b).unwrap()),
        want.iter().copied().collect::<Vec<_>>()
    );
    assert_eq!(
        host(&(&a.view() + &b).unwrap()),
        (&na + &nb).iter().copied().collect::<Vec<_>>()
    );
    let want = &na - &nc.t();
    let ct = c.view_mut().t();
    assert_eq!(
        host(&(&a - &ct).unwrap()),
        want.iter().copied().collect::<Vec<_>>()
    );
    assert_eq!(
        host(&(&ct * &a.view()).unwrap()),
        (&nc.t() * &na).iter().copied().collect::<Vec<_>>()
    );
    let q = (&ct / &b).unwrap();
    let want = nc.t().mapv(|x| x) / &nb;
    assert_eq!(host(&q), want.iter().copied().collect::<Vec<_>>());
    assert_eq!(
        host(&(-&ct).unwrap()),
        nc.t().iter().map(|x| -x).collect::<Vec<_>>()
    );
    assert_eq!(
        host(&(&ct + &ct).unwrap()),
        (&nc.t() + &nc.t()).iter().copied().collect::<Vec<_>>()
    );
    assert_eq!(
        host(&(&a.t() - &ct.view().t()).unwrap()),
        (&na.t() - &nc).iter().copied().collect::<Vec<_>>()
    );
    // Sources may alias each other.
    assert_eq!(
        host(&(&a * &a).unwrap()),
        (&na * &na).iter().copied().collect::<Vec<_>>()
    );
    // Rank-0 operands broadcast everywhere.
    let s = dev.upload(&Tensor::scalar(5i64));
    assert_eq!(
        host(&(&a + &s).unwrap()),
        (&na + 5).iter().copied().collect::<Vec<_>>()
    );
}

test_device!(
    results_are_row_major_whatever_the_inputs,
    results_are_row_major_whatever_the_inputs_cpu,
    results_are_row_major_whatever_the_inputs_gpu
);
fn results_are_row_major_whatever_the_inputs<D: TestDevice>(dev: &D) {
    let (a, na) = pair(&[4, 5, 3], 9);
    let a = dev.upload(&a);
    let v = a.permute(&[2, 0, 1]).unwrap().flip(1).unwrap();
    let mut nv = na.view().permuted_axes(IxDyn(&[2, 0, 1]));
    nv.invert_axis(Axis(1));
    let r = v.abs().unwrap();
    assert!(r.layout().is_contiguous() && r.layout().offset() == 0);
    assert_eq!(host(&r), nv.iter().map(|x| x.abs()).collect::<Vec<_>>());
}

test_device!(
    ops_generic_over_operand_kinds,
    ops_generic_over_operand_kinds_cpu,
    ops_generic_over_operand_kinds_gpu
);
fn ops_generic_over_operand_kinds<D: TestDevice>(dev: &D) {
    fn total<D: TestDevice>(x: &impl AsView<i64, D>) -> f64 {
        D::total(&x.view())
    }
    let (a, na) = pair(&[2, 3], 4);
    let mut a = dev.upload(&a);
    let s: i64 = na.sum();
    assert_eq!(total(&a), s as f64);
    assert_eq!(total(&a.view()), s as f64);
    assert_eq!(total(&a.view_mut()), s as f64);
    let mut m = a.view_mut();
    let d: TensorViewMut<'_, i64, D> = m.reborrow();
    assert_eq!(total(&d), s as f64);
}

test_device!(
    debug_describes_the_tensor,
    debug_describes_the_tensor_cpu,
    debug_describes_the_tensor_gpu
);
fn debug_describes_the_tensor<D: TestDevice>(dev: &D) {
    let t = dev.upload(&Tensor::from_vec(&[2, 2], vec![1.5f32, -2.0, 3.0, 4.25]).unwrap());
    let dbg = format!("{t:?}");
    assert!(
        dbg.contains("F32") && dbg.contains("[2, 2]") && dbg.contains(&dev.name()),
        "{dbg}"
    );
    let mut c = t.try_clone().unwrap();
    let views = format!("{:?} {:?}", t.view(), c.view_mut());
    assert!(
        views.contains("TensorView {") && views.contains("TensorViewMut {"),
        "{views}"
    );
}

test_device!(
    layout_errors_name_the_dim,
    layout_errors_name_the_dim_cpu,
    layout_errors_name_the_dim_gpu
);
fn layout_errors_name_the_dim<D: TestDevice>(dev: &D) {
    let t = Tensor::<i32, D>::zeros_on(&[2, 3], dev).unwrap();
    assert!(matches!(
        t.squeeze(0),
        Err(Error::Layout(LayoutError::DimSize {
            dim: 0,
            size: 2,
            ..
        }))
    ));
    assert!(matches!(
        t.transpose(0, 2),
        Err(Error::Layout(LayoutError::DimOutOfRange {
            dim: 2,
            rank: 2,
            ..
        }))
    ));
    assert!(matches!(
        t.reshape(&[4]),
        Err(Error::Layout(LayoutError::ReshapeNumel { .. }))
    ));
    assert!(matches!(
        t.slice(1, 0, 3, 0),
        Err(Error::Layout(LayoutError::RangeOutOfBounds { step: 0, .. }))
    ));
}

// ---- CPU only --------------------------------------------------------------------------

// Host constructors: `zeros`, `full` and `from_vec` build `Tensor<T, Cpu>` from host data
// (a GPU tensor is made with `zeros_on` / `full_on` or moved with `to_gpu`, tested above).
#[test]
fn host_constructors_fill_row_major() {
    assert_eq!(
        Tensor::<f32>::zeros(&[2, 2]).unwrap().to_vec(),
        vec![0.0; 4]
    );
    assert_eq!(Tensor::full(&[3], 2.5f64).unwrap().to_vec(), vec![2.5; 3]);
    let e = Tensor::<f32>::zeros(&[3, 0, 2]).unwrap();
    assert_eq!((e.numel(), e.to_vec()), (0, vec![]));
    assert!(matches!(
        Tensor::from_vec(&[2, 3], vec![1u8; 5]),
        Err(Error::Layout(LayoutError::LengthMismatch {
            op: "from_vec",
            expected: 6,
            got: 5,
            ..
        }))
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    // `get` indexes host memory (a GPU tensor has no element access: `to_cpu` first).
    #[test]
    fn get_matches_ndarray_indexing(shape in shape_strategy(), seed in any::<u64>()) {
        let (t, a) = pair(&shape, seed);
        let f = t.t();
        for (idx, &x) in a.t().indexed_iter() {
            prop_assert_eq!(f.get(idx.slice()).unwrap(), x);
        }
    }
}

// `as_slice` / `as_slice_mut` lend host memory.
#[test]
fn slices_exist_only_for_contiguous_layouts() {
    let mut t = Tensor::from_fn(&[2, 3], |i| (i[0] * 3 + i[1]) as u8).unwrap();
    assert_eq!(t.as_slice().unwrap(), &[0, 1, 2, 3, 4, 5]);
    assert!(t.t().as_slice().is_none());
    assert_eq!(t.narrow(0, 1, 1).unwrap().as_slice().unwrap(), &[3, 4, 5]);
    t.as_slice_mut().unwrap()[0] = 9;
    let mut v = t.view_mut().narrow(0, 1, 1).unwrap();
    v.as_slice_mut().unwrap()[2] = 8;
    assert_eq!(v.as_slice().unwrap(), &[3, 4, 8]);
    assert_eq!(t.to_vec(), vec![9, 1, 2, 3, 4, 8]);
    assert!(t.view_mut().t().as_slice_mut().is_none());
}

// `into_vec` hands back the host `Vec` (a GPU tensor goes through `to_cpu`).
#[test]
fn into_vec_copies_when_the_layout_is_not_the_whole_storage() {
    let mut t = Tensor::from_fn(&[2, 3], |i| (i[0] * 3 + i[1]) as f32).unwrap();
    let l = t.layout().t();
    t.set_layout(l).unwrap();
    // into_vec copies when the layout is not the whole storage in order.
    assert_eq!(t.clone().into_vec(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    let c = t.contiguous().unwrap();
    assert_eq!(c.strides(), &[2, 1]);
    assert_eq!(c.try_clone().unwrap().into_vec(), t.to_vec());
}

// `Display` prints the elements in logical order (exact strings on every device are in
// `tests/it/basics.rs`); `Debug` is tested on every device above.
#[test]
fn display_prints_the_elements() {
    let t = Tensor::from_vec(&[2, 2], vec![1.5f32, -2.0, 3.0, 4.25]).unwrap();
    let shown = format!("{}", t.t());
    assert_eq!(
        shown,
        "[[ 1.5,  3.0],\n [-2.0, 4.25]], shape=[2, 2], dtype=f32"
    );
    assert!(format!("{t}").contains("[ 3.0, 4.25]"));
}

// `get` indexes host memory; the layout errors of the other methods are tested on every
// device above.
#[test]
fn index_errors_name_the_dim() {
    let t = Tensor::<i32>::zeros(&[2, 3]).unwrap();
    assert!(matches!(
        t.get(&[1, 3]),
        Err(Error::Layout(LayoutError::IndexOutOfBounds {
            dim: 1,
            index: 3,
            size: 3,
            ..
        }))
    ));
    assert!(matches!(
        t.get(&[1]),
        Err(Error::Layout(LayoutError::IndexLength { .. }))
    ));
}

// ---- Names and arguments a newcomer reaches for (issue 16) ----------------------------

/// CPU-only: the storage's address shows that no copy was made.
#[test]
fn into_reshape_keeps_the_storage_of_a_temporary() {
    let (t, a) = pair(&[4, 6], 90);
    let before = t.storage().as_ptr();
    let m = t.into_reshape(&[2, 3, 4]).unwrap();
    assert_eq!(m.storage().as_ptr(), before, "no copy");
    same(
        &m.view(),
        a.view().into_shape_with_order(IxDyn(&[2, 3, 4])).unwrap(),
    );
    // A temporary: the form `reshape` (a borrowing view) cannot take.
    let r = Tensor::<f32>::arange(6)
        .unwrap()
        .into_reshape(&[3, 2])
        .unwrap();
    assert_eq!(r.get(&[2, 1]).unwrap(), 5.0);
    // Another element count, or strides that need a copy: an error, the tensor handed back.
    let err = m.into_reshape(&[5, 5]).unwrap_err();
    assert!(matches!(err.error, Error::Layout(_)), "{}", err.error);
    let mut m = err.into_inner();
    m.set_layout(m.layout().t()).unwrap(); // 4x3x2, column-major over the storage
    let err = m.into_reshape(&[24]).unwrap_err();
    assert!(
        matches!(
            err.error,
            Error::Layout(LayoutError::ReshapeNeedsCopy { .. })
        ),
        "{}",
        err.error
    );
    let m = err.into_inner();
    same(
        &m.view(),
        a.view()
            .into_shape_with_order(IxDyn(&[2, 3, 4]))
            .unwrap()
            .reversed_axes(),
    );
}

/// CPU-only: layout arithmetic, the same on every device.
#[test]
fn dim_arguments_take_any_integer_and_count_negatives_from_the_end() {
    let (t, a) = pair(&[2, 3, 4], 91);
    for d in 0..3usize {
        let neg = d as i64 - 3;
        let want = {
            let mut r = a.view();
            r.invert_axis(Axis(d));
            r
        };
        same(&t.flip(d).unwrap(), want.view());
        same(&t.flip(neg).unwrap(), want.view());
        same(&t.flip(d as i32).unwrap(), want.view());
        same(
            &t.narrow(neg as isize, 1, 1).unwrap(),
            a.slice_axis(Axis(d), Slice::from(1..2)),
        );
    }
    let p = t.permute(&[-1, 0, 1]).unwrap();
    same(&p, a.view().permuted_axes(IxDyn(&[2, 0, 1])));
    assert_eq!(p.layout(), t.permute(&[2usize, 0, 1]).unwrap().layout());
    same(
        &t.transpose(-1, 0u8).unwrap(),
        a.view().permuted_axes(IxDyn(&[2, 1, 0])),
    );
    assert!(matches!(
        t.permute(&[0, 1, 3]).unwrap_err(),
        Error::Layout(LayoutError::InvalidPermutation { .. })
    ));
    for bad in [
        t.flip(3).unwrap_err(),
        t.flip(-4).unwrap_err(),
        t.flip(usize::MAX).unwrap_err(),
        t.permute(&[0, 1, -4]).unwrap_err(),
    ] {
        assert!(
            matches!(
                bad,
                Error::Layout(LayoutError::DimOutOfRange { rank: 3, .. })
            ),
            "{bad}"
        );
    }
}

/// CPU-only: `asum` / `sumsq` are host reductions. The old names still work (deprecated).
#[test]
#[allow(deprecated)]
fn renamed_methods_keep_their_old_names() {
    let (t, a) = pair(&[3, 5], 92);
    let mask = t.gt(&Tensor::scalar(0i64)).unwrap();
    let zero = Tensor::scalar(0i64);
    let new = Tensor::where_cond(&mask, &t, &zero).unwrap();
    assert_eq!(
        new.to_vec(),
        a.iter().map(|&x| x.max(0)).collect::<Vec<_>>()
    );
    let asum: f64 = a.iter().map(|&x| (x as f64).abs()).sum();
    let sumsq: f64 = a.iter().map(|&x| (x as f64) * (x as f64)).sum();
    assert_eq!((t.asum(), t.sumsq()), (asum, sumsq));
}
