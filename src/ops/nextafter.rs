//! `nextafter`: the one op of the table whose CUDA expression needs constants of its element
//! type that its compute type cannot tell (`f16`, `bf16` and `f32` all compute in `float`),
//! so it is written by hand instead of by the table's macros: [`NextAfter`] hands the
//! kernels its type's epsilon and smallest subnormal as the scalars `p0` and `p1`, which no
//! caller can set.

use super::op::{sealed::Sealed, BinaryOp};
use crate::element::{DType, FloatElement};

/// The next representable value of the element type after `a` in the direction of `b`
/// (PyTorch's `nextafter`, C's `nextafter`): `b` when `a == b`, NaN when either is NaN, the
/// smallest subnormal (signed toward `b`) from zero, infinity from the largest finite
/// value, the largest finite value from infinity; a step to zero keeps `a`'s sign. `f16` and
/// `bf16` step in their own representation (`nextafter(1.0, 2.0)` is `1 + 2^-10` in `f16`).
///
/// The CUDA expression (`ts_nextafter` in `kernels/ops.cuh`) computes the step from the type's
/// epsilon and smallest subnormal ([`BinaryOp::scalars`]); the CPU steps the bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NextAfter;

impl Sealed for NextAfter {}

impl<T: FloatElement> BinaryOp<T> for NextAfter {
    type Output = T;
    const NAME: &'static str = "nextafter";
    const CUDA: &'static str = "ts_nextafter(a, b, p0, p1)";
    #[inline]
    fn cpu(&self, a: T, b: T) -> T {
        next_after(a, b)
    }
    /// `[epsilon, smallest positive subnormal]` of `T`.
    fn scalars(&self) -> [T; 2] {
        [T::epsilon(), T::min_positive_value() * T::epsilon()]
    }
}

/// One step from `a` toward `b` on the bits of the sign-magnitude float whose sign bit is
/// `sign` (its value `a` and `b` given as `f64`, exactly). `None`: the result is `b` itself
/// or NaN (`a + b`).
fn step_bits(bits: u64, sign: u64, a: f64, b: f64) -> Option<u64> {
    if a.is_nan() || b.is_nan() || a == b {
        return None;
    }
    Some(if a == 0.0 {
        (if b < 0.0 { sign } else { 0 }) | 1
    } else if (b > a) == (a > 0.0) {
        bits + 1 // away from zero (from the largest finite value: infinity)
    } else {
        bits - 1 // toward zero (from infinity: the largest finite value)
    })
}

/// [`NextAfter`] on the CPU, on the bits of `T`.
pub(crate) fn next_after<T: FloatElement>(a: T, b: T) -> T {
    let (x, y) = (a.to_f64(), b.to_f64());
    // Every `T` value converts to `f64` and back (through its own type) exactly.
    let stepped = match T::DTYPE {
        DType::F64 => step_bits(x.to_bits(), 1 << 63, x, y).map(f64::from_bits),
        DType::F32 => step_bits(u64::from((x as f32).to_bits()), 1 << 31, x, y)
            .map(|r| f64::from(f32::from_bits(r as u32))),
        DType::F16 => step_bits(u64::from(half::f16::from_f64(x).to_bits()), 1 << 15, x, y)
            .map(|r| half::f16::from_bits(r as u16).to_f64()),
        DType::BF16 => step_bits(u64::from(half::bf16::from_f64(x).to_bits()), 1 << 15, x, y)
            .map(|r| half::bf16::from_bits(r as u16).to_f64()),
        // FloatElement is sealed to the four types above.
        _ => None,
    };
    match stepped {
        Some(v) => T::from_f64(v),
        None if a == b => b,
        None => a + b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    #[test]
    fn steps_in_the_element_types_own_representation() {
        let n = |a: f32, b: f32| next_after(f16::from_f32(a), f16::from_f32(b));
        assert_eq!(n(1.0, 2.0), f16::from_f32(1.0 + 2f32.powi(-10)));
        assert_eq!(n(1.0, 0.0), f16::from_f32(1.0 - 2f32.powi(-11)));
        assert_eq!(n(0.0, -1.0), -f16::from_bits(1));
        assert_eq!(n(65504.0, f32::INFINITY), f16::INFINITY);
        assert_eq!(n(f32::INFINITY, 0.0), f16::MAX);
        let b = next_after(bf16::from_f32(1.0), bf16::from_f32(2.0));
        assert_eq!(b, bf16::from_f32(1.0 + 2f32.powi(-7)));
        assert_eq!(next_after(1.0f32, 2.0), 1.0 + f32::EPSILON);
        assert_eq!(next_after(0.0f64, 1.0), f64::from_bits(1));
        // A step to zero keeps the sign; equal inputs give `b`.
        let z = next_after(-f64::from_bits(1), 1.0);
        assert!(z == 0.0 && z.is_sign_negative());
        assert!(next_after(-0.0f32, 0.0).is_sign_positive());
        assert!(next_after(f32::NAN, 1.0).is_nan());
        assert!(next_after(1.0f32, f32::NAN).is_nan());
    }

    #[test]
    fn the_kernel_scalars_are_epsilon_and_the_smallest_subnormal() {
        assert_eq!(
            BinaryOp::<f16>::scalars(&NextAfter),
            [f16::EPSILON, f16::from_bits(1)]
        );
        assert_eq!(
            BinaryOp::<bf16>::scalars(&NextAfter),
            [bf16::EPSILON, bf16::from_bits(1)]
        );
        assert_eq!(BinaryOp::<f32>::scalars(&NextAfter)[1], f32::from_bits(1));
        assert_eq!(BinaryOp::<f64>::scalars(&NextAfter)[1], f64::from_bits(1));
    }
}
