//! The op traits: each pointwise op is a value (zero-sized, or carrying its scalars) that
//! gives both its CPU closure and its CUDA C expression, so the CPU engine and the GPU
//! kernels run the same definition. Adding an op is one table entry (see [`super::table`]).
//!
//! CUDA expressions are C expressions evaluated in the *compute type* of the input
//! ([`Element::CUDA_COMPUTE_TYPE`]: `float` for f16/bf16/f32, `double` for f64, the integer
//! itself for integers): inputs are named `a`, `b`, `c` (a unary op's input is `a`), scalars
//! `p0`, `p1` (already converted to the compute type). The kernel converts the expression's
//! value to the output element type with the rules of [`Element::from_f32`] (a `float`
//! value: rounded once, to nearest even, to f16/bf16) or [`Element::from_f64`] (a `double`):
//! floats to integers truncate, saturate and give 0 for NaN; floats round to nearest.
//! The expression may call the helpers of `kernels/ops.cuh` (`ts_add`, `ts_div`, `ts_max`,
//! ...), which mirror [`crate::element::Numeric`]'s total semantics on the GPU.
//!
//! # Sealed: the code the crate compiles is its own
//!
//! An op's `NAME` and `CUDA` are pasted into the NVRTC program and the result is launched
//! from safe functions, so they are part of what the unsafe launch code trusts. The three
//! traits are therefore sealed: only the types of the op table ([`super::table`]) and
//! [`Cast`](super::cast::Cast) implement them. The op types themselves are public and usable
//! everywhere (`Tensor::map(&Exp)`, generic code bounded by `O: UnaryOp<T>`); a new op is a
//! table entry in this crate (ask for one in the issue tracker). As a second line of defence
//! the kernel generator re-checks every name and expression with `check_op_source` before
//! compiling it.

use crate::element::Element;
use crate::error::GpuError;

pub(crate) mod sealed {
    /// The private supertrait of the op traits: implemented only by this crate's op types.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is not one of this crate's pointwise ops: the op traits are sealed",
        label = "only the op table's types (`typestate_tensor::ops::table`) and `Cast<U>` implement the op traits",
        note = "an op's CUDA expression is compiled and launched from safe code, so ops come from the crate's table (`src/ops/table.rs`); compose existing ops, or request a new one as a table entry in the issue tracker"
    )]
    pub trait Sealed {}
}

/// A pointwise op of one input: `out[i] = op(a[i])`. Sealed (see the module docs).
pub trait UnaryOp<T: Element>: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The element type written.
    type Output: Element;
    /// Name in errors and kernel cache keys (unique per op).
    const NAME: &'static str;
    /// CUDA C expression in `a`, `p0`, `p1`.
    const CUDA: &'static str;
    /// The op on the CPU.
    fn cpu(&self, a: T) -> Self::Output;
    /// Scalar parameters (`p0`, `p1`), e.g. the `s` of "add a scalar".
    fn scalars(&self) -> [T; 2] {
        [T::ZERO; 2]
    }
}

/// A pointwise op of two inputs of one type: `out[i] = op(a[i], b[i])`. Sealed (see the
/// module docs).
pub trait BinaryOp<T: Element>: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The element type written (`bool` for comparisons).
    type Output: Element;
    /// Name in errors and kernel cache keys.
    const NAME: &'static str;
    /// CUDA C expression in `a`, `b`, `p0`, `p1`.
    const CUDA: &'static str;
    /// The op on the CPU.
    fn cpu(&self, a: T, b: T) -> Self::Output;
    /// Scalar parameters.
    fn scalars(&self) -> [T; 2] {
        [T::ZERO; 2]
    }
}

/// A pointwise op of three inputs: `out[i] = op(a[i], b[i], c[i])`. The first input may have
/// another type than the other two (`where(mask, x, y)` takes a `bool` mask). Sealed (see the
/// module docs).
pub trait TernaryOp<A: Element, T: Element>: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The element type written.
    type Output: Element;
    /// Name in errors and kernel cache keys.
    const NAME: &'static str;
    /// CUDA C expression in `a` (compute type of `A`), `b`, `c` (compute type of `T`).
    const CUDA: &'static str;
    /// The op on the CPU.
    fn cpu(&self, a: A, b: T, c: T) -> Self::Output;
    /// Scalar parameters (`p0`, `p1`), e.g. the `value` of `addcmul`.
    fn scalars(&self) -> [T; 2] {
        [T::ZERO; 2]
    }
}

/// Identifiers a CUDA op expression may use: the operands, the scalars, the `kernels/ops.cuh`
/// helpers and the CUDA math functions the table calls (each with `float` and `double`
/// overloads).
#[rustfmt::skip]
pub(crate) const CUDA_IDENTIFIERS: &[&str] = &[
    "a", "b", "c", "p0", "p1", "ts_add", "ts_sub", "ts_mul", "ts_div", "ts_max", "ts_min",
    "ts_abs", "ts_sign", "ts_neg", "ts_pow", "ts_sigmoid", "ts_silu", "exp", "log", "sqrt",
    "rsqrt", "sin", "cos", "tanh", "floor", "ceil", "rint", "erf", "fma", "decltype",
    // Integer, bitwise, logical and float-predicate ops (issue 26).
    "ts_fmod", "ts_remainder", "ts_floor_div", "ts_bit_and", "ts_bit_or", "ts_bit_xor",
    "ts_bit_not", "ts_shl", "ts_shr", "ts_gcd", "ts_lcm", "ts_logical_and", "ts_logical_or",
    "ts_isinf", "ts_isposinf", "ts_isneginf", "ts_isfinite", "ts_signbit", "ts_nextafter",
    "copysign",
    // Float math ops (issue 26).
    "exp2", "expm1", "log2", "log10", "log1p", "tan", "asin", "acos", "atan", "atan2", "sinh",
    "cosh", "asinh", "acosh", "atanh", "hypot", "trunc", "erfc", "erfinv", "lgamma",
    "ts_logaddexp", "ts_logaddexp2", "ts_float_power", "ts_xlogy", "ts_xlog1py", "ts_sinc",
    "ts_round_decimals", "ts_digamma", "ts_i0", "ts_logit_eps", "ts_fmax", "ts_fmin",
];

/// Punctuation a CUDA op expression may use besides identifiers, digits, `.` and spaces:
/// arithmetic, comparison, the conditional operator, calls and casts. No `;`, braces, `#`,
/// quotes, `/*` or `//` (a comment or a statement cannot be formed), and no newline.
pub(crate) const CUDA_PUNCTUATION: &str = "+-*/<>=!?:(),";

/// The longest op name or expression accepted (the table's longest is far shorter).
pub(crate) const MAX_OP_TEXT: usize = 256;

/// Checks an op's name and CUDA expression before they are pasted into an NVRTC program.
///
/// The name must be an identifier (`[A-Za-z_][A-Za-z0-9_]*`, at most [`MAX_OP_TEXT`]
/// bytes): it goes into a comment line and the kernel's entry-point name. The expression
/// must be non-empty, at most [`MAX_OP_TEXT`] bytes, made of ASCII letters, digits, `_`,
/// `.`, spaces and [`CUDA_PUNCTUATION`], with every identifier in [`CUDA_IDENTIFIERS`],
/// balanced parentheses and no `//` or `/*`. Every entry of the op table passes (a unit test
/// pins it); the traits are sealed, so this is a second line of defence, not the first.
///
/// # Errors
/// [`GpuError::UntrustedOp`] naming the op and what is wrong.
pub(crate) fn check_op_source(name: &str, expr: &str) -> Result<(), GpuError> {
    let reject = |reason: String| GpuError::UntrustedOp {
        op: name.escape_default().to_string(),
        reason,
    };
    let is_ident_start = |c: char| c.is_ascii_alphabetic() || c == '_';
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    if name.is_empty() || name.len() > MAX_OP_TEXT {
        return Err(reject(format!(
            "an op name must be 1 to {MAX_OP_TEXT} bytes long"
        )));
    }
    if !name.starts_with(is_ident_start) || !name.chars().all(is_ident) {
        return Err(reject("an op name must be an identifier".to_owned()));
    }
    if expr.trim().is_empty() || expr.len() > MAX_OP_TEXT {
        return Err(reject(format!(
            "a CUDA expression must be 1 to {MAX_OP_TEXT} bytes long"
        )));
    }
    if let Some(bad) = expr.chars().find(|&c| {
        !(c.is_ascii_alphanumeric()
            || c == '_'
            || c == '.'
            || c == ' '
            || CUDA_PUNCTUATION.contains(c))
    }) {
        return Err(reject(format!(
            "character {:?} is not allowed in a CUDA expression",
            bad
        )));
    }
    if expr.contains("//") || expr.contains("/*") {
        return Err(reject(
            "a CUDA expression may not hold a comment".to_owned(),
        ));
    }
    // Identifiers: a run of letters, digits and `_` that starts with a letter or `_` (a run
    // starting with a digit is a number, `1e5`, `0.5f` included).
    let mut depth = 0usize;
    let mut rest = expr;
    while let Some(c) = rest.chars().next() {
        if is_ident_start(c) {
            let end = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
            let ident = &rest[..end];
            if !CUDA_IDENTIFIERS.contains(&ident) {
                return Err(reject(format!(
                    "identifier {ident:?} is not an operand, scalar or known helper"
                )));
            }
            rest = &rest[end..];
            continue;
        }
        if c.is_ascii_digit() || c == '.' {
            let end = rest
                .find(|c: char| !(is_ident(c) || c == '.'))
                .unwrap_or(rest.len());
            rest = &rest[end..];
            continue;
        }
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| reject("unbalanced parentheses".to_owned()))?;
            }
            _ => {}
        }
        rest = &rest[c.len_utf8()..];
    }
    if depth != 0 {
        return Err(reject("unbalanced parentheses".to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn untrusted(name: &str, expr: &str) -> bool {
        matches!(
            check_op_source(name, expr),
            Err(GpuError::UntrustedOp { .. })
        )
    }

    #[test]
    fn names_must_be_identifiers() {
        for bad in [
            "",
            "add\n#include <x>",
            "a b",
            "1add",
            "add;",
            "x\0",
            "név",
            "a*/",
        ] {
            assert!(untrusted(bad, "a"), "{bad:?}");
        }
        assert!(untrusted(&"a".repeat(MAX_OP_TEXT + 1), "a"));
        assert!(check_op_source("cast_f32", "a").is_ok());
        assert!(check_op_source("_x9", "a").is_ok());
    }

    #[test]
    fn expressions_are_built_from_known_pieces() {
        let bad = [
            "",
            "   ",
            "a; asm(\"trap;\")",
            "a }\n__global__ void k() {",
            "a // comment",
            "a /* c */",
            "a\n#include <x>",
            "system(a)",
            "a[0]",
            "*(int*)0",
            "(a",
            "a)",
            ")a(",
            "a & b",
            "'a'",
            "a\tb",
        ];
        for expr in bad {
            assert!(untrusted("op", expr), "{expr:?}");
        }
        assert!(untrusted("op", &"(".repeat(MAX_OP_TEXT + 1)));
        let err = check_op_source("my\nop", "a").unwrap_err();
        assert!(err.to_string().contains("my\\nop"), "{err}");
        for good in [
            "a",
            "(a ? b : c)",
            "ts_min(ts_max(a, p0), p1)",
            "1 / (1 + exp(-a))",
            "a / 2 * (1 + erf(a * (decltype(a))0.70710678118654752440))",
        ] {
            assert!(check_op_source("op", good).is_ok(), "{good}");
        }
    }
}
