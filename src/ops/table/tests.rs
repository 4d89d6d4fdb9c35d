//! The table's own checks: names, the generator check on every entry, edge semantics.

use super::*;
use crate::ops::op::check_op_source;
use half::f16;

fn all() -> impl Iterator<Item = &'static OpInfo> {
    UNARY_OPS.iter().chain(BINARY_OPS).chain(TERNARY_OPS)
}

/// `(kernel name, method name)` of every entry that has methods, from the table itself.
macro_rules! method_names {
    ($(
        $(#[$doc:meta])*
        $name:ident $(($($s:ident),*))? : $([$first:tt])? $bound:ident => $out:ty,
            $opname:literal, $cuda:literal, |$($p:ident),*| $body:expr
            $(=> $m:ident, $into:ident $(, $inplace:ident)? : $d:literal)?;
    )*) => {
        vec![$($(($opname, stringify!($m)),)?)*]
    };
}

/// The kernel name (errors, cache keys) and the method name of an entry are written
/// separately (no `paste` crate); they must agree, except `where`, a Rust keyword
/// (`where_cond`, candle's name).
#[test]
fn kernel_names_match_method_names() {
    let mut pairs: Vec<(&str, &str)> = for_each_unary_op!(method_names);
    pairs.extend(for_each_binary_op!(method_names));
    pairs.extend(for_each_ternary_op!(method_names));
    assert!(pairs.len() > 30, "{pairs:?}");
    for (kernel, method) in pairs {
        let expected = if kernel == "where" {
            "where_cond"
        } else {
            kernel
        };
        assert_eq!(method, expected, "entry {kernel:?} has method {method:?}");
    }
}

#[test]
fn names_are_unique() {
    let mut names: Vec<_> = all().map(|o| o.name).collect();
    names.sort_unstable();
    let n = names.len();
    names.dedup();
    assert_eq!(names.len(), n);
}

/// Every table entry (and every cast, and `fill`) passes the generator's check, so the
/// check rejects nothing the crate compiles.
#[test]
fn every_entry_passes_the_generator_check() {
    for op in all() {
        if let Err(e) = check_op_source(op.name, op.cuda) {
            panic!("{}: {e}", op.name);
        }
    }
    use crate::element::DType;
    let dtypes = DType::ALL;
    for dtype in dtypes {
        let name = crate::ops::cast::cast_name(dtype);
        assert!(check_op_source(name, "a").is_ok(), "{name}");
    }
    assert!(check_op_source("fill", "p0").is_ok());
}

#[test]
fn scalar_ops_expose_their_scalars() {
    assert_eq!(UnaryOp::<i32>::scalars(&AddScalar(7)), [7, 0]);
    assert_eq!(
        UnaryOp::<f32>::scalars(&ClampScalar(-1.0, 2.0)),
        [-1.0, 2.0]
    );
    assert_eq!(UnaryOp::<u8>::cpu(&MulScalar(3), 100), 44);
}

#[test]
fn edge_semantics() {
    assert!(UnaryOp::<f32>::cpu(&Relu, f32::NAN).is_nan());
    assert_eq!(UnaryOp::<f32>::cpu(&Relu, -0.0).to_bits(), 0);
    assert_eq!(UnaryOp::<f64>::cpu(&Round, 2.5), 2.0);
    assert_eq!(UnaryOp::<f32>::cpu(&Round, -3.5), -4.0);
    assert_eq!(UnaryOp::<f16>::cpu(&Round, f16::from_f32(0.5)), f16::ZERO);
    assert!(TernaryOp::<f32, f32>::cpu(&Clamp, 1.0, f32::NAN, 2.0).is_nan());
    assert_eq!(TernaryOp::<i32, i32>::cpu(&Clamp, 9, 0, 5), 5);
    assert_eq!(TernaryOp::<bool, u8>::cpu(&Where, false, 1, 2), 2);
    // fma rounds once: (1 + 2^-30)^2 - 1 keeps the 2^-60 term.
    let x = 1.0 + 2f64.powi(-30);
    assert_eq!(
        TernaryOp::<f64, f64>::cpu(&Fma, x, x, -1.0),
        2f64.powi(-29) + 2f64.powi(-60)
    );
    assert_eq!(TernaryOp::<f32, f32>::cpu(&Lerp, 1.0, 3.0, 0.25), 1.5);
    let g = UnaryOp::<f64>::cpu(&Gelu, 1.0);
    assert!((g - 0.841_344_746_068_542_9).abs() < 1e-15);
    assert!(!BinaryOp::<f32>::cpu(&Eq, f32::NAN, f32::NAN));
    assert!(BinaryOp::<f32>::cpu(&Ne, f32::NAN, f32::NAN));
    assert_eq!(BinaryOp::<i32>::cpu(&Div, 7, 0), 0);
}

/// Activations (issue 26): the small values `log1p` and `expm1` keep, and NaN.
#[test]
fn activation_edges() {
    let sp = UnaryOp::<f32>::cpu(&Softplus(1.0, 20.0), -30.0);
    assert!(
        (sp as f64 / 9.357_622_968_839_737e-14 - 1.0).abs() < 1e-6,
        "{sp}"
    );
    assert_eq!(UnaryOp::<f64>::cpu(&Softplus(1.0, 20.0), 25.0), 25.0);
    let ls = UnaryOp::<f64>::cpu(&Logsigmoid, 40.0);
    assert!((ls / -(-40f64).exp() - 1.0).abs() < 1e-12, "{ls}");
    let e = UnaryOp::<f64>::cpu(&Elu(1.0), -1e-10);
    assert!((e / -1e-10 - 1.0).abs() < 1e-9, "{e}");
    assert!(UnaryOp::<f32>::cpu(&Softshrink(0.5), f32::NAN).is_nan());
    assert!(UnaryOp::<f32>::cpu(&Hardshrink(0.5), f32::NAN).is_nan());
    assert!(UnaryOp::<f32>::cpu(&Relu6, f32::NAN).is_nan());
    assert_eq!(UnaryOp::<f32>::cpu(&Relu6, 7.0), 6.0);
    assert_eq!(UnaryOp::<f32>::cpu(&Threshold(1.0, -5.0), 1.0), -5.0);
    assert_eq!(BinaryOp::<f32>::cpu(&Prelu, -2.0, 0.25), -0.5);
    assert_eq!(
        UnaryOp::<f16>::cpu(&Hardswish, f16::from_f32(3.0)),
        f16::from_f32(3.0)
    );
}

/// `input_free_value` against each predicate's own CPU definition: where it names a value,
/// the op gives that value on every input tried (the type's extremes, zero, one, and values
/// between), so writing it without reading the input changes no result.
#[test]
fn input_free_values_agree_with_the_ops() {
    use crate::element::DType;
    fn check<T: Element, O: UnaryOp<T, Output = bool>>(op: O, name: &str, claimed: &mut usize) {
        let Some(v) = input_free_value(name, T::DTYPE) else {
            return;
        };
        *claimed += 1;
        let values = [
            T::ZERO,
            T::ONE,
            // Saturating: the type's extremes.
            T::from_f64(-1e300),
            T::from_f64(1e300),
            T::from_f64(-1.0),
            T::from_f64(17.0),
            T::from_f64(-100.0),
        ];
        for x in values {
            assert_eq!(op.cpu(x), v, "{name} on {x:?} of {}", T::DTYPE);
        }
    }
    let (mut claimed, mut signbit) = (0, 0);
    macro_rules! predicates {
        ($t:ty) => {
            check::<$t, _>(IsNan, "isnan", &mut claimed);
            check::<$t, _>(IsInf, "isinf", &mut claimed);
            check::<$t, _>(IsPosInf, "isposinf", &mut claimed);
            check::<$t, _>(IsNegInf, "isneginf", &mut claimed);
            check::<$t, _>(IsFinite, "isfinite", &mut claimed);
        };
    }
    // `signbit` takes numbers only; the predicates every type.
    macro_rules! numeric {
        ($($t:ty),*) => {$(
            predicates!($t);
            check::<$t, _>(SignBit, "signbit", &mut signbit);
        )*};
    }
    numeric!(
        f32,
        f64,
        f16,
        half::bf16,
        i8,
        i16,
        i32,
        i64,
        u8,
        u16,
        u32,
        u64
    );
    predicates!(bool);
    // Five predicates on the nine types without NaN or infinity; `signbit` on the unsigned.
    assert_eq!(claimed, 5 * 9);
    assert_eq!(signbit, 4, "the unsigned types");
    for d in DType::ALL {
        assert_eq!(input_free_value("exp", d), None);
    }
}
