//! Tensor and view API: constructors, layout views against ndarray's, element access,
//! copies, operators on mixed operand kinds, and the errors of each.

use ndarray::{ArrayD, Axis, Dimension, IxDyn, Slice};
use proptest::prelude::*;
use typestate_tensor::error::{Error, LayoutError};
use typestate_tensor::layout::Layout;
use typestate_tensor::tensor::{AsView, Tensor, TensorView, TensorViewMut};
use typestate_tensor::Cpu;

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

fn same(ours: &TensorView<'_, i64>, reference: ndarray::ArrayViewD<'_, i64>) {
    assert_eq!(ours.shape(), reference.shape());
    assert_eq!(ours.to_vec(), reference.iter().copied().collect::<Vec<_>>());
}

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..5, 0..=5)
}

#[test]
fn constructors_fill_row_major() {
    let t = Tensor::from_fn(&[2, 3], |i| (10 * i[0] + i[1]) as i32).unwrap();
    assert_eq!(t.to_vec(), vec![0, 1, 2, 10, 11, 12]);
    assert_eq!(t.strides(), &[3, 1]);
    assert_eq!(
        Tensor::<f32>::zeros(&[2, 2]).unwrap().to_vec(),
        vec![0.0; 4]
    );
    assert_eq!(Tensor::full(&[3], 2.5f64).unwrap().to_vec(), vec![2.5; 3]);
    assert_eq!(Tensor::<u8>::arange(4).unwrap().to_vec(), vec![0, 1, 2, 3]);
    let s = Tensor::scalar(7i64);
    assert_eq!((s.rank(), s.numel(), s.get(&[]).unwrap()), (0, 1, 7));
    let e = Tensor::<f32>::zeros(&[3, 0, 2]).unwrap();
    assert_eq!((e.numel(), e.to_vec()), (0, vec![]));
    let g = Tensor::full_on(&[2], true, &Cpu).unwrap();
    assert_eq!(g.to_vec(), vec![true, true]);
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

    #[test]
    fn view_methods_match_ndarray(shape in shape_strategy(), seed in any::<u64>(), d in 0usize..6, k in 0usize..6, step in -3isize..4) {
        let (t, a) = pair(&shape, seed);
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
            let mut tm = t.clone();
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
    }

    #[test]
    fn reshape_views_or_asks_for_a_copy(shape in shape_strategy(), seed in any::<u64>()) {
        let (t, a) = pair(&shape, seed);
        let n = t.numel();
        let flat = t.reshape(&[n]).unwrap();
        same(&flat, a.view().into_shape_with_order(IxDyn(&[n])).unwrap());
        // The transpose of a matrix-like tensor cannot be flattened as a view.
        let tt = t.t();
        let contiguous_anyway = tt.layout().is_contiguous();
        match tt.reshape(&[n]) {
            Ok(v) => {
                prop_assert!(contiguous_anyway || n <= 1 || v.layout().is_contiguous() || shape.iter().filter(|&&d| d > 1).count() <= 1);
                prop_assert_eq!(v.to_vec(), a.t().iter().copied().collect::<Vec<_>>());
            }
            Err(e) => prop_assert!(matches!(e, Error::Layout(LayoutError::ReshapeNeedsCopy { .. })), "{}", e),
        }
        let copied = tt.reshape_copy(&[n]).unwrap();
        prop_assert_eq!(copied.to_vec(), a.t().iter().copied().collect::<Vec<_>>());
        prop_assert!(copied.layout().is_contiguous());
    }

    #[test]
    fn get_matches_ndarray_indexing(shape in shape_strategy(), seed in any::<u64>()) {
        let (t, a) = pair(&shape, seed);
        let f = t.t();
        for (idx, &x) in a.t().indexed_iter() {
            prop_assert_eq!(f.get(idx.slice()).unwrap(), x);
        }
    }
}

#[test]
fn writes_through_views_land_in_the_tensor() {
    let mut t = Tensor::from_fn(&[3, 4], |i| (i[0] * 4 + i[1]) as i32).unwrap();
    // Column 1, rows reversed, written through a transposed, flipped, narrowed view.
    {
        let mut col = t.view_mut().t().narrow(0, 1, 1).unwrap().flip(1).unwrap();
        assert_eq!(col.shape(), &[1, 3]);
        col.copy_from(&Tensor::from_vec(&[3], vec![-1, -2, -3]).unwrap())
            .unwrap();
    }
    assert_eq!(t.to_vec(), vec![0, -3, 2, 3, 4, -2, 6, 7, 8, -1, 10, 11]);
    // reborrow keeps the handle; into_view gives up writing.
    let mut v = t.view_mut();
    v.reborrow().narrow(1, 3, 1).unwrap().fill_(9).unwrap();
    let r = v.into_view();
    assert_eq!(r.get(&[2, 3]).unwrap(), 9);
    assert_eq!(t.get(&[0, 3]).unwrap(), 9);
}

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

#[test]
fn set_layout_relayouts_an_owned_tensor_without_copying() {
    let mut t = Tensor::from_fn(&[2, 3], |i| (i[0] * 3 + i[1]) as f32).unwrap();
    let ptr = t.storage().as_ptr();
    let l = t.layout().t();
    t.set_layout(l).unwrap();
    assert_eq!(t.shape(), &[3, 2]);
    assert_eq!(t.to_vec(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    assert_eq!(t.storage().as_ptr(), ptr);
    // A layout beyond the storage is refused and nothing changes.
    let far = Layout::new(&[7], &[1], 0).unwrap();
    assert!(matches!(
        t.set_layout(far),
        Err(Error::Layout(LayoutError::OutOfStorage { .. }))
    ));
    assert_eq!(t.shape(), &[3, 2]);
    // into_vec copies when the layout is not the whole storage in order.
    assert_eq!(t.clone().into_vec(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    let c = t.contiguous().unwrap();
    assert_eq!(c.strides(), &[2, 1]);
    assert_eq!(c.try_clone().unwrap().into_vec(), t.to_vec());
    // from_parts checks like set_layout.
    let (storage, layout, dev) = t.into_parts();
    assert_eq!(layout.strides(), &[1, 3]);
    let bad = Layout::new(&[2, 2], &[0, 1], 0).unwrap();
    let kept = storage.clone();
    // A failure hands every part back.
    let back = Tensor::from_parts(storage, bad.clone(), dev).unwrap_err();
    assert!(matches!(
        back.error(),
        Error::Layout(LayoutError::OverlappingOutput { .. })
    ));
    let (storage, bad_back, dev) = back.into_inner();
    assert_eq!((storage.as_slice(), &bad_back), (kept.as_slice(), &bad));
    let outside = Layout::new(&[7], &[1], 0).unwrap();
    let back = Tensor::from_parts(storage, outside, dev).unwrap_err();
    assert!(matches!(
        back.error(),
        Error::Layout(LayoutError::OutOfStorage { .. })
    ));
    let (storage, _, dev) = back.into_inner();
    assert_eq!(storage, kept);
    assert!(Tensor::from_parts(storage, layout, dev).is_ok());
}

#[test]
fn operators_mix_tensors_and_views() {
    let (a, na) = pair(&[3, 4], 1);
    let (b, nb) = pair(&[4], 2);
    let (mut c, nc) = pair(&[4, 3], 3);
    let want = &na + &nb;
    assert_eq!(
        (&a + &b).unwrap().to_vec(),
        want.iter().copied().collect::<Vec<_>>()
    );
    assert_eq!(
        (&a.view() + &b).unwrap().to_vec(),
        (&na + &nb).iter().copied().collect::<Vec<_>>()
    );
    let want = &na - &nc.t();
    let ct = c.view_mut().t();
    assert_eq!(
        (&a - &ct).unwrap().to_vec(),
        want.iter().copied().collect::<Vec<_>>()
    );
    assert_eq!(
        (&ct * &a.view()).unwrap().to_vec(),
        (&nc.t() * &na).iter().copied().collect::<Vec<_>>()
    );
    let q = (&ct / &b).unwrap();
    let want = nc.t().mapv(|x| x) / &nb;
    assert_eq!(q.to_vec(), want.iter().copied().collect::<Vec<_>>());
    assert_eq!(
        (-&ct).unwrap().to_vec(),
        nc.t().iter().map(|x| -x).collect::<Vec<_>>()
    );
    assert_eq!(
        (&ct + &ct).unwrap().to_vec(),
        (&nc.t() + &nc.t()).iter().copied().collect::<Vec<_>>()
    );
    assert_eq!(
        (&a.t() - &ct.view().t()).unwrap().to_vec(),
        (&na.t() - &nc).iter().copied().collect::<Vec<_>>()
    );
    // Sources may alias each other.
    assert_eq!(
        (&a * &a).unwrap().to_vec(),
        (&na * &na).iter().copied().collect::<Vec<_>>()
    );
    // Rank-0 operands broadcast everywhere.
    let s = Tensor::scalar(5i64);
    assert_eq!(
        (&a + &s).unwrap().to_vec(),
        (&na + 5).iter().copied().collect::<Vec<_>>()
    );
}

#[test]
fn results_are_row_major_whatever_the_inputs() {
    let (a, na) = pair(&[4, 5, 3], 9);
    let v = a.permute(&[2, 0, 1]).unwrap().flip(1).unwrap();
    let mut nv = na.view().permuted_axes(IxDyn(&[2, 0, 1]));
    nv.invert_axis(Axis(1));
    let r = v.abs().unwrap();
    assert!(r.layout().is_contiguous() && r.layout().offset() == 0);
    assert_eq!(r.to_vec(), nv.iter().map(|x| x.abs()).collect::<Vec<_>>());
}

#[test]
fn ops_generic_over_operand_kinds() {
    fn total(x: &impl AsView<i64, Cpu>) -> f64 {
        x.view().sum()
    }
    let (mut a, na) = pair(&[2, 3], 4);
    let s: i64 = na.sum();
    assert_eq!(total(&a), s as f64);
    assert_eq!(total(&a.view()), s as f64);
    assert_eq!(total(&a.view_mut()), s as f64);
    let mut m = a.view_mut();
    let d: TensorViewMut<'_, i64> = m.reborrow();
    assert_eq!(total(&d), s as f64);
}

#[test]
fn debug_and_display_describe_the_tensor() {
    let t = Tensor::from_vec(&[2, 2], vec![1.5f32, -2.0, 3.0, 4.25]).unwrap();
    let dbg = format!("{t:?}");
    assert!(
        dbg.contains("F32") && dbg.contains("[2, 2]") && dbg.contains("cpu"),
        "{dbg}"
    );
    let shown = format!("{}", t.t());
    assert!(shown.contains("[[1.5, 3]"), "{shown}");
    assert!(format!("{t}").contains("[3, 4.25]"));
    let mut c = t.clone();
    let views = format!("{:?} {:?}", t.view(), c.view_mut());
    assert!(
        views.contains("TensorView {") && views.contains("TensorViewMut {"),
        "{views}"
    );
}

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
