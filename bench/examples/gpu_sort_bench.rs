//! Scans and sorting on the GPU (issue 28): the cases of `scripts/bench_torch_sort.py`, in ms
//! and GB/s, beside a device copy of the same bytes measured in the same run.
//!
//! ```text
//! cargo run --release -p typestate-tensor-bench --example gpu_sort_bench -- [--repeats 10]
//! python3 scripts/bench_torch_sort.py [--repeats 10]
//! ```
//!
//! Cases (f32): `cumsum(-1)` and `sort(-1)` of one row of 2^26 elements and of 2^16 rows of
//! 1024; `topk(k, -1)` for k = 1, 8, 64 on 2^14 rows of 32768. Each: random data (uniform in
//! [-1, 1)), three warm-up calls, then the median of `--repeats` CUDA-event timings of one
//! call of the tensor method on the default stream, output allocation included (as PyTorch
//! allocates its results). GB/s counts bytes read and written once: `cumsum` 4 + 4 per
//! element, `sort` 4 in + 4 values + 8 indices, `topk` 4 in + 12 per kept element. The copy
//! row is `y.copy_from(&x)` of 2^26 `f32`. Each result is spot-checked on the host (sorted
//! rows in order, a cumsum's last element against an f64 sum). Without a GPU it says so.

use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

mod common;

use common::{time_ms, Res};

/// Uniform in [-1, 1), from a fixed xorshift seed.
fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (2.0 * ((s >> 11) as f64 / (1u64 << 53) as f64) - 1.0) as f32
        })
        .collect()
}

fn main() -> Res<()> {
    let mut repeats = 10usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--repeats" => repeats = args.next().ok_or("--repeats needs a value")?.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if !Gpu::available() {
        println!("gpu_sort_bench: no CUDA driver or GPU on this machine");
        return Ok(());
    }
    let gpu = Gpu::new(0)?;
    let stream = gpu.default_stream().clone();
    println!("{} (typestate-tensor)", gpu.device_name());
    println!("| case | ms | GB/s |");
    println!("| --- | ---: | ---: |");
    let row = |name: &str, ms: f64, bytes: f64| {
        println!("| {name} | {ms:.3} | {:.0} |", bytes / ms / 1e6);
    };

    let big = 1usize << 26;
    let x = Tensor::from_vec(&[big], random(big, 1))?.to_gpu(&gpu)?;
    let mut y = Tensor::<f32, Gpu>::zeros_on(&[big], &gpu)?;
    let ms = time_ms(&stream, repeats, || Ok(y.copy_from(&x)?))?;
    row("copy 2^26 f32", ms, (big * 8) as f64);

    for (name, shape) in [("2^26", vec![big]), ("2^16 x 1024", vec![1 << 16, 1024])] {
        let xs = x.view().reshape(&shape)?;
        let ms = time_ms(&stream, repeats, || {
            let _ = xs.cumsum(-1)?;
            Ok(())
        })?;
        row(&format!("cumsum {name} f32"), ms, (big * 8) as f64);
        let ms = time_ms(&stream, repeats, || {
            let _ = xs.sort(-1, false, false)?;
            Ok(())
        })?;
        row(&format!("sort {name} f32"), ms, (big * 16) as f64);
    }
    // Spot checks (host): a sorted row is in order; the cumsum's last equals the sum.
    {
        let xs = x.view().reshape(&[1 << 16, 1024])?;
        let (v, _) = xs.sort(-1, false, false)?;
        let v = v.to_cpu()?.into_vec();
        assert!(v[..1024].windows(2).all(|w| w[0] <= w[1]), "sorted row");
        let c = xs.cumsum(-1)?.to_cpu()?.into_vec();
        let h = x
            .view()
            .narrow(0, 0, 1024)?
            .contiguous()?
            .to_cpu()?
            .into_vec();
        let s: f64 = h.iter().map(|&a| f64::from(a)).sum();
        assert!(
            (f64::from(c[1023]) - s).abs() < 1e-3,
            "cumsum last {} vs {s}",
            c[1023]
        );
    }

    let (rows, n) = (1usize << 14, 32768usize);
    let t = Tensor::from_vec(&[rows, n], random(rows * n, 2))?.to_gpu(&gpu)?;
    for k in [1usize, 8, 64] {
        let ms = time_ms(&stream, repeats, || {
            let _ = t.topk(k, -1, true, true)?;
            Ok(())
        })?;
        row(
            &format!("topk k={k} 2^14 x 32768 f32"),
            ms,
            (rows * n * 4 + rows * k * 12) as f64,
        );
    }
    Ok(())
}
