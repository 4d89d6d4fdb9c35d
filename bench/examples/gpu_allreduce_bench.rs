//! All-reduce bandwidth through NCCL, one process over every GPU (`LocalGroup`): `f32` sum in
//! place at 1 MiB, 16 MiB, 64 MiB, 256 MiB and 1 GiB per GPU.
//!
//! For each size, the time of one all-reduce is the median over 7 batches of back-to-back
//! all-reduces (CUDA events on rank 0's stream around each batch, divided by its length), as
//! `scripts/bench_torch_allreduce.py` measures `torch.distributed.all_reduce`. Bandwidths
//! as nccl-tests reports them: `algbw = bytes / time`, `busbw = algbw × 2(n−1)/n` for `n`
//! GPUs (the share of the data every link carries in a ring).
//!
//! ```text
//! export LD_LIBRARY_PATH=$(bash scripts/nccl-lib.sh)
//! cargo run --release -p typestate-tensor-bench --example gpu_allreduce_bench [-- --json ours.json] [--gpus N] [--sizes-mib 1,16]
//! python3 scripts/bench_torch_allreduce.py --compare ours.json
//! ```
//!
//! `NCCL_NVLS_ENABLE=0` is set if absent (NVLink multicast stays off). Without a GPU it
//! prints a note and exits; a result that is not the sum (checked once per size) exits 1.

use std::process::ExitCode;

use typestate_tensor::collective::{self, LocalGroup, ReduceOp};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

struct Row {
    bytes: usize,
    time_us: f64,
    algbw: f64,
    busbw: f64,
}

/// Median time of one in-place all-reduce of `bufs`, in µs.
fn time_us(group: &mut LocalGroup, bufs: &mut [Tensor<f32, Gpu>], per_batch: usize) -> Res<f64> {
    let stream = bufs[0].device().default_stream().clone();
    let gpus = group.gpus();
    for _ in 0..5 {
        group.all_reduce_in_place(bufs, ReduceOp::Sum)?;
    }
    for g in &gpus {
        g.synchronize()?;
    }
    let start = gpus[0].new_timing_event()?;
    let end = gpus[0].new_timing_event()?;
    let mut times = Vec::new();
    for _ in 0..7 {
        start.record(&stream)?;
        for _ in 0..per_batch {
            group.all_reduce_in_place(bufs, ReduceOp::Sum)?;
        }
        end.record(&stream)?;
        end.synchronize()?;
        times.push(f64::from(start.elapsed_ms(&end)?) * 1e3 / per_batch as f64);
    }
    for g in &gpus {
        g.synchronize()?;
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

fn run() -> Res<bool> {
    if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
        // Before any thread exists.
        std::env::set_var("NCCL_NVLS_ENABLE", "0");
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let sizes_mib: Vec<usize> = match flag("--sizes-mib") {
        Some(list) => list.split(',').map(str::parse).collect::<Result<_, _>>()?,
        None => vec![1, 16, 64, 256, 1024],
    };
    if !Gpu::available() {
        println!("no CUDA driver or GPU on this machine: nothing to measure");
        return Ok(true);
    }
    let (major, minor, patch) = collective::version()?;
    let count = Gpu::device_count()?;
    let n = match flag("--gpus") {
        Some(v) => v.parse::<usize>()?.clamp(1, count),
        None => count,
    };
    let gpus = (0..n).map(Gpu::new).collect::<Result<Vec<_>, _>>()?;
    let mut group = LocalGroup::new(&gpus)?;
    let device = gpus[0].device_name().to_owned();
    println!("all-reduce f32 sum in place, one process over {n} x {device}, NCCL {major}.{minor}.{patch}");
    if n < 2 {
        println!("(one GPU: a world of one moves nothing; bus bandwidth is 0 by definition)");
    }
    println!("| size | time (µs) | algbw (GB/s) | busbw (GB/s) |");
    println!("| --- | --- | --- | --- |");
    let mut rows = Vec::new();
    let mut ok = true;
    for mib in sizes_mib {
        let bytes = mib << 20;
        let elems = bytes / 4;
        let mut bufs = gpus
            .iter()
            .map(|g| Tensor::full_on(&[elems], 1.0f32, g))
            .collect::<Result<Vec<_>, _>>()?;
        // Check once: every element of every rank is the sum of the ranks' ones.
        group.all_reduce_in_place(&mut bufs, ReduceOp::Sum)?;
        for (r, b) in bufs.iter().enumerate() {
            let last = b
                .view()
                .narrow(0, elems - 1, 1)?
                .contiguous()?
                .to_cpu()?
                .to_vec()[0];
            let first = b.view().narrow(0, 0, 1)?.contiguous()?.to_cpu()?.to_vec()[0];
            if first != n as f32 || last != n as f32 {
                println!("FAIL: rank {r} holds {first} .. {last}, not {n}");
                ok = false;
            }
        }
        // Keep the values finite while timing (sums of zeros).
        for b in &mut bufs {
            b.fill_(0.0)?;
        }
        let per_batch = if mib >= 256 { 5 } else { 20 };
        let t = time_us(&mut group, &mut bufs, per_batch)?;
        let algbw = bytes as f64 / (t * 1e-6) / 1e9;
        let busbw = algbw * 2.0 * (n as f64 - 1.0) / n as f64;
        let size = if mib >= 1024 {
            format!("{} GiB", mib >> 10)
        } else {
            format!("{mib} MiB")
        };
        println!("| {size} | {t:.1} | {algbw:.1} | {busbw:.1} |");
        rows.push(Row {
            bytes,
            time_us: t,
            algbw,
            busbw,
        });
    }
    if let Some(path) = flag("--json") {
        let results: Vec<String> = rows
            .iter()
            .map(|r| {
                format!(
                    "  {{\"bytes\": {}, \"time_us\": {:.3}, \"algbw_gbs\": {:.3}, \"busbw_gbs\": {:.3}}}",
                    r.bytes, r.time_us, r.algbw, r.busbw
                )
            })
            .collect();
        let json = format!(
            "{{\"impl\": \"typestate-tensor\", \"device\": {device:?}, \"gpus\": {n}, \"nccl\": \"{major}.{minor}.{patch}\", \"results\": [\n{}\n]}}\n",
            results.join(",\n")
        );
        std::fs::write(&path, json)?;
        println!("wrote {path}");
    }
    for g in &gpus {
        g.check_err()?;
    }
    Ok(ok)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            println!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
