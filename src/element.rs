//! Element types a tensor can hold, and the capability traits that decide which ops they get.
//!
//! The hierarchy is sealed: only the types listed here are elements, because every element
//! needs a matching CUDA C type and kernel arithmetic in `kernels/`.
//!
//! - [`Element`]: every storable type (`f32`, `f64`, `f16`, `bf16`, `i8`, `i16`, `i32`, `i64`,
//!   `u8`, `u16`, `u32`, `u64`, `bool`).
//! - [`Numeric`]: arithmetic (`+ - * /`, max, min) with defined results on every input:
//!   integers wrap, integer division by zero gives 0 (CUDA has no trap to mirror Rust's panic).
//! - [`Signed`]: negation, `abs`, `sign`.
//! - [`FloatElement`]: transcendental functions, computed in `f32` for the half types (as
//!   PyTorch and CUDA do) and rounded once on store.
//! - [`DivRem`]: floor division and remainders (every [`Numeric`] type); [`Bitwise`]: `&`,
//!   `|`, `^`, `!` (integers and bool); [`Integer`]: shifts, `gcd`, `lcm` (integers).
//!
//! Mixing element types in one op is a compile error: every op is generic over one `T`;
//! conversions go through an explicit `cast::<U>()`.

use std::fmt::Debug;

mod sealed {
    pub trait Sealed {}
}

/// Run-time tag of an element type, for error messages, kernel cache keys and erased blobs.
///
/// The order of the variants is stable (it orders cache keys and sorted lists); new types
/// are appended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// `half::f16`
    F16,
    /// `half::bf16`
    BF16,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `u8`
    U8,
    /// `bool` (comparison masks)
    Bool,
    /// `i8`
    I8,
    /// `i16`
    I16,
    /// `u16`
    U16,
    /// `u32`
    U32,
    /// `u64`
    U64,
}

impl DType {
    /// Every element type, in declaration order: the one list the crate's dtype tables and
    /// tests iterate.
    pub(crate) const ALL: [DType; 13] = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::Bool,
        DType::I8,
        DType::I16,
        DType::U16,
        DType::U32,
        DType::U64,
    ];

    /// Size of one element in bytes.
    pub const fn size_in_bytes(self) -> usize {
        match self {
            DType::F64 | DType::I64 | DType::U64 => 8,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::U8 | DType::I8 | DType::Bool => 1,
        }
    }

    /// The Rust name of the type (`"f32"`, `"bf16"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::Bool => "bool",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A type a tensor can hold.
///
/// # Safety
///
/// Implementors are plain old data: every bit pattern of `size_of::<Self>()` zero bytes is a
/// valid value equal to [`Element::ZERO`] (so zero-filled device or host memory is a valid
/// tensor), the type has no padding, and it can be copied byte for byte between host and
/// device. The trait is sealed; this crate implements it for exactly the types in [`DType`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tensor element type",
    note = "elements are f32, f64, half::f16, half::bf16, i8, i16, i32, i64, u8, u16, u32, u64 and bool"
)]
pub unsafe trait Element:
    sealed::Sealed + Copy + Default + Debug + PartialEq + PartialOrd + Send + Sync + 'static
{
    /// The run-time tag of this type.
    const DTYPE: DType;
    /// The Rust name, e.g. `"f32"`.
    const NAME: &'static str;
    /// The type's name in the CUDA C of `kernels/` (our own half types, not `cuda_fp16.h`'s).
    const CUDA_TYPE: &'static str;
    /// The CUDA C type arithmetic is done in (`float` for the half types; `int` for `i8` and
    /// `i16`, `unsigned int` for `u8` and `u16`: a kernel rounds each op's result to the
    /// element type, so the narrow integers wrap as they do here).
    const CUDA_COMPUTE_TYPE: &'static str;
    /// Zero (also the all-zero-bits value).
    const ZERO: Self;
    /// One (`true` for bool).
    const ONE: Self;

    /// Converts to `f64` (exact for every type but `i64` and `u64` beyond 2^53).
    fn to_f64(self) -> f64;
    /// Converts from `f64` the way the kernels convert a `double` (`kernels/half.cuh`,
    /// `kernels/ops.cuh`): round to nearest even for `f32`; truncation toward zero saturating
    /// at the bounds for integers (NaN gives 0); `!= 0` for bool. The half types copy the
    /// kernels, which copy `half` 2.x on x86-64, and so round twice on some inputs: `f16`
    /// rounds to `f32` first, then to `f16`; `bf16` keeps the top 20 mantissa bits of the
    /// `f64` (`half::bf16::from_f64`), then rounds to nearest even. Results computed in `f32`
    /// go through [`Element::from_f32`] instead, which rounds once.
    fn from_f64(v: f64) -> Self;
    /// Converts from `f32` the way a kernel stores a `float` compute value: exact for `f32`
    /// and `f64`, rounded once to nearest even (ties to even, overflow to infinity) for `f16`
    /// and `bf16` (`cvt.rn.f16.f32`, `cvt.rn.bf16.f32`); integers and bool as
    /// [`Element::from_f64`] of the exact `f64` value.
    fn from_f32(v: f32) -> Self;
}

/// Element types with arithmetic. Every method is total: no panics, no undefined results.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no arithmetic",
    note = "arithmetic ops take f32, f64, f16, bf16, i8, i16, i32, i64, u8, u16, u32 or u64; bool masks only select and compare",
    note = "to count or add masks, cast first: `mask.cast::<u8>()` (or `.cast::<i64>()`, `.cast::<f32>()`); to combine them, `Tensor::where_cond(&mask, &a, &b)`"
)]
pub trait Numeric: Element {
    /// `self + rhs`, wrapping for integers.
    fn add(self, rhs: Self) -> Self;
    /// `self - rhs`, wrapping for integers.
    fn sub(self, rhs: Self) -> Self;
    /// `self * rhs`, wrapping for integers.
    fn mul(self, rhs: Self) -> Self;
    /// `self / rhs`; for integers truncating, wrapping on `MIN / -1`, and 0 when `rhs == 0`.
    fn div(self, rhs: Self) -> Self;
    /// The larger value; NaN if either is NaN (PyTorch's `maximum`).
    fn max_of(self, rhs: Self) -> Self;
    /// The smaller value; NaN if either is NaN (PyTorch's `minimum`).
    fn min_of(self, rhs: Self) -> Self;
    /// `|self|` (identity for unsigned, wrapping for `MIN`).
    fn abs_of(self) -> Self;
    /// `-1`, `0` or `1` by sign; floats return `±0` and NaN unchanged.
    fn sign_of(self) -> Self;
}

/// Signed element types.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not signed",
    note = "negation takes f32, f64, f16, bf16, i8, i16, i32 or i64",
    note = "to invert a bool mask use `mask.eq(false)` (or the opposite comparison: `x.le(0.0)` for `!x.gt(0.0)`); to negate its values, cast first: `mask.cast::<f32>()`"
)]
pub trait Signed: Numeric {
    /// `-self`, wrapping for integers.
    fn neg(self) -> Self;
}

/// Floating-point element types: transcendental and rounding functions.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a floating-point element type",
    note = "this op takes f32, f64, f16 or bf16: call `.cast::<f32>()` first"
)]
pub trait FloatElement: Signed + num_traits::Float {}

// Integer, bitwise and rounding-division capabilities (issue 26).

/// Element types with floor division and the two remainders: every [`Numeric`] type.
///
/// Floats follow PyTorch (`aten/src/ATen/native/cpu/BinaryOpsKernel.cpp`), computed in the
/// compute type (`f32` for the half types) and rounded once: `fmod` is C's `fmod` (exact;
/// NaN when `rhs == 0` or `self` is infinite); `remainder` is `fmod` plus `rhs` when the two
/// differ in sign; `floor_div` is PyTorch's `div_floor_floating` (`self / rhs`, ±inf or NaN,
/// when `rhs == 0`). Integers: exact, wrapping on `MIN / -1`, and **0 when `rhs == 0`**
/// (PyTorch raises `ZeroDivisionError` on the CPU and returns garbage on CUDA; there is no
/// trap to mirror on the GPU, so both engines give 0).
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no division or remainder",
    note = "floor_divide, remainder and fmod take f32, f64, f16, bf16 or an integer type",
    note = "for a bool mask, cast first: `mask.cast::<u8>()` (or `.cast::<i64>()`)"
)]
pub trait DivRem: Numeric {
    /// `self - trunc(self / rhs) * rhs`, the sign of the dividend (C `fmod`, PyTorch's
    /// `fmod`); integers: 0 when `rhs == 0`.
    fn fmod(self, rhs: Self) -> Self;
    /// `self - floor(self / rhs) * rhs`, the sign of the divisor (Python's `%`, PyTorch's
    /// `remainder`); integers: 0 when `rhs == 0`.
    fn remainder(self, rhs: Self) -> Self;
    /// `floor(self / rhs)` (Python's `//`, PyTorch's `floor_divide`); integers: wrapping
    /// on `MIN / -1`, 0 when `rhs == 0`.
    fn floor_div(self, rhs: Self) -> Self;
}

/// Element types with bitwise `and`, `or`, `xor` and `not`: the integer types and `bool`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no bitwise ops",
    note = "bitwise ops take the integer types (i8, i16, i32, i64, u8, u16, u32, u64) and bool",
    note = "for floats, compare first (`x.gt(0.0)` gives a bool mask) or use the logical ops (`logical_and`), which take any element type"
)]
pub trait Bitwise: Element {
    /// `self & rhs` (`&&` for bool).
    fn bit_and(self, rhs: Self) -> Self;
    /// `self | rhs` (`||` for bool).
    fn bit_or(self, rhs: Self) -> Self;
    /// `self ^ rhs` (`!=` for bool).
    fn bit_xor(self, rhs: Self) -> Self;
    /// `!self`: every bit flipped (`~` in C; `!` for bool).
    fn bit_not(self) -> Self;
}

/// Integer element types: shifts, `gcd` and `lcm`, with PyTorch's results on every input.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an integer element type",
    note = "this op takes the integer types (i8, i16, i32, i64, u8, u16, u32, u64)",
    note = "convert first: `.cast::<i64>()` (floats truncate toward zero, saturating; bool gives 0 or 1)"
)]
pub trait Integer: DivRem + Bitwise {
    /// `self << rhs` in the type's width (bits shifted out are lost); 0 when `rhs` is
    /// negative or at least the bit width (PyTorch's `bitwise_left_shift`).
    fn shl(self, rhs: Self) -> Self;
    /// `self >> rhs`, arithmetic for signed types; when `rhs` is negative or at least the
    /// bit width: -1 for negative signed `self`, else 0 (PyTorch's `bitwise_right_shift`).
    fn shr(self, rhs: Self) -> Self;
    /// The greatest common divisor of `|self|` and `|rhs|`, non-negative; `gcd(0, 0) == 0`;
    /// `gcd(MIN, MIN)` and `gcd(MIN, 0)` are `2^(bits-1)`, which wraps to `MIN`.
    fn gcd(self, rhs: Self) -> Self;
    /// `|self / gcd(self, rhs) * rhs|`, wrapping on overflow (as PyTorch computes it); 0
    /// when either is 0.
    fn lcm(self, rhs: Self) -> Self;
}

macro_rules! impl_element {
    ($t:ty, $dtype:ident, $cuda:literal, $compute:literal, $zero:expr, $one:expr,
     to_f64: |$s:ident| $to:expr, from_f64: |$v:ident| $from:expr
     $(, from_f32: |$w:ident| $from32:expr)?) => {
        impl sealed::Sealed for $t {}
        // SAFETY: `$t` is a primitive (or a `#[repr(transparent)]` u16 wrapper in `half`)
        // with no padding, and all-zero bytes encode zero.
        unsafe impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            const NAME: &'static str = DType::$dtype.name();
            const CUDA_TYPE: &'static str = $cuda;
            const CUDA_COMPUTE_TYPE: &'static str = $compute;
            const ZERO: Self = $zero;
            const ONE: Self = $one;
            #[inline]
            fn to_f64($s) -> f64 {
                $to
            }
            #[inline]
            fn from_f64($v: f64) -> Self {
                $from
            }
            impl_element!(@from_f32 $(|$w| $from32)?);
        }
    };
    // Default: through the exact `f64` value.
    (@from_f32) => {
        #[inline]
        fn from_f32(v: f32) -> Self {
            Self::from_f64(f64::from(v))
        }
    };
    (@from_f32 |$w:ident| $from32:expr) => {
        #[inline]
        fn from_f32($w: f32) -> Self {
            $from32
        }
    };
}

impl_element!(f32, F32, "float", "float", 0.0, 1.0,
    to_f64: |self| self as f64, from_f64: |v| v as f32, from_f32: |v| v);
impl_element!(f64, F64, "double", "double", 0.0, 1.0,
    to_f64: |self| self, from_f64: |v| v);
// `half::f16::from_f64` rounds through `f32` on x86-64 hosts with F16C but not on others;
// writing the two steps keeps every host equal to the kernels' `ts_double_to_f16`.
impl_element!(half::f16, F16, "ts_f16", "float", half::f16::ZERO, half::f16::ONE,
    to_f64: |self| self.to_f64(), from_f64: |v| half::f16::from_f32(v as f32),
    from_f32: |v| half::f16::from_f32(v));
impl_element!(half::bf16, BF16, "ts_bf16", "float", half::bf16::ZERO, half::bf16::ONE,
    to_f64: |self| self.to_f64(), from_f64: |v| half::bf16::from_f64(v),
    from_f32: |v| half::bf16::from_f32(v));
impl_element!(i32, I32, "int", "int", 0, 1,
    to_f64: |self| self as f64, from_f64: |v| v as i32);
impl_element!(i64, I64, "long long", "long long", 0, 1,
    to_f64: |self| self as f64, from_f64: |v| v as i64);
impl_element!(u8, U8, "unsigned char", "unsigned int", 0, 1,
    to_f64: |self| self as f64, from_f64: |v| v as u8);
impl_element!(bool, Bool, "bool", "bool", false, true,
    to_f64: |self| if self { 1.0 } else { 0.0 }, from_f64: |v| v != 0.0);
impl_element!(i8, I8, "signed char", "int", 0, 1,
    to_f64: |self| self as f64, from_f64: |v| v as i8);
impl_element!(i16, I16, "short", "int", 0, 1,
    to_f64: |self| self as f64, from_f64: |v| v as i16);
impl_element!(u16, U16, "unsigned short", "unsigned int", 0, 1,
    to_f64: |self| self as f64, from_f64: |v| v as u16);
impl_element!(u32, U32, "unsigned int", "unsigned int", 0, 1,
    to_f64: |self| self as f64, from_f64: |v| v as u32);
impl_element!(u64, U64, "unsigned long long", "unsigned long long", 0, 1,
    to_f64: |self| self as f64, from_f64: |v| v as u64);

macro_rules! impl_numeric_float {
    ($($t:ty),*) => {$(
        impl Numeric for $t {
            #[inline] fn add(self, rhs: Self) -> Self { self + rhs }
            #[inline] fn sub(self, rhs: Self) -> Self { self - rhs }
            #[inline] fn mul(self, rhs: Self) -> Self { self * rhs }
            #[inline] fn div(self, rhs: Self) -> Self { self / rhs }
            #[inline]
            fn max_of(self, rhs: Self) -> Self {
                if self.is_nan() || rhs.is_nan() { <$t as num_traits::Float>::nan() }
                else if self > rhs { self } else { rhs }
            }
            #[inline]
            fn min_of(self, rhs: Self) -> Self {
                if self.is_nan() || rhs.is_nan() { <$t as num_traits::Float>::nan() }
                else if self < rhs { self } else { rhs }
            }
            #[inline] fn abs_of(self) -> Self { <$t as num_traits::Float>::abs(self) }
            #[inline]
            fn sign_of(self) -> Self {
                let zero = <$t as Element>::ZERO;
                if self > zero { <$t as Element>::ONE }
                else if self < zero { -<$t as Element>::ONE }
                else { self } // keeps 0, -0 and NaN
            }
        }
        impl Signed for $t {
            #[inline] fn neg(self) -> Self { -self }
        }
        impl FloatElement for $t {}
    )*};
}
impl_numeric_float!(f32, f64, half::f16, half::bf16);

macro_rules! impl_numeric_int {
    ($($t:ty),*) => {$(
        impl Numeric for $t {
            #[inline] fn add(self, rhs: Self) -> Self { self.wrapping_add(rhs) }
            #[inline] fn sub(self, rhs: Self) -> Self { self.wrapping_sub(rhs) }
            #[inline] fn mul(self, rhs: Self) -> Self { self.wrapping_mul(rhs) }
            #[inline]
            fn div(self, rhs: Self) -> Self {
                if rhs == 0 { 0 } else { self.wrapping_div(rhs) }
            }
            #[inline] fn max_of(self, rhs: Self) -> Self { Ord::max(self, rhs) }
            #[inline] fn min_of(self, rhs: Self) -> Self { Ord::min(self, rhs) }
            #[inline]
            #[allow(unused_comparisons)]
            fn abs_of(self) -> Self { if self < 0 { (0 as $t).wrapping_sub(self) } else { self } }
            #[inline]
            #[allow(unused_comparisons)]
            fn sign_of(self) -> Self { if self > 0 { 1 } else if self < 0 { (0 as $t).wrapping_sub(1) } else { 0 } }
        }
    )*};
}
impl_numeric_int!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! impl_signed_int {
    ($($t:ty),*) => {$(
        impl Signed for $t {
            #[inline]
            fn neg(self) -> Self {
                self.wrapping_neg()
            }
        }
    )*};
}
impl_signed_int!(i8, i16, i32, i64);

// Integer, bitwise and rounding-division capabilities (issue 26).

/// Floor division and remainders of floats in the compute type `F` (`f32` or `f64`), as
/// PyTorch's `BinaryOpsKernel.cpp` computes them.
mod float_divrem {
    use num_traits::Float;

    /// C `fmod` (Rust's `%` on floats): exact.
    #[inline(always)]
    pub(super) fn fmod<F: Float>(a: F, b: F) -> F {
        a % b
    }

    /// `fmod`, plus `b` when the result is nonzero and its sign differs from `b`'s.
    #[inline(always)]
    pub(super) fn remainder<F: Float>(a: F, b: F) -> F {
        let m = a % b;
        let zero = F::zero();
        if m != zero && ((b < zero) != (m < zero)) {
            m + b
        } else {
            m
        }
    }

    /// PyTorch's `div_floor_floating`.
    #[inline(always)]
    pub(super) fn floor_div<F: Float>(a: F, b: F) -> F {
        let zero = F::zero();
        if b == zero {
            return a / b;
        }
        let m = a % b;
        let mut div = (a - m) / b;
        if m != zero && ((b < zero) != (m < zero)) {
            div = div - F::one();
        }
        if div != zero {
            let mut f = div.floor();
            if div - f > F::from(0.5).unwrap_or(zero) {
                f = f + F::one();
            }
            f
        } else {
            zero.copysign(a / b)
        }
    }
}

/// `DivRem` for a float type computing in `$c` (its compute type, as the kernels do): the
/// inputs widened exactly, the result rounded once by [`Element::from_f32`] (or exact for
/// `f32` and `f64`, whose compute type is their own).
macro_rules! impl_divrem_float {
    ($($t:ty: $c:ty, |$v:ident| $widen:expr, |$r:ident| $narrow:expr);* $(;)?) => {$(
        impl DivRem for $t {
            #[inline]
            fn fmod(self, rhs: Self) -> Self {
                let (x, y) = ({ let $v = self; $widen }, { let $v = rhs; $widen });
                let $r: $c = float_divrem::fmod(x, y);
                $narrow
            }
            #[inline]
            fn remainder(self, rhs: Self) -> Self {
                let (x, y) = ({ let $v = self; $widen }, { let $v = rhs; $widen });
                let $r: $c = float_divrem::remainder(x, y);
                $narrow
            }
            #[inline]
            fn floor_div(self, rhs: Self) -> Self {
                let (x, y) = ({ let $v = self; $widen }, { let $v = rhs; $widen });
                let $r: $c = float_divrem::floor_div(x, y);
                $narrow
            }
        }
    )*};
}
impl_divrem_float!(
    f32: f32, |v| v, |r| r;
    f64: f64, |v| v, |r| r;
    half::f16: f32, |v| v.to_f32(), |r| <half::f16 as Element>::from_f32(r);
    half::bf16: f32, |v| v.to_f32(), |r| <half::bf16 as Element>::from_f32(r);
);

/// `DivRem`, `Bitwise` and `Integer` for integer types, each given with the unsigned type of
/// its width (`i32: u32`, `u8: u8`): extend the list for new integer element types.
macro_rules! impl_integer {
    ($($t:ty: $u:ty),* $(,)?) => {$(
        #[allow(unused_comparisons)]
        impl DivRem for $t {
            #[inline]
            fn fmod(self, rhs: Self) -> Self {
                if rhs == 0 { 0 } else { self.wrapping_rem(rhs) }
            }
            #[inline]
            fn remainder(self, rhs: Self) -> Self {
                let r = DivRem::fmod(self, rhs);
                if r != 0 && ((r < 0) != (rhs < 0)) { r.wrapping_add(rhs) } else { r }
            }
            #[inline]
            fn floor_div(self, rhs: Self) -> Self {
                if rhs == 0 {
                    return 0;
                }
                let q = self.wrapping_div(rhs);
                let r = self.wrapping_rem(rhs);
                if r != 0 && ((r < 0) != (rhs < 0)) { q.wrapping_sub(1) } else { q }
            }
        }
        impl Bitwise for $t {
            #[inline] fn bit_and(self, rhs: Self) -> Self { self & rhs }
            #[inline] fn bit_or(self, rhs: Self) -> Self { self | rhs }
            #[inline] fn bit_xor(self, rhs: Self) -> Self { self ^ rhs }
            #[inline] fn bit_not(self) -> Self { !self }
        }
        #[allow(unused_comparisons)]
        impl Integer for $t {
            #[inline]
            fn shl(self, rhs: Self) -> Self {
                if rhs < 0 || (rhs as i128) >= i128::from(<$t>::BITS) {
                    0
                } else {
                    ((self as $u) << (rhs as u32)) as $t
                }
            }
            #[inline]
            fn shr(self, rhs: Self) -> Self {
                if rhs < 0 || (rhs as i128) >= i128::from(<$t>::BITS) {
                    if self < 0 { !0 } else { 0 }
                } else {
                    self >> (rhs as u32)
                }
            }
            #[inline]
            fn gcd(self, rhs: Self) -> Self {
                let (mut a, mut b) = (magnitude!(self, $u), magnitude!(rhs, $u));
                while a != 0 {
                    let c = a;
                    a = b % a;
                    b = c;
                }
                b as $t
            }
            #[inline]
            fn lcm(self, rhs: Self) -> Self {
                let g = Integer::gcd(self, rhs) as $u;
                if g == 0 {
                    return 0;
                }
                // As C computes it (PyTorch's `calc_lcm`, and the kernels): in the compute
                // type, 32 bits for the narrower types (integer promotion), then `abs`, then
                // truncated to the element type on the store.
                let m = u64::from(magnitude!(self, $u) / g).wrapping_mul(u64::from(magnitude!(rhs, $u)));
                let width = <$t>::BITS.max(32);
                if <$t>::MIN == 0 {
                    m as $t
                } else {
                    // `m` wrapped to a signed `width`-bit value, its absolute value wrapping.
                    let shift = 64 - width;
                    (((m << shift) as i64) >> shift).wrapping_abs() as $t
                }
            }
        }
    )*};
}

/// `|x|` of an integer as the unsigned type `$u` of its width (exact, `MIN` included).
macro_rules! magnitude {
    ($x:expr, $u:ty) => {{
        #[allow(unused_comparisons)]
        let negative = $x < 0;
        if negative {
            ($x as $u).wrapping_neg()
        } else {
            $x as $u
        }
    }};
}
impl_integer!(i32: u32, i64: u64, u8: u8, i8: u8, i16: u16, u16: u16, u32: u32, u64: u64);

impl Bitwise for bool {
    #[inline]
    fn bit_and(self, rhs: Self) -> Self {
        self & rhs
    }
    #[inline]
    fn bit_or(self, rhs: Self) -> Self {
        self | rhs
    }
    #[inline]
    fn bit_xor(self, rhs: Self) -> Self {
        self ^ rhs
    }
    #[inline]
    fn bit_not(self) -> Self {
        !self
    }
}

/// The exact value of `x` if `T` is an integer element type (`i8` to `i64`, `u8` to `u64`),
/// `None` for floats and bool. Ranges over integers are computed with these in `i128`, where
/// every difference and product of two element values is exact (`Element::to_f64` is not,
/// past 2^53).
pub(crate) fn exact_integer<T: Element>(x: T) -> Option<i128> {
    let any = &x as &dyn std::any::Any;
    macro_rules! try_each {
        ($($t:ty),*) => {$(
            if let Some(&v) = any.downcast_ref::<$t>() {
                return Some(v.into());
            }
        )*};
    }
    try_each!(i64, i32, u8, i8, i16, u16, u32, u64);
    None
}

/// `v` as the integer element type `T`, saturating at `T`'s bounds; `None` if `T` is not an
/// integer type (the inverse of [`exact_integer`] for values in range).
pub(crate) fn from_exact_integer<T: Element>(v: i128) -> Option<T> {
    let mut out = T::ZERO;
    let any = &mut out as &mut dyn std::any::Any;
    macro_rules! try_each {
        ($($t:ty),*) => {$(
            if let Some(o) = any.downcast_mut::<$t>() {
                *o = v.clamp(<$t>::MIN.into(), <$t>::MAX.into()) as $t;
                return Some(out);
            }
        )*};
    }
    try_each!(i64, i32, u8, i8, i16, u16, u32, u64);
    None
}

static_assertions::assert_eq_size!(half::f16, u16);
static_assertions::assert_eq_size!(half::bf16, u16);
static_assertions::assert_eq_size!(bool, u8);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_integers_round_trip_and_floats_have_none() {
        assert_eq!(exact_integer(i64::MAX), Some(i128::from(i64::MAX)));
        assert_eq!(exact_integer(i32::MIN), Some(i128::from(i32::MIN)));
        assert_eq!(exact_integer(200u8), Some(200));
        assert_eq!(exact_integer(1.5f64), None);
        assert_eq!(exact_integer(true), None);
        assert_eq!(
            from_exact_integer::<i64>(i128::from(i64::MAX) - 1),
            Some(i64::MAX - 1)
        );
        assert_eq!(from_exact_integer::<u8>(300), Some(255));
        assert_eq!(from_exact_integer::<i32>(-5), Some(-5));
        assert_eq!(from_exact_integer::<f32>(1), None);
        assert_eq!(exact_integer(u64::MAX), Some(i128::from(u64::MAX)));
        assert_eq!(exact_integer(i8::MIN), Some(-128));
        assert_eq!(from_exact_integer::<u64>(-1), Some(0));
        assert_eq!(from_exact_integer::<i16>(1 << 20), Some(i16::MAX));
        assert_eq!(from_exact_integer::<u16>(70_000), Some(u16::MAX));
        assert_eq!(from_exact_integer::<u32>(-7), Some(0));
        assert_eq!(from_exact_integer::<i8>(-300), Some(i8::MIN));
    }

    #[test]
    fn integer_arithmetic_is_total() {
        assert_eq!(7i32.div(0), 0);
        assert_eq!(i32::MIN.div(-1), i32::MIN);
        assert_eq!(250u8.add(10), 4);
        assert_eq!(i64::MIN.abs_of(), i64::MIN);
        assert_eq!((-5i32).sign_of(), -1);
        assert_eq!(0u8.sign_of(), 0);
        assert_eq!(i8::MIN.div(-1), i8::MIN);
        assert_eq!(i16::MIN.abs_of(), i16::MIN);
        assert_eq!(i8::MIN.neg(), i8::MIN);
        assert_eq!(65_535u16.add(2), 1);
        assert_eq!(0u32.sub(1), u32::MAX);
        assert_eq!(u64::MAX.mul(u64::MAX), 1);
        assert_eq!(9u64.div(0), 0);
        assert_eq!(u64::MAX.sign_of(), 1);
    }

    #[test]
    fn float_max_min_propagate_nan() {
        assert!(1.0f32.max_of(f32::NAN).is_nan());
        assert!(f64::NAN.min_of(2.0).is_nan());
        assert_eq!(
            half::f16::from_f32(2.0)
                .max_of(half::f16::from_f32(-3.0))
                .to_f32(),
            2.0
        );
    }

    #[test]
    fn from_f64_matches_c_casts() {
        assert_eq!(i32::from_f64(-2.9), -2);
        assert_eq!(u8::from_f64(300.0), 255);
        assert_eq!(u8::from_f64(f64::NAN), 0);
        assert!(bool::from_f64(0.5));
        assert_eq!(half::bf16::from_f64(1.0), half::bf16::ONE);
        assert_eq!(i8::from_f64(-200.5), i8::MIN);
        assert_eq!(u64::from_f64(-1.0), 0);
        assert_eq!(u64::from_f64(1e30), u64::MAX);
        assert_eq!(i16::from_f64(f64::NAN), 0);
        assert_eq!(u32::from_f32(4_294_967_296.0), u32::MAX);
    }
}
