//! The bad-input table: one test per row, each a call that a careful user could make with
//! wrong or extreme values, and what it must give: a typed error of the right variant whose
//! message says what is wrong in the right words (a length is not a shape, strides are not a
//! shape, an index is not a range), or a documented correct result. No row may panic, abort or
//! overflow (the suite runs in debug, with overflow checks on), and where a consuming call
//! fails, the row checks that the input came back intact inside the error.
//!
//! Rows are generated from tables by macros:
//! - `bad!`: `name: expression => error pattern, "substring of the message";`
//! - `handed_back!`: the same for calls returning `TransitionError<V>`, plus a check of `V`;
//! - `correct!`: a block asserting a documented result for an extreme but valid input.
//!
//! Rows that allocate (or try to reserve) huge host buffers are `#[cfg_attr(miri, ignore)]`:
//! Miri reports an impossible allocation as resource exhaustion instead of returning the
//! allocator's failure. Rows that need a GPU skip with a printed line without one.

#[cfg(feature = "ndarray")]
use ndarray::{s, ArrayD, ArrayView1, ArrayViewMut1, IxDyn};
use typestate_tensor::error::{AllocError, Error, LayoutError as LE, StateError};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::layout::{
    broadcast_shapes, checked_bytes, checked_numel, collapse, normalize_dim, Layout, MAX_DIMS,
};
use typestate_tensor::storage::{CachingConfig, PooledConfig};
use typestate_tensor::synced::{
    AnySyncedMemory, Blob, BlobShape, HeadAtCpu, HeadAtGpu, Reshaped, SyncedMemory, Uninitialized,
};
use typestate_tensor::tensor::{Tensor, TensorView, TensorViewMut};
use typestate_tensor::Cpu;
use Error::{Alloc as A, Layout as L, State as S};

const IMAX: usize = isize::MAX as usize;

/// Every fallible result this crate returns, as the crate's `Error` (or `None` on success).
trait Outcome {
    fn failure(self) -> Option<Error>;
}

impl<T> Outcome for Result<T, LE> {
    fn failure(self) -> Option<Error> {
        self.err().map(Error::from)
    }
}

impl<T> Outcome for Result<T, Error> {
    fn failure(self) -> Option<Error> {
        self.err()
    }
}

impl<T> Outcome for Result<T, AllocError> {
    fn failure(self) -> Option<Error> {
        self.err().map(Error::from)
    }
}

fn check(name: &str, err: &Error, variant_ok: bool, needle: &str) {
    assert!(variant_ok, "{name}: wrong error variant: {err:?}");
    let text = err.to_string();
    assert!(
        text.contains(needle),
        "{name}: message {text:?} does not say {needle:?}"
    );
}

/// `name: expr => pattern, "message substring";`
macro_rules! bad {
    ($($(#[$m:meta])* $name:ident: $e:expr => $p:pat, $msg:expr;)*) => {$(
        $(#[$m])*
        #[test]
        fn $name() {
            let Some(err) = Outcome::failure($e) else {
                panic!("{}: succeeded, expected an error", stringify!($name));
            };
            check(stringify!($name), &err, matches!(err, $p), $msg);
        }
    )*};
}

/// `name: expr => pattern, "message substring", |value| check on the value handed back;`
macro_rules! handed_back {
    ($($(#[$m:meta])* $name:ident: $e:expr => $p:pat, $msg:expr, |$v:ident| $ok:expr;)*) => {$(
        $(#[$m])*
        #[test]
        fn $name() {
            let result = $e;
            let Err(te) = result else {
                panic!("{}: succeeded, expected an error", stringify!($name));
            };
            let ($v, err) = te.into_parts();
            check(stringify!($name), &err, matches!(err, $p), $msg);
            assert!($ok, "{}: the input was not handed back intact", stringify!($name));
        }
    )*};
}

/// `name: { block asserting the documented result }`
macro_rules! correct {
    ($($(#[$m:meta])* $name:ident: $body:block)*) => {$(
        $(#[$m])*
        #[test]
        fn $name() $body
    )*};
}

fn m23() -> Layout {
    Layout::contiguous(&[2, 3]).unwrap()
}

fn t23() -> Tensor<f32> {
    Tensor::from_vec(&[2, 3], vec![0.5, -1.0, 2.0, 3.0, -0.25, 1.5]).unwrap()
}

/// A rank-0 `u8` tensor broadcast to `n` elements (a view over one byte).
fn huge_view(t: &Tensor<u8>, shape: &[usize]) -> TensorView<'static, u8> {
    // Leak one byte per row so the view can outlive the helper; rows are few.
    let t: &'static Tensor<u8> = Box::leak(Box::new(t.clone()));
    t.broadcast_to(shape).unwrap()
}

// ---- Layout constructors ---------------------------------------------------------------

bad! {
    scalar_offset_past_isize_max: Layout::scalar(IMAX + 1)
        => L(LE::OffsetOverflow { offset: 9223372036854775808, .. }), "past isize::MAX";
    scalar_offset_usize_max: Layout::scalar(usize::MAX)
        => L(LE::OffsetOverflow { .. }), "offset 18446744073709551615";
    new_offset_past_isize_max_on_empty_layout: Layout::new(&[0], &[1], usize::MAX)
        => L(LE::OffsetOverflow { .. }), "past isize::MAX";
    new_offset_past_isize_max: Layout::new(&[2], &[1], IMAX + 1)
        => L(LE::OffsetOverflow { .. }), "past isize::MAX";
    new_offset_plus_span_past_isize_max: Layout::new(&[2], &[1], IMAX)
        => L(LE::OffsetOverflow { .. }), "past isize::MAX";
    new_too_few_strides: Layout::new(&[2, 3], &[1], 0)
        => L(LE::StrideCount { rank: 2, got: 1, .. }), "1 strides [1] given for shape [2, 3] of rank 2";
    new_too_many_strides: Layout::new(&[2], &[1, 1], 0)
        => L(LE::StrideCount { rank: 1, got: 2, .. }), "one stride per dim";
    new_strides_for_rank_0: Layout::new(&[], &[1], 0)
        => L(LE::StrideCount { rank: 0, got: 1, .. }), "shape [] of rank 0";
    new_isize_max_stride_on_size_3: Layout::new(&[3], &[isize::MAX], 0)
        => L(LE::OffsetOverflow { .. }), "strides [9223372036854775807]";
    new_isize_min_stride_on_size_2: Layout::new(&[2], &[isize::MIN], 0)
        => L(LE::BelowStorageStart { lowest: isize::MIN, .. }), "before the start of the storage";
    new_isize_min_stride_from_isize_max: Layout::new(&[2], &[isize::MIN], IMAX)
        => L(LE::BelowStorageStart { lowest: -1, .. }), "reaches element offset -1";
    new_isize_min_stride_on_size_3: Layout::new(&[3], &[isize::MIN], IMAX)
        => L(LE::OffsetOverflow { .. }), "past isize::MAX";
    new_negative_stride_below_offset: Layout::new(&[3], &[-2], 1)
        => L(LE::BelowStorageStart { lowest: -3, .. }), "reaches element offset -3";
    new_spans_that_sum_past_isize_max: Layout::new(&[2, 2], &[1 << 62, 1 << 62], 0)
        => L(LE::OffsetOverflow { .. }), "past isize::MAX";
    new_shape_product_past_usize: Layout::new(&[1 << 32, 1 << 32], &[1, 1], 0)
        => L(LE::SizeOverflow { .. }), "element count";
    new_rank_33: Layout::new(&[1; 33], &[1; 33], 0)
        => L(LE::RankTooLarge { rank: 33, max: 32, .. }), "rank 33 exceeds the maximum of 32";
    contiguous_count_past_isize_max: Layout::contiguous(&[IMAX + 1])
        => L(LE::SizeOverflow { .. }), "size overflow for shape [9223372036854775808]";
    contiguous_empty_but_other_sizes_overflow: Layout::contiguous(&[0, usize::MAX, 2])
        => L(LE::SizeOverflow { .. }), "empty, but its other sizes multiply past isize::MAX";
    contiguous_rank_33: Layout::contiguous(&[1; 33])
        => L(LE::RankTooLarge { rank: 33, .. }), "maximum of 32";
    checked_numel_overflow: checked_numel("count", &[usize::MAX, 2])
        => L(LE::SizeOverflow { op: "count", .. }), "element count";
    checked_bytes_past_usize: checked_bytes("alloc", &[1 << 61], 8)
        => L(LE::SizeOverflow { .. }), "byte size";
    checked_bytes_past_isize_max: checked_bytes("alloc", &[1 << 60], 8)
        => L(LE::SizeOverflow { .. }), "byte size past isize::MAX";
    check_within_offset_outside_storage: Layout::scalar(5).unwrap().check_within("view", 1)
        => L(LE::OutOfStorage { storage_len: 1, .. }), "reaches outside storage of 1 elements";
    check_within_empty_storage: Layout::contiguous(&[1]).unwrap().check_within("view", 0)
        => L(LE::OutOfStorage { .. }), "storage of 0 elements";
    check_within_last_element_one_past: Layout::new(&[2, 2], &[3, 1], 0).unwrap().check_within("view", 4)
        => L(LE::OutOfStorage { .. }), "strides [3, 1]";
}

correct! {
    isize_max_stride_on_a_size_1_dim_is_valid: {
        let l = Layout::new(&[1, 3], &[isize::MAX, 1], 0).unwrap();
        assert_eq!(l.offset_range(), Some((0, 2)));
        assert!(l.check_within("view", 3).is_ok());
        assert!(l.is_contiguous());
    }
    isize_min_stride_on_a_size_1_dim_is_valid: {
        let l = Layout::new(&[3, 1], &[1, isize::MIN], 2).unwrap();
        assert_eq!(l.offset_range(), Some((2, 4)));
        assert!(l.is_non_overlapping());
    }
    extreme_strides_on_an_empty_layout_are_valid: {
        let l = Layout::new(&[0, 5, 5], &[1, isize::MAX, isize::MIN], IMAX).unwrap();
        assert_eq!(l.numel(), 0);
        assert_eq!(l.offset_range(), None);
        assert!(l.is_contiguous());
        assert!(l.check_writable("out").is_ok());
        assert!(l.check_within("view", 0).is_ok());
    }
    scalar_at_isize_max_is_valid_but_fits_no_real_storage: {
        let l = Layout::scalar(IMAX).unwrap();
        assert_eq!(l.offset_range(), Some((IMAX, IMAX)));
        assert!(l.check_within("view", IMAX).is_err());
    }
    empty_shape_with_representable_sizes_is_valid: {
        let l = Layout::contiguous(&[0, IMAX]).unwrap();
        assert_eq!(l.numel(), 0);
        assert!(l.is_contiguous());
    }
}

// ---- Indexing ----------------------------------------------------------------------------

bad! {
    index_with_too_few_entries: m23().index_to_offset(&[1])
        => L(LE::IndexLength { rank: 2, got: 1, .. }), "needs 2 entries (one per dim), got 1";
    index_with_too_many_entries: m23().index_to_offset(&[0, 0, 0])
        => L(LE::IndexLength { got: 3, .. }), "an index into shape [2, 3]";
    index_past_the_dim: m23().index_to_offset(&[0, 3])
        => L(LE::IndexOutOfBounds { dim: 1, index: 3, size: 3, .. }), "index 3 is out of bounds for dim 1 of size 3";
    index_usize_max: m23().index_to_offset(&[usize::MAX, 0])
        => L(LE::IndexOutOfBounds { index: usize::MAX, .. }), "out of bounds for dim 0";
    tensor_get_with_too_many_entries: t23().get(&[0, 0, 0])
        => L(LE::IndexLength { .. }), "one per dim";
    tensor_get_past_the_end: t23().get(&[2, 0])
        => L(LE::IndexOutOfBounds { .. }), "index 2 is out of bounds for dim 0 of size 2";
    scalar_get_with_an_index: Tensor::scalar(1.0f32).get(&[0])
        => L(LE::IndexLength { rank: 0, .. }), "needs 0 entries";
}

// ---- Views -------------------------------------------------------------------------------

bad! {
    permute_repeats_a_dim: m23().permute(&[0, 0])
        => L(LE::InvalidPermutation { .. }), "[0, 0] is not a permutation of 0..2";
    permute_too_short: m23().permute(&[0])
        => L(LE::InvalidPermutation { .. }), "not a permutation";
    permute_out_of_range: m23().permute(&[0, 5])
        => L(LE::InvalidPermutation { .. }), "not a permutation";
    permute_usize_max: m23().permute(&[usize::MAX, 0])
        => L(LE::InvalidPermutation { .. }), "not a permutation";
    transpose_dim_past_rank: m23().transpose(0, 2)
        => L(LE::DimOutOfRange { dim: 2, rank: 2, .. }), "dim 2 is out of range for rank 2";
    transpose_isize_min: m23().transpose(isize::MIN, 0)
        => L(LE::DimOutOfRange { .. }), "out of range for rank 2";
    transpose_isize_max: m23().transpose(1, isize::MAX)
        => L(LE::DimOutOfRange { .. }), "out of range";
    narrow_past_the_end: m23().narrow(1, 2, 2)
        => L(LE::RangeOutOfBounds { op: "narrow", .. }), "range 2..4 step 1 is invalid for dim 1 of size 3";
    narrow_start_plus_len_overflows: m23().narrow(1, usize::MAX, 2)
        => L(LE::RangeOutOfBounds { op: "narrow", .. }), "dim 1 of size 3";
    slice_step_zero: m23().slice(0, 0, 2, 0)
        => L(LE::RangeOutOfBounds { step: 0, .. }), "step 0";
    slice_start_after_end: m23().slice(1, 2, 1, 1)
        => L(LE::RangeOutOfBounds { .. }), "range 2..1";
    slice_end_past_size: m23().slice(1, 0, 4, -1)
        => L(LE::RangeOutOfBounds { .. }), "range 0..4 step -1";
    slice_negative_dim_past_rank: m23().slice(-3, 0, 1, 1)
        => L(LE::DimOutOfRange { dim: -3, .. }), "dim -3 is out of range for rank 2";
    flip_dim_past_rank: m23().flip(2)
        => L(LE::DimOutOfRange { op: "flip", .. }), "flip: dim 2";
    flip_of_rank_0: Layout::scalar(0).unwrap().flip(0)
        => L(LE::DimOutOfRange { rank: 0, .. }), "rank 0";
    unsqueeze_past_rank: m23().unsqueeze(3)
        => L(LE::DimOutOfRange { dim: 3, rank: 3, .. }), "dim 3 is out of range for rank 3";
    unsqueeze_beyond_max_rank: Layout::contiguous(&[1; 32]).unwrap().unsqueeze(0)
        => L(LE::RankTooLarge { rank: 33, .. }), "rank 33 exceeds";
    squeeze_a_dim_of_size_2: m23().squeeze(0)
        => L(LE::DimSize { size: 2, expected: 1, .. }), "dim 0 has size 2, expected 1";
    squeeze_past_rank: m23().squeeze(5)
        => L(LE::DimOutOfRange { .. }), "dim 5";
    broadcast_incompatible: m23().broadcast_to(&[3, 3])
        => L(LE::BroadcastMismatch { .. }), "shapes [2, 3] and [3, 3] cannot be broadcast together";
    broadcast_to_fewer_dims: m23().broadcast_to(&[3])
        => L(LE::BroadcastMismatch { .. }), "cannot be broadcast";
    broadcast_2_to_0: Layout::contiguous(&[2]).unwrap().expand(&[0])
        => L(LE::BroadcastMismatch { .. }), "[2] and [0]";
    broadcast_to_overflowing_shape: Layout::scalar(0).unwrap().broadcast_to(&[usize::MAX, 2])
        => L(LE::SizeOverflow { .. }), "element count";
    broadcast_to_rank_33: m23().broadcast_to(&[1; 33])
        => L(LE::RankTooLarge { .. }), "rank 33";
    reshape_changes_count: m23().reshape(&[4])
        => L(LE::ReshapeNumel { from_numel: 6, to_numel: 4, .. }), "cannot reshape [2, 3] (6 elements) into [4] (4 elements)";
    reshape_to_overflowing_shape: m23().reshape(&[usize::MAX, 2])
        => L(LE::SizeOverflow { .. }), "element count";
    reshape_empty_to_overflowing_empty: Layout::contiguous(&[0]).unwrap().reshape(&[0, usize::MAX, 3])
        => L(LE::SizeOverflow { .. }), "empty, but its other sizes multiply past isize::MAX";
    reshape_empty_to_usize_max_by_0: Layout::contiguous(&[0]).unwrap().reshape(&[usize::MAX, 0])
        => L(LE::SizeOverflow { .. }), "size overflow for shape [18446744073709551615, 0] (empty, but its other sizes multiply past isize::MAX, which its strides must fit)";
    reshape_transposed_needs_copy: m23().t().reshape(&[6])
        => L(LE::ReshapeNeedsCopy { .. }), "cannot be viewed as [6] without a copy";
    reshape_to_rank_33: m23().reshape(&[1; 33])
        => L(LE::RankTooLarge { .. }), "rank 33";
    reshape_huge_strides_needs_copy: Layout::new(&[2, 2], &[1, 1 << 62], 0).unwrap().reshape(&[4])
        => L(LE::ReshapeNeedsCopy { .. }), "strides [1, 4611686018427387904]";
    normalize_dim_isize_min: normalize_dim("dim", isize::MIN, 3)
        => L(LE::DimOutOfRange { .. }), "dim -9223372036854775808 is out of range for rank 3";
    broadcast_shapes_mismatch: broadcast_shapes("add", &[2, 3], &[4])
        => L(LE::BroadcastMismatch { op: "add", .. }), "add: shapes [2, 3] and [4]";
    broadcast_shapes_overflow: broadcast_shapes("add", &[usize::MAX, 1], &[1, 2])
        => L(LE::SizeOverflow { .. }), "element count";
    broadcast_shapes_rank_33: broadcast_shapes("add", &[1; 33], &[1])
        => L(LE::RankTooLarge { .. }), "rank 33";
}

correct! {
    slice_with_step_isize_max_keeps_one_element: {
        let l = Layout::new(&[3], &[2], 0).unwrap();
        let s = l.slice(0, 0, 3, isize::MAX).unwrap();
        assert_eq!((s.shape(), s.offset()), (&[1][..], 0));
        assert_eq!(s.offset_range(), Some((0, 0)));
    }
    slice_with_step_isize_min_keeps_the_last_element: {
        let l = Layout::new(&[3], &[2], 0).unwrap();
        let s = l.slice(0, 0, 3, isize::MIN).unwrap();
        assert_eq!((s.shape(), s.offset()), (&[1][..], 4));
    }
    flip_of_a_size_1_dim_with_stride_isize_min: {
        let l = Layout::new(&[1, 2], &[isize::MIN, 1], 0).unwrap();
        let f = l.flip(0).unwrap();
        assert_eq!(f.offset_range(), Some((0, 1)));
    }
    flip_of_an_empty_dim_with_stride_isize_min: {
        let l = Layout::new(&[0], &[isize::MIN], 0).unwrap();
        assert_eq!(l.flip(0).unwrap().numel(), 0);
    }
    unsqueeze_of_an_empty_layout_with_stride_isize_max: {
        let l = Layout::new(&[0, 2], &[1, isize::MAX], 0).unwrap();
        assert_eq!(l.unsqueeze(1).unwrap().shape(), &[0, 1, 2]);
    }
    narrow_of_an_empty_layout_with_extreme_strides_keeps_its_offset: {
        let l = Layout::new(&[0, 5], &[1, isize::MIN], 7).unwrap();
        let n = l.narrow(1, 3, 2).unwrap();
        assert_eq!((n.shape(), n.offset()), (&[0, 2][..], 7));
        let s = Layout::new(&[0, 5], &[1, isize::MAX], 0).unwrap().slice(1, 4, 5, 1).unwrap();
        assert_eq!(s.offset(), 0);
    }
    collapse_does_not_merge_dims_whose_product_overflows: {
        let out = Layout::contiguous(&[2, 2]).unwrap();
        let a = Layout::new(&[2, 2], &[1, 1 << 62], 0).unwrap();
        let c = collapse([&out, &a]);
        assert_eq!(c.rank(), 2);
        assert_eq!(c.max_extent(), 1 + (1 << 62));
    }
    normalize_dim_extremes_resolve_without_overflow: {
        assert_eq!(normalize_dim("dim", -1, usize::MAX), Ok(usize::MAX - 1));
        assert_eq!(normalize_dim("dim", isize::MIN, usize::MAX), Ok(usize::MAX - (1 << 63)));
    }
    broadcast_of_a_scalar_to_max_count_is_a_view: {
        let l = Layout::scalar(3).unwrap().broadcast_to(&[IMAX]).unwrap();
        assert_eq!(l.offset_range(), Some((3, 3)));
        assert!(!l.is_non_overlapping());
    }
    max_rank_layout_round_trips: {
        let l = Layout::contiguous(&[1; MAX_DIMS]).unwrap();
        let back = l.reshape(&[1]).unwrap().reshape(&[1; MAX_DIMS]).unwrap();
        assert_eq!(back.shape(), l.shape());
        assert!(back.is_contiguous());
    }
}

// ---- Tensor constructors -----------------------------------------------------------------

bad! {
    from_vec_wrong_length: Tensor::from_vec(&[2, 3], vec![1.0f32; 5])
        => L(LE::LengthMismatch { expected: 6, got: 5, .. }), "shape [2, 3] holds 6 elements, but the data has length 5";
    from_vec_empty_data_for_a_scalar: Tensor::<f32>::from_vec(&[], vec![])
        => L(LE::LengthMismatch { expected: 1, got: 0, .. }), "shape [] holds 1 elements";
    from_vec_overflowing_shape: Tensor::from_vec(&[usize::MAX, 2], vec![0f32])
        => L(LE::SizeOverflow { op: "contiguous", .. }), "element count";
    tensor_reshape_empty_to_usize_max_by_0: Tensor::<f32>::zeros(&[0]).unwrap().reshape(&[usize::MAX, 0])
        => L(LE::SizeOverflow { .. }), "empty, but its other sizes multiply past isize::MAX";
    from_vec_rank_33: Tensor::from_vec(&[1; 33], vec![0f32])
        => L(LE::RankTooLarge { .. }), "rank 33";
    zeros_overflowing_shape: Tensor::<f32>::zeros(&[usize::MAX, 2])
        => L(LE::SizeOverflow { .. }), "element count";
    zeros_past_isize_max_bytes: Tensor::<f64>::zeros(&[1 << 61])
        => A(AllocError::TooLarge { elements: 2305843009213693952, elem_size: 8, .. }), "exceeds isize::MAX bytes";
    #[cfg_attr(miri, ignore)]
    zeros_larger_than_the_host: Tensor::<u8>::zeros(&[IMAX])
        => A(AllocError::OutOfMemory(_)), "out of memory on cpu";
    full_overflowing_shape: Tensor::full(&[usize::MAX, 2], 1.0f32)
        => L(LE::SizeOverflow { .. }), "element count";
    from_fn_past_isize_max_bytes: Tensor::<f64>::from_fn(&[1 << 61], |_| 0.0)
        => A(AllocError::TooLarge { .. }), "exceeds isize::MAX bytes";
    #[cfg_attr(miri, ignore)]
    from_fn_larger_than_the_host: Tensor::<u8>::from_fn(&[IMAX], |_| 0)
        => A(AllocError::OutOfMemory(_)), "out of memory on cpu";
    from_fn_overflowing_shape: Tensor::<u8>::from_fn(&[1 << 40, 1 << 40], |_| 0)
        => L(LE::SizeOverflow { .. }), "element count";
    arange_past_isize_max_bytes: Tensor::<f32>::arange(1 << 62)
        => A(AllocError::TooLarge { elem_size: 4, .. }), "4611686018427387904 elements of 4 bytes";
    view_new_outside_storage: TensorView::new(&[1f32, 2.0, 3.0][..], Layout::scalar(5).unwrap(), &Cpu)
        => L(LE::OutOfStorage { storage_len: 3, .. }), "storage of 3 elements";
    view_mut_new_overlapping: TensorViewMut::new(&mut [1f32, 2.0, 3.0][..], Layout::scalar(0).unwrap().broadcast_to(&[3]).unwrap(), &Cpu)
        => L(LE::OverlappingOutput { .. }), "overlapping elements";
    view_mut_new_outside_storage: TensorViewMut::new(&mut [1f32; 3][..], Layout::contiguous(&[4]).unwrap(), &Cpu)
        => L(LE::OutOfStorage { .. }), "outside storage of 3 elements";
}

handed_back! {
    from_parts_layout_outside_storage: Tensor::from_parts(vec![1f32; 4], Layout::contiguous(&[5]).unwrap(), Cpu)
        => L(LE::OutOfStorage { storage_len: 4, .. }), "outside storage of 4 elements",
        |parts| parts.0 == [1.0; 4] && parts.1.shape() == [5];
    from_parts_overlapping_layout: Tensor::from_parts(vec![2f32; 3], Layout::contiguous(&[1, 3]).unwrap().broadcast_to(&[2, 3]).unwrap(), Cpu)
        => L(LE::OverlappingOutput { .. }), "has overlapping elements",
        |parts| parts.0 == [2.0; 3] && parts.1.strides() == [0, 1];
    from_parts_offset_outside_storage: Tensor::from_parts(vec![3f32; 1], Layout::scalar(1).unwrap(), Cpu)
        => L(LE::OutOfStorage { offset: 1, .. }), "offset 1",
        |parts| parts.0 == [3.0] && parts.1.offset() == 1;
    set_layout_outside_storage_leaves_the_tensor: {
        let mut t = t23();
        t.set_layout(Layout::contiguous(&[7]).unwrap()).map(|_| t.clone()).map_err(|e| TE(t, e))
    } => L(LE::OutOfStorage { .. }), "storage of 6 elements", |t| t.shape() == [2, 3] && t.to_vec() == t23().to_vec();
    set_layout_overlapping_leaves_the_tensor: {
        let mut t = t23();
        let l = Layout::contiguous(&[1, 3]).unwrap().broadcast_to(&[2, 3]).unwrap();
        t.set_layout(l).map(|_| t.clone()).map_err(|e| TE(t, e))
    } => L(LE::OverlappingOutput { .. }), "overlapping", |t| t.strides() == [3, 1];
}

/// A `(value, error)` pair for rows whose call borrows rather than consumes.
struct TE<V>(V, Error);

impl<V> TE<V> {
    fn into_parts(self) -> (V, Error) {
        (self.0, self.1)
    }
}

// ---- Tensor views and ops ----------------------------------------------------------------

bad! {
    tensor_narrow_past_the_end: t23().narrow(0, 1, 5).map(|v| v.numel())
        => L(LE::RangeOutOfBounds { op: "narrow", .. }), "range 1..6";
    tensor_reshape_of_a_transpose_needs_copy: t23().t().reshape(&[6]).map(|v| v.numel())
        => L(LE::ReshapeNeedsCopy { .. }), "reshape_copy";
    tensor_reshape_copy_wrong_count: t23().reshape_copy(&[7])
        => L(LE::ReshapeNumel { .. }), "(6 elements) into [7] (7 elements)";
    tensor_view_mut_broadcast_is_not_writable: t23().narrow(0, 0, 1).unwrap().contiguous().unwrap().view_mut().broadcast_to(&[4, 3]).map(|v| v.numel())
        => L(LE::OverlappingOutput { .. }), "write into a contiguous tensor";
    tensor_permute_wrong_length: t23().permute(&[1, 0, 2]).map(|v| v.numel())
        => L(LE::InvalidPermutation { .. }), "[1, 0, 2] is not a permutation of 0..2";
    add_shapes_that_do_not_broadcast: &t23() + &Tensor::<f32>::zeros(&[4]).unwrap()
        => L(LE::BroadcastMismatch { op: "add", .. }), "add: shapes [2, 3] and [4] cannot be broadcast together";
    mul_shapes_that_do_not_broadcast: t23().mul(&Tensor::<f32>::zeros(&[3, 2]).unwrap())
        => L(LE::BroadcastMismatch { op: "mul", .. }), "[2, 3] and [3, 2]";
    where_mask_that_does_not_broadcast: Tensor::where_cond(&Tensor::<bool>::zeros(&[2]).unwrap(), &t23(), &t23())
        => L(LE::BroadcastMismatch { .. }), "[2] and [2, 3]";
    add_into_an_output_of_another_shape: t23().add_into(&t23(), &mut Tensor::<f32>::zeros(&[1, 3]).unwrap())
        => L(LE::ShapeMismatch { op: "add", .. }), "expected shape [1, 3], got [2, 3]";
    add_inplace_with_a_larger_rhs: Tensor::<f32>::zeros(&[3]).unwrap().add_(&t23())
        => L(LE::ShapeMismatch { .. }), "expected shape [3], got [2, 3]";
    copy_from_another_shape: Tensor::<f32>::zeros(&[3, 2]).unwrap().copy_from(&t23())
        => L(LE::BroadcastMismatch { .. }), "cannot be broadcast";
    clamp_bounds_that_do_not_broadcast: t23().clamp(&Tensor::scalar(0.0f32), &Tensor::<f32>::zeros(&[2]).unwrap())
        => L(LE::BroadcastMismatch { op: "clamp", .. }), "clamp: shapes";
    fma_into_the_wrong_shape: t23().fma_into(&t23(), &t23(), &mut Tensor::<f32>::zeros(&[6]).unwrap())
        => L(LE::BroadcastMismatch { .. }), "[6] and [2, 3]";
    cast_into_the_wrong_shape: t23().cast_into::<f64>(&mut Tensor::<f64>::zeros(&[4]).unwrap())
        => L(LE::BroadcastMismatch { .. }), "[4] and [2, 3]";
    add_of_broadcasts_whose_shape_overflows: {
        let one = Tensor::scalar(1u8);
        let a = one.broadcast_to(&[1 << 40, 1]).unwrap();
        let b = one.broadcast_to(&[1, 1 << 40]).unwrap();
        a.add(&b)
    } => L(LE::SizeOverflow { .. }), "element count";
    add_of_broadcasts_past_isize_max_bytes: {
        let one = Tensor::scalar(1.0f32);
        let a = one.broadcast_to(&[1 << 31, 1]).unwrap();
        let b = one.broadcast_to(&[1, 1 << 31]).unwrap();
        a.add(&b)
    } => A(AllocError::TooLarge { elem_size: 4, .. }), "exceeds isize::MAX bytes";
    contiguous_of_a_broadcast_past_isize_max_bytes: Tensor::scalar(1.0f64).broadcast_to(&[1 << 61]).unwrap().contiguous()
        => A(AllocError::TooLarge { .. }), "exceeds isize::MAX bytes";
    #[cfg_attr(miri, ignore)]
    contiguous_of_a_broadcast_larger_than_the_host: huge_view(&Tensor::scalar(1u8), &[IMAX]).contiguous()
        => A(AllocError::OutOfMemory(_)), "out of memory on cpu";
    #[cfg_attr(miri, ignore)]
    try_to_vec_of_a_broadcast_larger_than_the_host: huge_view(&Tensor::scalar(1u8), &[1 << 20, 1 << 42]).try_to_vec()
        => A(AllocError::OutOfMemory(_)), "tried to allocate 4611686018427387904 bytes";
    try_to_vec_of_a_broadcast_past_isize_max_bytes: Tensor::scalar(1.0f32).broadcast_to(&[1 << 62]).unwrap().try_to_vec()
        => A(AllocError::TooLarge { .. }), "exceeds isize::MAX bytes";
    cast_of_a_broadcast_past_isize_max_bytes: Tensor::scalar(1u8).broadcast_to(&[1 << 61]).unwrap().cast::<f64>()
        => A(AllocError::TooLarge { elem_size: 8, .. }), "elements of 8 bytes";
    #[cfg(feature = "ndarray")]
    to_ndarray_of_a_broadcast_past_isize_max_bytes: Tensor::scalar(1i64).broadcast_to(&[1 << 61]).unwrap().to_ndarray()
        => A(AllocError::TooLarge { .. }), "exceeds isize::MAX bytes";
}

correct! {
    ops_on_empty_tensors_give_empty_tensors: {
        let a = Tensor::<f32>::zeros(&[0, 3]).unwrap();
        let b = Tensor::<f32>::zeros(&[3]).unwrap();
        assert_eq!((&a + &b).unwrap().shape(), &[0, 3]);
        assert_eq!(a.t().contiguous().unwrap().shape(), &[3, 0]);
        assert_eq!(a.sum().unwrap().item().unwrap(), 0.0);
    }
    ops_at_the_layout_rank_limit_run_on_the_cpu: {
        let a = Tensor::<f32>::full(&[1; MAX_DIMS], 2.0).unwrap();
        let b = (&a * &a).unwrap();
        assert_eq!(b.to_vec(), [4.0]);
        assert_eq!(b.shape(), &[1; MAX_DIMS]);
    }
    get_of_a_strided_view_at_the_last_element: {
        let t = t23();
        assert_eq!(t.t().flip(0).unwrap().get(&[0, 1]).unwrap(), 1.5);
    }
}

// ---- ndarray interop (the `ndarray` feature) --------------------------------------------

bad! {
    #[cfg(feature = "ndarray")]
    borrow_a_stepped_ndarray_view: {
        let a = ndarray::Array1::<f32>::zeros(6);
        TensorView::from_ndarray(a.slice(s![..;2])).map(|v| v.numel())
    } => L(LE::NotDense { .. }), "has gaps between its elements";
    #[cfg(feature = "ndarray")]
    borrow_a_stepped_ndarray_view_mut: {
        let mut a = ndarray::Array1::<f32>::zeros(6);
        TensorViewMut::from_ndarray(a.slice_mut(s![..;3])).map(|v| v.numel())
    } => L(LE::NotDense { .. }), "use `Tensor::from_ndarray` to copy it";
    #[cfg(feature = "ndarray")]
    borrow_an_ndarray_of_rank_33: {
        let a = ArrayD::<f32>::zeros(IxDyn(&[1; 33]));
        TensorView::from_ndarray(a.view()).map(|v| v.numel())
    } => L(LE::RankTooLarge { .. }), "rank 33";
    #[cfg(feature = "ndarray")]
    copy_an_ndarray_of_rank_33: Tensor::from_ndarray(&ArrayD::<f32>::zeros(IxDyn(&[1; 33])))
        => L(LE::RankTooLarge { .. }), "rank 33";
    #[cfg(feature = "ndarray")]
    copy_an_ndarray_broadcast_past_isize_max_bytes: {
        let one = [1.0f64];
        let a = ArrayView1::from(&one[..]);
        Tensor::from_ndarray(&a.broadcast(1usize << 61).unwrap())
    } => A(AllocError::TooLarge { .. }), "exceeds isize::MAX bytes";
    #[cfg(feature = "ndarray")]
    #[cfg_attr(miri, ignore)]
    copy_an_ndarray_broadcast_larger_than_the_host: {
        let one = [1u8];
        let a = ArrayView1::from(&one[..]);
        Tensor::from_ndarray(&a.broadcast(IMAX).unwrap())
    } => A(AllocError::OutOfMemory(_)), "out of memory";
}

correct! {
    #[cfg(feature = "ndarray")]
    ndarray_round_trip_keeps_negative_and_zero_strides: {
        let mut data = [1.0f32, 2.0, 3.0];
        let v = ArrayViewMut1::from(&mut data[..]);
        let t = TensorViewMut::from_ndarray(v).unwrap();
        let flipped = t.into_view().flip(0).unwrap();
        assert_eq!(flipped.as_ndarray().unwrap().iter().copied().collect::<Vec<_>>(), [3.0, 2.0, 1.0]);
        let b = flipped.unsqueeze(0).unwrap().broadcast_to(&[2, 3]).unwrap();
        assert_eq!(b.as_ndarray().unwrap().strides(), &[0, -1]);
    }
}

// ---- Blob, BlobShape, SyncedMemory -------------------------------------------------------

bad! {
    blob_shape_overflow: BlobShape::new(&[usize::MAX, 2])
        => L(LE::SizeOverflow { .. }), "element count";
    blob_shape_rank_33: BlobShape::new(&[1; 33])
        => L(LE::RankTooLarge { max: 32, .. }), "rank 33 exceeds the maximum of 32";
    blob_new_overflow: Blob::<f32, Uninitialized>::new(&[usize::MAX, 2])
        => L(LE::SizeOverflow { .. }), "element count";
    blob_new_past_isize_max_bytes: Blob::<f64, Uninitialized>::new(&[1 << 61])
        => L(LE::SizeOverflow { .. }), "byte size";
    blob_shape_offset_index_past_the_axis: BlobShape::new(&[2, 3, 4, 5]).unwrap().offset(0, 4, 0, 0)
        => L(LE::IndexOutOfBounds { dim: 1, index: 4, size: 3, .. }), "index 4 is out of bounds for dim 1 of size 3";
    blob_shape_offset_of_too_many_indices: BlobShape::new(&[2, 3]).unwrap().offset_of(&[0, 0, 0])
        => L(LE::IndexLength { rank: 2, got: 3, .. }), "got 3";
    blob_shape_offset_of_index_past_the_axis: BlobShape::new(&[2, 3]).unwrap().offset_of(&[2])
        => L(LE::IndexOutOfBounds { index: 2, size: 2, .. }), "index 2 is out of bounds for dim 0";
    blob_shape_axis_out_of_range: BlobShape::new(&[2, 3]).unwrap().canonical_axis_index(-3)
        => L(LE::DimOutOfRange { .. }), "dim -3 is out of range for rank 2";
    blob_shape_count_range_backwards: BlobShape::new(&[2, 3]).unwrap().count_range(2, 1)
        => L(LE::RangeOutOfBounds { .. }), "range 2..1";
    blob_shape_legacy_accessor_on_5_axes: BlobShape::new(&[1; 5]).unwrap().num()
        => L(LE::RankTooLarge { rank: 5, max: 4, .. }), "rank 5 exceeds the maximum of 4";
    blob_reshape_in_place_past_capacity: Blob::<f32, Uninitialized>::new(&[2, 3]).unwrap().reshape_in_place(&[7])
        => S(StateError::ExceedsCapacity { requested: 7, capacity: 6, .. }), "exceed the capacity of 6";
    blob_reshape_in_place_overflow: Blob::<f32, Uninitialized>::new(&[2]).unwrap().reshape_in_place(&[usize::MAX, 2])
        => L(LE::SizeOverflow { .. }), "element count";
    synced_memory_past_isize_max_bytes: SyncedMemory::<f64, Uninitialized>::new(1 << 61)
        => L(LE::SizeOverflow { .. }), "byte size";
    synced_memory_usize_max: SyncedMemory::<u8, Uninitialized>::new(usize::MAX)
        => L(LE::SizeOverflow { .. }), "element count past isize::MAX";
    caching_config_bad_number: CachingConfig::parse("max_split_size_mb:abc")
        => A(AllocError::InvalidConfigValue(..)), "max_split_size_mb";
    caching_config_unknown_key: CachingConfig::parse("max_split_sise_mb:64")
        => A(AllocError::UnusableConfigKey { .. }), "max_split_sise_mb";
    pooled_config_unknown_type: PooledConfig::parse("type:nonsense")
        => A(AllocError::InvalidConfigValue(..)), "must be page or round";
}

handed_back! {
    blob_from_vec_wrong_length: Blob::from_vec(&[2, 3], vec![1.0f32; 5])
        => L(LE::LengthMismatch { expected: 6, got: 5, .. }), "shape [2, 3] holds 6 elements, but the data has length 5",
        |v| v == vec![1.0; 5];
    blob_from_vec_overflowing_shape: Blob::from_vec(&[usize::MAX, 2], vec![7u8; 3])
        => L(LE::SizeOverflow { .. }), "element count", |v| v == vec![7; 3];
    blob_from_vec_rank_33: Blob::from_vec(&[1; 33], vec![1i32])
        => L(LE::RankTooLarge { .. }), "rank 33", |v| v == vec![1];
    blob_reshape_overflow: Blob::from_vec(&[2], vec![1.0f32, 2.0]).unwrap().reshape(&[usize::MAX, 2]).map(|_| ())
        => L(LE::SizeOverflow { .. }), "element count", |b| b.shape().dims() == [2] && b.cpu_data() == [1.0, 2.0];
    blob_reshape_rank_33: Blob::from_vec(&[2], vec![1.0f32, 2.0]).unwrap().reshape(&[1; 33]).map(|_| ())
        => L(LE::RankTooLarge { .. }), "rank 33", |b| b.count() == 2 && b.cpu_data() == [1.0, 2.0];
    blob_reshape_past_isize_max_bytes: Blob::from_vec(&[2], vec![1.0f64, 2.0]).unwrap().reshape(&[1 << 61]).map(|r| matches!(r, Reshaped::InPlace(_)))
        => L(LE::SizeOverflow { .. }), "byte size", |b| b.cpu_data() == [1.0, 2.0];
    blob_data_to_gpu_without_a_gpu: Blob::from_vec(&[2], vec![1.0f32, 2.0]).unwrap().into_gpu_data().map(|_| ())
        => S(StateError::NoGpu { .. }), "not tied to a GPU", |b| b.cpu_data() == [1.0, 2.0];
    blob_thaw_while_shared: {
        let a = Blob::from_vec(&[2], vec![1.0f32, 2.0]).unwrap().freeze_data();
        let keep = a.shared_data();
        let r = a.thaw_data().map(|_| ());
        drop(keep);
        r
    } => S(StateError::StillShared { holders: 1, .. }), "still shared by 1 other holder", |b| b.shared_data().cpu() == [1.0, 2.0];
    dyn_blob_to_the_wrong_state: Blob::from_vec(&[2], vec![1.0f32, 2.0]).unwrap().erase().try_into_blob::<HeadAtGpu, Uninitialized>().map(|_| ())
        => S(StateError::WrongState { .. }), "expected state", |b| b.count() == 2;
    synced_memory_set_cpu_data_wrong_length: SyncedMemory::from_vec(vec![1.0f32; 4]).set_cpu_data(vec![2.0; 3]).map(|_| ())
        => L(LE::LengthMismatch { expected: 4, got: 3, .. }), "but the data has length 3",
        |v| v.0.cpu() == [1.0; 4] && v.1 == vec![2.0; 3];
    synced_memory_to_gpu_without_a_gpu: SyncedMemory::from_vec(vec![1u8, 2]).into_gpu().map(|_| ())
        => S(StateError::NoGpu { .. }), "create it with `with_gpu", |m| m.cpu() == [1, 2];
    synced_memory_erased_to_the_wrong_state: AnySyncedMemory::from(SyncedMemory::from_vec(vec![1i64, 2])).try_into_state::<HeadAtGpu>().map(|_| ())
        => S(StateError::WrongState { .. }), "but the value is in state", |m| m.len() == 2;
    synced_memory_thaw_while_shared: {
        let a = SyncedMemory::from_vec(vec![3.0f64]).freeze();
        let keep = a.clone();
        let r = a.thaw().map(|_| ());
        drop(keep);
        r
    } => S(StateError::StillShared { .. }), "drop them first", |m| m.cpu() == [3.0];
}

// ---- GPU rows (skip without a GPU) --------------------------------------------------------

fn gpu() -> Option<Gpu> {
    if !Gpu::available() {
        println!("skipping: no CUDA driver");
        return None;
    }
    Some(Gpu::new(0).expect("a GPU is available, so GPU 0 opens"))
}

macro_rules! gpu_bad {
    ($($name:ident: |$g:ident| $e:expr => $p:pat, $msg:expr;)*) => {$(
        #[test]
        #[cfg_attr(miri, ignore)]
        fn $name() {
            let Some($g) = gpu() else { return };
            let Some(err) = Outcome::failure($e) else {
                panic!("{}: succeeded, expected an error", stringify!($name));
            };
            check(stringify!($name), &err, matches!(err, $p), $msg);
        }
    )*};
}

gpu_bad! {
    gpu_add_shapes_that_do_not_broadcast: |g| {
        let a = t23().to_gpu(&g).unwrap();
        let b = Tensor::<f32>::zeros(&[4]).unwrap().to_gpu(&g).unwrap();
        &a + &b
    } => L(LE::BroadcastMismatch { op: "add", .. }), "add: shapes [2, 3] and [4]";
    gpu_narrow_past_the_end: |g| t23().to_gpu(&g).unwrap().narrow(1, 1, 3).map(|v| v.numel())
        => L(LE::RangeOutOfBounds { .. }), "range 1..4";
    gpu_add_with_a_rank_past_the_kernels_limit: |g| {
        // 26 dims of 2 (2^26 bytes of output); the input broadcasts every other dim, so the
        // op keeps 26 dims after collapsing.
        let pattern: Vec<usize> = (0..26).map(|d| if d % 2 == 0 { 2 } else { 1 }).collect();
        let a = Tensor::<u8, Gpu>::zeros_on(&pattern, &g).unwrap();
        let mut out = Tensor::<u8, Gpu>::zeros_on(&[2; 26], &g).unwrap();
        a.add_into(&a, &mut out)
    } => L(LE::GpuRankTooLarge { rank: 26, max: 25, .. }), "make the operands contiguous";
    gpu_to_cpu_async_into_another_shape: |g| {
        let a = t23().to_gpu(&g).unwrap();
        let mut out = Tensor::<f32>::zeros(&[3, 2]).unwrap();
        let stream = g.new_stream().unwrap();
        a.to_cpu_async(&mut out, &stream).map(drop)
    } => L(LE::ShapeMismatch { .. }), "expected shape [2, 3], got [3, 2]";
    gpu_blob_overflowing_shape: |g| Blob::<f32, Uninitialized>::with_gpu(&g, &[usize::MAX, 2])
        => L(LE::SizeOverflow { .. }), "element count";
}

/// Keeps the unused-import lint quiet for types only some configurations use.
#[allow(dead_code)]
fn _types(_: Option<(HeadAtCpu, SyncedMemory<f32, Uninitialized>)>) {}
