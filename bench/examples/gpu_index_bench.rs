//! Indexing throughput (issue 28): the cases of `scripts/bench_torch_index.py`, in GB/s
//! (bytes read + written, each tensor counted once), beside the copy bandwidth measured in the
//! same run.
//!
//! ```text
//! cargo run --release -p typestate-tensor-bench --example gpu_index_bench -- [--repeats 10] [--rows 1048576] [--json ours.json]
//! python3 scripts/bench_torch_index.py [--rows 1048576] --compare ours.json
//! ```
//!
//! Cases (f32, `i64` indices drawn uniformly with repeats, fixed xorshift seeds):
//! - `index_select`: rows of a `[R, 1024]` table at `R` random row indices (dim 0);
//! - `gather dim1`: `[R/4, 1024]` gathered along dim 1 with a full `[R/4, 1024]` index;
//! - `embedding`: a `[65536, 1024]` table at `R` indices;
//! - `scatter_add`: `2^24` values into `2^16` bins (1-D);
//! - `index_add`: `[R/4, 256]` rows added into `[65536, 256]` at `R/4` row indices;
//! - `masked_fill`: `[R, 1024]` with a random `[R, 1024]` mask, out of place.
//!
//! Each: 3 warm-up calls, then the median of `--repeats` CUDA-event timings of one call of
//! the tensor method, output allocation included (as PyTorch allocates). Our ops read the
//! index's min and max back before each launch (the range check, a synchronisation): inside
//! the timing, as it is part of the op. `--rows` (default 2^20) shrinks the cases for smaller
//! GPUs. Without a GPU it says so and exits.

use std::fmt::Write as _;

use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

mod common;

use common::{time_ms, Res};

struct Options {
    json: Option<String>,
    repeats: usize,
    rows: usize,
}

fn options() -> Res<Options> {
    let mut opts = Options {
        json: None,
        repeats: 10,
        rows: 1 << 20,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--json" => opts.json = Some(value()?),
            "--repeats" => opts.repeats = value()?.parse()?,
            "--rows" => opts.rows = value()?.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    opts.repeats = opts.repeats.max(1);
    Ok(opts)
}

/// A xorshift stream from `seed`.
fn stream(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

fn floats(n: usize, seed: u64) -> Vec<f32> {
    let mut r = stream(seed);
    (0..n)
        .map(|_| 2.0 * ((r() >> 40) as f32 / (1u64 << 24) as f32) - 1.0)
        .collect()
}

fn indices(n: usize, below: usize, seed: u64) -> Vec<i64> {
    let mut r = stream(seed);
    (0..n).map(|_| (r() % below as u64) as i64).collect()
}

struct Row {
    case: String,
    shape: String,
    ms: f64,
    gbps: f64,
}

fn main() -> Res<()> {
    let opts = options()?;
    if !Gpu::available() {
        println!("no CUDA driver: nothing to measure");
        return Ok(());
    }
    let gpu = Gpu::new(0)?;
    let s = gpu.default_stream();
    let (r, reps) = (opts.rows, opts.repeats);
    let mut rows = Vec::new();
    let mut row = |case: &str, shape: String, bytes: usize, ms: f64| {
        let gbps = bytes as f64 / (ms * 1e-3) / 1e9;
        println!("{case:<14} {shape:<28} {ms:>9.3} ms {gbps:>8.1} GB/s");
        rows.push(Row {
            case: case.to_owned(),
            shape,
            ms,
            gbps,
        });
    };
    const W: usize = 1024;
    let f = 4usize;

    // The copy bandwidth: a [R, 1024] f32 copy into a fresh tensor.
    let copy_gbps = {
        let a = Tensor::from_vec(&[r, W], floats(r * W, 1))?.to_gpu(&gpu)?;
        let ms = time_ms(s, reps, || Ok(a.contiguous().map(|_| ())?))?;
        let gbps = (2 * r * W * f) as f64 / (ms * 1e-3) / 1e9;
        println!("copy           [{r}, {W}] f32              {ms:>9.3} ms {gbps:>8.1} GB/s");
        gbps
    };

    {
        let x = Tensor::from_vec(&[r, W], floats(r * W, 2))?.to_gpu(&gpu)?;
        let i = Tensor::from_vec(&[r], indices(r, r, 3))?.to_gpu(&gpu)?;
        let ms = time_ms(s, reps, || Ok(x.index_select(0, &i).map(|_| ())?))?;
        row(
            "index_select",
            format!("[{r}, {W}] dim 0"),
            2 * r * W * f + r * 8,
            ms,
        );
    }
    gpu.empty_cache()?;
    {
        let q = r / 4;
        let x = Tensor::from_vec(&[q, W], floats(q * W, 4))?.to_gpu(&gpu)?;
        let i = Tensor::from_vec(&[q, W], indices(q * W, W, 5))?.to_gpu(&gpu)?;
        let ms = time_ms(s, reps, || Ok(x.gather(1, &i).map(|_| ())?))?;
        row(
            "gather dim1",
            format!("[{q}, {W}]"),
            q * W * (2 * f + 8),
            ms,
        );
    }
    gpu.empty_cache()?;
    {
        let w = Tensor::from_vec(&[65536, W], floats(65536 * W, 6))?.to_gpu(&gpu)?;
        let i = Tensor::from_vec(&[r], indices(r, 65536, 7))?.to_gpu(&gpu)?;
        let ms = time_ms(s, reps, || Ok(i.embedding(&w).map(|_| ())?))?;
        // Every row read is counted (rows repeat, so the table is re-read from L2 at times).
        row(
            "embedding",
            format!("[65536, {W}] x {r}"),
            2 * r * W * f + r * 8,
            ms,
        );
    }
    gpu.empty_cache()?;
    {
        let n = 1usize << 24;
        let v = Tensor::from_vec(&[n], floats(n, 8))?.to_gpu(&gpu)?;
        let i = Tensor::from_vec(&[n], indices(n, 1 << 16, 9))?.to_gpu(&gpu)?;
        let z = Tensor::<f32, Gpu>::zeros_on(&[1 << 16], &gpu)?;
        let ms = time_ms(s, reps, || Ok(z.scatter_add(0, &i, &v).map(|_| ())?))?;
        row(
            "scatter_add",
            "2^24 -> 2^16 bins".to_string(),
            n * (f + 8) + 2 * (1 << 16) * f,
            ms,
        );
    }
    gpu.empty_cache()?;
    {
        let (q, c) = (r / 4, 256usize);
        let src = Tensor::from_vec(&[q, c], floats(q * c, 10))?.to_gpu(&gpu)?;
        let i = Tensor::from_vec(&[q], indices(q, 65536, 11))?.to_gpu(&gpu)?;
        let z = Tensor::<f32, Gpu>::zeros_on(&[65536, c], &gpu)?;
        let ms = time_ms(s, reps, || Ok(z.index_add(0, &i, &src, 1.0).map(|_| ())?))?;
        row(
            "index_add",
            format!("[{q}, {c}] -> [65536, {c}]"),
            q * c * f + q * 8 + 2 * 65536 * c * f,
            ms,
        );
    }
    gpu.empty_cache()?;
    {
        let x = Tensor::from_vec(&[r, W], floats(r * W, 12))?.to_gpu(&gpu)?;
        let m: Vec<bool> = floats(r * W, 13).iter().map(|&v| v > 0.0).collect();
        let m = Tensor::from_vec(&[r, W], m)?.to_gpu(&gpu)?;
        let ms = time_ms(s, reps, || Ok(x.masked_fill(&m, 0.0).map(|_| ())?))?;
        row(
            "masked_fill",
            format!("[{r}, {W}]"),
            r * W * (2 * f + 1),
            ms,
        );
    }

    println!(
        "typestate-tensor indexing on {} (copy {copy_gbps:.0} GB/s)",
        gpu.device_name()
    );
    if let Some(path) = opts.json {
        let mut j = format!(
            "{{\"device\": \"{}\", \"copy_gbps\": {copy_gbps}, \"rows\": [",
            gpu.device_name()
        );
        for (k, r) in rows.iter().enumerate() {
            let sep = if k == 0 { "" } else { ", " };
            let _ = write!(
                j,
                "{sep}{{\"case\": \"{}\", \"shape\": \"{}\", \"ms\": {}, \"gbps\": {}}}",
                r.case, r.shape, r.ms, r.gbps
            );
        }
        j.push_str("]}\n");
        std::fs::write(path, j)?;
    }
    Ok(())
}
