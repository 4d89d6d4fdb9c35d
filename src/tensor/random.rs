//! Seeded random numbers for [`Tensor::rand_on`] and [`Tensor::randn_on`]: the
//! counter-based generator Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random
//! numbers: as easy as 1, 2, 3", SC 2011; the generator of cuRAND, PyTorch and JAX).
//!
//! A counter-based generator is a keyed bijection of its counter: element `i` of a tensor
//! depends only on the seed and `i`, so the values are the same for the same seed and shape
//! on every run, every thread count and every device (GPU tensors are generated on the host
//! and uploaded, so they hold exactly the CPU's values), and a kernel could produce them in
//! parallel. No `rand` dependency.
//!
//! # The streams, exactly
//!
//! With `key = [seed as u32, (seed >> 32) as u32]` and block `b` (a `u64`), the four words of
//! block `b` are `philox4x32_10([b as u32, (b >> 32) as u32, stream, 0], key)`, `stream` 0 for
//! uniform and 1 for normal values.
//!
//! - **Uniform** (`rand`), for a type with `m` significand bits (`f32` 24, `f16` 11, `bf16`
//!   8): element `i` is word `i % 4` of block `i / 4`, `u = (w >> (32 - m)) * 2^-m`; for
//!   `f64`, element `i` is words `2 (i % 2)` and `2 (i % 2) + 1` of block `i / 2`, joined high
//!   then low into 64 bits, `u = (bits >> 11) * 2^-53`. Every value is exact in the type and
//!   lies in `[0, 1)`.
//! - **Normal** (`randn`): Box-Muller on pairs. Pair `p` (elements `2p` and `2p + 1`) takes
//!   two uniforms `u1` in `(0, 1]` and `u2` in `[0, 1)`: for the 32-bit-or-narrower types
//!   words `2 (p % 2)` and `2 (p % 2) + 1` of block `p / 2`, `u1 = (w0 + 1) 2^-32`,
//!   `u2 = w1 2^-32`; for `f64` block `p`, `u1 = (hi53(w0, w1) + 1) 2^-53`,
//!   `u2 = hi53(w2, w3) 2^-53`. Then `r = sqrt(-2 ln u1)`, element `2p` is `r cos(2 pi u2)`,
//!   element `2p + 1` is `r sin(2 pi u2)`, computed in `f64` with the `libm` crate (the same
//!   bits on every host) and rounded once to the element type.
//!
//! [`Tensor::rand_on`]: super::Tensor::rand_on
//! [`Tensor::randn_on`]: super::Tensor::randn_on

use crate::element::{DType, FloatElement};
use crate::error::Result;
use crate::host_vec::vec_with_capacity;

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// The stream of uniform values.
const UNIFORM: u32 = 0;
/// The stream of normal values.
const NORMAL: u32 = 1;

/// Philox4x32 with 10 rounds: the four output words for `counter` under `key`, as in
/// Random123's `philox4x32_R(10, ctr, key)` (its known-answer vectors are this crate's
/// tests).
///
/// ```
/// use typestate_tensor::tensor::random::philox4x32_10;
///
/// assert_eq!(
///     philox4x32_10([0; 4], [0; 2]),
///     [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
/// );
/// ```
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let mut c = counter;
    let mut k = key;
    for round in 0..10 {
        if round > 0 {
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        let p0 = u64::from(M0) * u64::from(c[0]);
        let p1 = u64::from(M1) * u64::from(c[2]);
        c = [
            (p1 >> 32) as u32 ^ c[1] ^ k[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ c[3] ^ k[1],
            p0 as u32,
        ];
    }
    c
}

/// The four words of `block` of `stream` under `seed`.
fn block(seed: u64, stream: u32, block: u64) -> [u32; 4] {
    let key = [seed as u32, (seed >> 32) as u32];
    philox4x32_10([block as u32, (block >> 32) as u32, stream, 0], key)
}

/// Significand bits of a float element type (`f64`: 53).
fn significand_bits(dtype: DType) -> u32 {
    match dtype {
        DType::F64 => 53,
        DType::F32 => 24,
        DType::F16 => 11,
        DType::BF16 => 8,
        // Not float types: `FloatElement` excludes them.
        DType::I32
        | DType::I64
        | DType::U8
        | DType::Bool
        | DType::I8
        | DType::I16
        | DType::U16
        | DType::U32
        | DType::U64 => 24,
    }
}

/// The top 53 bits of `hi:lo`.
fn hi53(hi: u32, lo: u32) -> u64 {
    ((u64::from(hi) << 32) | u64::from(lo)) >> 11
}

/// `n` uniform values in `[0, 1)` of stream `seed` (see the module docs).
pub(crate) fn uniform<T: FloatElement>(n: usize, seed: u64) -> Result<Vec<T>> {
    let mut out = vec_with_capacity(n)?;
    let bits = significand_bits(T::DTYPE);
    if bits == 53 {
        for b in 0..n.div_ceil(2) {
            let w = block(seed, UNIFORM, b as u64);
            for (h, l) in [(w[0], w[1]), (w[2], w[3])] {
                if out.len() < n {
                    out.push(T::from_f64(hi53(h, l) as f64 * 2f64.powi(-53)));
                }
            }
        }
    } else {
        let scale = 2f64.powi(-(bits as i32));
        for b in 0..n.div_ceil(4) {
            for w in block(seed, UNIFORM, b as u64) {
                if out.len() < n {
                    out.push(T::from_f64(f64::from(w >> (32 - bits)) * scale));
                }
            }
        }
    }
    Ok(out)
}

/// `n` standard normal values of stream `seed` (see the module docs).
pub(crate) fn normal<T: FloatElement>(n: usize, seed: u64) -> Result<Vec<T>> {
    let mut out = vec_with_capacity(n)?;
    let wide = significand_bits(T::DTYPE) == 53;
    let push_pair = |u1: f64, u2: f64, out: &mut Vec<T>| {
        let r = libm::sqrt(-2.0 * libm::log(u1));
        let theta = 2.0 * std::f64::consts::PI * u2;
        for z in [r * libm::cos(theta), r * libm::sin(theta)] {
            if out.len() < n {
                out.push(T::from_f64(z));
            }
        }
    };
    let pairs = n.div_ceil(2);
    if wide {
        for p in 0..pairs {
            let w = block(seed, NORMAL, p as u64);
            let u1 = (hi53(w[0], w[1]) + 1) as f64 * 2f64.powi(-53);
            let u2 = hi53(w[2], w[3]) as f64 * 2f64.powi(-53);
            push_pair(u1, u2, &mut out);
        }
    } else {
        let scale = 2f64.powi(-32);
        for b in 0..pairs.div_ceil(2) {
            let w = block(seed, NORMAL, b as u64);
            for (a, c) in [(w[0], w[1]), (w[2], w[3])] {
                let u1 = (f64::from(a) + 1.0) * scale;
                let u2 = f64::from(c) * scale;
                push_pair(u1, u2, &mut out);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random123's `kat_vectors` for philox4x32 with 10 rounds.
    #[test]
    fn known_answers() {
        assert_eq!(
            philox4x32_10([0; 4], [0; 2]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }

    #[test]
    fn uniform_words_follow_the_documented_layout() {
        let v: Vec<f32> = uniform(9, 42).unwrap();
        let b0 = block(42, UNIFORM, 0);
        let b2 = block(42, UNIFORM, 2);
        assert_eq!(v[1], (b0[1] >> 8) as f32 * 2f32.powi(-24));
        assert_eq!(v[8], (b2[0] >> 8) as f32 * 2f32.powi(-24));
        let w: Vec<f64> = uniform(3, 42).unwrap();
        let c1 = block(42, UNIFORM, 1);
        assert_eq!(w[2], hi53(c1[0], c1[1]) as f64 * 2f64.powi(-53));
    }
}
