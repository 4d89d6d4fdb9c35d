//! The total order sorting uses: each element type's order-preserving unsigned key.

use crate::element::Element;

/// Element types that sort: every [`Element`]. Says where a value sorts through an unsigned
/// key whose order is the value's, with PyTorch's rules for floats: NaN (any sign, any
/// payload) after `+inf`, and `-0.0` equal to `0.0`.
///
/// Only the crate's element types implement it (an implementation needs an [`Element`]).
pub trait SortElement: Element {
    /// The key: as wide as the type (`u8` for `bool`, `i8`, `u8`; `u16` for the 2-byte types;
    /// `u32`, `u64`).
    type Key: Ord + Copy + Send + Sync + std::fmt::Debug + 'static;
    /// The largest key (NaN's for floats).
    const KEY_MAX: Self::Key;
    /// The key of `self`: `a.sort_key() < b.sort_key()` exactly when `a` sorts before `b`.
    fn sort_key(self) -> Self::Key;
}

macro_rules! unsigned_key {
    ($($t:ty),*) => {$(
        impl SortElement for $t {
            type Key = $t;
            const KEY_MAX: $t = <$t>::MAX;
            #[inline(always)]
            fn sort_key(self) -> $t {
                self
            }
        }
    )*};
}
unsigned_key!(u8, u16, u32, u64);

macro_rules! signed_key {
    ($($t:ty => $u:ty),*) => {$(
        impl SortElement for $t {
            type Key = $u;
            const KEY_MAX: $u = <$u>::MAX;
            #[inline(always)]
            fn sort_key(self) -> $u {
                // Flipping the sign bit maps MIN..=MAX onto 0..=MAX in order.
                (self as $u) ^ (1 << (<$u>::BITS - 1))
            }
        }
    )*};
}
signed_key!(i8 => u8, i16 => u16, i32 => u32, i64 => u64);

impl SortElement for bool {
    type Key = u8;
    const KEY_MAX: u8 = 1;
    #[inline(always)]
    fn sort_key(self) -> u8 {
        u8::from(self)
    }
}

macro_rules! float_key {
    ($($t:ty => $u:ty, $nan:expr, $zero:expr),*) => {$(
        impl SortElement for $t {
            type Key = $u;
            const KEY_MAX: $u = <$u>::MAX;
            #[inline(always)]
            fn sort_key(self) -> $u {
                let bits = self.to_bits();
                if $nan(self) {
                    return <$u>::MAX;
                }
                // `-0.0` sorts as `0.0`.
                let bits = if $zero(self) { 0 } else { bits };
                let sign = 1 << (<$u>::BITS - 1);
                // Negative: all bits flipped (larger magnitudes first); positive: the sign
                // bit set (above every negative). `+inf` maps below `MAX`, which only NaN
                // takes.
                if bits & sign != 0 { !bits } else { bits | sign }
            }
        }
    )*};
}
float_key!(
    f32 => u32, |x: f32| x.is_nan(), |x: f32| x == 0.0,
    f64 => u64, |x: f64| x.is_nan(), |x: f64| x == 0.0,
    half::f16 => u16, |x: half::f16| x.is_nan(), |x: half::f16| x.to_f32() == 0.0,
    half::bf16 => u16, |x: half::bf16| x.is_nan(), |x: half::bf16| x.to_f32() == 0.0
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_keys_order_as_pytorch_sorts() {
        let xs = [
            f32::NEG_INFINITY,
            -1.5,
            -0.0,
            0.0,
            1e-45,
            2.0,
            f32::INFINITY,
            f32::NAN,
        ];
        for w in xs.windows(2) {
            assert!(w[0].sort_key() <= w[1].sort_key(), "{w:?}");
        }
        assert_eq!((-0.0f32).sort_key(), 0.0f32.sort_key());
        assert_eq!((-f32::NAN).sort_key(), f32::NAN.sort_key());
        assert!(f32::INFINITY.sort_key() < f32::NAN.sort_key());
        assert!((-3i32).sort_key() < 2i32.sort_key());
        assert!(i64::MIN.sort_key() < i64::MAX.sort_key());
    }
}
