//! CPU pointwise ops, a fused chain and reductions against ndarray on the same layouts, in
//! one run (issue 29).
//!
//! Cases on 2^24 `f32` elements (a 4096 x 4096 matrix), each with one thread (both
//! libraries inside a 1-thread rayon pool, group suffix `/1t`) and with all threads (the
//! global pool; ndarray's `par_map_collect`, its `par_azip` form, where it has a parallel
//! form, group suffix `/all`):
//! - `add_contiguous`, `mul_contiguous`: `a + b`, `a * b`;
//! - `add_transposed`: `a.t() + b` (the first input read column-wise);
//! - `add_broadcast_row`: `a + row` (a row vector broadcast over the rows);
//! - `exp`, `tanh`, `gelu`: one op (ndarray: `mapv` with the same scalar function; for
//!   `gelu`, this crate's own `Gelu` op on one element, so both compute the same thing);
//! - `fused_gelu`: `gelu(a * b + c)` as one fused expression (`ours_fused`), as three eager
//!   ops (`ours_eager`) and as ndarray's `Zip` with the same closure;
//! - `sum_full`, `sum_axis0`, `sum_axis1`: a full sum and sums along each axis.
//!
//! Every case allocates its result, as `&a + &b` does in each library. Throughput is in bytes
//! moved (inputs read + output written).
//! Run: `cargo bench -p typestate-tensor-bench --bench pointwise_cpu -- --warm-up-time 1
//! --measurement-time 3` (a filter such as `fused` picks cases).

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ndarray::{Array1, Array2, Axis, Zip};
use rayon::prelude::*;
use rayon::ThreadPool;
use typestate_tensor::ops::table::{Exp, Gelu, Tanh};
use typestate_tensor::ops::UnaryOp;
use typestate_tensor::tensor::Tensor;

const LOG2: u32 = 24;

fn data(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32 / 250.0 - 2.0
        })
        .collect()
}

fn pair(n: usize, seed: u32) -> (Tensor<f32>, Array2<f32>) {
    let v = data(n * n, seed);
    let t = Tensor::from_vec(&[n, n], v.clone()).expect("shape matches");
    let a = Array2::from_shape_vec((n, n), v).expect("shape matches");
    (t, a)
}

/// A one-op case: name, ours, ndarray's scalar function.
type UnaryCase = (
    &'static str,
    fn(&Tensor<f32>) -> Tensor<f32>,
    fn(f32) -> f32,
);

fn gelu(x: f32) -> f32 {
    Gelu.cpu(x)
}

/// One group: `ours` and `ndarray` (and any `extra`) run inside `pool`.
fn group(
    c: &mut Criterion,
    name: &str,
    threads: &str,
    pool: &ThreadPool,
    bytes: u64,
    cases: &mut [(&str, &mut (dyn FnMut() + Send))],
) {
    let mut g = c.benchmark_group(format!("{name}/{threads}"));
    g.sample_size(10).throughput(Throughput::Bytes(bytes));
    for (label, f) in cases.iter_mut() {
        g.bench_function(BenchmarkId::new(*label, LOG2), |bch| {
            bch.iter(|| pool.install(&mut *f))
        });
    }
    g.finish();
}

fn bench(c: &mut Criterion) {
    let n = 1usize << (LOG2 / 2);
    let numel = (n * n) as u64;
    let (ta, na) = pair(n, 1);
    let (tb, nb) = pair(n, 7);
    let (tc, nc) = pair(n, 11);
    let row = data(n, 3);
    let trow = Tensor::from_vec(&[n], row.clone()).expect("shape matches");
    let nrow = Array1::from(row);
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a pool of one thread");
    let all = rayon::ThreadPoolBuilder::new().build().expect("a pool");

    for (threads, pool) in [("1t", &one), ("all", &all)] {
        let par = threads == "all";
        let b12 = numel * 12;
        group(
            c,
            "add_contiguous",
            threads,
            pool,
            b12,
            &mut [
                ("ours", &mut || {
                    drop(black_box((&ta + &tb).expect("same shape")))
                }),
                ("ndarray", &mut || {
                    drop(black_box(if par {
                        Zip::from(&na).and(&nb).par_map_collect(|&x, &y| x + y)
                    } else {
                        &na + &nb
                    }))
                }),
            ],
        );
        group(
            c,
            "mul_contiguous",
            threads,
            pool,
            b12,
            &mut [
                ("ours", &mut || {
                    drop(black_box((&ta * &tb).expect("same shape")))
                }),
                ("ndarray", &mut || {
                    drop(black_box(if par {
                        Zip::from(&na).and(&nb).par_map_collect(|&x, &y| x * y)
                    } else {
                        &na * &nb
                    }))
                }),
            ],
        );
        group(
            c,
            "add_transposed",
            threads,
            pool,
            b12,
            &mut [
                ("ours", &mut || {
                    drop(black_box((&ta.t() + &tb).expect("same shape")))
                }),
                ("ndarray", &mut || {
                    drop(black_box(if par {
                        Zip::from(na.t()).and(&nb).par_map_collect(|&x, &y| x + y)
                    } else {
                        &na.t() + &nb
                    }))
                }),
            ],
        );
        group(
            c,
            "add_broadcast_row",
            threads,
            pool,
            numel * 8,
            &mut [
                ("ours", &mut || {
                    drop(black_box((&ta + &trow).expect("broadcast")))
                }),
                ("ndarray", &mut || {
                    drop(black_box(if par {
                        Zip::from(&na)
                            .and_broadcast(&nrow)
                            .par_map_collect(|&x, &y| x + y)
                    } else {
                        &na + &nrow
                    }))
                }),
            ],
        );
        let unary: [UnaryCase; 3] = [
            ("exp", |t| t.exp().expect("float"), |x| Exp.cpu(x)),
            ("tanh", |t| t.tanh().expect("float"), |x| Tanh.cpu(x)),
            ("gelu", |t| t.gelu().expect("float"), gelu),
        ];
        for (name, ours, scalar) in unary {
            group(
                c,
                name,
                threads,
                pool,
                numel * 8,
                &mut [
                    ("ours", &mut || drop(black_box(ours(&ta)))),
                    ("ndarray", &mut || {
                        drop(black_box(if par {
                            Zip::from(&na).par_map_collect(|&x| scalar(x))
                        } else {
                            na.mapv(scalar)
                        }))
                    }),
                ],
            );
        }
        group(
            c,
            "fused_gelu",
            threads,
            pool,
            numel * 16,
            &mut [
                ("ours_fused", &mut || {
                    drop(black_box(
                        (ta.lazy() * &tb + &tc).gelu().eval().expect("same shape"),
                    ))
                }),
                ("ours_eager", &mut || {
                    let t = ta.mul(&tb).and_then(|t| t.add(&tc)).and_then(|t| t.gelu());
                    drop(black_box(t.expect("same shape")))
                }),
                ("ndarray_zip", &mut || {
                    let z = Zip::from(&na).and(&nb).and(&nc);
                    drop(black_box(if par {
                        z.par_map_collect(|&a, &b, &c| gelu(a * b + c))
                    } else {
                        z.map_collect(|&a, &b, &c| gelu(a * b + c))
                    }))
                }),
            ],
        );
        group(
            c,
            "sum_full",
            threads,
            pool,
            numel * 4,
            &mut [
                ("ours", &mut || drop(black_box(ta.sum().expect("sum")))),
                ("ndarray", &mut || {
                    black_box(if par {
                        na.as_slice().expect("contiguous").par_iter().sum::<f32>()
                    } else {
                        na.sum()
                    });
                }),
            ],
        );
        group(
            c,
            "sum_axis0",
            threads,
            pool,
            numel * 4,
            &mut [
                ("ours", &mut || {
                    drop(black_box(ta.sum_dim(0, false).expect("sum")))
                }),
                // ndarray has no parallel `sum_axis`.
                ("ndarray", &mut || drop(black_box(na.sum_axis(Axis(0))))),
            ],
        );
        group(
            c,
            "sum_axis1",
            threads,
            pool,
            numel * 4,
            &mut [
                ("ours", &mut || {
                    drop(black_box(ta.sum_dim(1, false).expect("sum")))
                }),
                ("ndarray", &mut || {
                    drop(black_box(if par {
                        Zip::from(na.rows()).par_map_collect(|r| r.sum())
                    } else {
                        na.sum_axis(Axis(1))
                    }))
                }),
            ],
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
