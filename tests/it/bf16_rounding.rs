//! The CPU engine rounds `f32` results to `f16` and `bf16` once, to nearest even, as the
//! kernels' `cvt.rn.f16.f32` / `cvt.rn.bf16.f32` do (`kernels/half.cuh`).
//!
//! Inputs sit a few `f32` ulps either side of the ties of `bf16` and `f16` (and on them), in
//! every binade, subnormals and the overflow edge included, plus random `f32` bit patterns.
//! The reference is a round-to-nearest-even written here on integers (the value as
//! `m * 2^e`, divided by the target's quantum with an exact remainder), sharing no code with
//! the crate or with `half`. The paths checked: `Element::from_f32`, the CPU `cast` from
//! `f32`, `f16` and `bf16`, and an op computed in `f32` (`fma`). Conversions from `f64` and
//! integers follow the kernels' documented rules (`f16` through `f32`; `bf16` as
//! `half::bf16::from_f64`), checked here too.

use half::{bf16, f16};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use typestate_tensor::element::Element;
use typestate_tensor::tensor::Tensor;

/// A binary16-like format: `man` explicit mantissa bits, smallest normal exponent `emin`.
#[derive(Clone, Copy)]
struct Format {
    man: i32,
    emin: i32,
}

const BF16: Format = Format { man: 7, emin: -126 };
const F16: Format = Format { man: 10, emin: -14 };

/// `x` rounded to nearest, ties to even, in `fmt`: its bits. NaN gives `None`.
fn rne(x: f32, fmt: Format) -> Option<u16> {
    if x.is_nan() {
        return None;
    }
    let sign = ((x.to_bits() >> 31) as u16) << 15;
    let exp_all_ones = (1u16 << (15 - fmt.man)) - 1;
    let inf = exp_all_ones << fmt.man;
    if x.is_infinite() {
        return Some(sign | inf);
    }
    let bits = x.abs().to_bits();
    // |x| = m * 2^e exactly.
    let (m, e) = if bits >> 23 == 0 {
        (u128::from(bits), -149)
    } else {
        (
            u128::from((bits & 0x7F_FFFF) | 0x80_0000),
            (bits >> 23) as i32 - 150,
        )
    };
    if m == 0 {
        return Some(sign);
    }
    let log2 = 127 - m.leading_zeros() as i32 + e;
    // The spacing of the target at |x|: 2^q.
    let q = log2.max(fmt.emin) - fmt.man;
    let shift = q - e;
    let n = if shift <= 0 {
        m << -shift
    } else {
        let (quot, rem, half) = (m >> shift, m & ((1 << shift) - 1), 1u128 << (shift - 1));
        if rem > half || (rem == half && quot & 1 == 1) {
            quot + 1
        } else {
            quot
        }
    };
    // n * 2^q with n in [2^man, 2^(man + 1)] (or below 2^man for subnormals): the biased
    // exponent of 2^(q + man) is q + man - emin + 1, and n = 2^(man + 1) carries into it.
    let biased = i128::from(q + fmt.man - fmt.emin + 1);
    let encoded = (biased << fmt.man) + n as i128 - (1 << fmt.man);
    Some(sign | encoded.min(i128::from(inf)) as u16)
}

/// `f32` values within 8 ulps of every tie of a sample of `fmt` values (both signs, every
/// binade, subnormals, the largest finite value).
fn near_ties(rng: &mut SmallRng, fmt: Format) -> Vec<f32> {
    let top = (1u32 << (15 - fmt.man)) - 1; // biased exponent of inf/NaN
    let mut centres = Vec::new();
    for biased in 0..top {
        for _ in 0..6 {
            let mant = rng.gen_range(0..1u32 << fmt.man);
            centres.push((biased << fmt.man) | mant);
        }
        centres.push((biased << fmt.man) | ((1 << fmt.man) - 1)); // carries into the exponent
    }
    let mut out = Vec::new();
    for h in centres {
        // The tie between `h` and the next value up, in f32 (exact: f32 holds both).
        let lo = to_f32(h, fmt);
        let hi = to_f32(h + 1, fmt);
        let tie = if hi.is_infinite() {
            // Halfway to 2^(emax + 1): lo + half its ulp.
            lo + (lo - to_f32(h - 1, fmt)) / 2.0
        } else {
            (lo + hi) / 2.0
        };
        for d in -8i32..=8 {
            let b = tie.to_bits().wrapping_add_signed(d);
            for v in [f32::from_bits(b), -f32::from_bits(b)] {
                if v.is_finite() {
                    out.push(v);
                }
            }
        }
    }
    out
}

/// The value of the `fmt` bit pattern `h` (positive, finite or the overflow value).
fn to_f32(h: u32, fmt: Format) -> f32 {
    if fmt.man == BF16.man {
        bf16::from_bits(h as u16).to_f32()
    } else {
        f16::from_bits(h as u16).to_f32()
    }
}

fn random_f32s(rng: &mut SmallRng, n: usize) -> Vec<f32> {
    (0..n).map(|_| f32::from_bits(rng.gen())).collect()
}

fn check<T: Element>(what: &str, xs: &[f32], got: &[T], fmt: Format, bits: fn(T) -> u16) {
    assert_eq!(xs.len(), got.len());
    let mut checked = 0;
    for (&x, &g) in xs.iter().zip(got) {
        match rne(x, fmt) {
            Some(want) => {
                assert_eq!(
                    bits(g),
                    want,
                    "{what}: {x:e} (bits {:#010x}) rounded to {:#06x}, want {want:#06x}",
                    x.to_bits(),
                    bits(g)
                );
                checked += 1;
            }
            None => {
                let inf = ((1u16 << (15 - fmt.man)) - 1) << fmt.man;
                assert!(bits(g) & 0x7FFF > inf, "{what}: NaN gave {:#06x}", bits(g));
            }
        }
    }
    assert!(checked > 0);
}

fn inputs(seed: u64, fmt: Format) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut xs = near_ties(&mut rng, fmt);
    xs.extend(random_f32s(&mut rng, 20_000));
    xs.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MAX,
        f32::MIN,
    ]);
    xs
}

#[test]
fn the_reference_rounds_to_nearest_even() {
    // Hand-checked cases, so that the reference itself is tested.
    let one_plus = |k: u32| f32::from_bits(1f32.to_bits() + k);
    assert_eq!(rne(one_plus(0x8000), BF16), Some(0x3F80)); // tie, even below
    assert_eq!(rne(one_plus(0x8001), BF16), Some(0x3F81)); // just above the tie
    assert_eq!(rne(one_plus(0x7FFF), BF16), Some(0x3F80)); // just below
    assert_eq!(rne(one_plus(0x18000), BF16), Some(0x3F82)); // tie, even above
    assert_eq!(rne(f32::MAX, BF16), Some(0x7F80)); // overflows
    assert_eq!(rne(f32::from_bits(1), BF16), Some(0)); // below half the least subnormal
    assert_eq!(rne(f32::from_bits(0x8001), BF16), Some(1));
    assert_eq!(rne(one_plus(0x1000), F16), Some(0x3C00)); // tie (2^-11), even below
    assert_eq!(rne(one_plus(0x1001), F16), Some(0x3C01));
    assert_eq!(rne(65504.0, F16), Some(0x7BFF));
    assert_eq!(rne(65519.996, F16), Some(0x7BFF));
    assert_eq!(rne(65520.0, F16), Some(0x7C00)); // tie to even is infinity
    assert_eq!(rne(2f32.powi(-25), F16), Some(0)); // half the least subnormal: even is 0
    assert_eq!(
        rne(f32::from_bits(2f32.powi(-25).to_bits() + 1), F16),
        Some(1)
    );
    assert_eq!(rne(-1.5 * 2f32.powi(-24), F16), Some(0x8002));
    assert_eq!(rne(2f32.powi(-14), F16), Some(0x0400)); // least normal
    assert_eq!(rne(-0.0, F16), Some(0x8000));
}

#[test]
fn from_f32_rounds_once_to_nearest_even() {
    let xs = inputs(1, BF16);
    let got: Vec<bf16> = xs.iter().map(|&x| <bf16 as Element>::from_f32(x)).collect();
    check("bf16 from_f32", &xs, &got, BF16, bf16::to_bits);
    let xs = inputs(2, F16);
    let got: Vec<f16> = xs.iter().map(|&x| <f16 as Element>::from_f32(x)).collect();
    check("f16 from_f32", &xs, &got, F16, f16::to_bits);
}

#[test]
fn cpu_casts_from_f32_round_once() {
    for (seed, fmt) in [(3, BF16), (4, F16)] {
        let xs = inputs(seed, fmt);
        let t = Tensor::from_vec(&[xs.len()], xs.clone()).unwrap();
        if fmt.man == BF16.man {
            let got = t.cast::<bf16>().unwrap().into_vec();
            check("cast f32 -> bf16", &xs, &got, BF16, bf16::to_bits);
            // From f16: every f16 is an f32, rounded once to bf16.
            let h: Vec<f16> = xs.iter().map(|&x| f16::from_f32(x)).collect();
            let hf: Vec<f32> = h.iter().map(|x| x.to_f32()).collect();
            let got = Tensor::from_vec(&[h.len()], h).unwrap();
            let got = got.cast::<bf16>().unwrap().into_vec();
            check("cast f16 -> bf16", &hf, &got, BF16, bf16::to_bits);
        } else {
            let got = t.cast::<f16>().unwrap().into_vec();
            check("cast f32 -> f16", &xs, &got, F16, f16::to_bits);
            let b: Vec<bf16> = xs.iter().map(|&x| bf16::from_f32(x)).collect();
            let bf: Vec<f32> = b.iter().map(|x| x.to_f32()).collect();
            let got = Tensor::from_vec(&[b.len()], b).unwrap();
            let got = got.cast::<f16>().unwrap().into_vec();
            check("cast bf16 -> f16", &bf, &got, F16, f16::to_bits);
        }
    }
}

#[test]
fn bf16_ops_round_the_f32_result_once() {
    // fma(a, b, c) = 1 + 2^-7 - (1 + 2^-7)(1 - 2^-7) 2^-8 = 1 + 2^-8 + 2^-22, exact in f32
    // and just above the tie between 1 and 1 + 2^-7: it rounds up. Through f64 with 20
    // mantissa bits the 2^-22 is lost and the tie rounds to even (1).
    let b16 = |x: f32| bf16::from_f32(x);
    let a = b16(1.0 + 2f32.powi(-7));
    let b = b16(-(1.0 - 2f32.powi(-7)) * 2f32.powi(-8));
    let c = b16(1.0 + 2f32.powi(-7));
    let exact = a.to_f32().mul_add(b.to_f32(), c.to_f32());
    assert_eq!(exact, 1.0 + 2f32.powi(-8) + 2f32.powi(-22));
    let t = |v: bf16| Tensor::from_vec(&[1], vec![v]).unwrap();
    let got = t(a).fma(&t(b), &t(c)).unwrap().into_vec()[0];
    assert_eq!(got.to_bits(), rne(exact, BF16).unwrap());
    assert_eq!(got, b16(1.0 + 2f32.powi(-7)));

    // Random fma over near-tie sums: a * b exact in f32, c chosen so the sum lands near a tie.
    let mut rng = SmallRng::seed_from_u64(5);
    let (mut xa, mut xb, mut xc) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..20_000 {
        let r = |rng: &mut SmallRng, lo: f32, hi: f32| b16(rng.gen_range(lo..hi));
        xa.push(r(&mut rng, -2.0, 2.0));
        xb.push(r(&mut rng, -2.0, 2.0) * b16(2f32.powi(-rng.gen_range(0..12))));
        xc.push(r(&mut rng, -4.0, 4.0));
    }
    let n = xa.len();
    let got = Tensor::from_vec(&[n], xa.clone())
        .unwrap()
        .fma(
            &Tensor::from_vec(&[n], xb.clone()).unwrap(),
            &Tensor::from_vec(&[n], xc.clone()).unwrap(),
        )
        .unwrap()
        .into_vec();
    let exact: Vec<f32> = (0..n)
        .map(|i| xa[i].to_f32().mul_add(xb[i].to_f32(), xc[i].to_f32()))
        .collect();
    check("fma bf16", &exact, &got, BF16, bf16::to_bits);
}

#[test]
fn casts_from_f64_and_integers_follow_the_kernels() {
    let mut rng = SmallRng::seed_from_u64(6);
    // f64 values near f16 and bf16 ties, with bits below f32 precision.
    let mut xs: Vec<f64> = inputs(7, F16)
        .into_iter()
        .chain(inputs(8, BF16))
        .filter(|x| x.is_finite())
        .map(|x| f64::from(x) * (1.0 + rng.gen_range(-1e-9..1e-9)))
        .collect();
    xs.extend((0..5_000).map(|_| f64::from_bits(rng.gen())));
    let t = Tensor::from_vec(&[xs.len()], xs.clone()).unwrap();
    // f64 -> f16: to f32 first, then once to f16 (`ts_double_to_f16`).
    let got = t.cast::<f16>().unwrap().into_vec();
    let via32: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
    check("cast f64 -> f16", &via32, &got, F16, f16::to_bits);
    // f64 -> bf16: `half::bf16::from_f64`, which `ts_double_to_bf16` ports line for line.
    let got = t.cast::<bf16>().unwrap().into_vec();
    for (&x, g) in xs.iter().zip(got) {
        let want = bf16::from_f64(x);
        assert!(
            g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
            "{x:e}"
        );
    }
    // Integers convert through f64 (exact below 2^53), then as f64.
    let ints: Vec<i64> = (0..5_000)
        .map(|_| rng.gen::<i64>() >> rng.gen_range(0..63))
        .collect();
    let t = Tensor::from_vec(&[ints.len()], ints.clone()).unwrap();
    let got = t.cast::<f16>().unwrap().into_vec();
    let via32: Vec<f32> = ints.iter().map(|&i| i as f64 as f32).collect();
    check("cast i64 -> f16", &via32, &got, F16, f16::to_bits);
    let got = t.cast::<bf16>().unwrap().into_vec();
    for (&i, g) in ints.iter().zip(got) {
        assert_eq!(g, bf16::from_f64(i as f64), "{i}");
    }
}
