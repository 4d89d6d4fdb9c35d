//! Caffe's `test_blob.cpp` (BlobSimpleTest and BlobMathTest) on the typed `Blob`, plus
//! capacity, sharing and erasure. GPU tests print a line and return when no GPU is present.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use typestate_tensor::error::{Error, LayoutError, StateError};
use typestate_tensor::synced::{
    Blob, BlobShape, DynBlob, Frozen, Head, HeadAtCpu, Reshaped, SideState, Synced, Uninitialized,
};

fn random_nonzero(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let v: f32 = rng.gen_range(0.25..3.0);
            if rng.gen_bool(0.5) {
                v
            } else {
                -v
            }
        })
        .collect()
}

// ---- BlobSimpleTest ---------------------------------------------------------------------

#[test]
fn initialization() {
    let blob = Blob::<f32, Uninitialized>::empty();
    assert_eq!(blob.num_axes(), 0);
    assert_eq!(blob.count(), 0);
    let preshaped = Blob::<f32, Uninitialized>::legacy(2, 3, 4, 5).unwrap();
    let s = preshaped.shape();
    assert_eq!(
        [s.num(), s.channels(), s.height(), s.width()],
        [Ok(2), Ok(3), Ok(4), Ok(5)]
    );
    assert_eq!(preshaped.count(), 120);
    assert_eq!(preshaped.data_head(), Head::Uninitialized);
    assert_eq!(preshaped.diff_head(), Head::Uninitialized);
    assert_eq!(
        preshaped.data_stats().host_allocs,
        0,
        "lazy: nothing allocated"
    );
}

#[test]
fn pointers_cpu() {
    // Caffe's TestPointersCPUGPU, CPU half: every accessor yields count() elements.
    let blob = Blob::<f32, Uninitialized>::legacy(2, 3, 4, 5).unwrap();
    let blob = blob.into_cpu_data().unwrap().into_cpu_diff().unwrap();
    assert_eq!(blob.cpu_data(), &[0.0; 120][..]);
    assert_eq!(blob.cpu_diff(), &[0.0; 120][..]);
    let mut blob = blob
        .into_cpu_data_mut()
        .unwrap()
        .into_cpu_diff_mut()
        .unwrap();
    assert_eq!(blob.cpu_data_mut().len(), 120);
    assert_eq!(blob.cpu_diff_mut().len(), 120);
}

#[test]
fn reshape() {
    let blob = Blob::<f32, Uninitialized>::empty();
    let blob = blob.reshape(&[2, 3, 4, 5]).unwrap().into_blob();
    let s = blob.shape();
    assert_eq!(
        [s.num(), s.channels(), s.height(), s.width()],
        [Ok(2), Ok(3), Ok(4), Ok(5)]
    );
    assert_eq!(blob.count(), 120);
}

#[test]
fn reshape_zero() {
    let blob = Blob::<f32, Uninitialized>::empty();
    let blob = blob.reshape(&[0, 5]).unwrap().into_blob();
    assert_eq!(blob.count(), 0);
    assert_eq!(blob.shape().dims(), &[0, 5]);
}

#[test]
fn legacy_blob_proto_shape_equals() {
    // (3 x 2) blob == (1 x 1 x 3 x 2) legacy blob, != (0 x 1 x 3 x 2), != (3 x 1 x 3 x 2).
    let s = BlobShape::new(&[3, 2]).unwrap();
    assert!(s.shape_equals_legacy(1, 1, 3, 2));
    assert!(!s.shape_equals_legacy(0, 1, 3, 2));
    assert!(!s.shape_equals_legacy(3, 1, 3, 2));
    // (1 x 3 x 2) blob == (1 x 1 x 3 x 2) legacy blob, != (2 x 1 x 3 x 2).
    let s = BlobShape::new(&[1, 3, 2]).unwrap();
    assert!(s.shape_equals_legacy(1, 1, 3, 2));
    assert!(!s.shape_equals_legacy(2, 1, 3, 2));
    // (2 x 3 x 2) blob != (1 x 1 x 3 x 2) legacy blob.
    let s = BlobShape::new(&[2, 3, 2]).unwrap();
    assert!(!s.shape_equals_legacy(1, 1, 3, 2));
    // More than 4 axes never equals a legacy shape.
    assert!(!BlobShape::new(&[1, 1, 1, 3, 2])
        .unwrap()
        .shape_equals_legacy(1, 1, 3, 2));
}

#[test]
fn too_many_axes_is_an_error() {
    let err = Blob::<f32, Uninitialized>::new(&[1; 33]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Layout(LayoutError::RankTooLarge { max: 32, .. })
        ),
        "{err}"
    );
    assert!(Blob::<f32, Uninitialized>::new(&[1; 32]).is_ok());
}

// ---- Capacity (Caffe's capacity_ rule) ------------------------------------------------

#[test]
fn reshape_within_capacity_keeps_memory_state_and_data() {
    let data = random_nonzero(24, 1);
    let blob = Blob::from_vec(&[2, 3, 4], data.clone()).unwrap();
    assert_eq!(blob.data_head(), Head::HeadAtCpu);
    let blob = match blob.reshape(&[4, 5]).unwrap() {
        Reshaped::InPlace(b) => b,
        Reshaped::Reallocated(_) => panic!("20 <= 24 must not reallocate"),
    };
    assert_eq!(blob.count(), 20);
    assert_eq!(blob.capacity(), 24);
    assert_eq!(blob.cpu_data(), &data[..20]);
    // Growing back up to the capacity is still in place.
    let mut blob = match blob.reshape(&[24]).unwrap() {
        Reshaped::InPlace(b) => b,
        Reshaped::Reallocated(_) => panic!("24 <= 24 must not reallocate"),
    };
    assert_eq!(blob.cpu_data(), &data[..]);
    blob.reshape_in_place(&[2, 2, 2]).unwrap();
    assert_eq!(blob.cpu_data(), &data[..8]);
    let err = blob.reshape_in_place(&[25]).unwrap_err();
    assert!(matches!(
        err,
        Error::State(StateError::ExceedsCapacity {
            requested: 25,
            capacity: 24,
            ..
        })
    ));
    assert_eq!(blob.count(), 8, "a failed reshape changes nothing");
}

#[test]
fn reshape_past_capacity_reallocates_uninitialized() {
    let blob = Blob::from_vec(&[2, 3], random_nonzero(6, 2)).unwrap();
    match blob.reshape(&[7]).unwrap() {
        Reshaped::Reallocated(b) => {
            assert_eq!(b.count(), 7);
            assert_eq!(b.capacity(), 7);
            assert_eq!(b.data_head(), Head::Uninitialized);
            let b = b.into_cpu_data().unwrap();
            assert_eq!(b.cpu_data(), &[0.0; 7], "new memory is zero-filled");
        }
        Reshaped::InPlace(_) => panic!("7 > 6 must reallocate"),
    }
}

#[test]
fn from_vec_checks_the_count_and_hands_the_data_back() {
    let err = Blob::from_vec(&[2, 3], vec![1.0f32; 5]).unwrap_err();
    assert!(matches!(
        err.error,
        Error::Layout(LayoutError::ShapeMismatch { .. })
    ));
    assert_eq!(err.into_inner(), vec![1.0; 5]);
}

// ---- Sharing (Caffe ShareData / ShareDiff) ---------------------------------------------

#[test]
fn shared_data_is_read_only_until_thawed() {
    let data = random_nonzero(6, 3);
    let a = Blob::from_vec(&[2, 3], data.clone()).unwrap();
    let a: Blob<f32, Frozen<HeadAtCpu>, Uninitialized> = a.freeze_data();
    let b = Blob::<f32, Uninitialized>::new(&[3, 2]).unwrap();
    let b = b.with_shared_data(a.shared_data()).unwrap();
    assert_eq!(b.cpu_data(), &data[..], "b reads a's data");
    assert_eq!(a.shared_data().holders(), 3);

    // Thawing while b still shares the memory hands a back.
    let err = a.thaw_data().unwrap_err();
    assert!(matches!(
        err.error,
        Error::State(StateError::StillShared { holders: 1, .. })
    ));
    let a = err.into_inner();
    drop(b);
    let mut a = a.thaw_data().unwrap();
    a.cpu_data_mut()[0] = 42.0;
    assert_eq!(a.cpu_data()[0], 42.0);
}

#[test]
fn sharing_checks_the_count() {
    let a = Blob::from_vec(&[4], random_nonzero(4, 4))
        .unwrap()
        .freeze_data();
    let b = Blob::<f32, Uninitialized>::new(&[5]).unwrap();
    let err = b.with_shared_data(a.shared_data()).unwrap_err();
    assert!(matches!(
        err.error,
        Error::Layout(LayoutError::ShapeMismatch { .. })
    ));
    assert_eq!(err.into_inner().count(), 5);
}

#[test]
fn shared_diff_too() {
    let blob = Blob::<f32, Uninitialized>::new(&[3]).unwrap();
    let mut blob = blob.into_cpu_diff_mut().unwrap();
    let diff = random_nonzero(3, 5);
    blob.cpu_diff_mut().copy_from_slice(&diff);
    let blob = blob.freeze_diff();
    let other = Blob::<f32, Uninitialized>::new(&[3])
        .unwrap()
        .with_shared_diff(blob.shared_diff())
        .unwrap();
    assert_eq!(other.cpu_diff(), &diff[..]);
}

// ---- Erasure ---------------------------------------------------------------------------

#[test]
fn dyn_blobs_convert_back_only_to_their_states() {
    let net: Vec<DynBlob<f32>> = vec![
        Blob::<f32, Uninitialized>::new(&[2]).unwrap().erase(),
        Blob::from_vec(&[2], vec![1.5, -2.0]).unwrap().erase(),
        Blob::from_vec(&[2], vec![3.0, 4.0])
            .unwrap()
            .freeze_data()
            .erase(),
    ];
    let states: Vec<(SideState, SideState)> = net
        .iter()
        .map(|b| (b.data_state(), b.diff_state()))
        .collect();
    let st = |head, frozen| SideState { head, frozen };
    assert_eq!(
        states,
        [
            (
                st(Head::Uninitialized, false),
                st(Head::Uninitialized, false)
            ),
            (st(Head::HeadAtCpu, false), st(Head::Uninitialized, false)),
            (st(Head::HeadAtCpu, true), st(Head::Uninitialized, false)),
        ]
    );
    let mut it = net.into_iter();
    let _uninit: Blob<f32, Uninitialized> = it.next().unwrap().try_into_blob().unwrap();

    let err = it
        .next()
        .unwrap()
        .try_into_blob::<Synced, Uninitialized>()
        .unwrap_err();
    match &err.error {
        Error::State(StateError::WrongState { expected, actual }) => {
            assert_eq!((*expected, *actual), ("Synced", "HeadAtCpu"));
        }
        e => panic!("unexpected {e}"),
    }
    let back: Blob<f32, HeadAtCpu, Uninitialized> = err.into_inner().try_into_blob().unwrap();
    assert_eq!(back.cpu_data(), &[1.5, -2.0]);

    let frozen = it.next().unwrap();
    let err = frozen
        .try_into_blob::<HeadAtCpu, Uninitialized>()
        .unwrap_err();
    match &err.error {
        Error::State(StateError::WrongState { expected, actual }) => {
            assert_eq!((*expected, *actual), ("HeadAtCpu", "Frozen<HeadAtCpu>"));
        }
        e => panic!("unexpected {e}"),
    }
    let back: Blob<f32, Frozen<HeadAtCpu>, Uninitialized> =
        err.into_inner().try_into_blob().unwrap();
    assert_eq!(back.cpu_data(), &[3.0, 4.0]);
}
