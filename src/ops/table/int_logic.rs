//! Integer, bitwise, logical and float-predicate ops (issue 26): PyTorch's division and
//! remainders, bitwise ops and shifts, `gcd` / `lcm`, logical ops, `isnan` and its kin,
//! `signbit`, `copysign`, and the two halves of `nan_to_num`.
//!
//! Entries in the grammar of the table's module docs, one macro per list; each macro
//! appends its entries to the ones it is given and passes them on ([`super::chain`]).

use crate::element::DType;

/// The unary entries of this group.
macro_rules! int_logic_unary {
    ([$($next:ident)*] $m:ident { $($acc:tt)* }) => {
        $crate::ops::table::chain! { [$($next)*] $m {
            $($acc)*
            /// `~a`, every bit flipped (PyTorch's `bitwise_not`); for `bool`, logical not.
            BitwiseNot: Bitwise => T, "bitwise_not", "ts_bit_not(a)", |a| a.bit_not()
                => bitwise_not, bitwise_not_into, bitwise_not_: "~a";
            /// `a == 0` as `bool` (PyTorch's `logical_not`): every nonzero value is true, NaN
            /// included; `-0.0` is zero.
            LogicalNot: Element => bool, "logical_not", "(a == 0)", |a| a == T::ZERO
                => logical_not, logical_not_into: "not a";
            /// Whether `a` is NaN (PyTorch's `isnan`); false for integers and bool.
            IsNan: Element => bool, "isnan", "(a != a)", |a| a.partial_cmp(&a).is_none()
                => isnan, isnan_into: "isnan(a)";
            /// Whether `a` is `+inf` or `-inf` (PyTorch's `isinf`); false for integers and bool.
            IsInf: Element => bool, "isinf", "ts_isinf(a)", |a| a.to_f64().is_infinite()
                => isinf, isinf_into: "isinf(a)";
            /// Whether `a` is `+inf` (PyTorch's `isposinf`); false for integers and bool.
            IsPosInf: Element => bool, "isposinf", "ts_isposinf(a)",
                |a| a.to_f64() == f64::INFINITY
                => isposinf, isposinf_into: "a == +inf";
            /// Whether `a` is `-inf` (PyTorch's `isneginf`); false for integers and bool.
            IsNegInf: Element => bool, "isneginf", "ts_isneginf(a)",
                |a| a.to_f64() == f64::NEG_INFINITY
                => isneginf, isneginf_into: "a == -inf";
            /// Whether `a` is neither NaN nor infinite (PyTorch's `isfinite`); true for
            /// integers and bool.
            IsFinite: Element => bool, "isfinite", "ts_isfinite(a)", |a| a.to_f64().is_finite()
                => isfinite, isfinite_into: "isfinite(a)";
            /// Whether the sign bit is set (PyTorch's `signbit`): true for `-0.0`, for
            /// negative values and for a NaN with its sign bit set; integers: `a < 0`.
            SignBit: Numeric => bool, "signbit", "ts_signbit(a)",
                |a| a.to_f64().is_sign_negative()
                => signbit, signbit_into: "signbit(a)";
            /// NaN replaced by `nan`, other values unchanged: one half of
            /// [`Tensor::nan_to_num`](crate::tensor::Tensor::nan_to_num), which composes it
            /// with [`NanToNumInf`] in one pass.
            NanToNumNan(nan): FloatElement => T, "nan_to_num_nan", "(a != a ? p0 : a)",
                |a| if a.is_nan() { nan } else { a };
            /// `+inf` replaced by `posinf` and `-inf` by `neginf`, other values unchanged: the
            /// other half of [`Tensor::nan_to_num`](crate::tensor::Tensor::nan_to_num).
            NanToNumInf(posinf, neginf): FloatElement => T, "nan_to_num_inf",
                "(ts_isposinf(a) ? p0 : (ts_isneginf(a) ? p1 : a))",
                |a| if a == T::infinity() { posinf } else if a == T::neg_infinity() { neginf } else { a };
        } }
    };
}
pub(crate) use int_logic_unary;

/// The binary entries of this group.
macro_rules! int_logic_binary {
    ([$($next:ident)*] $m:ident { $($acc:tt)* }) => {
        $crate::ops::table::chain! { [$($next)*] $m {
            $($acc)*
            /// `floor(a / b)` (PyTorch's `floor_divide`, Python's `//`). Floats: PyTorch's
            /// `div_floor_floating` (`a / b` when `b == 0`: ±inf or NaN). Integers: rounded
            /// toward negative infinity, `MIN // -1` wraps to `MIN`, and **`a // 0 == 0`**
            /// (PyTorch raises `ZeroDivisionError` on the CPU).
            FloorDivide: DivRem => T, "floor_divide", "ts_floor_div(a, b)",
                |a, b| a.floor_div(b)
                => floor_divide, floor_divide_into, floor_divide_: "floor(a / b)";
            /// `a - floor(a / b) * b`, the sign of the divisor (PyTorch's `remainder`, Python's
            /// `%`), computed as PyTorch does: `fmod(a, b)`, plus `b` when nonzero and of the
            /// other sign (so `remainder(-1e-20, 1.0)` rounds to `1.0`). Floats: NaN when
            /// `b == 0` or `a` is infinite; `remainder(a, ±inf)` is `a` or `±inf`. Integers:
            /// exact, and **`remainder(a, 0) == 0`** (PyTorch raises `ZeroDivisionError`).
            Remainder: DivRem => T, "remainder", "ts_remainder(a, b)", |a, b| a.remainder(b)
                => remainder, remainder_into, remainder_: "a - floor(a / b) * b";
            /// `a - trunc(a / b) * b`, the sign of the dividend (C's `fmod`, PyTorch's
            /// `fmod`): exact. Floats: NaN when `b == 0` or `a` is infinite, `a` when `b` is
            /// infinite. Integers: **`fmod(a, 0) == 0`** (PyTorch raises `ZeroDivisionError`).
            Fmod: DivRem => T, "fmod", "ts_fmod(a, b)", |a, b| a.fmod(b)
                => fmod, fmod_into, fmod_: "a - trunc(a / b) * b";
            /// `a & b` (PyTorch's `bitwise_and`; for `bool`, logical and).
            BitwiseAnd: Bitwise => T, "bitwise_and", "ts_bit_and(a, b)", |a, b| a.bit_and(b)
                => bitwise_and, bitwise_and_into, bitwise_and_: "a & b";
            /// `a | b` (PyTorch's `bitwise_or`; for `bool`, logical or).
            BitwiseOr: Bitwise => T, "bitwise_or", "ts_bit_or(a, b)", |a, b| a.bit_or(b)
                => bitwise_or, bitwise_or_into, bitwise_or_: "a | b";
            /// `a ^ b` (PyTorch's `bitwise_xor`; for `bool`, `a != b`).
            BitwiseXor: Bitwise => T, "bitwise_xor", "ts_bit_xor(a, b)", |a, b| a.bit_xor(b)
                => bitwise_xor, bitwise_xor_into, bitwise_xor_: "a ^ b";
            /// `a << b` in the type's width (PyTorch's `bitwise_left_shift`): 0 when `b` is
            /// negative or at least the bit width.
            LeftShift: Integer => T, "left_shift", "ts_shl(a, b)", |a, b| a.shl(b)
                => left_shift, left_shift_into, left_shift_: "a << b";
            /// `a >> b`, arithmetic for signed types (PyTorch's `bitwise_right_shift`): when
            /// `b` is negative or at least the bit width, -1 for negative `a`, else 0.
            RightShift: Integer => T, "right_shift", "ts_shr(a, b)", |a, b| a.shr(b)
                => right_shift, right_shift_into, right_shift_: "a >> b";
            /// The greatest common divisor of `|a|` and `|b|` (PyTorch's `gcd`):
            /// non-negative, `gcd(0, 0) == 0`, except `gcd(MIN, MIN)` and `gcd(MIN, 0)`, whose
            /// value `2^(bits-1)` wraps to `MIN`.
            Gcd: Integer => T, "gcd", "ts_gcd(a, b)", |a, b| a.gcd(b)
                => gcd, gcd_into, gcd_: "gcd(a, b)";
            /// The least common multiple, `|a / gcd(a, b) * b|` (PyTorch's `lcm`), wrapping
            /// on overflow; 0 when either is 0.
            Lcm: Integer => T, "lcm", "ts_lcm(a, b)", |a, b| a.lcm(b)
                => lcm, lcm_into, lcm_: "lcm(a, b)";
            /// `a and b` as `bool` (PyTorch's `logical_and`): nonzero is true, NaN included.
            LogicalAnd: Element => bool, "logical_and", "ts_logical_and(a, b)",
                |a, b| a != T::ZERO && b != T::ZERO
                => logical_and, logical_and_into: "a and b";
            /// `a or b` as `bool` (PyTorch's `logical_or`): nonzero is true, NaN included.
            LogicalOr: Element => bool, "logical_or", "ts_logical_or(a, b)",
                |a, b| a != T::ZERO || b != T::ZERO
                => logical_or, logical_or_into: "a or b";
            /// `a xor b` as `bool` (PyTorch's `logical_xor`): nonzero is true, NaN included.
            LogicalXor: Element => bool, "logical_xor", "((a != 0) != (b != 0))",
                |a, b| (a != T::ZERO) != (b != T::ZERO)
                => logical_xor, logical_xor_into: "a xor b";
            /// `|a|` with the sign bit of `b` (PyTorch's `copysign`), NaN and `-0.0` included.
            Copysign: FloatElement => T, "copysign", "copysign(a, b)",
                |a, b| in_compute!(T as C; x = a, y = b => x.copysign(y))
                => copysign, copysign_into, copysign_: "copysign(a, b)";
        } }
    };
}
pub(crate) use int_logic_binary;

/// The value the float predicates of this group (`isnan`, `isinf`, `isposinf`, `isneginf`,
/// `isfinite`, `signbit`) take on *every* element of an element type that has no NaN, no
/// infinity or no sign, or `None` where the op depends on its input. The eager ops then write
/// it without reading the input (PyTorch's `isinf` and kin write `zeros_like` / `ones_like`
/// for integers the same way); a unit test checks each answer against the op's own CPU
/// definition.
pub(crate) fn input_free_value(op: &str, dtype: DType) -> Option<bool> {
    let float = matches!(dtype, DType::F32 | DType::F64 | DType::F16 | DType::BF16);
    let unsigned = matches!(
        dtype,
        DType::U8 | DType::U16 | DType::U32 | DType::U64 | DType::Bool
    );
    match op {
        "isnan" | "isinf" | "isposinf" | "isneginf" if !float => Some(false),
        "isfinite" if !float => Some(true),
        "signbit" if unsigned => Some(false),
        _ => None,
    }
}
