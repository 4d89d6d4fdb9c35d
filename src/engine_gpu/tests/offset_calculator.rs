//! `OffsetCalculator` maps every linear index to the offsets a plain row-major multi-index
//! walk gives, for random shapes and strides (negative and zero included), both index widths
//! and 1 to 4 operands; its kernel byte image decodes back to its fields.

use crate::engine_gpu::int_divider::{IndexInt, IntDivider};
use crate::engine_gpu::offset_calculator::{OffsetCalculator, MAX_DIMS, OFFSET_CALCULATOR_CUH};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use typestate_tensor::error::LayoutError;

/// Offsets of `index` for each operand, in exact arithmetic.
fn naive_offsets<const NARGS: usize>(
    index: &[usize],
    strides: &[Vec<isize>; NARGS],
) -> [i64; NARGS] {
    std::array::from_fn(|arg| {
        let sum: i128 = index
            .iter()
            .zip(&strides[arg])
            .map(|(&i, &s)| i as i128 * s as i128)
            .sum();
        i64::try_from(sum).unwrap()
    })
}

/// Walks every multi-index in row-major order (an odometer, no division) and checks the
/// calculator at the matching linear index; then checks that the next index is out of range.
fn check_full_walk<I: IndexInt, const NARGS: usize>(
    sizes: &[usize],
    strides: &[Vec<isize>; NARGS],
) {
    let refs: [&[isize]; NARGS] = std::array::from_fn(|a| strides[a].as_slice());
    let calc = OffsetCalculator::<I, NARGS>::new(sizes, refs).unwrap();
    let numel: usize = sizes.iter().product();
    assert_eq!(calc.numel().to_u64(), numel as u64);
    assert_eq!(calc.ndims(), sizes.len().max(1));
    let mut index = vec![0usize; sizes.len()];
    for linear in 0..numel {
        let got = calc.offsets(I::from_u64(linear as u64).unwrap());
        assert_eq!(
            got,
            Some(naive_offsets(&index, strides)),
            "sizes {sizes:?} strides {strides:?} linear {linear} index {index:?}"
        );
        // Odometer increment, innermost dim fastest.
        for dim in (0..sizes.len()).rev() {
            index[dim] += 1;
            if index[dim] < sizes[dim] {
                break;
            }
            index[dim] = 0;
        }
    }
    assert_eq!(calc.offsets(I::from_u64(numel as u64).unwrap()), None);
}

/// Random small shape (rank 1..=6, sizes 0..=5, mostly non-zero) with `NARGS` stride lists
/// mixing negative, zero and positive strides.
fn shape_and_strides<const NARGS: usize>(
) -> impl Strategy<Value = (Vec<usize>, [Vec<isize>; NARGS])> {
    prop::collection::vec(prop_oneof![9 => 1usize..=5, 1 => Just(0usize)], 1..=6).prop_flat_map(
        |sizes| {
            let rank = sizes.len();
            let stride =
                prop_oneof![2 => Just(0isize), 6 => -60isize..=60, 1 => -100_000isize..=100_000];
            let lists = prop::array::uniform::<_, NARGS>(prop::collection::vec(stride, rank));
            (Just(sizes), lists)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn one_operand_matches_walk((sizes, strides) in shape_and_strides::<1>()) {
        check_full_walk::<u32, 1>(&sizes, &strides);
        check_full_walk::<u64, 1>(&sizes, &strides);
    }

    #[test]
    fn two_operands_match_walk((sizes, strides) in shape_and_strides::<2>()) {
        check_full_walk::<u32, 2>(&sizes, &strides);
        check_full_walk::<u64, 2>(&sizes, &strides);
    }

    #[test]
    fn three_operands_match_walk((sizes, strides) in shape_and_strides::<3>()) {
        check_full_walk::<u32, 3>(&sizes, &strides);
        check_full_walk::<u64, 3>(&sizes, &strides);
    }

    #[test]
    fn four_operands_match_walk((sizes, strides) in shape_and_strides::<4>()) {
        check_full_walk::<u32, 4>(&sizes, &strides);
        check_full_walk::<u64, 4>(&sizes, &strides);
    }
}

/// Row-major multi-index of `linear`, by plain division (the reference for large shapes).
fn unravel(mut linear: u128, sizes: &[usize]) -> Vec<usize> {
    let mut index = vec![0; sizes.len()];
    for dim in (0..sizes.len()).rev() {
        let size = sizes[dim] as u128;
        index[dim] = (linear % size) as usize;
        linear /= size;
    }
    index
}

fn check_sampled<I: IndexInt, const NARGS: usize>(
    sizes: &[usize],
    strides: &[Vec<isize>; NARGS],
    rng: &mut SmallRng,
) {
    let refs: [&[isize]; NARGS] = std::array::from_fn(|a| strides[a].as_slice());
    let calc = OffsetCalculator::<I, NARGS>::new(sizes, refs).unwrap();
    let numel = calc.numel().to_u64();
    let mut samples: Vec<u64> = (0..2000).map(|_| rng.gen_range(0..numel)).collect();
    samples.extend([0, 1, numel / 2, numel - 2, numel - 1]);
    for linear in samples {
        let index = unravel(u128::from(linear), sizes);
        assert_eq!(
            calc.offsets(I::from_u64(linear).unwrap()),
            Some(naive_offsets(&index, strides)),
            "sizes {sizes:?} strides {strides:?} linear {linear}"
        );
    }
    assert_eq!(calc.offsets(I::from_u64(numel).unwrap()), None);
}

#[test]
fn large_shapes_near_the_index_and_offset_limits() {
    let mut rng = SmallRng::seed_from_u64(0x0ff5e7);
    // u32: numel up to u32::MAX, sizes above 2^31 (their remainders exceed i32 when cast;
    // stride 0 keeps the offset 0), farthest offsets at exactly i32::MAX / -i32::MAX.
    let big = u32::MAX as usize; // 3 * 5 * 17 * 257 * 65537
    check_sampled::<u32, 2>(&[big], &[vec![0], vec![0]], &mut rng);
    check_sampled::<u32, 2>(
        &[3 * 5 * 17, 257 * 65537],
        &[vec![1, 0], vec![-2, 0]],
        &mut rng,
    );
    check_sampled::<u32, 1>(&[2, (1 << 31) - 1], &[vec![0, 1]], &mut rng);
    check_sampled::<u32, 1>(&[2, (1 << 31) - 1], &[vec![0, -1]], &mut rng);
    check_sampled::<u32, 3>(
        &[65535, 65537],
        &[vec![32767, -1], vec![-1, 32767], vec![0, 1]],
        &mut rng,
    );
    check_sampled::<u32, 1>(&[2], &[vec![i32::MAX as isize]], &mut rng);
    // u64: indices beyond 2^32, sizes beyond 2^32, large negative strides.
    check_sampled::<u64, 2>(
        &[1 << 20, 3, 1 << 33, 7],
        &[vec![-(3 << 36), 1 << 36, -7, 1], vec![0, 0, 1, -(1 << 33)]],
        &mut rng,
    );
    check_sampled::<u64, 1>(&[usize::MAX / 2], &[vec![1]], &mut rng);
    check_sampled::<u64, 1>(&[u64::MAX as usize], &[vec![0]], &mut rng);
    check_sampled::<u64, 1>(&[2], &[vec![isize::MAX]], &mut rng);
    check_sampled::<u64, 1>(&[2], &[vec![-isize::MAX]], &mut rng);
}

#[test]
fn random_large_shapes_u64() {
    let mut rng = SmallRng::seed_from_u64(42);
    for _ in 0..200 {
        let rank = rng.gen_range(1..=6);
        let sizes: Vec<usize> = (0..rank).map(|_| rng.gen_range(1..=2000)).collect();
        let strides: [Vec<isize>; 3] = std::array::from_fn(|_| {
            (0..rank)
                .map(|_| match rng.gen_range(0..4) {
                    0 => 0,
                    _ => rng.gen_range(-1_000_000..=1_000_000),
                })
                .collect()
        });
        check_sampled::<u64, 3>(&sizes, &strides, &mut rng);
    }
}

#[test]
fn rank_zero_is_one_element_at_offset_zero() {
    let calc = OffsetCalculator::<u32, 2>::new(&[], [&[], &[]]).unwrap();
    assert_eq!(calc.ndims(), 1);
    assert_eq!(calc.numel(), 1);
    assert_eq!(calc.offsets(0), Some([0, 0]));
    assert_eq!(calc.offsets(1), None);
    assert_eq!(
        calc.cuda_type(),
        "OffsetCalculator<1, 2, unsigned int, int>"
    );
}

#[test]
fn empty_shapes_map_nothing() {
    let calc = OffsetCalculator::<u32, 1>::new(&[4, 0, 3], [&[3, 1, 7]]).unwrap();
    assert_eq!(calc.numel(), 0);
    assert_eq!(calc.offsets(0), None);
    // The other sizes must still fit the index type.
    let err = OffsetCalculator::<u32, 1>::new(&[0, 1 << 40], [&[0, 0]]).unwrap_err();
    assert!(matches!(err, LayoutError::SizeOverflow { .. }), "{err:?}");
    // ... but an empty u64 shape with huge sizes is fine.
    let calc = OffsetCalculator::<u64, 1>::new(&[0, usize::MAX, usize::MAX], [&[1, 0, 0]]).unwrap();
    assert_eq!(calc.numel(), 0);
}

#[test]
fn size_one_dims_ignore_their_strides() {
    // Any stride on a size-1 dim is irrelevant and stored as 0, even one that does not fit i32.
    let calc = OffsetCalculator::<u32, 1>::new(&[1, 5, 1], [&[isize::MAX, 3, isize::MIN]]).unwrap();
    assert_eq!(calc.strides(), &[[0], [3], [0]]);
    assert_eq!(calc.offsets(4), Some([12]));
}

#[test]
fn bad_inputs_are_typed_errors() {
    let err = OffsetCalculator::<u32, 2>::new(&[2, 3], [&[3, 1], &[1]]).unwrap_err();
    assert_eq!(
        err,
        LayoutError::StrideRankMismatch {
            op: "OffsetCalculator::new",
            operand: 1,
            rank: 2,
            got: 1
        }
    );
    let sizes = vec![1; MAX_DIMS + 1];
    let err = OffsetCalculator::<u64, 1>::new(&sizes, [&[0; MAX_DIMS + 1]]).unwrap_err();
    assert_eq!(
        err,
        LayoutError::RankTooLarge {
            op: "OffsetCalculator::new",
            rank: MAX_DIMS + 1,
            max: MAX_DIMS
        }
    );
    assert!(OffsetCalculator::<u64, 1>::new(&[1; MAX_DIMS], [&[0; MAX_DIMS]]).is_ok());

    let overflow = |r: Result<OffsetCalculator<u32, 1>, LayoutError>, what: &str| match r {
        Err(LayoutError::SizeOverflow { what: w, .. }) => assert!(w.contains(what), "{w}"),
        other => panic!("expected a size overflow ({what}), got {other:?}"),
    };
    // 2^32 elements do not fit u32 (but do fit u64).
    overflow(
        OffsetCalculator::new(&[1 << 16, 1 << 16], [&[1 << 16, 1]]),
        "element count",
    );
    assert!(OffsetCalculator::<u64, 1>::new(&[1 << 16, 1 << 16], [&[1 << 16, 1]]).is_ok());
    // The farthest element, 2 * 2^30, exceeds i32::MAX; so does |i32::MIN|.
    overflow(OffsetCalculator::new(&[3], [&[1 << 30]]), "offset");
    overflow(
        OffsetCalculator::new(&[2], [&[i32::MIN as isize]]),
        "offset",
    );
    overflow(
        OffsetCalculator::new(&[2, 2], [&[1 << 30, 1 << 30]]),
        "offset",
    );
    // The same reaches in 64-bit math are fine.
    assert!(OffsetCalculator::<u64, 1>::new(&[3], [&[1 << 30]]).is_ok());
    // u64: |isize::MIN| does not fit i64 offsets.
    let err = OffsetCalculator::<u64, 1>::new(&[2], [&[isize::MIN]]).unwrap_err();
    assert!(matches!(err, LayoutError::SizeOverflow { .. }), "{err:?}");
    // Huge reaches are errors, not wraps, even on an empty shape.
    let err = OffsetCalculator::<u64, 1>::new(
        &[0, usize::MAX, usize::MAX],
        [&[0, isize::MIN, isize::MIN]],
    );
    assert!(
        matches!(err, Err(LayoutError::SizeOverflow { .. })),
        "{err:?}"
    );
}

/// Decodes a kernel byte image with the C layout rules and compares it with the fields.
fn check_image<I: IndexInt, const NARGS: usize>(
    calc: &OffsetCalculator<I, NARGS>,
    sizes: &[usize],
) {
    let bytes = calc.kernel_param_bytes();
    let w = std::mem::size_of::<I>();
    assert_eq!(bytes.len(), calc.kernel_param_size());
    assert_eq!(bytes.len(), calc.ndims() * (3 * w + NARGS * w));
    assert_eq!(calc.kernel_param_align(), w);
    let word = |i: usize| -> u64 {
        let mut b = [0u8; 8];
        b[..w].copy_from_slice(&bytes[i * w..(i + 1) * w]);
        u64::from_le_bytes(b)
    };
    let signed = |i: usize| -> i64 {
        let v = word(i);
        if w == 4 {
            i64::from(v as u32 as i32)
        } else {
            v as i64
        }
    };
    for (dim, &size) in sizes.iter().enumerate() {
        let expect = IntDivider::new(I::from_u64(size as u64).unwrap()).unwrap();
        assert_eq!(word(3 * dim), size as u64);
        assert_eq!(word(3 * dim + 1), expect.magic().to_u64());
        assert_eq!(word(3 * dim + 2), expect.shift().to_u64());
    }
    let base = 3 * calc.ndims();
    for dim in 0..calc.ndims() {
        for arg in 0..NARGS {
            let stored: i64 = calc.strides()[dim][arg].into();
            assert_eq!(signed(base + dim * NARGS + arg), stored);
        }
    }
}

#[test]
fn kernel_image_decodes_to_the_fields() {
    let sizes = [7, 1 << 20, 3, 1];
    let strides: [&[isize]; 3] = [
        &[-5, 1 << 10, -1, 99],
        &[0, 0, 1, 0],
        &[3 << 20, 3, 1 << 20, 0],
    ];
    let c32 = OffsetCalculator::<u32, 3>::new(&sizes, strides).unwrap();
    check_image(&c32, &sizes);
    assert_eq!(c32.cuda_type(), "OffsetCalculator<4, 3, unsigned int, int>");
    assert_eq!(c32.kernel_param_size(), 4 * (12 + 12));
    let c64 = OffsetCalculator::<u64, 3>::new(&sizes, strides).unwrap();
    check_image(&c64, &sizes);
    assert_eq!(
        c64.cuda_type(),
        "OffsetCalculator<4, 3, unsigned long long, long long>"
    );
    assert_eq!(c64.kernel_param_size(), 4 * (24 + 24));
    // First bytes spelled out: dim 0's divisor 7, then its magic.
    let magic7 = IntDivider::new(7u32).unwrap().magic();
    assert_eq!(
        &c32.kernel_param_bytes()[..8],
        [&7u32.to_le_bytes()[..], &magic7.to_le_bytes()[..]].concat()
    );
}

#[test]
fn cuda_source_declares_the_same_fields() {
    assert!(!OFFSET_CALCULATOR_CUH
        .lines()
        .any(|l| l.trim_start().starts_with("#include")));
    assert!(OFFSET_CALCULATOR_CUH
        .contains("  IntDivider<index_t> sizes[NDIMS];\n  offset_t strides[NDIMS][NARGS];\n"));
}
