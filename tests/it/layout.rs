//! Layout views, broadcasting, collapsing and overlap, checked against ndarray and a naive
//! multi-index walk on random shapes, strides and offsets.

use ndarray::{ArrayD, Axis, IxDyn, Slice};
use proptest::prelude::*;
use typestate_tensor::error::LayoutError;
use typestate_tensor::layout::{broadcast_shapes, collapse, Layout};

/// Storage offsets of every element in row-major order, by brute force.
fn walk(l: &Layout) -> Vec<usize> {
    let n = l.numel();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; l.rank()];
    for _ in 0..n {
        out.push(l.index_to_offset(&idx).unwrap());
        for d in (0..l.rank()).rev() {
            idx[d] += 1;
            if idx[d] < l.shape()[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// The layout's offsets as an ndarray, so ndarray's own view ops act as the reference.
fn as_array(l: &Layout) -> ArrayD<usize> {
    ArrayD::from_shape_vec(IxDyn(l.shape()), walk(l)).unwrap()
}

fn check_same(ours: &Layout, reference: ndarray::ArrayViewD<usize>) {
    assert_eq!(ours.shape(), reference.shape());
    assert_eq!(walk(ours), reference.iter().copied().collect::<Vec<_>>());
}

/// A random strided layout over a storage: random shape (rank 0-6, zero dims allowed),
/// derived from a contiguous base by permuting, flipping and stepping, at a random offset.
fn arb_layout() -> impl Strategy<Value = Layout> {
    (
        prop::collection::vec(0usize..5, 0..=6),
        any::<u64>(),
        0usize..7,
    )
        .prop_map(|(shape, seed, off)| {
            let mut l = Layout::contiguous(&shape).unwrap();
            l = Layout::new(l.shape(), l.strides(), off).unwrap();
            let mut s = seed;
            let mut next = || {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (s >> 33) as usize
            };
            for d in 0..l.rank() {
                match next() % 4 {
                    0 => l = l.flip(d as isize).unwrap(),
                    1 if l.shape()[d] > 1 => {
                        let n = l.shape()[d];
                        l = l
                            .slice(d as isize, next() % n, n, 1 + (next() % 2) as isize)
                            .unwrap()
                    }
                    _ => {}
                }
            }
            let mut perm: Vec<usize> = (0..l.rank()).collect();
            for i in (1..perm.len()).rev() {
                perm.swap(i, next() % (i + 1));
            }
            l.permute(&perm).unwrap()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn permute_matches_ndarray(l in arb_layout(), seed in any::<u64>()) {
        let mut perm: Vec<usize> = (0..l.rank()).collect();
        let mut s = seed;
        for i in (1..perm.len()).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
            perm.swap(i, (s >> 33) as usize % (i + 1));
        }
        let a = as_array(&l);
        check_same(&l.permute(&perm).unwrap(), a.view().permuted_axes(perm.clone()));
    }

    #[test]
    fn slice_with_steps_matches_ndarray(l in arb_layout(), d in 0usize..6, a in 0usize..5, b in 0usize..5, step in -3isize..4) {
        prop_assume!(l.rank() > 0 && step != 0);
        let d = d % l.rank();
        let n = l.shape()[d];
        let (start, end) = (a.min(b).min(n), a.max(b).min(n));
        let arr = as_array(&l);
        let ours = l.slice(d as isize, start, end, step).unwrap();
        let reference = arr.slice_axis(Axis(d), Slice::new(start as isize, Some(end as isize), step));
        check_same(&ours, reference);
        prop_assert!(ours.check_within("test", l.offset_range().map_or(0, |r| r.1 + 1)).is_ok());
    }

    #[test]
    fn flip_matches_ndarray(l in arb_layout(), d in 0usize..6) {
        prop_assume!(l.rank() > 0);
        let d = d % l.rank();
        let mut arr = as_array(&l);
        arr.invert_axis(Axis(d));
        check_same(&l.flip(d as isize).unwrap(), arr.view());
        check_same(&l.flip(-(l.rank() as isize) + d as isize).unwrap(), arr.view());
    }

    #[test]
    fn broadcast_matches_ndarray(l in arb_layout(), extra in prop::collection::vec(1usize..4, 0..3), grow in any::<u64>()) {
        // Target: extra leading dims, and size-1 dims grown.
        let mut target = extra.clone();
        for (i, &n) in l.shape().iter().enumerate() {
            target.push(if n == 1 { 1 + ((grow >> i) % 3) as usize } else { n });
        }
        let arr = as_array(&l);
        let ours = l.broadcast_to(&target).unwrap();
        check_same(&ours, arr.broadcast(IxDyn(&target)).unwrap());
        let grew = ours.numel() > l.numel();
        prop_assert!(!grew || !ours.is_non_overlapping());
    }

    #[test]
    fn reshape_is_a_view_when_possible_and_row_major(l in arb_layout(), split in any::<u64>()) {
        let n = l.numel();
        // A random factorisation of n.
        let mut target = vec![];
        let mut rest = n;
        let mut s = split;
        while rest > 1 {
            let f = (2..=rest).find(|f| rest % f == 0 && s % 2 == 0).unwrap_or(rest);
            s /= 2;
            target.push(f);
            rest /= f;
        }
        if n == 0 { target = vec![0, 3]; }
        match l.reshape(&target) {
            Ok(v) => prop_assert_eq!(walk(&v), walk(&l)),
            Err(LayoutError::ReshapeNeedsCopy { .. }) => {
                // Only a non-contiguous layout may need a copy.
                prop_assert!(!l.is_contiguous());
            }
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
        // Contiguous layouts always reshape.
        let c = Layout::contiguous(l.shape()).unwrap();
        prop_assert_eq!(walk(&c.reshape(&target).unwrap()), walk(&c));
    }

    #[test]
    fn unsqueeze_squeeze_round_trip(l in arb_layout(), d in 0usize..7) {
        let d = d % (l.rank() + 1);
        let u = l.unsqueeze(d as isize).unwrap();
        prop_assert_eq!(u.shape()[d], 1);
        prop_assert_eq!(walk(&u), walk(&l));
        prop_assert_eq!(walk(&u.squeeze(d as isize).unwrap()), walk(&l));
        prop_assert_eq!(walk(&u.squeeze_all()), walk(&l.squeeze_all()));
    }

    #[test]
    fn overlap_check_is_sound_and_accepts_views(l in arb_layout()) {
        // Every view-derived layout is non-overlapping and recognised as such.
        let offs = walk(&l);
        let mut sorted = offs.clone();
        sorted.sort_unstable();
        sorted.dedup();
        prop_assert_eq!(sorted.len(), offs.len());
        prop_assert!(l.is_non_overlapping());
    }

    #[test]
    fn overlap_check_never_accepts_aliasing(shape in prop::collection::vec(1usize..4, 1..4), strides in prop::collection::vec(-4isize..5, 3), off in 20usize..40) {
        let strides = &strides[..shape.len()];
        let l = Layout::new(&shape, strides, off).unwrap();
        let offs = walk(&l);
        let mut sorted = offs.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if l.is_non_overlapping() {
            prop_assert_eq!(sorted.len(), offs.len());
        }
    }

    #[test]
    fn collapse_visits_the_same_tuples(out in arb_layout(), seed in any::<u64>()) {
        // Two inputs of the output's shape: one contiguous, one a permuted/flipped copy layout.
        let shape = out.shape().to_vec();
        let a = Layout::contiguous(&shape).unwrap();
        let rank = shape.len();
        let mut b = Layout::contiguous(&shape.iter().rev().copied().collect::<Vec<_>>()).unwrap().t();
        if rank > 0 { b = b.flip((seed % rank as u64) as isize).unwrap(); }
        let c = collapse([&out, &a, &b]);
        let mut got = vec![];
        let mut idx = vec![0usize; c.rank()];
        for _ in 0..c.numel() {
            let t: Vec<usize> = (0..3).map(|k| {
                (c.offsets[k] as isize + idx.iter().zip(&c.strides[k]).map(|(&i, &s)| i as isize * s).sum::<isize>()) as usize
            }).collect();
            got.push(t);
            for d in (0..c.rank()).rev() {
                idx[d] += 1;
                if idx[d] < c.shape[d] { break; }
                idx[d] = 0;
            }
        }
        let mut want: Vec<Vec<usize>> = walk(&out).into_iter().zip(walk(&a)).zip(walk(&b)).map(|((x, y), z)| vec![x, y, z]).collect();
        if out.numel() == 0 { prop_assert_eq!(c.numel(), 0); return Ok(()); }
        got.sort();
        want.sort();
        prop_assert_eq!(got, want);
        // The output walks forward after collapsing.
        prop_assert!(c.strides[0].iter().all(|&s| s >= 0));
    }
}

#[test]
fn contiguous_ops_collapse_to_one_dim() {
    let a = Layout::contiguous(&[4, 5, 6]).unwrap();
    let c = collapse([&a, &a, &a]);
    assert_eq!(c.shape[..], [120]);
    assert!(c.is_contiguous());
}

#[test]
fn transposed_input_keeps_two_dims_ordered_by_output() {
    let out = Layout::contiguous(&[8, 16]).unwrap();
    let at = Layout::contiguous(&[16, 8]).unwrap().t();
    let c = collapse([&out, &at]);
    assert_eq!(c.shape[..], [8, 16]);
    assert_eq!(c.strides[0][..], [16, 1]);
    assert_eq!(c.strides[1][..], [1, 8]);
}

#[test]
fn flipped_output_is_walked_forward() {
    let out = Layout::contiguous(&[10]).unwrap().flip(0).unwrap();
    let inp = Layout::contiguous(&[10]).unwrap();
    let c = collapse([&out, &inp]);
    assert_eq!(c.strides[0][..], [1]);
    assert_eq!(c.strides[1][..], [-1]);
    assert_eq!(c.offsets, [0, 9]);
}

#[test]
fn broadcast_shapes_follows_numpy() {
    assert_eq!(
        broadcast_shapes("add", &[8, 1, 6, 1], &[7, 1, 5]).unwrap(),
        vec![8, 7, 6, 5]
    );
    assert_eq!(broadcast_shapes("add", &[], &[3]).unwrap(), vec![3]);
    assert_eq!(broadcast_shapes("add", &[0], &[1]).unwrap(), vec![0]);
    let err = broadcast_shapes("mul", &[2, 3], &[4, 3]).unwrap_err();
    assert_eq!(
        err,
        LayoutError::BroadcastMismatch {
            op: "mul",
            lhs: vec![2, 3],
            rhs: vec![4, 3]
        }
    );
    assert!(err.to_string().contains("mul") && err.to_string().contains("[2, 3]"));
}

#[test]
fn sizes_that_overflow_are_errors() {
    let big = usize::MAX / 2;
    assert!(matches!(
        Layout::contiguous(&[big, 3]),
        Err(LayoutError::SizeOverflow { .. })
    ));
    assert!(matches!(
        typestate_tensor::layout::checked_bytes("alloc", &[1 << 61], 8),
        Err(LayoutError::SizeOverflow { .. })
    ));
    assert!(matches!(
        Layout::new(&[3], &[isize::MAX / 2 + 1], 0),
        Err(LayoutError::OffsetOverflow { .. })
    ));
    assert!(matches!(
        Layout::new(&[3], &[-2], 1),
        Err(LayoutError::BelowStorageStart { lowest: -3, .. })
    ));
    // Empty, but the product of the other sizes must still fit (invariant 2, ndarray's rule).
    assert!(Layout::contiguous(&[0, isize::MAX as usize]).is_ok());
    assert!(matches!(
        Layout::contiguous(&[0, usize::MAX]),
        Err(LayoutError::SizeOverflow { .. })
    ));
}

#[test]
fn bad_views_are_errors() {
    let l = Layout::contiguous(&[2, 3]).unwrap();
    assert!(matches!(
        l.permute(&[0, 0]),
        Err(LayoutError::InvalidPermutation { .. })
    ));
    assert!(matches!(
        l.transpose(0, 2),
        Err(LayoutError::DimOutOfRange {
            dim: 2,
            rank: 2,
            ..
        })
    ));
    assert!(matches!(
        l.narrow(1, 2, 2),
        Err(LayoutError::RangeOutOfBounds { op: "narrow", .. })
    ));
    assert!(matches!(
        l.slice(0, 0, 2, 0),
        Err(LayoutError::RangeOutOfBounds { .. })
    ));
    assert!(matches!(l.squeeze(0), Err(LayoutError::DimSize { .. })));
    assert!(matches!(
        l.broadcast_to(&[3, 3]),
        Err(LayoutError::BroadcastMismatch { .. })
    ));
    assert!(matches!(
        l.reshape(&[4]),
        Err(LayoutError::ReshapeNumel { .. })
    ));
    assert!(matches!(
        l.t().reshape(&[6]),
        Err(LayoutError::ReshapeNeedsCopy { .. })
    ));
    assert!(l.check_within("x", 5).is_err());
    assert!(l.check_within("x", 6).is_ok());
    assert_eq!(l.transpose(-1, -2).unwrap(), l.t());
    let over: Vec<usize> = vec![1; 33];
    assert!(matches!(
        Layout::contiguous(&over),
        Err(LayoutError::RankTooLarge { .. })
    ));
}
