//! Issue 29: the CPU engine and the host's fused pass split across rayon's threads give the
//! same results whatever the number of threads, and the blocked fused pass is right on odd
//! sizes and layouts (against an independent `f64` reference).

use crate::device::Cpu;
use crate::tensor::expr::host::{BLOCK, GRAIN};
use crate::tensor::{expr, Tensor};

/// Uniform in [-2, 2), xorshift from `seed`.
fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (4.0 * ((s >> 11) as f64 / (1u64 << 53) as f64) - 2.0) as f32
        })
        .collect()
}

fn tensor(shape: &[usize], seed: u64) -> Tensor<f32, Cpu> {
    let n = shape.iter().product();
    Tensor::from_vec(shape, random(n, seed)).unwrap()
}

/// `f` run inside pools of 1, 2 and 3 threads.
fn in_pools<R>(f: impl Fn() -> R + Send + Sync) -> Vec<R>
where
    R: Send,
{
    [1, 2, 3]
        .iter()
        .map(|&t| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .unwrap();
            pool.install(&f)
        })
        .collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn float_sums_are_bit_identical_under_any_number_of_threads() {
    // 2^20 + 3 elements: more than one split chunk, a partial last block.
    let n = (1 << 20) + 3;
    let a = tensor(&[n], 1);
    let m = tensor(&[1031, 1029], 2);
    let runs = in_pools(|| {
        let full = a.sum().unwrap().to_vec();
        let rows = m.sum_dim(1, false).unwrap().to_vec();
        let cols = m.sum_dim(0, false).unwrap().to_vec();
        let t = m.t().sum_dim(0, false).unwrap().to_vec();
        (bits(&full), bits(&rows), bits(&cols), bits(&t))
    });
    assert_eq!(runs[0], runs[1]);
    assert_eq!(runs[0], runs[2]);
    // And near the f64 sum (a cascade: error ~ log2(n) ulps of the partial sums).
    let exact: f64 = random(n, 1).iter().map(|&x| x as f64).sum();
    let got = f32::from_bits(runs[0].0[0]) as f64;
    assert!((got - exact).abs() < 1e-2, "{got} vs {exact}");
}

#[test]
fn pointwise_and_fused_outputs_match_across_pools() {
    let (r, c) = (700, 301); // 210700 elements: several chunks
    let a = tensor(&[r, c], 3);
    let b = tensor(&[r, c], 4);
    let bt = tensor(&[c, r], 5);
    let row = tensor(&[c], 6);
    let runs = in_pools(|| {
        let add = (&a + &b).unwrap().to_vec();
        let tr = (&a + &bt.t()).unwrap().to_vec();
        let bc = (&a * &row).unwrap().to_vec();
        let ex = a.exp().unwrap().to_vec();
        let fused = (a.lazy() * &b + &row).gelu().eval().unwrap().to_vec();
        let mut inplace = a.clone();
        inplace.add_(&bt.t()).unwrap();
        let mut upd = a.clone();
        upd.update(|x| x * 2.0f32 + &b).unwrap();
        [add, tr, bc, ex, fused, inplace.to_vec(), upd.to_vec()].map(|v| bits(&v))
    });
    assert_eq!(runs[0], runs[1]);
    assert_eq!(runs[0], runs[2]);
    // Against the element-wise definitions.
    let (av, bv, btv, rv) = (a.to_vec(), b.to_vec(), bt.to_vec(), row.to_vec());
    for i in (0..r * c).step_by(97) {
        let (y, x) = (i / c, i % c);
        assert_eq!(runs[0][0][i], (av[i] + bv[i]).to_bits());
        assert_eq!(runs[0][1][i], (av[i] + btv[x * r + y]).to_bits());
        assert_eq!(runs[0][2][i], (av[i] * rv[x]).to_bits());
        assert_eq!(runs[0][5][i], (av[i] + btv[x * r + y]).to_bits());
        assert_eq!(runs[0][6][i], (av[i] * 2.0 + bv[i]).to_bits());
    }
}

/// `gelu(a * b + c)` in `f64`.
fn gelu_ref(a: f32, b: f32, c: f32) -> f64 {
    let x = a as f64 * b as f64 + c as f64;
    x / 2.0 * (1.0 + libm::erf(x / std::f64::consts::SQRT_2))
}

fn check_close(got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= 1e-5 * w.abs() + 1e-5,
            "element {i}: {g} vs {w}"
        );
    }
}

#[test]
fn blocked_fused_pass_on_odd_sizes_and_layouts() {
    let sizes = [
        0,
        1,
        BLOCK - 1,
        BLOCK,
        BLOCK + 1,
        3 * BLOCK + 5,
        2 * GRAIN + 7,
    ];
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    for &n in &sizes {
        let (a, b, c) = (tensor(&[n], 7), tensor(&[n], 8), tensor(&[n], 9));
        let got = pool
            .install(|| (a.lazy() * &b + &c).gelu().eval())
            .unwrap()
            .to_vec();
        let (av, bv, cv) = (a.to_vec(), b.to_vec(), c.to_vec());
        let want: Vec<f64> = (0..n).map(|i| gelu_ref(av[i], bv[i], cv[i])).collect();
        check_close(&got, &want);
    }
    // Strided, transposed and broadcast leaves; rows crossing block boundaries.
    for &(r, cols) in &[(3, BLOCK + 1), (BLOCK - 1, 5), (300, 301)] {
        let a = tensor(&[cols, r], 10); // read transposed
        let wide = tensor(&[r, 2 * cols], 11); // read every other column
        let row = tensor(&[cols], 12); // broadcast over rows
        let at = a.t();
        let step = wide.slice_range(1, 0..2 * cols as isize, 2).unwrap();
        let got = pool
            .install(|| (at.lazy() * &step + &row).gelu().eval())
            .unwrap();
        assert_eq!(got.shape(), &[r, cols]);
        let (av, wv, rv) = (a.to_vec(), wide.to_vec(), row.to_vec());
        let want: Vec<f64> = (0..r * cols)
            .map(|i| {
                let (y, x) = (i / cols, i % cols);
                gelu_ref(av[x * r + y], wv[y * 2 * cols + 2 * x], rv[x])
            })
            .collect();
        check_close(&got.to_vec(), &want);
        // Into a strided output (the serial path), and two outputs in one pass.
        let mut big = Tensor::<f32, Cpu>::zeros(&[cols, r]).unwrap();
        let mut second = Tensor::<f32, Cpu>::zeros(&[r, cols]).unwrap();
        {
            let mut out = big.view_mut().t();
            let e = (at.lazy() * &step + &row).gelu();
            expr::eval_into((e, at.lazy() - &row), (&mut out, &mut second)).unwrap();
        }
        check_close(&big.t().to_vec(), &want);
        let diff: Vec<f64> = (0..r * cols)
            .map(|i| av[(i % cols) * r + i / cols] as f64 - rv[i % cols] as f64)
            .collect();
        check_close(&second.to_vec(), &diff);
    }
}

#[test]
fn split_ops_write_into_offset_and_strided_destinations() {
    let (r, c) = (700, 301);
    let a = tensor(&[r, c], 13);
    let bt = tensor(&[c, r], 14);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    let want: Vec<u32> = {
        let (av, bv) = (a.to_vec(), bt.to_vec());
        (0..r * c)
            .map(|i| (av[i] - bv[(i % c) * r + i / c]).to_bits())
            .collect()
    };
    // A contiguous destination at an offset (rows 3.. of a larger tensor): split.
    let mut big = Tensor::<f32, Cpu>::full(&[r + 5, c], 7.0).unwrap();
    pool.install(|| {
        let mut rows = big.view_mut().narrow(0, 3, r).unwrap();
        a.sub_into(&bt.t(), &mut rows)
    })
    .unwrap();
    let got = big.to_vec();
    assert!(got[..3 * c]
        .iter()
        .chain(&got[(r + 3) * c..])
        .all(|&x| x == 7.0));
    assert_eq!(bits(&got[3 * c..(r + 3) * c]), want);
    // A transposed destination (not contiguous): one walk on this thread, same values.
    let mut tr = Tensor::<f32, Cpu>::zeros(&[c, r]).unwrap();
    pool.install(|| a.sub_into(&bt.t(), &mut tr.view_mut().t()))
        .unwrap();
    assert_eq!(bits(&tr.t().to_vec()), want);
    // In place on the offset rows, with a transposed operand (tiled, split by rows).
    pool.install(|| {
        let mut rows = big.view_mut().narrow(0, 3, r).unwrap();
        rows.add_(&bt.t())
    })
    .unwrap();
    let back: Vec<f32> = big.to_vec()[3 * c..(r + 3) * c].to_vec();
    let av = a.to_vec();
    // (a - b) + b rounds back to a within one ulp of a's magnitude.
    for (i, (&x, &y)) in back.iter().zip(&av).enumerate() {
        assert!(
            (x - y).abs() <= 4.0 * f32::EPSILON * 4.0,
            "element {i}: {x} vs {y}"
        );
    }
}
