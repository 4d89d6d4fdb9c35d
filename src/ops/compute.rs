//! Float ops on the CPU computed the way the GPU kernels compute them.
//!
//! A kernel loads each input, converts it to the element's *compute type*
//! ([`crate::element::Element::CUDA_COMPUTE_TYPE`]: `double` for `f64`, `float` for `f32` and
//! the half types), evaluates the whole expression there and rounds once on store. A CPU
//! closure that chained `half::f16` operations would round after every step instead, so the
//! float ops of [`super::table`] evaluate their body through [`in_compute!`], which does
//! exactly what the kernel does. For `f32` the conversions fold away.

/// `erf` in both compute types (Rust's std has none; `libm` is the musl/FreeBSD port).
pub trait Erf {
    /// The error function.
    fn erf(self) -> Self;
}

impl Erf for f32 {
    #[inline]
    fn erf(self) -> f32 {
        libm::erff(self)
    }
}

impl Erf for f64 {
    #[inline]
    fn erf(self) -> f64 {
        libm::erf(self)
    }
}

/// `in_compute!(T as C; x = a, y = b => body)` evaluates `body` with `x`, `y` converted from
/// the element type `T` to its compute type, named `C` inside `body` (`f64` for `f64`, `f32`
/// otherwise), and converts the result back to `T` once. `body` is expanded twice, once per
/// compute type, so it may call any method `f32` and `f64` both have.
macro_rules! in_compute {
    ($t:ty as $c:ident; $($x:ident = $e:expr),+ => $body:expr) => {{
        if <$t as $crate::element::Element>::DTYPE == $crate::element::DType::F64 {
            #[allow(dead_code)]
            type $c = f64;
            $(let $x: f64 = <$t as $crate::element::Element>::to_f64($e);)+
            let r: f64 = $body;
            <$t as $crate::element::Element>::from_f64(r)
        } else {
            #[allow(dead_code)]
            type $c = f32;
            // Exact: every non-f64 float element converts to f32 without rounding.
            $(let $x: f32 = <$t as $crate::element::Element>::to_f64($e) as f32;)+
            let r: f32 = $body;
            // f32 -> f64 is exact, so this rounds once, from the f32 result.
            <$t as $crate::element::Element>::from_f64(f64::from(r))
        }
    }};
}
pub(crate) use in_compute;

#[cfg(test)]
mod tests {
    use half::{bf16, f16};

    fn exp_in_compute<T: crate::element::FloatElement>(a: T) -> T {
        in_compute!(T as C; x = a => x.exp() * (1 as C))
    }

    #[test]
    fn half_types_compute_in_f32_and_round_once() {
        // 1 + 2^-11 + 2^-11 is 1 + 2^-10 in f32, but chaining f16 adds rounds 1 + 2^-11 to 1
        // (ties to even) twice and gives 1.
        let a = f16::ONE;
        let e = f16::from_f32(2f32.powi(-11));
        let chained = a + e + e;
        let once: f16 = in_compute!(f16 as C; x = a, y = e => x + y + y);
        assert_eq!(chained, f16::ONE);
        assert_eq!(once, f16::from_f32(1.0 + 2f32.powi(-10)));
        assert_eq!(
            exp_in_compute(bf16::from_f32(1.5)),
            bf16::from_f32(1.5f32.exp())
        );
        assert_eq!(exp_in_compute(1.5f64), 1.5f64.exp());
        assert_eq!(exp_in_compute(1.5f32), 1.5f32.exp());
        assert_eq!(f16::from_f64(0.5).to_f64(), 0.5);
    }
}
