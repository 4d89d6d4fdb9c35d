//! `matmul` and its relatives through the public API, on both engines, against an `f64` host
//! reference (`i128` for integers): random shapes (0, 1 and sizes that are no multiple of a
//! tile), transposed, stepped, flipped and broadcast operands and destinations, PyTorch's
//! 1-D and batch-broadcast rules, the fused bias and activations, `alpha` / `beta`, and the
//! typed errors.
//!
//! Tolerances (per element, with `S = Σ_k |a_ik|·|b_kj|` and `u` the unit roundoff):
//! - accumulation in `f32` (`f32`, `f16`, `bf16` products) or `f64`: `2·k·u_acc·S`, the
//!   classic bound `γ_k·S` for any summation order, doubled for the blocked orders BLAS
//!   libraries use;
//! - the store rounds once to the element type: `u_T·|ref|` (`f16` `2^-11`, `bf16` `2^-8`);
//! - TF32 (`allow_tf32`, GPU only) rounds each input to 10 mantissa bits: `2·2^-11·S` more;
//! - activations add the element type's rounding of their own result (`GELU` through `erf`
//!   or `tanh` computed in `f32`: 8 ulps of `f32`, which the bounds above dominate).

use crate::common::device::{host, test_device, TestDevice};
use crate::common::matmul_ref::product;
use crate::common::rng::Rng;
use half::{bf16, f16};
use typestate_tensor::element::Element;
use typestate_tensor::error::{Error, LayoutError};
use typestate_tensor::tensor::matmul::{Activation, MatmulBackend};
use typestate_tensor::tensor::{Tensor, TensorView};
use typestate_tensor::Cpu;

/// A float element type under test, with its store rounding and accumulation roundoff.
trait FloatCase: Element + num_traits::Float {
    /// Unit roundoff of the stored type.
    const U_STORE: f64;
    /// Unit roundoff of the accumulation.
    const U_ACC: f64;
    fn of_f64(v: f64) -> Self;
    fn as_f64(self) -> f64;
}

macro_rules! float_case {
    ($t:ty, $store:expr, $acc:expr, $from:expr, $to:expr) => {
        impl FloatCase for $t {
            const U_STORE: f64 = $store;
            const U_ACC: f64 = $acc;
            fn of_f64(v: f64) -> Self {
                $from(v)
            }
            fn as_f64(self) -> f64 {
                $to(self)
            }
        }
    };
}
float_case!(
    f32,
    f32::EPSILON as f64 / 2.0,
    f32::EPSILON as f64 / 2.0,
    |v| v as f32,
    |v: f32| v as f64
);
float_case!(f64, f64::EPSILON / 2.0, f64::EPSILON / 2.0, |v| v, |v| v);
float_case!(
    f16,
    1.0 / 2048.0,
    f32::EPSILON as f64 / 2.0,
    f16::from_f64,
    f16::to_f64
);
float_case!(
    bf16,
    1.0 / 256.0,
    f32::EPSILON as f64 / 2.0,
    bf16::from_f64,
    bf16::to_f64
);

/// A host tensor of random values in [-1, 1) (exact in `T`).
fn random<T: FloatCase>(rng: &mut Rng, shape: &[usize]) -> Tensor<T, Cpu> {
    let n = shape.iter().product();
    Tensor::from_vec(shape, (0..n).map(|_| T::of_f64(rng.unit())).collect()).unwrap()
}

/// Operand `x` (`[B.., r, c]`, possibly lower rank) broadcast to `full` and read row-major.
fn broadcast_host<T: FloatCase>(x: &TensorView<'_, T, Cpu>, full: &[usize]) -> Vec<f64> {
    x.broadcast_to(full)
        .unwrap()
        .to_vec()
        .into_iter()
        .map(T::as_f64)
        .collect()
}

fn check<T: FloatCase>(what: &str, got: &[T], want: &[(f64, f64)], k: usize, extra: f64) {
    assert_eq!(got.len(), want.len(), "{what}: element count");
    for (i, (&g, &(v, s))) in got.iter().zip(want).enumerate() {
        let tol = 2.0 * k as f64 * T::U_ACC * s + T::U_STORE * v.abs() + extra * s + 1e-30;
        let g = g.as_f64();
        assert!(
            (g - v).abs() <= tol,
            "{what}: element {i}: got {g}, want {v} (tolerance {tol:e}, Σ|a||b| = {s})"
        );
    }
}

/// How an operand is stored and viewed: as it is, transposed (stored as its transpose,
/// viewed through `transpose(-1, -2)`), flipped along its last dim, or stepped (every other
/// index of its first dim of a tensor twice as tall).
#[derive(Clone, Copy, Debug)]
enum Form {
    Plain,
    Transposed,
    Flipped,
    Stepped,
}

const FORMS: [Form; 4] = [Form::Plain, Form::Transposed, Form::Flipped, Form::Stepped];

/// The storage that `form` views to give `base`'s values (built on the host, then uploaded:
/// the view is taken on the device, so the engine sees the strides).
fn store<T: FloatCase>(rng: &mut Rng, base: &Tensor<T, Cpu>, form: Form) -> Tensor<T, Cpu> {
    let shape = base.shape().to_vec();
    match form {
        Form::Transposed if shape.len() >= 2 => {
            base.transpose(-1, -2).unwrap().contiguous().unwrap()
        }
        Form::Flipped => base.flip(-1).unwrap().contiguous().unwrap(),
        Form::Stepped => {
            let mut tall = shape.clone();
            tall[0] *= 2;
            let mut data = random::<T>(rng, &tall).to_vec();
            let inner: usize = shape[1..].iter().product();
            for (i, v) in base.to_vec().into_iter().enumerate() {
                let (row, rest) = (i / inner.max(1), i % inner.max(1));
                data[2 * row * inner + rest] = v;
            }
            Tensor::from_vec(&tall, data).unwrap()
        }
        _ => base.clone(),
    }
}

/// The view of `stored` (on any device) that holds the operand's values.
fn view_of<T: Element, D: typestate_tensor::tensor::Backend>(
    stored: &Tensor<T, D>,
    form: Form,
) -> TensorView<'_, T, D> {
    match form {
        Form::Transposed if stored.rank() >= 2 => stored.transpose(-1, -2).unwrap(),
        Form::Flipped => stored.flip(-1).unwrap(),
        Form::Stepped => stored.slice(0, 0, stored.shape()[0], 2).unwrap(),
        _ => stored.view(),
    }
}

/// Shapes of a random product: `(a_shape, b_shape)` following `torch.matmul`'s cases.
fn draw_shapes(rng: &mut Rng) -> (Vec<usize>, Vec<usize>) {
    const SIZES: [usize; 12] = [0, 1, 2, 3, 5, 8, 16, 17, 31, 33, 64, 70];
    let mut size = || SIZES[1 + rng.below(SIZES.len() - 1)];
    let (m, k, n) = (size(), size(), size());
    let mut rng2 = Rng(rng.next() | 1);
    // Now and then a zero extent.
    let zero = rng2.below(12);
    let (m, k, n) = match zero {
        0 => (0, k, n),
        1 => (m, 0, n),
        2 => (m, k, 0),
        _ => (m, k, n),
    };
    match rng2.below(6) {
        0 => (vec![k], vec![k, n]),
        1 => (vec![m, k], vec![k]),
        2 => (vec![2, m, k], vec![k, n]),
        3 => (vec![3, 1, m, k], vec![2, k, n]),
        4 => (vec![2, m, k], vec![2, k, n]),
        _ => (vec![m, k], vec![k, n]),
    }
}

fn products_match<T: FloatCase, D: TestDevice + MatmulBackend<T>>(
    dev: &D,
    seed: u64,
    cases: usize,
) {
    let mut rng = Rng(seed);
    for case in 0..cases {
        let (sa, sb) = draw_shapes(&mut rng);
        let (ha, hb) = (random::<T>(&mut rng, &sa), random::<T>(&mut rng, &sb));
        let (fa, fb) = (FORMS[rng.below(4)], FORMS[rng.below(4)]);
        let (sta, stb) = (store(&mut rng, &ha, fa), store(&mut rng, &hb, fb));
        let (da, db) = (dev.upload(&sta), dev.upload(&stb));
        let (a, b) = (view_of(&da, fa), view_of(&db, fb));
        assert_eq!(
            host(&a),
            ha.to_vec(),
            "the arranged operand holds the drawn values"
        );
        let what = format!(
            "{} case {case}: {sa:?} ({fa:?}) · {sb:?} ({fb:?})",
            T::DTYPE
        );
        let got = a.matmul(&b).unwrap_or_else(|e| panic!("{what}: {e}"));

        // The reference, from the host copies, with torch.matmul's rules written out.
        let (a2, b2) = (
            if sa.len() == 1 {
                ha.unsqueeze(0).unwrap()
            } else {
                ha.view()
            },
            if sb.len() == 1 {
                hb.unsqueeze(1).unwrap()
            } else {
                hb.view()
            },
        );
        let (m, k, n) = (
            a2.shape()[a2.rank() - 2],
            a2.shape()[a2.rank() - 1],
            b2.shape()[b2.rank() - 1],
        );
        let ba = &a2.shape()[..a2.rank() - 2];
        let bb = &b2.shape()[..b2.rank() - 2];
        let batch = typestate_tensor::layout::broadcast_shapes("ref", ba, bb).unwrap();
        let mut full_a = batch.clone();
        full_a.extend([m, k]);
        let mut full_b = batch.clone();
        full_b.extend([k, n]);
        let want = product(
            &broadcast_host(&a2, &full_a),
            &broadcast_host(&b2, &full_b),
            (batch.iter().product(), m, k, n),
        );
        let mut out_shape = batch.clone();
        if sa.len() > 1 {
            out_shape.push(m);
        }
        if sb.len() > 1 {
            out_shape.push(n);
        }
        assert_eq!(got.shape(), out_shape.as_slice(), "{what}: shape");
        check(&what, &host(&got), &want, k, 0.0);
    }
}

test_device!(products_match_the_reference, products_cpu, products_gpu);
fn products_match_the_reference<D>(dev: &D)
where
    D: TestDevice
        + MatmulBackend<f32>
        + MatmulBackend<f64>
        + MatmulBackend<f16>
        + MatmulBackend<bf16>,
{
    products_match::<f32, D>(dev, 0x9E37_79B9_7F4A_7C15, 60);
    products_match::<f64, D>(dev, 0x1234_5678_9ABC_DEF1, 30);
    products_match::<f16, D>(dev, 0x0F0F_1234_4321_F0F1, 30);
    products_match::<bf16, D>(dev, 0x5555_AAAA_1357_2468, 30);
}

/// `act(alpha · a·b + bias)` on the host, from the reference product.
fn epilogue(v: f64, bias: f64, alpha: f64, act: Option<Activation>) -> f64 {
    let x = alpha * v + bias;
    match act {
        None => x,
        Some(Activation::Relu) => x.max(0.0),
        Some(Activation::Gelu) => 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2)),
        Some(Activation::GeluTanh) => {
            let c = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
        }
        Some(_) => unreachable!("no other activation is drawn"),
    }
}

fn epilogues<T: FloatCase, D: TestDevice + MatmulBackend<T>>(dev: &D, seed: u64) {
    let mut rng = Rng(seed);
    let acts = [
        None,
        Some(Activation::Relu),
        Some(Activation::Gelu),
        Some(Activation::GeluTanh),
    ];
    for case in 0..24 {
        let (m, k, n) = (1 + rng.below(40), rng.below(50), 1 + rng.below(40));
        let batch = rng.below(3);
        let mut sa = vec![m, k];
        if batch > 0 {
            sa.insert(0, batch);
        }
        let ha = random::<T>(&mut rng, &sa);
        // The weight as `F.linear` holds it, `[n, k]`, multiplied through its transpose.
        let hw = random::<T>(&mut rng, &[n, k]);
        // A stepped bias: every other element of a vector twice as long.
        let hbias_full = random::<T>(&mut rng, &[2 * n]);
        let act = acts[case % acts.len()];
        let alpha = if case % 3 == 0 {
            T::of_f64(0.5)
        } else {
            T::ONE
        };
        let (a, w, bias_full) = (dev.upload(&ha), dev.upload(&hw), dev.upload(&hbias_full));
        let bias = bias_full.slice(0, 0, 2 * n, 2).unwrap();
        let wt = w.t();
        let mut builder = a.matmul_with(&wt).bias(&bias).alpha(alpha);
        if let Some(act) = act {
            builder = builder.activation(act);
        }
        let got = builder.eval().unwrap();

        let b_host: Vec<f64> = hbias_full
            .to_vec()
            .into_iter()
            .step_by(2)
            .map(T::as_f64)
            .collect();
        let full_a: Vec<f64> = ha.to_vec().into_iter().map(T::as_f64).collect();
        let wt_host: Vec<f64> = hw.t().to_vec().into_iter().map(T::as_f64).collect();
        let rows = batch.max(1) * m;
        let plain = product(&full_a, &wt_host, (1, rows, k, n));
        // Rows of every batch share `wt`, so one `[rows, k] · [k, n]` product is the reference.
        let want: Vec<(f64, f64)> = plain
            .iter()
            .enumerate()
            .map(|(i, &(v, s))| {
                let x = epilogue(v, b_host[i % n], alpha.as_f64(), act);
                // The activation's slope is at most ~1.13 (GELU), so the product's error bound
                // carries over; the bias adds its own magnitude to what is rounded.
                (x, 1.2 * (alpha.as_f64() * s + b_host[i % n].abs()))
            })
            .collect();
        let what = format!(
            "{} epilogue case {case}: {sa:?} · [{k}, {n}], {act:?}, alpha {}",
            T::DTYPE,
            alpha.as_f64()
        );
        // A fused GELU (tanh) epilogue may add the device's own error, `EPILOGUE_TANH_REL·|x|`
        // (x the activation's input: |x| ≤ the bound's Σ term over 1.2).
        // The exact GELU may run as a second pass over the product stored in `T` (the GPU:
        // cuBLASLt has no erf epilogue), one more rounding of `T` of the activation's input.
        // A device whose epilogue rounds the product to `T` before the bias and activation
        // (`EPILOGUE_ROUNDINGS` 2) adds one rounding of `T` of the product.
        let second = (D::EPILOGUE_ROUNDINGS - 1.0) * T::U_STORE;
        let act_rel = second
            + match act {
                Some(Activation::GeluTanh) => D::EPILOGUE_TANH_REL / 1.2,
                Some(Activation::Gelu) => T::U_STORE,
                _ => 0.0,
            };
        check(
            &what,
            &host(&got),
            &want,
            k.max(1),
            8.0 * f32::EPSILON as f64 + act_rel,
        );
    }
}

test_device!(bias_and_activations_are_fused, epilogue_cpu, epilogue_gpu);
fn bias_and_activations_are_fused<D>(dev: &D)
where
    D: TestDevice
        + MatmulBackend<f32>
        + MatmulBackend<f64>
        + MatmulBackend<f16>
        + MatmulBackend<bf16>,
{
    epilogues::<f32, D>(dev, 11);
    epilogues::<f64, D>(dev, 12);
    epilogues::<f16, D>(dev, 13);
    epilogues::<bf16, D>(dev, 14);
}

test_device!(into_views_and_beta, into_cpu, into_gpu);
fn into_views_and_beta<D: TestDevice + MatmulBackend<f32>>(dev: &D) {
    let mut rng = Rng(77);
    let (m, k, n) = (19, 23, 29);
    let (ha, hb) = (
        random::<f32>(&mut rng, &[m, k]),
        random::<f32>(&mut rng, &[k, n]),
    );
    let (a, b) = (dev.upload(&ha), dev.upload(&hb));
    let av: Vec<f64> = ha.to_vec().into_iter().map(f64::from).collect();
    let bv: Vec<f64> = hb.to_vec().into_iter().map(f64::from).collect();
    let want = product(&av, &bv, (1, m, k, n));

    // Into a transposed destination: `out` is [n, m], written through its transpose.
    let mut out = dev.upload(&Tensor::<f32, Cpu>::full(&[n, m], f32::NAN).unwrap());
    a.matmul_into(&b, &mut out.view_mut().t()).unwrap();
    let got: Vec<f32> = host(&out.t());
    check("into a transposed view", &got, &want, k, 0.0);

    // beta: out = 0.5·out + a·b, with out holding the product already: 1.5·a·b.
    let mut acc = a.matmul(&b).unwrap();
    a.matmul_with(&b).accumulate_into(0.5, &mut acc).unwrap();
    let want15: Vec<(f64, f64)> = want.iter().map(|&(v, s)| (1.5 * v, 1.5 * s)).collect();
    check("accumulate with beta 0.5", &host(&acc), &want15, k, 0.0);

    // beta 0 never reads the destination: NaN in it does not spread.
    let mut nan = dev.upload(&Tensor::<f32, Cpu>::full(&[m, n], f32::NAN).unwrap());
    a.matmul_with(&b).accumulate_into(0.0, &mut nan).unwrap();
    check("beta 0 over NaN", &host(&nan), &want, k, 0.0);

    // A product over k == 0 is all zeros plus the bias.
    let (e1, e2) = (
        dev.upload(&Tensor::<f32, Cpu>::zeros(&[3, 0]).unwrap()),
        dev.upload(&Tensor::<f32, Cpu>::zeros(&[0, 4]).unwrap()),
    );
    let bias = dev.upload(&Tensor::<f32, Cpu>::from_vec(&[4], vec![1.0, -2.0, 3.0, -4.0]).unwrap());
    let z = e1.matmul_with(&e2).bias(&bias).relu().eval().unwrap();
    assert_eq!(host(&z), [1.0, 0.0, 3.0, 0.0].repeat(3));
}

test_device!(mm_bmm_and_linear, mm_bmm_linear_cpu, mm_bmm_linear_gpu);
fn mm_bmm_and_linear<D: TestDevice + MatmulBackend<f64>>(dev: &D) {
    let mut rng = Rng(5);
    let (ha, hb) = (
        random::<f64>(&mut rng, &[4, 6, 5]),
        random::<f64>(&mut rng, &[4, 5, 3]),
    );
    let (a, b) = (dev.upload(&ha), dev.upload(&hb));
    let bmm = a.bmm(&b).unwrap();
    let via_matmul = a.matmul(&b).unwrap();
    assert_eq!(host(&bmm), host(&via_matmul));
    let av: Vec<f64> = ha.to_vec();
    let bv: Vec<f64> = hb.to_vec();
    check("bmm", &host(&bmm), &product(&av, &bv, (4, 6, 5, 3)), 5, 0.0);

    // linear: x·wᵀ + b.
    let (hx, hw, hbias) = (
        random::<f64>(&mut rng, &[7, 5]),
        random::<f64>(&mut rng, &[3, 5]),
        random::<f64>(&mut rng, &[3]),
    );
    let (x, w, bias) = (dev.upload(&hx), dev.upload(&hw), dev.upload(&hbias));
    let y = x.linear(&w, Some(&bias.view())).unwrap();
    let want: Vec<(f64, f64)> = product(&hx.to_vec(), &hw.t().to_vec(), (1, 7, 5, 3))
        .into_iter()
        .enumerate()
        .map(|(i, (v, s))| (v + hbias.to_vec()[i % 3], s + 1.0))
        .collect();
    check("linear", &host(&y), &want, 5, 0.0);

    // mm refuses batches; bmm refuses broadcasting and other ranks.
    let err = |r: typestate_tensor::Result<Tensor<f64, D>>| match r {
        Err(Error::Layout(LayoutError::MatmulMismatch { op, lhs, rhs, .. })) => (op, lhs, rhs),
        other => panic!(
            "expected MatmulMismatch, got {:?}",
            other.map(|t| t.shape().to_vec())
        ),
    };
    assert_eq!(err(a.mm(&b)), ("mm", vec![4, 6, 5], vec![4, 5, 3]));
    let b2 = dev.upload(&random::<f64>(&mut rng, &[2, 5, 3]));
    assert_eq!(err(a.bmm(&b2)).0, "bmm");
    assert_eq!(err(a.bmm(&b.narrow(0, 0, 1).unwrap())).0, "bmm");
    assert_eq!(err(x.linear(&w.t(), None)).0, "linear");
}

test_device!(
    misfits_are_typed_errors_that_write_nothing,
    misfits_cpu,
    misfits_gpu
);
fn misfits_are_typed_errors_that_write_nothing<D: TestDevice + MatmulBackend<f32>>(dev: &D) {
    let mut rng = Rng(9);
    let a = dev.upload(&random::<f32>(&mut rng, &[2, 3]));
    let b = dev.upload(&random::<f32>(&mut rng, &[4, 5]));
    let e = a.matmul(&b).unwrap_err();
    assert_eq!(
        e.to_string(),
        "matmul: shapes [2, 3] and [4, 5] cannot be multiplied: the left operand's last dim differs from the right operand's second-to-last dim"
    );
    let scalar = dev.upload(&Tensor::<f32, Cpu>::full(&[], 2.0).unwrap());
    assert!(matches!(
        a.matmul(&scalar),
        Err(Error::Layout(LayoutError::MatmulMismatch { .. }))
    ));
    // A destination of the wrong shape, and a bias of the wrong length: errors, and the
    // destination keeps its values.
    let c = dev.upload(&random::<f32>(&mut rng, &[3, 4]));
    let before = host(&dev.upload(&Tensor::<f32, Cpu>::full(&[2, 5], 7.0).unwrap()));
    let mut out = dev.upload(&Tensor::<f32, Cpu>::full(&[2, 5], 7.0).unwrap());
    assert!(matches!(
        a.matmul_into(&c, &mut out),
        Err(Error::Layout(LayoutError::ShapeMismatch { expected, .. })) if expected == vec![2, 4]
    ));
    let bias = dev.upload(&random::<f32>(&mut rng, &[5]));
    let mut out4 = dev.upload(&Tensor::<f32, Cpu>::full(&[2, 4], 7.0).unwrap());
    assert!(matches!(
        a.matmul_with(&c).bias(&bias).eval_into(&mut out4),
        Err(Error::Layout(LayoutError::ShapeMismatch { expected, .. })) if expected == vec![4]
    ));
    assert_eq!(host(&out), before);
    assert_eq!(host(&out4), vec![7.0; 8]);
}

/// Integer products wrap, as PyTorch's CPU integer matmul does (the GPU has none: a compile
/// error, `ui_tests/compile_fail/matmul_integer_on_gpu.rs`).
#[test]
fn integer_products_wrap_on_the_cpu() {
    fn run<T: Element + typestate_tensor::element::Numeric>(
        rng: &mut Rng,
        to: impl Fn(i128) -> T,
        from: impl Fn(T) -> i128,
        wrap: impl Fn(i128) -> T,
    ) where
        Cpu: MatmulBackend<T>,
    {
        for _ in 0..6 {
            let (m, k, n) = (1 + rng.below(20), rng.below(40), 1 + rng.below(20));
            let av: Vec<T> = (0..m * k).map(|_| to(rng.next() as i128)).collect();
            let bv: Vec<T> = (0..k * n).map(|_| to(rng.next() as i128)).collect();
            let a = Tensor::from_vec(&[m, k], av.clone()).unwrap();
            // b stored transposed.
            let bt = Tensor::from_vec(&[n, k], {
                let mut t = vec![T::ZERO; k * n];
                for l in 0..k {
                    for j in 0..n {
                        t[j * k + l] = bv[l * n + j];
                    }
                }
                t
            })
            .unwrap();
            let got = a.matmul(&bt.t()).unwrap().to_vec();
            for i in 0..m {
                for j in 0..n {
                    // Exact up to 64 bits, then wrapping: the low bits, which are all the
                    // element type keeps, are the exact sum's.
                    let s = (0..k).fold(0i128, |acc, l| {
                        acc.wrapping_add(from(av[i * k + l]).wrapping_mul(from(bv[l * n + j])))
                    });
                    assert_eq!(
                        got[i * n + j],
                        wrap(s),
                        "{} [{m}, {k}]·[{k}, {n}] at ({i}, {j})",
                        T::DTYPE
                    );
                }
            }
        }
    }
    let mut rng = Rng(31);
    run::<i8>(&mut rng, |v| v as i8, |v| v as i128, |v| v as i8);
    run::<u8>(&mut rng, |v| v as u8, |v| v as i128, |v| v as u8);
    run::<i16>(&mut rng, |v| v as i16, |v| v as i128, |v| v as i16);
    run::<i32>(&mut rng, |v| v as i32, |v| v as i128, |v| v as i32);
    run::<u32>(&mut rng, |v| v as u32, |v| v as i128, |v| v as u32);
    run::<i64>(&mut rng, |v| v as i64, |v| v as i128, |v| v as i64);
    run::<u64>(&mut rng, |v| v as u64, |v| v as i128, |v| v as u64);
}
