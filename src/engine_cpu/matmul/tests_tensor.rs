//! The CPU engine through the tensor layer's API (`matmul`, `matmul_with`, `accumulate_into`):
//! broadcast batch dims, 1-D operands, strided operands and destinations, against the `f64`
//! reference of `tests_types.rs` (tolerance `4·ε·S` for `f32`, `S = Σ|a·b| + |bias|`) and
//! exact `i32` values.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::tensor::Tensor;

fn rand_f32(rng: &mut SmallRng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect()
}

/// `(Σ a·b, Σ|a·b|)` of every `[m, n]` element of `count` products of row-major `[count, m, k]`
/// and `[count, k, n]` values.
fn reference(
    a: &[f32],
    b: &[f32],
    count: usize,
    (m, k, n): (usize, usize, usize),
) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(count * m * n);
    for bi in 0..count {
        for i in 0..m {
            for j in 0..n {
                let (mut s, mut abs) = (0.0, 0.0);
                for p in 0..k {
                    let t = a[(bi * m + i) * k + p] as f64 * b[(bi * k + p) * n + j] as f64;
                    s += t;
                    abs += t.abs();
                }
                out.push((s, abs));
            }
        }
    }
    out
}

fn assert_close(got: &[f32], want: &[(f64, f64)], bias: &[f32], act: impl Fn(f64) -> f64) {
    assert_eq!(got.len(), want.len());
    let n = bias.len().max(1);
    for (i, (&g, &(s, abs))) in got.iter().zip(want).enumerate() {
        let b = bias.get(i % n).map_or(0.0, |&b| b as f64);
        let w = act(s + b);
        let tol =
            1.2 * 4.0 * f32::EPSILON as f64 * (abs + b.abs()) + 2.0 * f32::EPSILON as f64 * w.abs();
        assert!(
            (g as f64 - w).abs() <= tol,
            "[{i}]: got {g}, want {w}, tol {tol}"
        );
    }
}

/// `[2, 1, 5, 7]` (a transposed store) times `[3, 7, 4]` (flipped batch) broadcast to
/// `[2, 3, 5, 4]`, with a strided bias and GELU, through the builder.
#[test]
fn broadcast_batches_bias_gelu() {
    let mut rng = SmallRng::seed_from_u64(27);
    let a_store = Tensor::from_vec(&[2, 1, 7, 5], rand_f32(&mut rng, 70)).expect("shape");
    let a = a_store.transpose(-2isize, -1isize).expect("transpose");
    let b_store = Tensor::from_vec(&[3, 7, 4], rand_f32(&mut rng, 84)).expect("shape");
    let b = b_store.flip(0isize).expect("flip");
    let bias_store = Tensor::from_vec(&[8], rand_f32(&mut rng, 8)).expect("shape");
    let bias = bias_store.slice(0isize, 0, 8, 2).expect("step 2");
    let y = a.matmul_with(&b).bias(&bias).gelu().eval().expect("fits");
    assert_eq!(y.shape(), &[2, 3, 5, 4]);
    let af = a.broadcast_to(&[2, 3, 5, 7]).expect("bcast").to_vec();
    let bf = b.broadcast_to(&[2, 3, 7, 4]).expect("bcast").to_vec();
    let gelu = |x: f64| x * 0.5 * (1.0 + libm::erf(x / std::f64::consts::SQRT_2));
    assert_close(
        &y.to_vec(),
        &reference(&af, &bf, 6, (5, 7, 4)),
        &bias.to_vec(),
        gelu,
    );
}

/// 1-D operands: a row, a column, a dot product; and `matmul` on square views.
#[test]
fn vectors_and_views() {
    let mut rng = SmallRng::seed_from_u64(28);
    let v = Tensor::from_vec(&[7], rand_f32(&mut rng, 7)).expect("shape");
    let m_store = Tensor::from_vec(&[9, 7], rand_f32(&mut rng, 63)).expect("shape");
    let mt = m_store.t(); // [7, 9], column-major
    let row = v.matmul(&mt).expect("[7]·[7, 9]");
    assert_eq!(row.shape(), &[9]);
    assert_close(
        &row.to_vec(),
        &reference(&v.to_vec(), &mt.to_vec(), 1, (1, 7, 9)),
        &[],
        |x| x,
    );
    let col = m_store.matmul(&v).expect("[9, 7]·[7]");
    assert_eq!(col.shape(), &[9]);
    assert_close(
        &col.to_vec(),
        &reference(&m_store.to_vec(), &v.to_vec(), 1, (9, 7, 1)),
        &[],
        |x| x,
    );
    let dot = v.matmul(&v.flip(0isize).expect("flip")).expect("dot");
    assert_eq!(dot.shape(), &[] as &[usize]);
    let vf = v.flip(0isize).expect("flip").to_vec();
    assert_close(
        &dot.to_vec(),
        &reference(&v.to_vec(), &vf, 1, (1, 7, 1)),
        &[],
        |x| x,
    );
    let sq = mt.matmul(&m_store).expect("[7, 9]·[9, 7]");
    assert_close(
        &sq.to_vec(),
        &reference(&mt.to_vec(), &m_store.to_vec(), 1, (7, 9, 7)),
        &[],
        |x| x,
    );
}

/// `accumulate_into` a transposed destination: `out = beta·out + a·b`, `out` read once.
#[test]
fn accumulate_into_transposed_out() {
    let mut rng = SmallRng::seed_from_u64(29);
    let a = Tensor::from_vec(&[6, 11], rand_f32(&mut rng, 66)).expect("shape");
    let b = Tensor::from_vec(&[11, 5], rand_f32(&mut rng, 55)).expect("shape");
    let mut out_store = Tensor::from_vec(&[5, 6], rand_f32(&mut rng, 30)).expect("shape");
    let old = out_store.t().to_vec();
    {
        let mut out = out_store.view_mut().t();
        a.matmul_with(&b)
            .accumulate_into(0.5, &mut out)
            .expect("fits");
    }
    let want: Vec<(f64, f64)> = reference(&a.to_vec(), &b.to_vec(), 1, (6, 11, 5))
        .into_iter()
        .zip(&old)
        .map(|((s, abs), &o)| (s + 0.5 * o as f64, abs + (0.5 * o as f64).abs()))
        .collect();
    assert_close(&out_store.t().to_vec(), &want, &[], |x| x);
}

/// `i32` wraps as PyTorch's CPU does, with a bias and ReLU, exactly.
#[test]
fn i32_wraps_through_the_builder() {
    let mut rng = SmallRng::seed_from_u64(30);
    let (m, k, n) = (13, 37, 19);
    let a: Vec<i32> = (0..m * k).map(|_| rng.gen()).collect();
    let b: Vec<i32> = (0..k * n).map(|_| rng.gen()).collect();
    let bias: Vec<i32> = (0..n).map(|_| rng.gen()).collect();
    let ta = Tensor::from_vec(&[m, k], a.clone()).expect("shape");
    let tb = Tensor::from_vec(&[k, n], b.clone()).expect("shape");
    let tbias = Tensor::from_vec(&[n], bias.clone()).expect("shape");
    let y = ta
        .matmul_with(&tb)
        .bias(&tbias)
        .relu()
        .eval()
        .expect("fits")
        .to_vec();
    for i in 0..m {
        for j in 0..n {
            let mut s = 0i128;
            for p in 0..k {
                s = s.wrapping_add(a[i * k + p] as i128 * b[p * n + j] as i128);
            }
            let v = (s + bias[j] as i128) as i32;
            assert_eq!(y[i * n + j], v.max(0), "[{i}, {j}]");
        }
    }
}
