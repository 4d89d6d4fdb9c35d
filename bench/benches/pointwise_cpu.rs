//! CPU pointwise engine against ndarray on the same layouts, in one run.
//!
//! Cases, each on 2^22 and 2^24 `f32` elements (square matrices):
//! - `add_contiguous`: `a + b`;
//! - `add_transposed`: `a.t() + b` (the first input read column-wise);
//! - `add_broadcast_row`: `a + row` (a row vector broadcast over the rows);
//! - `exp`: `exp(a)`.
//!
//! Both sides allocate their result (out-of-place), as `&a + &b` does in each library.
//! Run: `cargo bench -p typestate-tensor-bench --bench pointwise_cpu -- --warm-up-time 1 --measurement-time 3`.
//! Throughput is reported in bytes moved (inputs read + output written).

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ndarray::{Array1, Array2};
use typestate_tensor::tensor::Tensor;

/// Square side for `2^log2_numel` elements.
fn side(log2_numel: u32) -> usize {
    1 << (log2_numel / 2)
}

fn data(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32 / 250.0 - 2.0
        })
        .collect()
}

fn pair(n: usize) -> (Tensor<f32>, Array2<f32>) {
    let v = data(n * n, n as u32);
    let t = Tensor::from_vec(&[n, n], v.clone()).expect("shape matches");
    let a = Array2::from_shape_vec((n, n), v).expect("shape matches");
    (t, a)
}

fn bench(c: &mut Criterion) {
    for log2 in [22u32, 24] {
        let n = side(log2);
        let numel = (n * n) as u64;
        let (ta, na) = pair(n);
        let (tb, nb) = {
            let v = data(n * n, 7);
            (
                Tensor::from_vec(&[n, n], v.clone()).expect("shape matches"),
                Array2::from_shape_vec((n, n), v).expect("shape matches"),
            )
        };
        let row = data(n, 3);
        let trow = Tensor::from_vec(&[n], row.clone()).expect("shape matches");
        let nrow = Array1::from(row);

        let mut g = c.benchmark_group("add_contiguous");
        g.sample_size(10).throughput(Throughput::Bytes(numel * 12));
        g.bench_function(BenchmarkId::new("ours", log2), |bch| {
            bch.iter(|| black_box((&ta + &tb).expect("same shape")))
        });
        g.bench_function(BenchmarkId::new("ndarray", log2), |bch| {
            bch.iter(|| black_box(&na + &nb))
        });
        g.finish();

        let mut g = c.benchmark_group("add_transposed");
        g.sample_size(10).throughput(Throughput::Bytes(numel * 12));
        g.bench_function(BenchmarkId::new("ours", log2), |bch| {
            bch.iter(|| black_box((&ta.t() + &tb).expect("same shape")))
        });
        g.bench_function(BenchmarkId::new("ndarray", log2), |bch| {
            bch.iter(|| black_box(&na.t() + &nb))
        });
        g.finish();

        let mut g = c.benchmark_group("add_broadcast_row");
        g.sample_size(10).throughput(Throughput::Bytes(numel * 8));
        g.bench_function(BenchmarkId::new("ours", log2), |bch| {
            bch.iter(|| black_box((&ta + &trow).expect("broadcastable")))
        });
        g.bench_function(BenchmarkId::new("ndarray", log2), |bch| {
            bch.iter(|| black_box(&na + &nrow))
        });
        g.finish();

        let mut g = c.benchmark_group("exp");
        g.sample_size(10).throughput(Throughput::Bytes(numel * 8));
        g.bench_function(BenchmarkId::new("ours", log2), |bch| {
            bch.iter(|| black_box(ta.exp().expect("float")))
        });
        g.bench_function(BenchmarkId::new("ndarray", log2), |bch| {
            bch.iter(|| black_box(na.mapv(f32::exp)))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
