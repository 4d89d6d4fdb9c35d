//! Caffe's `test_blob.cpp` (BlobSimpleTest and BlobMathTest) on the typed `Blob`, plus
//! capacity, sharing and erasure. GPU tests print a line and return when no GPU is present.

use crate::common::device::{host, test_device, TestDevice};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use typestate_tensor::error::{Error, GpuError, LayoutError, StateError};
use typestate_tensor::synced::{
    Blob, BlobShape, DynBlob, Frozen, Head, HeadAtCpu, Reshaped, SideState, Synced, Uninitialized,
};
use typestate_tensor::tensor::{TensorView, TensorViewMut};
use typestate_tensor::Cpu;

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
        Error::Layout(LayoutError::LengthMismatch {
            expected: 6,
            got: 5,
            ..
        })
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
    // Both inputs come back: the blob, and the handle (still sharing `a`'s data).
    let (b, shared) = err.into_inner();
    assert_eq!(b.count(), 5);
    assert_eq!((shared.len(), shared.holders()), (4, 2));
    let err = Blob::<f32, Uninitialized>::new(&[5])
        .unwrap()
        .with_shared_diff(shared)
        .unwrap_err();
    assert!(matches!(
        err.error,
        Error::Layout(LayoutError::ShapeMismatch { .. })
    ));
    assert_eq!(err.into_inner().1.len(), 4);
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn sharing_checks_the_device() {
    let Some(gpu) = gpu_or_skip("sharing_checks_the_device") else {
        return;
    };
    // A CPU-only blob cannot take memory tied to a GPU, nor the other way round.
    let on_gpu = Blob::<f32, Uninitialized>::with_gpu(&gpu, &[3])
        .unwrap()
        .freeze_data();
    let cpu_only = Blob::<f32, Uninitialized>::new(&[3]).unwrap();
    let err = cpu_only.with_shared_data(on_gpu.shared_data()).unwrap_err();
    assert!(
        matches!(err.error, Error::State(StateError::NoGpu { .. })),
        "{}",
        err.error
    );
    let (cpu_only, _) = err.into_inner();
    let cpu_frozen = cpu_only.freeze_data();
    let err = Blob::<f32, Uninitialized>::with_gpu(&gpu, &[3])
        .unwrap()
        .with_shared_diff(cpu_frozen.shared_data())
        .unwrap_err();
    assert!(matches!(err.error, Error::State(StateError::NoGpu { .. })));
    // Memories on two GPUs: a typed device mismatch, both handed back.
    if Gpu::device_count().unwrap_or(0) < 2 {
        println!("sharing_checks_the_device: two-GPU case skipped, one GPU here");
        return;
    }
    let other = Gpu::new(1).unwrap();
    let err = Blob::<f32, Uninitialized>::with_gpu(&other, &[3])
        .unwrap()
        .with_shared_data(on_gpu.shared_data())
        .unwrap_err();
    assert!(matches!(
        err.error,
        Error::Gpu(GpuError::DeviceMismatch { lhs: 1, rhs: 0, .. })
    ));
    let (blob, shared) = err.into_inner();
    assert_eq!(blob.gpu_device().unwrap().ordinal(), 1);
    assert_eq!(shared.holders(), 2);
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

// ---- BlobMathTest: asum, sumsq, scale, update on the CPU and the GPU -------------------

use typestate_tensor::gpu::Gpu;
use typestate_tensor::synced::{BlobElement, HeadAtGpu, InPlaceMath, UpdateWith};
use typestate_tensor::Element;

/// Caffe's tolerance for blob math, relative to the expected value.
const EPSILON: f64 = 1e-6;

fn assert_near(expected: f64, got: f64, what: &str) {
    let tol = EPSILON * expected.abs().max(1.0);
    assert!(
        (expected - got).abs() <= tol,
        "{what}: expected {expected}, got {got}"
    );
}

/// Random values in ±[0.25, 3] (Caffe fills uniformly in [-3, 3]; no zeros here).
fn filler<T: BlobElement>(n: usize, seed: u64) -> Vec<T> {
    random_nonzero(n, seed)
        .into_iter()
        .map(|v| T::from_f64(f64::from(v)))
        .collect()
}

fn asum64<T: BlobElement>(x: &[T]) -> f64 {
    x.iter().map(|&v| v.to_f64().abs()).sum()
}

fn sumsq64<T: BlobElement>(x: &[T]) -> f64 {
    x.iter().map(|&v| v.to_f64() * v.to_f64()).sum()
}

fn gpu_or_skip(test: &str) -> Option<Gpu> {
    if !Gpu::available() {
        println!("{test}: skipped, no CUDA driver or GPU on this machine");
        return None;
    }
    Some(Gpu::new(0).expect("GPU 0 opens when one is available"))
}

/// A 2x3x4x5 blob (Caffe's BlobMathTest shape) with random data and diff = 7 * data, both
/// written on the CPU; on `gpu` when given.
fn filled<T: BlobElement>(gpu: Option<&Gpu>, seed: u64) -> (Blob<T, HeadAtCpu>, Vec<T>, Vec<T>) {
    filled_shape(gpu, &[2, 3, 4, 5], seed)
}

/// [`filled`] with another shape.
fn filled_shape<T: BlobElement>(
    gpu: Option<&Gpu>,
    shape: &[usize],
    seed: u64,
) -> (Blob<T, HeadAtCpu>, Vec<T>, Vec<T>) {
    let blob = match gpu {
        Some(g) => Blob::<T, Uninitialized>::with_gpu(g, shape).unwrap(),
        None => Blob::<T, Uninitialized>::new(shape).unwrap(),
    };
    // Uninitialized blobs have zero sums, and computing them allocates nothing.
    assert_eq!(blob.asum_data().unwrap(), T::ZERO);
    assert_eq!(blob.sumsq_diff().unwrap(), T::ZERO);
    assert_eq!(
        blob.data_stats().host_allocs + blob.data_stats().device_allocs,
        0
    );
    let data = filler::<T>(shape.iter().product(), seed);
    let diff: Vec<T> = data
        .iter()
        .map(|&v| T::from_f64(v.to_f64() * 7.0))
        .collect();
    let mut blob = blob
        .into_cpu_data_mut()
        .unwrap()
        .into_cpu_diff_mut()
        .unwrap();
    blob.cpu_data_mut().copy_from_slice(&data);
    blob.cpu_diff_mut().copy_from_slice(&diff);
    (blob, data, diff)
}

fn check_sums<T: BlobElement, D, G>(blob: &Blob<T, D, G>, data: &[T], diff: &[T], what: &str)
where
    D: typestate_tensor::synced::BlobSide,
    G: typestate_tensor::synced::BlobSide,
    D::Base: typestate_tensor::synced::MathSide,
    G::Base: typestate_tensor::synced::MathSide,
{
    assert_near(
        asum64(data),
        blob.asum_data().unwrap().to_f64(),
        &format!("{what} asum_data"),
    );
    assert_near(
        asum64(diff),
        blob.asum_diff().unwrap().to_f64(),
        &format!("{what} asum_diff"),
    );
    assert_near(
        sumsq64(data),
        blob.sumsq_data().unwrap().to_f64(),
        &format!("{what} sumsq_data"),
    );
    assert_near(
        sumsq64(diff),
        blob.sumsq_diff().unwrap().to_f64(),
        &format!("{what} sumsq_diff"),
    );
}

fn scaled<T: BlobElement>(x: &[T], factor: f64) -> Vec<T> {
    x.iter()
        .map(|&v| T::from_f64(v.to_f64() * factor))
        .collect()
}

fn math_on_cpu<T: BlobElement>(seed: u64) {
    let (blob, data, diff) = filled::<T>(None, seed);
    check_sums(&blob, &data, &diff, "cpu");
    // scale_data(3), then scale_diff(3): values and sums against the f64 reference.
    let blob = blob.scale_data(T::from_f64(3.0)).unwrap();
    let data3 = scaled(&data, 3.0);
    assert_eq!(blob.cpu_data(), &data3[..]);
    let blob: Blob<T, HeadAtCpu> = blob.scale_diff(T::from_f64(3.0)).unwrap();
    let diff3 = scaled(&diff, 3.0);
    assert_eq!(blob.cpu_diff(), &diff3[..]);
    check_sums(&blob, &data3, &diff3, "cpu scaled");
    // update: data -= diff.
    let blob: Blob<T, HeadAtCpu> = blob.update().unwrap();
    let expected: Vec<T> = data3.iter().zip(&diff3).map(|(&a, &b)| a - b).collect();
    assert_eq!(blob.cpu_data(), &expected[..]);
    assert_eq!(blob.data_stats().copies() + blob.diff_stats().copies(), 0);
}

#[test]
fn math_cpu_f32() {
    math_on_cpu::<f32>(40);
}

#[test]
fn math_cpu_f64() {
    math_on_cpu::<f64>(41);
}

#[test]
fn scale_of_uninitialized_does_nothing() {
    let blob = Blob::<f32, Uninitialized>::new(&[4]).unwrap();
    let blob: Blob<f32, Uninitialized> = blob.scale_data(2.0).unwrap().scale_diff(3.0).unwrap();
    assert_eq!(blob.data_stats().host_allocs, 0);
}

fn math_on_gpu<T: BlobElement>(gpu: &Gpu, seed: u64) {
    let (blob, data, diff) = filled::<T>(Some(gpu), seed);
    let stream = blob.stream().unwrap().clone();
    // Move both heads to the GPU, so the math runs there (Caffe's mutable_gpu_data()).
    let blob: Blob<T, HeadAtGpu> = blob
        .into_gpu_data_mut()
        .unwrap()
        .into_gpu_diff_mut()
        .unwrap();
    check_sums(&blob, &data, &diff, "gpu");
    let blob = blob.scale_data(T::from_f64(3.0)).unwrap();
    let blob: Blob<T, HeadAtGpu> = blob.scale_diff(T::from_f64(3.0)).unwrap();
    let (data3, diff3) = (scaled(&data, 3.0), scaled(&diff, 3.0));
    assert_eq!(blob.gpu_data().to_vec(&stream).unwrap(), data3);
    assert_eq!(blob.gpu_diff().to_vec(&stream).unwrap(), diff3);
    check_sums(&blob, &data3, &diff3, "gpu scaled");
    let blob: Blob<T, HeadAtGpu> = blob.update().unwrap();
    let expected: Vec<T> = data3.iter().zip(&diff3).map(|(&a, &b)| a - b).collect();
    let blob = blob.into_cpu_data().unwrap();
    assert_eq!(blob.cpu_data(), &expected[..]);
    // One upload per side, one download of the data at the end: the math made no copies.
    assert_eq!(blob.data_stats().h2d_copies, 1);
    assert_eq!(blob.data_stats().d2h_copies, 1);
    assert_eq!(blob.diff_stats().copies(), 1);
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn math_gpu_f32() {
    if let Some(gpu) = gpu_or_skip("math_gpu_f32") {
        math_on_gpu::<f32>(&gpu, 42);
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn math_gpu_f64() {
    if let Some(gpu) = gpu_or_skip("math_gpu_f64") {
        math_on_gpu::<f64>(&gpu, 43);
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn math_on_synced_data_runs_on_the_gpu_and_leaves_it_the_head() {
    let Some(gpu) = gpu_or_skip("math_on_synced_data_runs_on_the_gpu_and_leaves_it_the_head")
    else {
        return;
    };
    let (blob, data, diff) = filled::<f32>(Some(&gpu), 44);
    let blob: Blob<f32, Synced> = blob.into_gpu_data().unwrap().into_gpu_diff().unwrap();
    check_sums(&blob, &data, &diff, "synced");
    let blob: Blob<f32, HeadAtGpu, Synced> = blob.scale_data(0.5).unwrap();
    let blob = blob.into_cpu_data().unwrap();
    assert_eq!(blob.cpu_data(), &scaled(&data, 0.5)[..]);
    let s = blob.data_stats();
    assert_eq!(
        (s.h2d_copies, s.d2h_copies),
        (1, 1),
        "the scale ran on the GPU copy"
    );
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn large_gpu_sums_match_the_reference() {
    let Some(gpu) = gpu_or_skip("large_gpu_sums_match_the_reference") else {
        return;
    };
    // More elements than one grid pass covers, and not a multiple of the block size.
    let n = 1024 * 256 * 3 + 17;
    let data = filler::<f32>(n, 45);
    let blob = Blob::<f32, Uninitialized>::with_gpu(&gpu, &[n]).unwrap();
    let mut blob = blob.into_cpu_data_mut().unwrap();
    blob.cpu_data_mut().copy_from_slice(&data);
    let blob = blob.into_gpu_data_mut().unwrap();
    assert_near(asum64(&data), blob.asum_data().unwrap().to_f64(), "asum");
    assert_near(sumsq64(&data), blob.sumsq_data().unwrap().to_f64(), "sumsq");
}

/// A blob made with a device handle on a side stream (`gpu.on(&stream)`) runs its math on that
/// stream, through the same methods: sums, a scale and `update()` give the reference values.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn blob_math_runs_on_a_side_stream() {
    let Some(gpu) = gpu_or_skip("blob_math_runs_on_a_side_stream") else {
        return;
    };
    let stream = gpu.new_stream().unwrap();
    let side = gpu.on(&stream).unwrap();
    let (blob, data, diff) = filled::<f32>(Some(&side), 46);
    let blob = blob.into_gpu_data_mut().unwrap().into_gpu_diff().unwrap();
    check_sums(&blob, &data, &diff, "side stream");
    let blob = blob.scale_data(2.0).unwrap().update().unwrap();
    let blob = blob.into_cpu_data().unwrap();
    let want: Vec<f32> = data
        .iter()
        .zip(&diff)
        .map(|(&d, &g)| (2.0 * f64::from(d) - f64::from(g)) as f32)
        .collect();
    assert_eq!(blob.cpu_data(), want.as_slice());
}

/// Blob math queued on a side stream behind a slow kernel, read right away by a copy on the
/// default stream: the buffers order the copy after the scale, so it never reads the data
/// from before it (the sleep holds the side stream for 50 ms, far longer than the copy).
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn blob_math_on_a_busy_side_stream_is_ordered_before_default_stream_reads() {
    let Some(gpu) =
        gpu_or_skip("blob_math_on_a_busy_side_stream_is_ordered_before_default_stream_reads")
    else {
        return;
    };
    let stream = gpu.new_stream().unwrap();
    let side = gpu.on(&stream).unwrap();
    for round in 0..4u64 {
        let (blob, data, _) = filled::<f32>(Some(&side), 60 + round);
        let blob = blob.into_gpu_data_mut().unwrap().into_gpu_diff().unwrap();
        stream.sleep(std::time::Duration::from_millis(50)).unwrap();
        let blob = blob.scale_data(3.0).unwrap();
        let view = blob.gpu_data_view().unwrap();
        let mut copy =
            typestate_tensor::tensor::Tensor::<f32, Gpu>::zeros_on(view.shape(), &gpu).unwrap();
        copy.copy_from(&view).unwrap(); // on the default stream
        let want: Vec<f32> = data.iter().map(|&d| 3.0 * d).collect();
        assert_eq!(copy.to_cpu().unwrap().to_vec(), want, "round {round}");
    }
}

// ---- Tensor views of either side ------------------------------------------------------

/// A device with a blob state that holds both heads there, and the blob's views on it.
trait BlobDevice: TestDevice {
    /// Both sides' head on this device, writable (a state blob math keeps).
    type Head: InPlaceMath + UpdateWith<Self::Head>;
    /// [`filled`]'s blob (data random, diff = 7 * data) with both heads moved here.
    fn filled_here(&self, seed: u64) -> (Blob<f32, Self::Head>, Vec<f32>, Vec<f32>) {
        self.filled_shape_here(&[2, 3, 4, 5], seed)
    }
    /// [`filled_shape`]'s blob with both heads moved here.
    fn filled_shape_here(
        &self,
        shape: &[usize],
        seed: u64,
    ) -> (Blob<f32, Self::Head>, Vec<f32>, Vec<f32>);
    /// The diff writable and the data readable at once (the split borrow).
    fn diff_mut_with_data(
        blob: &mut Blob<f32, Self::Head>,
    ) -> (TensorViewMut<'_, f32, Self>, TensorView<'_, f32, Self>);
    fn data_view(blob: &Blob<f32, Self::Head>) -> TensorView<'_, f32, Self>;
    fn diff_view(blob: &Blob<f32, Self::Head>) -> TensorView<'_, f32, Self>;
    fn data_view_mut(blob: &mut Blob<f32, Self::Head>) -> TensorViewMut<'_, f32, Self>;
    fn diff_view_mut(blob: &mut Blob<f32, Self::Head>) -> TensorViewMut<'_, f32, Self>;
    /// Data and diff, read on the CPU (moving the heads back there).
    fn read_back(blob: Blob<f32, Self::Head>) -> (Vec<f32>, Vec<f32>);
}

impl BlobDevice for Cpu {
    type Head = HeadAtCpu;
    fn filled_shape_here(
        &self,
        shape: &[usize],
        seed: u64,
    ) -> (Blob<f32, HeadAtCpu>, Vec<f32>, Vec<f32>) {
        filled_shape::<f32>(None, shape, seed)
    }
    fn diff_mut_with_data(
        blob: &mut Blob<f32, HeadAtCpu>,
    ) -> (TensorViewMut<'_, f32, Cpu>, TensorView<'_, f32, Cpu>) {
        blob.cpu_diff_mut_with_data().unwrap()
    }
    fn data_view(blob: &Blob<f32, HeadAtCpu>) -> TensorView<'_, f32, Cpu> {
        blob.cpu_data_view().unwrap()
    }
    fn diff_view(blob: &Blob<f32, HeadAtCpu>) -> TensorView<'_, f32, Cpu> {
        blob.cpu_diff_view().unwrap()
    }
    fn data_view_mut(blob: &mut Blob<f32, HeadAtCpu>) -> TensorViewMut<'_, f32, Cpu> {
        blob.cpu_data_view_mut().unwrap()
    }
    fn diff_view_mut(blob: &mut Blob<f32, HeadAtCpu>) -> TensorViewMut<'_, f32, Cpu> {
        blob.cpu_diff_view_mut().unwrap()
    }
    fn read_back(blob: Blob<f32, HeadAtCpu>) -> (Vec<f32>, Vec<f32>) {
        (blob.cpu_data().to_vec(), blob.cpu_diff().to_vec())
    }
}

impl BlobDevice for Gpu {
    type Head = HeadAtGpu;
    fn filled_shape_here(
        &self,
        shape: &[usize],
        seed: u64,
    ) -> (Blob<f32, HeadAtGpu>, Vec<f32>, Vec<f32>) {
        let (blob, data, diff) = filled_shape::<f32>(Some(self), shape, seed);
        let blob = blob
            .into_gpu_data_mut()
            .unwrap()
            .into_gpu_diff_mut()
            .unwrap();
        (blob, data, diff)
    }
    fn diff_mut_with_data(
        blob: &mut Blob<f32, HeadAtGpu>,
    ) -> (TensorViewMut<'_, f32, Gpu>, TensorView<'_, f32, Gpu>) {
        blob.gpu_diff_mut_with_data().unwrap()
    }
    fn data_view(blob: &Blob<f32, HeadAtGpu>) -> TensorView<'_, f32, Gpu> {
        blob.gpu_data_view().unwrap()
    }
    fn diff_view(blob: &Blob<f32, HeadAtGpu>) -> TensorView<'_, f32, Gpu> {
        blob.gpu_diff_view().unwrap()
    }
    fn data_view_mut(blob: &mut Blob<f32, HeadAtGpu>) -> TensorViewMut<'_, f32, Gpu> {
        blob.gpu_data_view_mut().unwrap()
    }
    fn diff_view_mut(blob: &mut Blob<f32, HeadAtGpu>) -> TensorViewMut<'_, f32, Gpu> {
        blob.gpu_diff_view_mut().unwrap()
    }
    fn read_back(blob: Blob<f32, HeadAtGpu>) -> (Vec<f32>, Vec<f32>) {
        let blob = blob.into_cpu_data().unwrap().into_cpu_diff().unwrap();
        (blob.cpu_data().to_vec(), blob.cpu_diff().to_vec())
    }
}

test_device!(
    views_feed_the_pointwise_ops,
    views_feed_the_pointwise_ops_cpu,
    views_feed_the_pointwise_ops_gpu
);
/// Views of the side that holds the head feed the pointwise ops on that device (Caffe's
/// `cpu_data()` / `gpu_data()` as tensors); writable views write the blob's own memory.
fn views_feed_the_pointwise_ops<D: BlobDevice>(dev: &D) {
    let (mut blob, data, diff) = dev.filled_here(50);
    let view = D::data_view(&blob);
    assert_eq!(view.shape(), &[2, 3, 4, 5]);
    let sum = (&view + &D::diff_view(&blob)).unwrap();
    let expected: Vec<f32> = data.iter().zip(&diff).map(|(a, b)| a + b).collect();
    assert_eq!(host(&sum), expected);
    let product = (&view * &D::diff_view(&blob)).unwrap();
    assert_eq!(product.shape(), &[2, 3, 4, 5]);
    let expected: Vec<f32> = data.iter().zip(&diff).map(|(a, b)| a * b).collect();
    assert_eq!(host(&product), expected);
    // Writable views write the blob's own data and diff.
    D::data_view_mut(&mut blob).mul_scalar_(2.0).unwrap();
    D::data_view_mut(&mut blob).add_scalar_(1.0).unwrap();
    D::diff_view_mut(&mut blob).fill_(0.5).unwrap();
    let (got_data, got_diff) = D::read_back(blob);
    let expected: Vec<f32> = data.iter().map(|a| a * 2.0 + 1.0).collect();
    assert_eq!(got_data, expected);
    assert_eq!(got_diff, vec![0.5; 120]);
}

#[test]
fn views_cover_count_not_capacity() {
    let blob = Blob::from_vec(&[6], random_nonzero(6, 51)).unwrap();
    let Reshaped::InPlace(blob) = blob.reshape(&[2, 2]).unwrap() else {
        panic!("4 <= 6 reshapes in place");
    };
    let view = blob.cpu_data_view().unwrap();
    assert_eq!(view.shape(), &[2, 2]);
    assert_eq!(view.to_vec(), &blob.cpu_data()[..4]);
}

// ---- Solver loops: the `&mut self` math, and DynBlob's run-time API ----------------------

/// `|got - want| <= 1e-5 * max(|want|, 1)` elementwise (f32 rounding of a few ops).
fn assert_all_near(want: &[f64], got: &[f32], what: &str) {
    assert_eq!(want.len(), got.len(), "{what}: length");
    for (i, (&w, &g)) in want.iter().zip(got).enumerate() {
        let tol = 1e-5 * w.abs().max(1.0);
        assert!(
            (w - f64::from(g)).abs() <= tol,
            "{what}[{i}]: want {w}, got {g}"
        );
    }
}

test_device!(
    solver_loop_over_mut_blobs,
    solver_loop_over_mut_blobs_cpu,
    solver_loop_over_mut_blobs_gpu
);
/// A Caffe SGD step over a `Vec` of parameter blobs of random shapes, through `&mut`:
/// weight decay writing the diff from the data (the split borrow), the learning rate on the
/// diff, `update_in_place`; then the fused `sgd_update_in_place` against the consuming
/// `sgd_update` on an equal blob. Against an `f64` reference; no blob changes type.
fn solver_loop_over_mut_blobs<D: BlobDevice>(dev: &D) {
    let mut rng = SmallRng::seed_from_u64(60);
    let (lr, wd) = (0.05f32, 0.01f32);
    let mut params = Vec::new();
    let mut reference = Vec::new();
    for seed in 0..3 {
        let rank = rng.gen_range(1..=3);
        let shape: Vec<usize> = (0..rank).map(|_| rng.gen_range(1..=6)).collect();
        let (blob, data, diff) = dev.filled_shape_here(&shape, 61 + seed);
        params.push(blob);
        reference.push((data, diff));
    }
    for p in params.iter_mut() {
        {
            let (mut g, w) = D::diff_mut_with_data(p);
            g.update(|g| g + w.lazy() * wd).unwrap(); // diff += wd * data
        }
        p.scale_diff_in_place(lr).unwrap(); // diff *= lr
        p.update_in_place().unwrap(); // data -= diff
    }
    for (p, (data, diff)) in params.into_iter().zip(&reference) {
        let step: Vec<f64> = data
            .iter()
            .zip(diff)
            .map(|(&w, &g)| (f64::from(g) + f64::from(wd) * f64::from(w)) * f64::from(lr))
            .collect();
        let want_data: Vec<f64> = data
            .iter()
            .zip(&step)
            .map(|(&w, s)| f64::from(w) - s)
            .collect();
        let (got_data, got_diff) = D::read_back(p);
        assert_all_near(&step, &got_diff, "diff after weight decay and lr");
        assert_all_near(&want_data, &got_data, "data after update_in_place");
    }

    // The fused form in place equals the consuming form, bit for bit (one kernel each).
    let (mut a, data, diff) = dev.filled_shape_here(&[7, 3], 70);
    let (b, _, _) = dev.filled_shape_here(&[7, 3], 70);
    a.sgd_update_in_place(lr, wd).unwrap();
    let b: Blob<f32, D::Head> = b.sgd_update(lr, wd).unwrap();
    let ((a_data, a_diff), (b_data, _)) = (D::read_back(a), D::read_back(b));
    assert_eq!(a_data, b_data);
    assert_eq!(a_diff, diff, "the diff is only read");
    let want: Vec<f64> = data
        .iter()
        .zip(&diff)
        .map(|(&w, &g)| {
            let (w, g) = (f64::from(w), f64::from(g));
            w - f64::from(lr) * (g + f64::from(wd) * w)
        })
        .collect();
    assert_all_near(&want, &a_data, "sgd_update_in_place");

    // scale_data_in_place.
    let (mut c, data, _) = dev.filled_shape_here(&[5], 71);
    c.scale_data_in_place(-2.5).unwrap();
    let want: Vec<f64> = data.iter().map(|&w| f64::from(w) * -2.5).collect();
    assert_all_near(&want, &D::read_back(c).0, "scale_data_in_place");
}

#[test]
fn dyn_blobs_run_caffes_math_at_run_time() {
    let (lr, wd) = (0.1f32, 0.02f32);
    let (a, data, diff) = filled::<f32>(None, 80);
    let (b, data_b, diff_b) = filled_shape::<f32>(None, &[3, 7], 81);
    let mut net: Vec<DynBlob<f32>> = vec![a.erase(), b.erase()];
    // Sums where the heads are, against f64 references.
    assert_near(
        asum64(&data),
        f64::from(net[0].asum_data().unwrap()),
        "asum_data",
    );
    assert_near(
        sumsq64(&diff),
        f64::from(net[0].sumsq_diff().unwrap()),
        "sumsq_diff",
    );
    // A solver step over the collection.
    net[0].update().unwrap();
    net[1].sgd_update(lr, wd).unwrap();
    let want: Vec<f64> = data
        .iter()
        .zip(&diff)
        .map(|(&w, &g)| f64::from(w) - f64::from(g))
        .collect();
    assert_all_near(&want, net[0].cpu_data().unwrap(), "update");
    let want: Vec<f64> = data_b
        .iter()
        .zip(&diff_b)
        .map(|(&w, &g)| {
            let (w, g) = (f64::from(w), f64::from(g));
            w - f64::from(lr) * (g + f64::from(wd) * w)
        })
        .collect();
    assert_all_near(&want, net[1].cpu_data().unwrap(), "sgd_update");
    assert_eq!(
        net[1].cpu_diff().unwrap(),
        &diff_b[..],
        "the diff is only read"
    );
    // Scales, and writes through Caffe's mutable_cpu_*.
    net[1].scale_diff(0.5).unwrap();
    let want: Vec<f64> = diff_b.iter().map(|&g| f64::from(g) * 0.5).collect();
    assert_all_near(&want, net[1].cpu_diff().unwrap(), "scale_diff");
    net[1].mutable_cpu_data().unwrap()[0] = 42.0;
    assert_eq!(net[1].cpu_data().unwrap()[0], 42.0);
    for p in &net {
        assert_eq!(p.data_state().head, Head::HeadAtCpu);
        assert_eq!(p.diff_stats().copies() + p.data_stats().copies(), 0);
    }
    // Back to the typed blob, with the values the run-time calls wrote.
    let typed: Blob<f32, HeadAtCpu> = net.pop().unwrap().try_into_blob().unwrap();
    assert_eq!(typed.cpu_data()[0], 42.0);
}

#[test]
fn dyn_blob_update_follows_caffes_rules_for_each_state() {
    // Uninitialized data: Caffe's fatal error is an error; nothing changes.
    let mut fresh = Blob::<f32, Uninitialized>::new(&[3]).unwrap().erase();
    let err = fresh.update().unwrap_err();
    assert!(
        matches!(
            err,
            Error::State(StateError::NotInitialized { side: "data", .. })
        ),
        "{err}"
    );
    assert_eq!(fresh.data_state().head, Head::Uninitialized);
    // An uninitialized diff is made current (zero-filled) first, as Caffe's cpu_diff() does.
    let data = random_nonzero(4, 82);
    let mut b = Blob::from_vec(&[4], data.clone()).unwrap().erase();
    b.update().unwrap();
    assert_eq!(b.diff_state().head, Head::HeadAtCpu);
    assert_eq!(b.cpu_data().unwrap(), &data[..], "data -= 0");
    // Frozen data is read, never written.
    let frozen = Blob::from_vec(&[4], data.clone())
        .unwrap()
        .into_cpu_diff_mut()
        .unwrap()
        .freeze_data();
    let _keep = frozen.shared_data();
    let mut f = frozen.erase();
    assert_eq!(f.cpu_data().unwrap(), &data[..]);
    for err in [
        f.update().unwrap_err(),
        f.scale_data(2.0).unwrap_err(),
        f.mutable_cpu_data().map(|_| ()).unwrap_err(),
    ] {
        assert!(
            matches!(
                err,
                Error::State(StateError::FrozenSide {
                    side: "data",
                    state: "Frozen<HeadAtCpu>",
                    ..
                })
            ),
            "{err}"
        );
    }
    assert!(f.mutable_cpu_diff().is_ok(), "the diff is owned");
    // A frozen diff current where the data is feeds update().
    let g = random_nonzero(4, 83);
    let owner = Blob::from_vec(&[4], g.clone()).unwrap().freeze_data();
    let target = Blob::from_vec(&[4], data.clone()).unwrap();
    let target = target.with_shared_diff(owner.shared_data()).unwrap();
    let mut t = target.erase();
    t.update().unwrap();
    let want: Vec<f64> = data
        .iter()
        .zip(&g)
        .map(|(&w, &g)| f64::from(w - g))
        .collect();
    assert_all_near(&want, t.cpu_data().unwrap(), "update from a frozen diff");
    drop(t);
    assert_eq!(owner.cpu_data(), &g[..], "the shared diff was only read");
    owner.thaw_data().unwrap();
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn dyn_blob_update_copies_a_stale_diff_as_caffe_does() {
    let Some(gpu) = gpu_or_skip("dyn_blob_update_copies_a_stale_diff_as_caffe_does") else {
        return;
    };
    // Data at the CPU, diff at the GPU: the diff is copied down once (Caffe's cpu_diff()).
    let (blob, data, diff) = filled_shape::<f32>(Some(&gpu), &[6, 5], 84);
    let mut b = blob.into_gpu_diff_mut().unwrap().erase();
    b.update().unwrap();
    assert_eq!(b.diff_state().head, Head::Synced);
    assert_eq!(b.diff_stats().d2h_copies, 1);
    assert_eq!(b.data_state().head, Head::HeadAtCpu);
    let want: Vec<f64> = data
        .iter()
        .zip(&diff)
        .map(|(&w, &g)| f64::from(w - g))
        .collect();
    assert_all_near(&want, b.cpu_data().unwrap(), "update on the CPU");
    // Synced data, diff at the CPU: the diff goes up, the update runs on the GPU, whose
    // side becomes the head; reading the data on the CPU copies it back once.
    let (blob, data, diff) = filled_shape::<f32>(Some(&gpu), &[4, 9], 85);
    let mut b = blob.into_gpu_data().unwrap().erase();
    assert_eq!(b.data_state().head, Head::Synced);
    b.sgd_update(0.5, 0.1).unwrap();
    assert_eq!(b.data_state().head, Head::HeadAtGpu);
    assert_eq!(b.diff_state().head, Head::Synced);
    assert_eq!(b.diff_stats().h2d_copies, 1);
    let want: Vec<f64> = data
        .iter()
        .zip(&diff)
        .map(|(&w, &g)| {
            let (w, g) = (f64::from(w), f64::from(g));
            w - 0.5 * (g + 0.1 * w)
        })
        .collect();
    assert_all_near(&want, b.cpu_data().unwrap(), "sgd_update on the GPU");
    assert_eq!(b.data_stats().d2h_copies, 1);
    assert_near(
        asum64(&diff),
        f64::from(b.asum_diff().unwrap()),
        "asum_diff on the GPU",
    );
}

#[test]
fn debug_names_each_sides_state_as_its_type() {
    let b = Blob::from_vec(&[2, 3], random_nonzero(6, 90))
        .unwrap()
        .freeze_data();
    let s = format!("{b:?}");
    assert!(
        s.contains("data: Frozen<HeadAtCpu>, diff: Uninitialized"),
        "{s}"
    );
    assert!(s.contains("capacity: 6"), "{s}");
    let d = format!("{:?}", b.erase());
    assert!(
        d.contains("data: Frozen<HeadAtCpu>, diff: Uninitialized"),
        "{d}"
    );
}
