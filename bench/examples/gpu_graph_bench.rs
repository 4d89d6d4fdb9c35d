//! CUDA graphs against eager launches: a chain of 100 pointwise ops (`* y`, `+ x`, `exp`, in
//! turn) on 1024-element `f32` tensors, run eagerly (one launch per op, each output allocated
//! from the caching allocator) and replayed as one graph captured with `Gpu::capture`.
//!
//! Per op, it prints the host+device time (wall clock over many chains or replays queued
//! back to back, then one synchronisation, divided by the ops: what a loop of these ops
//! costs) and the device time (CUDA events around the same work). Eager launches and the
//! graph's kernel-to-kernel edges are programmatic dependents (docs/GRAPHS.md). Run
//! `cargo run --release -p typestate-tensor-bench --example gpu_graph_bench [-- --repeats N]` and
//! `python scripts/bench_torch_graph.py` in the same session for `torch.cuda.graph`.
//! Without a GPU it prints a note and exits.

use std::time::Instant;

use typestate_tensor::gpu::{Gpu, Stream};
use typestate_tensor::tensor::{Tensor, TensorView};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const N: usize = 1024;
const OPS: usize = 100;

/// The chain: `x * y`, then `* y`, `+ x`, `exp` in turn, `OPS` ops in all.
fn chain(
    x: &TensorView<'_, f32, Gpu>,
    y: &TensorView<'_, f32, Gpu>,
) -> typestate_tensor::Result<Tensor<f32, Gpu>> {
    let mut t = x.mul(y)?;
    for i in 1..OPS {
        t = match i % 3 {
            0 => t.mul(y)?,
            1 => t.add(x)?,
            _ => t.exp()?,
        };
    }
    Ok(t)
}

/// Per-op host+device µs (wall clock, `rounds` runs queued, one sync) and device µs (events),
/// each the median of 7 measurements.
fn per_op(stream: &Stream, rounds: usize, mut run: impl FnMut() -> Res<()>) -> Res<(f64, f64)> {
    for _ in 0..20 {
        run()?;
    }
    stream.synchronize()?;
    let mut wall = Vec::new();
    let mut device = Vec::new();
    for _ in 0..7 {
        let t = Instant::now();
        let start = stream.record_timing_event()?;
        for _ in 0..rounds {
            run()?;
        }
        let end = stream.record_timing_event()?;
        end.synchronize()?;
        wall.push(t.elapsed().as_secs_f64() * 1e6 / (rounds * OPS) as f64);
        device.push(f64::from(start.elapsed_ms(&end)?) * 1e3 / (rounds * OPS) as f64);
    }
    wall.sort_by(f64::total_cmp);
    device.sort_by(f64::total_cmp);
    Ok((wall[3], device[3]))
}

fn main() -> Res<()> {
    if !Gpu::available() {
        println!("gpu_graph_bench: no CUDA driver or GPU on this machine");
        return Ok(());
    }
    let mut rounds = 200;
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--repeats") {
        rounds = args
            .get(i + 1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(rounds);
    }
    let gpu = Gpu::new(0)?;
    let xs: Vec<f32> = (0..N)
        .map(|i| ((i * 37 % 101) as f32 / 101.0) - 0.5)
        .collect();
    let ys: Vec<f32> = (0..N)
        .map(|i| 0.05 + (i * 53 % 97) as f32 / 970.0)
        .collect();
    let mut x = Tensor::from_vec(&[N], xs)?.to_gpu(&gpu)?;
    let y = Tensor::from_vec(&[N], ys)?.to_gpu(&gpu)?;

    // Eager launches, as programmatic dependents.
    let (eager_wall, eager_dev) = per_op(gpu.default_stream(), rounds, || {
        chain(&x.view(), &y.view())?;
        Ok(())
    })?;
    let eager = chain(&x.view(), &y.view())?.to_cpu()?.to_vec();

    // The same chain captured.
    let mut rows = Vec::new();
    {
        let name = "PDL on";
        let t = Instant::now();
        let mut graph = gpu.capture((&mut x, &y), |(x, y)| chain(&x.view(), &y.view()))?;
        let capture_ms = t.elapsed().as_secs_f64() * 1e3;
        let replayed = graph.outputs().to_cpu()?.to_vec();
        let max_diff = eager
            .iter()
            .zip(&replayed)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        let stream = graph.stream().clone();
        let (wall, dev) = per_op(&stream, rounds, || Ok(graph.replay()?))?;
        // Replayed again after the timing: still the eager result.
        let again = graph.outputs().to_cpu()?.to_vec();
        let diff_after = eager
            .iter()
            .zip(&again)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        rows.push((name, capture_ms, max_diff.max(diff_after), wall, dev));
    }

    println!(
        "device: {} ({} SMs)",
        gpu.device_name(),
        gpu.multiprocessor_count()
    );
    println!("chain: {OPS} ops (* y, + x, exp in turn) on {N} f32 elements; {rounds} chains per measurement, median of 7");
    for (name, capture_ms, diff, _, _) in &rows {
        println!(
            "graph ({name}) capture + first run: {capture_ms:.2} ms; replayed output vs eager: max |diff| {diff:e}"
        );
    }
    println!();
    println!("| run | host+device µs/op | device µs/op |");
    println!("| --- | ---: | ---: |");
    println!(
        "| typestate-tensor eager, PDL on (cuLaunchKernelEx) | {eager_wall:.3} | {eager_dev:.3} |"
    );
    for (name, _, _, wall, dev) in &rows {
        println!("| typestate-tensor graph replay, {name} | {wall:.3} | {dev:.3} |");
    }
    gpu.check_err()?;
    Ok(())
}
