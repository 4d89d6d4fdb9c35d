//! `IntDivider` is exact on its whole domain: edge divisors against edge dividends, dense
//! small ranges, and random pairs, all against the hardware `/` and `%`.

use crate::engine_gpu::int_divider::{IndexInt, IntDivider, INT_DIVIDER_CUH};
use proptest::prelude::*;

/// 1, every power of two and its neighbours, the Mersenne-like edges, and a few divisors
/// with long magic numbers (3, 7, 641, 6700417 divide 2^32 + 1 or 2^32 - 1).
fn edge_divisors(bits: u32) -> Vec<u64> {
    let max = if bits == 32 {
        u64::from(u32::MAX)
    } else {
        u64::MAX
    };
    let mut ds = vec![
        1,
        2,
        3,
        5,
        7,
        10,
        641,
        6_700_417,
        0xAAAA_AAAB,
        max,
        max - 1,
        max / 3,
    ];
    for k in 1..bits {
        let p = 1u64 << k;
        ds.extend([p - 1, p, p + 1]);
    }
    ds.extend([(1 << 31) - 1, 1 << 31, (1 << 31) + 1, (1 << 31) + 3]);
    if bits == 64 {
        ds.extend([
            (1 << 63) - 1,
            1 << 63,
            (1 << 63) + 1,
            (1u64 << 32) * 3 + 1,
            0x5555_5555_5555_5555,
            274_177,
            67_280_421_310_721, // 2^64 + 1 = 274177 * 67280421310721
        ]);
    }
    ds.retain(|&d| d >= 1 && d <= max);
    ds.sort_unstable();
    ds.dedup();
    ds
}

/// Dividends around `d`, its multiples, powers of two and the top of the range.
fn edge_dividends(d: u64, max: u64) -> Vec<u64> {
    let mut ns = vec![0, 1, 2, max, max - 1, max - 2, max / 2, max / 2 + 1];
    ns.extend([d - 1, d, d.saturating_add(1)]);
    let top = max / d * d;
    ns.extend([
        top,
        top - 1,
        top.saturating_add(1),
        top.saturating_add(d - 1),
    ]);
    for k in [2u64, 3, 7, 1000, 65_537] {
        if let Some(m) = d.checked_mul(k) {
            ns.extend([m - 1, m, m.saturating_add(1)]);
        }
    }
    for k in 0..64 {
        let p = 1u64 << k;
        ns.extend([p - 1, p, p.saturating_add(1)]);
    }
    ns.retain(|&n| n <= max);
    ns
}

fn check<I: IndexInt + std::ops::Div<Output = I> + std::ops::Rem<Output = I>>(d: I, n: I) {
    let div = IntDivider::new(d).unwrap();
    assert_eq!(div.div(n), n / d, "{n:?} / {d:?}");
    assert_eq!(div.divmod(n), (n / d, n % d), "{n:?} divmod {d:?}");
}

#[test]
fn zero_divisor_is_rejected() {
    assert!(IntDivider::<u32>::new(0).is_none());
    assert!(IntDivider::<u64>::new(0).is_none());
}

#[test]
fn edge_divisors_against_edge_dividends_u32() {
    let max = u64::from(u32::MAX);
    for d in edge_divisors(32) {
        for n in edge_dividends(d, max) {
            check(u32::try_from(d).unwrap(), u32::try_from(n).unwrap());
        }
    }
}

#[test]
fn edge_divisors_against_edge_dividends_u64() {
    for d in edge_divisors(64) {
        for n in edge_dividends(d, u64::MAX) {
            check(d, n);
        }
    }
}

#[test]
fn u32_edge_divisors_against_edge_dividends_in_u64() {
    // The 64-bit path with small divisors (the common case: sizes < 2^32, indices >= 2^32).
    for d in edge_divisors(32) {
        for n in edge_dividends(d, u64::MAX) {
            check(d, n);
        }
    }
}

#[test]
fn every_small_divisor_against_every_small_dividend() {
    for d in 1u32..=1024 {
        let div32 = IntDivider::new(d).unwrap();
        let div64 = IntDivider::new(u64::from(d)).unwrap();
        for n in 0u32..=65_535 {
            assert_eq!(div32.divmod(n), (n / d, n % d), "{n} / {d}");
            let n64 = u64::from(n);
            assert_eq!(div64.div(n64), n64 / u64::from(d), "{n} / {d} (u64)");
        }
    }
}

#[test]
fn edge_divisors_across_the_whole_u32_range() {
    // Every 4099th dividend from 0 to u32::MAX (about a million per divisor).
    for d in [
        3u32,
        7,
        641,
        (1 << 31) - 1,
        1 << 31,
        (1 << 31) + 1,
        u32::MAX,
        0xAAAA_AAAB,
    ] {
        let div = IntDivider::new(d).unwrap();
        for n in (0..=u32::MAX).step_by(4099).chain([u32::MAX]) {
            assert_eq!(div.divmod(n), (n / d, n % d), "{n} / {d}");
        }
    }
}

#[test]
fn magic_numbers_meet_the_exactness_condition_u32() {
    // Granlund-Montgomery: with M = 2^32 + magic, 2^(32+s) < M*d <= 2^(32+s) + 2^s makes
    // floor(M*n / 2^(32+s)) == n / d for every n < 2^32. Checked in u128.
    for d in edge_divisors(32).into_iter().chain(1..=5000) {
        let div = IntDivider::new(u32::try_from(d).unwrap()).unwrap();
        let s = div.shift();
        assert_eq!(
            s,
            (0..=32u32).find(|&s| (1u64 << s) >= d).unwrap(),
            "shift for {d}"
        );
        let m = (1u128 << 32) + u128::from(div.magic());
        let low = 1u128 << (32 + s);
        let prod = m * u128::from(d);
        assert!(low < prod && prod <= low + (1u128 << s), "d = {d}");
    }
}

#[test]
fn layout_matches_the_cuda_struct() {
    assert_eq!(IntDivider::<u32>::KERNEL_PARAM_SIZE, 12);
    assert_eq!(IntDivider::<u32>::KERNEL_PARAM_ALIGN, 4);
    assert_eq!(IntDivider::<u64>::KERNEL_PARAM_SIZE, 24);
    assert_eq!(IntDivider::<u64>::KERNEL_PARAM_ALIGN, 8);
    let div = IntDivider::new(0x1234_5678_9abc_def1u64).unwrap();
    let bytes = div.kernel_param_bytes();
    let words: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(words, [div.divisor(), div.magic(), div.shift()]);
    assert_eq!(
        IntDivider::<u64>::cuda_type(),
        "IntDivider<unsigned long long>"
    );
    // The CUDA side declares the same fields in the same order, and no includes.
    assert!(!INT_DIVIDER_CUH
        .lines()
        .any(|l| l.trim_start().starts_with("#include")));
    for decl in [
        "unsigned int divisor;\n  unsigned int magic;\n  unsigned int shift;",
        "unsigned long long divisor;\n  unsigned long long magic;\n  unsigned long long shift;",
    ] {
        assert!(INT_DIVIDER_CUH.contains(decl), "missing {decl:?}");
    }
}

/// Divisors drawn half from the whole range, half near powers of two.
fn divisor_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        1u64..=u64::MAX,
        (1u32..64, -3i64..=3).prop_map(|(k, delta)| (1u64 << k).wrapping_add_signed(delta).max(1)),
        1u64..=1 << 20,
    ]
}

fn divisor_u32() -> impl Strategy<Value = u32> {
    prop_oneof![
        1u32..=u32::MAX,
        (1u32..32, -3i32..=3).prop_map(|(k, delta)| (1u32 << k).wrapping_add_signed(delta).max(1)),
        1u32..=1 << 12,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn random_pairs_u32(d in divisor_u32(), n in any::<u32>()) {
        let div = IntDivider::new(d).unwrap();
        prop_assert_eq!(div.divmod(n), (n / d, n % d));
    }

    #[test]
    fn random_pairs_u64(d in divisor_u64(), n in any::<u64>()) {
        let div = IntDivider::new(d).unwrap();
        prop_assert_eq!(div.divmod(n), (n / d, n % d));
    }

    #[test]
    fn random_pairs_u64_near_multiples(d in divisor_u64(), k in any::<u64>(), delta in -2i64..=2) {
        let n = (k % (u64::MAX / d).max(1)).wrapping_mul(d).wrapping_add_signed(delta);
        let div = IntDivider::new(d).unwrap();
        prop_assert_eq!(div.divmod(n), (n / d, n % d));
    }
}
