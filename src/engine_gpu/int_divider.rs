//! Division by a run-time constant as multiply-high, add and shift (THC's `IntDivider`).
//!
//! A strided kernel turns every linear index into a multi-index by dividing by each dim's
//! size. Hardware integer division is slow (tens of instructions on a GPU); but the sizes are
//! fixed for the whole launch, so each divisor `d` is turned once, on the host, into a magic
//! pair `(m, s)`:
//!
//! ```text
//! s = ceil(log2 d)
//! m = floor(2^N (2^s - d) / d) + 1          (N = 32 or 64, the index width)
//! n / d = (umulhi(n, m) + n) >> s           for every N-bit n
//! ```
//!
//! This is Granlund and Montgomery's round-up method with the (N+1)-bit multiplier
//! `2^N + m`: `m * d` lies in `(2^(N+s), 2^(N+s) + 2^s]`, which makes the quotient exact for
//! every `n < 2^N`, and `m < 2^N` always (so it fits the index type).
//!
//! The sum `umulhi(n, m) + n` needs N+1 bits. PyTorch's `IntDivider` ignores the carry and
//! so only accepts `n, d < 2^31`; here the whole domain is valid:
//! - 32-bit: the sum is formed in 64 bits.
//! - 64-bit: with `t = umulhi(n, m) <= n`, `(t + n) >> s == (((n - t) >> 1) + t) >> (s - 1)`
//!   for `s >= 1`, which never overflows; `d == 1` (`s == 0`) returns `n`.
//!
//! The Rust arithmetic below is written exactly as the CUDA C in `kernels/int_divider.cuh`
//! (the same formulas, the same widths), so the exhaustive and property tests in
//! `tests/it/int_divider.rs` prove the device code's math too.

// The host-side division and offsets mirror the kernels' (`kernels/*.cuh`) for the tests
// that check the two against each other and against plain arithmetic; the launches use
// only the constructors and the packed parameters.
#![cfg_attr(not(test), allow(dead_code))]

use std::fmt::Debug;
use std::hash::Hash;

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// CUDA C source of `IntDivider<index_t>` (`kernels/int_divider.cuh`), for assembling NVRTC
/// programs. It has no `#include`s and needs no toolkit headers.
pub const INT_DIVIDER_CUH: &str = include_str!("../../kernels/int_divider.cuh");

/// An unsigned index width that kernels compute with: `u32` or `u64` (sealed).
///
/// Each width comes with the signed type of the same width that holds element offsets, and
/// with the names of both in CUDA C, so kernel source and byte images agree.
pub trait IndexInt:
    sealed::Sealed + Copy + Debug + Default + Eq + Ord + Hash + Send + Sync + 'static
{
    /// Bits in the type (32 or 64).
    const BITS: u32;
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// The type in CUDA C (`"unsigned int"`, `"unsigned long long"`).
    const CUDA_NAME: &'static str;
    /// The offset type in CUDA C (`"int"`, `"long long"`).
    const CUDA_OFFSET_NAME: &'static str;

    /// The signed type of the same width: element offsets for kernels with this index width.
    type Offset: Copy + Debug + Default + Eq + Hash + Send + Sync + Into<i64> + TryFrom<i64>;

    /// `n` as this type, or `None` when it does not fit.
    fn from_u64(n: u64) -> Option<Self>;
    /// The value widened to `u64` (lossless).
    fn to_u64(self) -> u64;
    /// `acc + (offset_t)r * stride` with two's-complement wrapping: the CUDA expression that
    /// accumulates one dim's contribution to an element offset.
    fn mul_add_offset(acc: Self::Offset, r: Self, stride: Self::Offset) -> Self::Offset;
    /// Appends the value's little-endian bytes (the device's byte order).
    fn extend_le_bytes(self, out: &mut Vec<u8>);
    /// Appends the offset's little-endian bytes.
    fn extend_offset_le_bytes(offset: Self::Offset, out: &mut Vec<u8>);

    /// `floor(n / divisor)` from the magic pair, exactly as the CUDA code computes it.
    #[doc(hidden)]
    fn magic_div(n: Self, magic: Self, shift: Self) -> Self;
    /// The magic pair `(m, s)` for a non-zero divisor.
    #[doc(hidden)]
    fn magic_for(divisor: Self) -> (Self, Self);
    /// `n - q * d` (never wraps when `q = n / d`).
    #[doc(hidden)]
    fn remainder(n: Self, q: Self, d: Self) -> Self;
}

/// `(m, s)` for divisor `d >= 1` at width `bits`, computed in `u128` (no overflow for
/// `bits <= 64`: `2^bits * (2^s - d) < 2^128`).
fn magic_pair(d: u64, bits: u32) -> (u64, u64) {
    debug_assert!(d >= 1);
    let shift = if d == 1 {
        0
    } else {
        64 - (d - 1).leading_zeros()
    };
    let d = u128::from(d);
    let magic = ((1u128 << bits) * ((1u128 << shift) - d)) / d + 1;
    // `2^s - d < d`, so `magic <= 2^bits - 1` (see the module docs); the cast is exact.
    (magic as u64, u64::from(shift))
}

impl IndexInt for u32 {
    const BITS: u32 = 32;
    const ZERO: Self = 0;
    const ONE: Self = 1;
    const CUDA_NAME: &'static str = "unsigned int";
    const CUDA_OFFSET_NAME: &'static str = "int";
    type Offset = i32;

    fn from_u64(n: u64) -> Option<Self> {
        u32::try_from(n).ok()
    }
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
    fn mul_add_offset(acc: i32, r: u32, stride: i32) -> i32 {
        // `(int)r` is a modular conversion in CUDA, as `as` is here.
        acc.wrapping_add((r as i32).wrapping_mul(stride))
    }
    fn extend_le_bytes(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn extend_offset_le_bytes(offset: i32, out: &mut Vec<u8>) {
        out.extend_from_slice(&offset.to_le_bytes());
    }
    fn magic_div(n: u32, magic: u32, shift: u32) -> u32 {
        // __umulhi(n, magic)
        let t = ((u64::from(n) * u64::from(magic)) >> 32) as u32;
        // (unsigned int)(((unsigned long long)t + n) >> shift); shift <= 32. The quotient
        // is at most n, so the narrowing is exact.
        ((u64::from(t) + u64::from(n)) >> shift) as u32
    }
    fn magic_for(divisor: u32) -> (u32, u32) {
        let (m, s) = magic_pair(u64::from(divisor), 32);
        // m < 2^32 and s <= 32 (module docs).
        (m as u32, s as u32)
    }
    fn remainder(n: u32, q: u32, d: u32) -> u32 {
        n.wrapping_sub(q.wrapping_mul(d))
    }
}

impl IndexInt for u64 {
    const BITS: u32 = 64;
    const ZERO: Self = 0;
    const ONE: Self = 1;
    const CUDA_NAME: &'static str = "unsigned long long";
    const CUDA_OFFSET_NAME: &'static str = "long long";
    type Offset = i64;

    fn from_u64(n: u64) -> Option<Self> {
        Some(n)
    }
    fn to_u64(self) -> u64 {
        self
    }
    fn mul_add_offset(acc: i64, r: u64, stride: i64) -> i64 {
        acc.wrapping_add((r as i64).wrapping_mul(stride))
    }
    fn extend_le_bytes(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn extend_offset_le_bytes(offset: i64, out: &mut Vec<u8>) {
        out.extend_from_slice(&offset.to_le_bytes());
    }
    fn magic_div(n: u64, magic: u64, shift: u64) -> u64 {
        // __umul64hi(n, magic); t <= n because magic < 2^64.
        let t = ((u128::from(n) * u128::from(magic)) >> 64) as u64;
        if shift == 0 {
            // d == 1
            n
        } else {
            // floor((n + t) / 2) without the carry, then the remaining s - 1 bits.
            (((n - t) >> 1) + t) >> (shift - 1)
        }
    }
    fn magic_for(divisor: u64) -> (u64, u64) {
        magic_pair(divisor, 64)
    }
    fn remainder(n: u64, q: u64, d: u64) -> u64 {
        n.wrapping_sub(q.wrapping_mul(d))
    }
}

/// Fast division by a fixed non-zero divisor, with the byte layout of the CUDA C
/// `IntDivider<index_t>` in `kernels/int_divider.cuh`, so it can be passed to a kernel by
/// value.
///
/// Invariants:
/// - `divisor >= 1`.
/// - `(magic, shift)` is the pair of the module docs for `divisor`: `shift = ceil(log2
///   divisor)`, `magic = floor(2^N (2^shift - divisor) / divisor) + 1 < 2^N`.
/// - Layout (`#[repr(C)]`, no padding): `divisor`, `magic`, `shift`, each an `I`:
///   12 bytes aligned to 4 for `u32`, 24 bytes aligned to 8 for `u64`.
///
/// [`div`](Self::div) and [`divmod`](Self::divmod) are exact for every `n` of type `I`
/// (`0..=I::MAX`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IntDivider<I: IndexInt> {
    divisor: I,
    magic: I,
    shift: I,
}

static_assertions::assert_eq_size!(IntDivider<u32>, [u32; 3]);
static_assertions::assert_eq_size!(IntDivider<u64>, [u64; 3]);
static_assertions::const_assert_eq!(std::mem::align_of::<IntDivider<u32>>(), 4);
static_assertions::const_assert_eq!(std::mem::align_of::<IntDivider<u64>>(), 8);
static_assertions::const_assert_eq!(std::mem::offset_of!(IntDivider<u32>, magic), 4);
static_assertions::const_assert_eq!(std::mem::offset_of!(IntDivider<u32>, shift), 8);
static_assertions::const_assert_eq!(std::mem::offset_of!(IntDivider<u64>, magic), 8);
static_assertions::const_assert_eq!(std::mem::offset_of!(IntDivider<u64>, shift), 16);

impl<I: IndexInt> IntDivider<I> {
    /// Size of the CUDA struct in bytes (`3 * sizeof(index_t)`).
    pub const KERNEL_PARAM_SIZE: usize = std::mem::size_of::<Self>();
    /// Alignment of the CUDA struct in bytes (`alignof(index_t)`).
    pub const KERNEL_PARAM_ALIGN: usize = std::mem::align_of::<Self>();

    /// A divider for `divisor`, or `None` when it is zero.
    pub fn new(divisor: I) -> Option<Self> {
        if divisor == I::ZERO {
            return None;
        }
        let (magic, shift) = I::magic_for(divisor);
        Some(Self {
            divisor,
            magic,
            shift,
        })
    }

    /// The divider by 1 (`magic = 1`, `shift = 0`), equal to `new(1)`; infallible, for
    /// padding dims.
    pub const fn one() -> Self {
        Self {
            divisor: I::ONE,
            magic: I::ONE,
            shift: I::ZERO,
        }
    }

    /// The divisor.
    pub fn divisor(&self) -> I {
        self.divisor
    }

    /// The magic multiplier `m`.
    pub fn magic(&self) -> I {
        self.magic
    }

    /// The shift `s = ceil(log2 divisor)`.
    pub fn shift(&self) -> I {
        self.shift
    }

    /// `n / divisor`, rounded down. Exact for every `n`.
    #[inline]
    pub fn div(&self, n: I) -> I {
        I::magic_div(n, self.magic, self.shift)
    }

    /// `(n / divisor, n % divisor)`. Exact for every `n`.
    #[inline]
    pub fn divmod(&self, n: I) -> (I, I) {
        let q = self.div(n);
        (q, I::remainder(n, q, self.divisor))
    }

    /// Appends the CUDA struct's bytes: `divisor`, `magic`, `shift`, each `sizeof(index_t)`
    /// bytes, little-endian (the device's byte order, whatever the host's).
    pub fn extend_kernel_param_bytes(&self, out: &mut Vec<u8>) {
        self.divisor.extend_le_bytes(out);
        self.magic.extend_le_bytes(out);
        self.shift.extend_le_bytes(out);
    }

    /// The CUDA struct's bytes (see [`extend_kernel_param_bytes`](Self::extend_kernel_param_bytes)).
    pub fn kernel_param_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::KERNEL_PARAM_SIZE);
        self.extend_kernel_param_bytes(&mut out);
        out
    }

    /// The CUDA type name, e.g. `IntDivider<unsigned int>`.
    pub fn cuda_type() -> String {
        format!("IntDivider<{}>", I::CUDA_NAME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_pair_matches_the_definition_for_small_divisors() {
        // Independent of `magic_pair`'s shortcuts: the smallest s with 2^s >= d, and the
        // formula evaluated in u128.
        for d in 1u64..=4096 {
            let s = (0..=64).find(|&s| (1u128 << s) >= u128::from(d)).unwrap();
            let m = (1u128 << 32) * ((1u128 << s) - u128::from(d)) / u128::from(d) + 1;
            assert_eq!(magic_pair(d, 32), (m as u64, s as u64), "d = {d}");
        }
    }

    #[test]
    fn one_is_new_one() {
        assert_eq!(IntDivider::<u32>::one(), IntDivider::new(1).unwrap());
        assert_eq!(IntDivider::<u64>::one(), IntDivider::new(1).unwrap());
    }

    #[test]
    fn bytes_are_the_fields_in_order() {
        let div = IntDivider::new(7u32).unwrap();
        let mut expected = Vec::new();
        for v in [7u32, div.magic(), div.shift()] {
            expected.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(div.kernel_param_bytes(), expected);
        assert_eq!(expected.len(), IntDivider::<u32>::KERNEL_PARAM_SIZE);
    }
}
