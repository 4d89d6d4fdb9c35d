//! Element conversion with C cast semantics, the one explicit way to change element type.
//!
//! Rules (what the kernel's store, `ts_conv` in `kernels/ops.cuh`, does with the input's
//! compute-type value: `float` for `f32`, `f16` and `bf16`, `double` for `f64`):
//! - from `f32`, `f16` or `bf16`: as [`Element::from_f32`] of the exact `f32` value: one
//!   rounding to nearest even for the half types, truncate toward zero and saturate for
//!   integers (NaN gives 0), `!= 0` for `bool` (so NaN is `true`);
//! - from `f64`: as [`Element::from_f64`]: the same, except that the half types copy `half`
//!   2.x as the kernels do (`kernels/half.cuh`): `f16` rounds to `f32` first, then to `f16`;
//!   `bf16` rounds the top 20 mantissa bits of the `f64` to nearest even;
//! - from an integer or `bool` (`false` = 0, `true` = 1): integers wrap (two's complement
//!   truncation, as C does on every CUDA target), `f32` rounds once from the integer, `f64`
//!   rounds to nearest, the half types convert the `f64` value (exact below 2^53) as above,
//!   `bool` is `!= 0`.
//!
//! The element types are a closed set, so [`cast_element`] dispatches on the concrete types
//! with `Any` downcasts, which compile to nothing after monomorphisation.

use std::any::Any;
use std::marker::PhantomData;

use super::op::{sealed::Sealed, UnaryOp};
use crate::element::{DType, Element};

/// The conversion op: `Cast::<U>::new()` turns any element into a `U`.
pub struct Cast<U>(PhantomData<fn() -> U>);

impl<U> Cast<U> {
    /// The conversion to `U`.
    pub const fn new() -> Self {
        Cast(PhantomData)
    }
}

impl<U> Default for Cast<U> {
    fn default() -> Self {
        Self::new()
    }
}

impl<U> Clone for Cast<U> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<U> Copy for Cast<U> {}

impl<U> std::fmt::Debug for Cast<U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cast<{}>", std::any::type_name::<U>())
    }
}

impl<U> Sealed for Cast<U> {}

impl<T: Element, U: Element> UnaryOp<T> for Cast<U> {
    type Output = U;
    const NAME: &'static str = cast_name(U::DTYPE);
    // The kernel's store converts the compute-type value to `U`: the conversion is the store.
    const CUDA: &'static str = "a";
    #[inline(always)]
    fn cpu(&self, a: T) -> U {
        cast_element(a)
    }
}

/// The op name of the conversion to `to` (one name per target, for kernel cache keys).
pub const fn cast_name(to: DType) -> &'static str {
    match to {
        DType::F32 => "cast_f32",
        DType::F64 => "cast_f64",
        DType::F16 => "cast_f16",
        DType::BF16 => "cast_bf16",
        DType::I32 => "cast_i32",
        DType::I64 => "cast_i64",
        DType::U8 => "cast_u8",
        DType::Bool => "cast_bool",
        DType::I8 => "cast_i8",
        DType::I16 => "cast_i16",
        DType::U16 => "cast_u16",
        DType::U32 => "cast_u32",
        DType::U64 => "cast_u64",
    }
}

/// Converts one element with the rules of the module docs.
#[inline(always)]
pub fn cast_element<T: Element, U: Element>(a: T) -> U {
    match integer_value(a) {
        Some(v) => from_integer(v),
        // f64 computes in double; every other float converts to f32 exactly.
        None if T::DTYPE == DType::F64 => U::from_f64(a.to_f64()),
        None => U::from_f32(a.to_f64() as f32),
    }
}

/// The value of an integer or bool element; `None` for floats. (`i128` holds every value of
/// every integer type, `u64` included.)
#[inline(always)]
fn integer_value<T: Element>(a: T) -> Option<i128> {
    let any: &dyn Any = &a;
    macro_rules! try_each {
        ($($t:ty),*) => {$(
            if let Some(&v) = any.downcast_ref::<$t>() {
                return Some(i128::from(v));
            }
        )*};
    }
    try_each!(i64, i32, u8, bool, i8, i16, u16, u32, u64);
    None
}

/// An integer value as `U`: integers keep the low bits (wrap, like C's two's complement
/// truncation and sign or zero extension), floats round once from the exact value.
#[inline(always)]
fn from_integer<U: Element>(v: i128) -> U {
    let mut out = U::ZERO;
    let slot: &mut dyn Any = &mut out;
    macro_rules! wrap_each {
        ($($t:ty),*) => {$(
            if let Some(o) = slot.downcast_mut::<$t>() {
                *o = v as $t; // wraps, like C
                return out;
            }
        )*};
    }
    wrap_each!(i64, i32, u8, i8, i16, u16, u32, u64);
    if let Some(o) = slot.downcast_mut::<bool>() {
        *o = v != 0;
    } else if let Some(o) = slot.downcast_mut::<f32>() {
        *o = v as f32; // one rounding, straight from the integer
    } else if let Some(o) = slot.downcast_mut::<f64>() {
        *o = v as f64; // one rounding (exact below 2^53)
    } else {
        // The half types convert the `f64` value, as `ts_conv` does (`half`'s `from_f64`).
        out = U::from_f64(v as f64);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    #[test]
    fn follows_c_conversions() {
        assert_eq!(cast_element::<f32, i32>(-2.9), -2);
        assert_eq!(cast_element::<f64, u8>(300.0), 255);
        assert_eq!(cast_element::<f32, u8>(f32::NAN), 0);
        assert_eq!(cast_element::<i32, u8>(300), 44);
        assert_eq!(cast_element::<i64, i32>(1 << 40 | 5), 5);
        assert_eq!(cast_element::<i32, i64>(-7), -7);
        assert!(cast_element::<f32, bool>(f32::NAN));
        assert!(!cast_element::<i64, bool>(0));
        assert_eq!(cast_element::<bool, f16>(true), f16::ONE);
        assert_eq!(cast_element::<u8, bf16>(200), bf16::from_f32(200.0));
        assert_eq!(
            cast_element::<i64, f32>((1 << 40) + 1),
            ((1i64 << 40) + 1) as f32
        );
        assert_eq!(cast_element::<i64, i64>(i64::MIN + 3), i64::MIN + 3);
        assert_eq!(cast_element::<u64, i64>(u64::MAX), -1);
        assert_eq!(cast_element::<i8, u64>(-1), u64::MAX);
        assert_eq!(cast_element::<u16, i8>(0x1_80), -128);
        assert_eq!(cast_element::<u64, f32>(u64::MAX), u64::MAX as f32);
        assert_eq!(cast_element::<u64, f64>((1 << 53) + 1), (1u64 << 53) as f64);
        assert_eq!(cast_element::<f32, u64>(-3.0), 0);
        assert_eq!(cast_element::<f64, i16>(-40_000.0), i16::MIN);
        assert_eq!(cast_element::<f16, u32>(f16::INFINITY), u32::MAX);
        assert_eq!(cast_element::<bf16, i8>(bf16::NAN), 0);
        assert_eq!(
            cast_element::<f16, f32>(f16::from_f32(0.1)),
            f16::from_f32(0.1).to_f32()
        );
    }

    #[test]
    fn names_are_unique_per_target() {
        let all = DType::ALL;
        let mut names: Vec<_> = all.iter().map(|&d| cast_name(d)).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len());
        assert_eq!(<Cast<f32> as UnaryOp<i32>>::NAME, "cast_f32");
    }
}
